//! Two jobs: names the commit lingo is built from (`LINGO_COMMIT`, which `lingo --version`
//! prints; see [`commit`]), and lays out the functions a request runs first in lingo's
//! binary, hottest first (`link/hot-functions.txt`, written by `benches/hot.sh`).
//!
//! Left where the compiler puts them, the functions the benchmarks' requests run lie
//! scattered over the text section, among code no request runs: more instruction cache
//! misses than their instructions need. The order is a
//! linker option that rust-lld takes and GNU ld refuses, so it is asked for only
//! after a probe: a small program linked with it by the same compiler, target, flags and
//! linker as lingo's. Where that link fails, lingo is linked as before. Only the `lingo`
//! binary is given the order; a name the list has and a build lacks is skipped.
//!
//! A symbol's name carries a hash of its crate, which includes the compiler's version: on
//! another toolchain than the one the list names in its first line, only its C functions
//! (the allocator's) still match (`benches/hot.sh --check` counts them).

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const LIST: &str = "link/hot-functions.txt";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={LIST}");
    println!("cargo:rustc-env=LINGO_COMMIT={}", commit());
    let target = env::var("TARGET").unwrap_or_default();
    let triple = target.to_uppercase().replace('-', "_");
    for var in [
        "RUSTFLAGS".to_string(),
        "CARGO_BUILD_RUSTFLAGS".to_string(),
        "CARGO_ENCODED_RUSTFLAGS".to_string(),
        "RUSTC_LINKER".to_string(),
        format!("CARGO_TARGET_{triple}_RUSTFLAGS"),
        format!("CARGO_TARGET_{triple}_LINKER"),
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let list = Path::new(&env::var("CARGO_MANIFEST_DIR").expect("set by cargo")).join(LIST);
    // `-Wl,` splits its argument at commas; a path that is not UTF-8 cannot be passed on.
    let Some(list) = list.to_str().filter(|l| !l.contains(',')) else {
        return;
    };
    let args = [
        format!("-Wl,--symbol-ordering-file={list}"),
        "-Wl,--no-warn-symbol-ordering".to_string(),
    ];
    if !Path::new(list).is_file() || !links(&target, &args) {
        return;
    }
    for arg in args {
        println!("cargo:rustc-link-arg-bin=lingo={arg}");
    }
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
    const SOURCES: [&str; 5] = ["src", "Cargo.toml", "Cargo.lock", "build.rs", "link"];
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

/// Whether a program links with `args` added, built as lingo is: the same compiler,
/// target, flags (`CARGO_ENCODED_RUSTFLAGS`) and linker (`RUSTC_LINKER`).
fn links(target: &str, args: &[String]) -> bool {
    let out = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));
    let source = out.join("probe.rs");
    if std::fs::write(&source, "fn main() {}\n").is_err() {
        return false;
    }
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let mut probe = Command::new(rustc);
    probe
        .args(["--crate-type", "bin", "--crate-name", "probe"])
        .args(["--target", target, "-o"])
        .arg(out.join("probe"))
        .arg(&source);
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    probe.args(flags.split('\x1f').filter(|f| !f.is_empty()));
    if let Ok(linker) = env::var("RUSTC_LINKER") {
        probe.arg(format!("-Clinker={linker}"));
    }
    for arg in args {
        probe.arg(format!("-Clink-arg={arg}"));
    }
    probe
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}
