//! The repository speaks of lingo only: no file (docs, source and its comments, scripts, the
//! README, the changelog) says how the work on it was organised (numbered stops and issues,
//! named review passes: the phrases listed below) or points at files outside the
//! repository (the shared directory beside a clone, a style guide, an outside spec, a team
//! tool). What holds is said
//! where it holds; how it came to be is the commit log's.
//!
//! `.ci/run` keeps one optional check against a contract file beside the clone, named there.

use std::path::{Path, PathBuf};

/// What must follow a phrase for it to count.
#[derive(Clone, Copy)]
enum Then {
    Anything,
    /// A digit: a stop's, an issue's or a spec section's number.
    Digit,
    /// Not a letter: "the spec" but not "the specified".
    WordEnd,
}

/// The directory beside a clone that the team's own files are in (written in two pieces, so
/// that this file does not name it either).
const SHARED: &str = concat!("..", "/shared");

/// Words about the work, lower case (the phrases in two pieces, as [`SHARED`] is).
const PHRASES: [(&str, Then); 13] = [
    ("stop ", Then::Digit),
    ("issue ", Then::Digit),
    ("issue #", Then::Digit),
    ("spec ", Then::Digit),
    ("the spec", Then::WordEnd),
    (concat!("final", " read"), Then::Anything),
    (concat!("review", " fixes"), Then::Anything),
    ("planners", Then::Anything),
    (SHARED, Then::Anything),
    ("/work/", Then::Anything),
    ("style.md", Then::Anything),
    ("style guide", Then::Anything),
    ("layers.py", Then::Anything),
];

/// Directories that are not the repository's files: build output, installed packages, fuzz
/// runs.
const SKIPPED: [&str; 8] = [
    ".git",
    "target",
    "node_modules",
    "fuzz/target",
    "fuzz/corpus",
    "fuzz/artifacts",
    "fuzz/coverage",
    "__pycache__",
];

#[test]
fn no_file_speaks_of_the_work_or_of_files_outside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    collect(root, root, &mut files);
    assert!(
        files.iter().any(|f| f.ends_with("src/lib.rs")),
        "the walk found lingo's files"
    );
    let mut found = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(root).unwrap();
        if relative == Path::new("tests/words.rs") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(file) else {
            continue; // not text
        };
        for (n, line) in text.lines().enumerate() {
            if relative == Path::new(".ci/run") && line.contains(SHARED) {
                continue;
            }
            if let Some(what) = offending(line) {
                found.push(format!(
                    "{}:{}: {what:?} in {line:?}",
                    relative.display(),
                    n + 1
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "say what holds, without how the work was organised or files outside the repository:\n{}",
        found.join("\n")
    );
}

/// What in `line` speaks of the work, if anything.
fn offending(line: &str) -> Option<String> {
    let lower = line.to_ascii_lowercase();
    for (phrase, then) in PHRASES {
        for (at, _) in lower.match_indices(phrase) {
            let next = lower[at + phrase.len()..].chars().next();
            let counts = match then {
                Then::Anything => true,
                Then::Digit => next.is_some_and(|c| c.is_ascii_digit()),
                Then::WordEnd => !next.is_some_and(char::is_alphabetic),
            };
            if counts {
                return Some(phrase.trim().to_owned());
            }
        }
    }
    // `#17` as an issue reference: after a space or an opening bracket, digits, then no
    // more word characters (not a colour or an anchor such as `#1a2b3c`).
    let bytes = lower.as_bytes();
    for (at, _) in lower.match_indices('#') {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let digits = bytes[at + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let after = bytes.get(at + 1 + digits);
        let starts = before.is_none_or(|b| matches!(b, b' ' | b'(' | b'['));
        let ends = after.is_none_or(|b| !b.is_ascii_alphanumeric() && *b != b'_');
        if starts && digits > 0 && ends {
            return Some(lower[at..at + 1 + digits].to_owned());
        }
    }
    None
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let relative = path.strip_prefix(root).unwrap();
        if SKIPPED.iter().any(|s| relative == Path::new(s)) || relative.ends_with("node_modules") {
            continue;
        }
        if path.is_dir() {
            collect(root, &path, files);
        } else {
            files.push(path);
        }
    }
}

#[test]
fn the_words_are_found() {
    for (line, found) in [
        (concat!("// see stop", " 45"), Some("stop")),
        (
            concat!("Final", " read: a comment"),
            Some(concat!("final", " read")),
        ),
        (concat!("# issue #", "17 names them"), Some("issue #")),
        ("the spec's example", Some("the spec")),
        ("the specified length", None),
        ("fixes (#48)", Some("#48")),
        ("as the spec 6.2 says", Some("spec")),
        (concat!("python3 ..", "/shared/tools/x"), Some(SHARED)),
        ("color: #1a2b3c; #[derive]", None),
        ("the stream stops 3 times; $# args", None),
        ("an Ollama-style client", None),
    ] {
        assert_eq!(offending(line).as_deref(), found, "{line}");
    }
}
