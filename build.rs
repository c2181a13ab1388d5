//! Names the commit lingo is built from (`LINGO_COMMIT`, which `lingo --version` prints;
//! see [`commit`]).

use std::env;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-env=LINGO_COMMIT={}", commit());
}

/// The commit being built: `LINGO_COMMIT` if set (a build from a copy without `.git`, such
/// as a container's), else `git rev-parse --short=12 HEAD` with `-dirty` when the files the
/// binary is built from differ from it, else `unknown`. The build script runs again when
/// HEAD moves (a commit, a checkout) or one of those files changes.
fn commit() -> String {
    println!("cargo:rerun-if-env-changed=LINGO_COMMIT");
    if let Some(commit) = env::var("LINGO_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
    {
        return commit.trim().to_owned();
    }
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    // A file in a worktree, a directory in a clone.
    if !root.join(".git").exists() {
        return "unknown".into();
    }
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(&root)
            // Never write the index: a build must not change what it watches.
            .arg("--no-optional-locks")
            .args(args)
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|out| out.status.success())?;
        Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let Some(hash) = git(&["rev-parse", "--short=12", "HEAD"]) else {
        return "unknown".into();
    };
    // HEAD, the branch it names, and the packed refs (where a branch may live instead).
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            let path = root.join(path);
            // A path that does not exist would run the build script on every build.
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    const SOURCES: [&str; 4] = ["src", "Cargo.toml", "Cargo.lock", "build.rs"];
    for source in SOURCES {
        println!("cargo:rerun-if-changed={source}");
    }
    let mut status = vec!["status", "--porcelain", "--untracked-files=no", "--"];
    status.extend(SOURCES);
    match git(&status) {
        Some(changes) if changes.is_empty() => hash,
        Some(_) => format!("{hash}-dirty"),
        None => hash,
    }
}
