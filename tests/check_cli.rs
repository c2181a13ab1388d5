//! `lingo check FILE` and the rest of the command line as a user runs them: the built
//! binary, real files, exit codes and output.

use std::path::Path;
use std::process::Command;

/// Set only in the children that need it, so a failing test shows it leaked rather than
/// the test machine happening to have it.
const KEY_VAR: &str = "LINGO_TEST_CHECK_CLI_KEY";
const KEY_VALUE: &str = "sk-check-cli-never-printed";
const UNSET_VAR: &str = "LINGO_TEST_UNSET_VAR_CHECK_CLI";

struct Output {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn lingo(args: &[&str], configure: impl FnOnce(&mut Command)) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lingo"));
    command
        .args(args)
        .env_remove(UNSET_VAR)
        .env(KEY_VAR, KEY_VALUE);
    configure(&mut command);
    let out = command.output().expect("run lingo");
    Output {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Writes `text` to a fresh file and runs `lingo check` on it.
fn check(text: &str) -> (Output, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("proxy.yaml");
    std::fs::write(&path, text).unwrap();
    let path = path.display().to_string();
    (lingo(&["check", &path], |_| {}), path)
}

const VALID: &str = "\
listen:
  - addr: 127.0.0.1:8080
clients:
  - { name: dev, key: { env: LINGO_TEST_CHECK_CLI_KEY } }
upstreams:
  ollama: { url: http://127.0.0.1:11434, speaks: native }
  scraper:
    url: https://scrape.example.com
    speaks: web-data
    auth: { bearer: { env: LINGO_TEST_CHECK_CLI_KEY } }
routes:
  - { path: /v1/chat/completions, speaks: chat-completions, to: ollama }
  - { prefix: /api, to: ollama }
  - { prefix: /v1, to: scraper }
";

#[test]
fn valid_file_prints_a_summary_and_exits_0() {
    let (out, path) = check(VALID);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    for expected in [
        format!("{path}: OK"),
        "ollama".into(),
        "scraper".into(),
        "path /v1/chat/completions".into(),
        "prefix /api".into(),
        format!("key from env {KEY_VAR}"),
        "clients: 1 (dev)".into(),
    ] {
        assert!(
            out.stdout.contains(&expected),
            "missing {expected:?} in:\n{}",
            out.stdout
        );
    }
    assert!(!out.stdout.contains(KEY_VALUE) && !out.stderr.contains(KEY_VALUE));
}

#[test]
fn errors_exit_1_with_file_line_column_and_reason() {
    let cases = [
        (
            VALID.replace("speaks: native", "speaks: native, retries: 3"),
            "6:58: unknown field `retries`",
        ),
        (
            VALID.replace("http://127.0.0.1:11434", "ftp://127.0.0.1:11434"),
            "6:18: upstream `ollama`: url `ftp://127.0.0.1:11434` must start with http:// or https://",
        ),
        (
            VALID.replace("to: scraper", "to: scrapper"),
            "14:24: route /v1 goes to undefined upstream `scrapper`; defined: ollama, scraper",
        ),
        (
            format!("{VALID}  - {{ prefix: /api/, to: ollama }}\n"),
            "15:5: route prefix /api is defined twice: lines 13 and 15",
        ),
        (
            VALID.replace(
                "bearer: { env: LINGO_TEST_CHECK_CLI_KEY }",
                &format!("bearer: {{ env: {UNSET_VAR} }}"),
            ),
            &format!(
                "10:21: upstream `scraper` auth: environment variable `{UNSET_VAR}` is not set"
            ),
        ),
    ];
    for (text, reason) in cases {
        let (out, path) = check(&text);
        assert_eq!(out.code, Some(1), "{reason}\n{}", out.stdout);
        let expected = format!("error: {path}:{reason}");
        assert!(
            out.stderr.contains(&expected),
            "missing {expected:?} in:\n{}",
            out.stderr
        );
        assert!(out.stdout.is_empty(), "{}", out.stdout);
        assert!(!out.stderr.contains(KEY_VALUE), "{}", out.stderr);
    }
}

#[test]
fn every_error_is_printed_one_per_line() {
    let text = VALID
        .replace("to: scraper", "to: nobody")
        .replace("127.0.0.1:8080", "localhost:8080");
    let (out, path) = check(&text);
    assert_eq!(out.code, Some(1));
    let lines: Vec<_> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.stderr);
    assert!(lines[0].starts_with(&format!("error: {path}:2:11: listen address")));
    assert!(lines[1].starts_with(&format!("error: {path}:14:24: route /v1 goes to undefined")));
}

#[test]
fn duplicate_clients_keys_are_not_echoed() {
    let text = VALID.replace(
        "clients:\n",
        &format!("clients:\n  - {{ name: twin, key: {{ env: {KEY_VAR} }} }}\n"),
    );
    let (out, _) = check(&text);
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr.contains("has the same key as client `twin`"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains(KEY_VALUE) && !out.stdout.contains(KEY_VALUE));
}

#[test]
fn unreadable_file_is_an_error() {
    let out = lingo(&["check", "/nonexistent/lingo/proxy.yaml"], |_| {});
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr
            .starts_with("error: /nonexistent/lingo/proxy.yaml: cannot read the file"),
        "{}",
        out.stderr
    );
}

#[test]
fn shipped_proxy_yaml_passes_with_no_environment() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("proxy.yaml");
    let out = lingo(&["check", &path.display().to_string()], |c| {
        c.env_clear();
    });
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stdout.contains("clients: none (open proxy"),
        "{}",
        out.stdout
    );
}

#[test]
fn command_line_errors_exit_2_with_usage() {
    let out = lingo(&["--bogus"], |_| {});
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.starts_with("error: unknown option `--bogus`"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("usage:"), "{}", out.stderr);
}

/// The version, and the commit it was built from: git's, when the build had it.
#[test]
fn version_names_the_commit() {
    let out = lingo(&["--version"], |_| {});
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let line = out.stdout.trim();
    let commit = line
        .strip_prefix(concat!("lingo ", env!("CARGO_PKG_VERSION"), " (commit "))
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{line}"));
    let hash = commit.strip_suffix("-dirty").unwrap_or(commit);
    let git = Command::new("git")
        .args([
            "-C",
            env!("CARGO_MANIFEST_DIR"),
            "rev-parse",
            "--short=12",
            "HEAD",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success());
    match (std::env::var("LINGO_COMMIT"), git) {
        (Ok(set), _) if !set.trim().is_empty() => assert_eq!(commit, set.trim()),
        (_, Some(git)) => assert_eq!(hash, String::from_utf8_lossy(&git.stdout).trim()),
        (_, None) => assert_eq!(commit, "unknown"),
    }
}

/// What each `--help` says: what lingo is, its commands, options, environment and signals;
/// each command's own options.
#[test]
fn help_describes_lingo_and_each_command() {
    let cases: [(&[&str], &[&str]); 5] = [
        (
            &["--help"],
            &[
                "reverse proxy",
                "serve",
                "check",
                "mock",
                "--config PATH",
                "--log-format FORMAT",
                "--version",
                "LINGO_LOG_FORMAT",
                "RUST_LOG",
                "LINGO_WORKERS",
                "{ env: VAR }",
                "SIGHUP",
                "SIGTERM, SIGINT",
            ],
        ),
        (&["help"], &["reverse proxy", "SIGHUP"]),
        (
            &["check", "--help"],
            &["--no-secrets", "PATH", "FILE:LINE:COLUMN"],
        ),
        (
            &["help", "mock"],
            &["--listen ADDR", "--tokens N", "--cut-after N", "X-Mock"],
        ),
        (
            &["serve", "-h"],
            &["--config PATH", "SIGHUP", "LINGO_LOG_FORMAT"],
        ),
    ];
    for (args, words) in cases {
        let out = lingo(args, |_| {});
        assert_eq!(out.code, Some(0), "{args:?}: {}", out.stderr);
        for word in words {
            assert!(
                out.stdout.contains(word),
                "{args:?} lacks {word}:\n{}",
                out.stdout
            );
        }
    }
    let check = lingo(&["check", "--help"], |_| {}).stdout;
    assert!(
        !check.contains("--tokens") && !check.contains("SIGHUP"),
        "{check}"
    );
}

/// A command or option lingo does not know: exit 2, and every command named.
#[test]
fn unknown_commands_and_options_name_every_command() {
    for args in [
        &["start"][..],
        &["--bogus"],
        &["check", "--bogus"],
        &["mock", "--colour", "red"],
    ] {
        let out = lingo(args, |_| {});
        assert_eq!(out.code, Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{}", out.stdout);
        for command in ["lingo [serve]", "lingo check", "lingo mock", "lingo help"] {
            assert!(out.stderr.contains(command), "{args:?}: {}", out.stderr);
        }
    }
    let out = lingo(&["start"], |_| {});
    assert!(
        out.stderr.starts_with(
            "error: unknown command `start`; the commands are serve (the default), check, mock and help"
        ),
        "{}",
        out.stderr
    );
    let out = lingo(&["mock", "--colour", "red"], |_| {});
    assert!(
        out.stderr.starts_with("error: unknown mock knob `colour`"),
        "{}",
        out.stderr
    );
    let out = lingo(&["mock"], |c| {
        c.env("LINGO_LOG_FORMAT", "xml");
    });
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr
            .starts_with("error: LINGO_LOG_FORMAT is `xml`; it is json or text"),
        "{}",
        out.stderr
    );
}

/// Output to a reader that has gone away (`lingo --help | head -1`): exit 0, nothing on
/// stderr, no panic. The pipe's reading end is closed before lingo starts, so every write
/// meets it closed.
#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("proxy.yaml");
    std::fs::write(&path, VALID).unwrap();
    let path = path.display().to_string();
    for args in [
        &["--help"][..],
        &["--version"],
        &["check", &path],
        &["mock", "--help"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_lingo"))
            .args(args)
            .env(KEY_VAR, KEY_VALUE)
            .stdout(writer)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}

/// Mis-indented keys and list entries are told at their own line, as mis-indented, with the
/// column that fixes them: (the table, the line, words the message has).
#[test]
fn mis_indented_lines_are_told_at_their_own_line() {
    let upstream = "listen:\n  - addr: 127.0.0.1:8080\nupstreams:\n  models:\n";
    let routes = "routes:\n  - { prefix: /api, to: models }\n";
    let cases = [
        // A key one level too deep under an upstream (after a value).
        (
            format!("{upstream}    url: http://127.0.0.1:11434\n      speaks: native\n{routes}"),
            6,
            "`speaks` is mis-indented: at column 7 it is read as part of `url` (line 5); move it to column 5, in line with `url` (line 5)",
        ),
        // ...with a comment after the value.
        (
            format!(
                "{upstream}    url: http://127.0.0.1:11434 # local\n      speaks: native\n{routes}"
            ),
            6,
            "move it to column 5, in line with `url` (line 5)",
        ),
        // A key one level too shallow: read as an upstream of its own.
        (
            format!("{upstream}    url: http://127.0.0.1:11434\n  speaks: native\n{routes}"),
            6,
            "`speaks` is mis-indented: at column 3 it is read as part of `upstreams` (line 3); move it to column 5, in line with `url` (line 5)",
        ),
        // A key that belongs under the one above it.
        (
            format!(
                "{upstream}    url: http://127.0.0.1:11434\n    speaks: native\n    timeouts:\n    connect: 5s\n{routes}"
            ),
            8,
            "`connect` is mis-indented: at column 5 it is read as part of `models` (line 4); move it to column 7, under `timeouts` (line 7)",
        ),
        // Between two levels.
        (
            format!("{upstream}    url: http://127.0.0.1:11434\n   speaks: native\n{routes}"),
            6,
            "`speaks` is mis-indented: at column 4",
        ),
        // A route's key too shallow, and too deep.
        (
            format!(
                "{upstream}    mock: {{}}\n    speaks: native\nroutes:\n  - prefix: /api\n  to: models\n"
            ),
            9,
            "`to` is mis-indented: at column 3 it is read as part of `routes` (line 7); move it to column 5, in line with `prefix` (line 8)",
        ),
        (
            format!(
                "{upstream}    mock: {{}}\n    speaks: native\nroutes:\n  - prefix: /api\n     to: models\n"
            ),
            9,
            "`to` is mis-indented: at column 6",
        ),
        // A route entry out of line with the one above it.
        (
            format!(
                "{upstream}    mock: {{}}\n    speaks: native\n{routes}   - {{ prefix: /v1, to: models }}\n"
            ),
            9,
            "this list entry is mis-indented: at column 4 it is read as part of the list entry on line 8; move it to column 3, in line with the entry on line 8",
        ),
        (
            format!(
                "{upstream}    mock: {{}}\n    speaks: native\n{routes} - {{ prefix: /v1, to: models }}\n"
            ),
            9,
            "move it to column 3, in line with the entry on line 8",
        ),
        // A tab.
        (
            format!("{upstream}\tmock: {{}}\n    speaks: native\n{routes}"),
            5,
            "indented with a tab; YAML indents with spaces only",
        ),
    ];
    for (text, line, words) in cases {
        let (out, path) = check(&text);
        assert_eq!(out.code, Some(1), "{text}\n{}", out.stdout);
        let lines: Vec<_> = out.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{}", out.stderr);
        let at = format!("error: {path}:{line}:");
        assert!(
            lines[0].starts_with(&at),
            "{text}\nwanted {at}, got {}",
            lines[0]
        );
        assert!(
            lines[0].contains(words),
            "{text}\nwanted {words:?}, got {}",
            lines[0]
        );
    }
    // What is no mis-indentation keeps the parser's own words.
    let (out, path) = check(&VALID.replace("speaks: native", "speaks: native, retries: 3"));
    assert!(
        out.stderr
            .starts_with(&format!("error: {path}:6:58: unknown field `retries`")),
        "{}",
        out.stderr
    );
}

/// `--no-secrets`: `{ env }` and `{ file }` secrets are checked for their shape, not read, so
/// a table checks where its keys are not set; a malformed one is still an error.
#[test]
fn no_secrets_checks_the_shape_of_secrets_without_reading_them() {
    let text = VALID
        .replace(
            "key: { env: LINGO_TEST_CHECK_CLI_KEY }",
            &format!("key: {{ env: {UNSET_VAR} }}"),
        )
        .replace(
            "bearer: { env: LINGO_TEST_CHECK_CLI_KEY }",
            "bearer: { file: /nonexistent/lingo/scrape.key }",
        );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("proxy.yaml");
    std::fs::write(&path, &text).unwrap();
    let path = path.display().to_string();

    let read = lingo(&["check", &path], |_| {});
    assert_eq!(read.code, Some(1), "{}", read.stdout);
    assert!(read.stderr.contains("is not set"), "{}", read.stderr);
    assert!(
        read.stderr.contains("cannot read secret file"),
        "{}",
        read.stderr
    );

    let shape = lingo(&["check", "--no-secrets", &path], |_| {});
    assert_eq!(shape.code, Some(0), "{}", shape.stderr);
    for expected in [
        format!("{path}: OK"),
        "key from file /nonexistent/lingo/scrape.key".into(),
        "clients: 1 (dev)".into(),
        "secrets: not read (--no-secrets)".into(),
    ] {
        assert!(
            shape.stdout.contains(&expected),
            "missing {expected:?} in:\n{}",
            shape.stdout
        );
    }

    for (bad, reason) in [
        ("{ env: A, file: b }", "a secret is exactly one of"),
        ("{ env: \"\" }", "`` is not an environment variable name"),
        (
            "{ env: \"A=B\" }",
            "`A=B` is not an environment variable name",
        ),
        ("{ file: \"\" }", "the secret's `file:` is empty"),
    ] {
        let text = text.replace(
            &format!("key: {{ env: {UNSET_VAR} }}"),
            &format!("key: {bad}"),
        );
        std::fs::write(&path, &text).unwrap();
        let out = lingo(&["check", "--no-secrets", &path], |_| {});
        assert_eq!(out.code, Some(1), "{bad}: {}", out.stdout);
        let expected = format!("error: {path}:4:");
        assert!(out.stderr.starts_with(&expected), "{bad}: {}", out.stderr);
        assert!(out.stderr.contains(reason), "{bad}: {}", out.stderr);
    }
}

/// The summary names the admin listener, or says the admin endpoints share the listeners.
#[test]
fn the_summary_names_the_admin_listener() {
    let (out, _) = check(&format!(
        "{VALID}admin: {{ addr: 127.0.0.1:9091, require_key: true }}\n"
    ));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stdout.contains(
            "admin: 127.0.0.1:9091  http  /healthz, /readyz, /metrics; /readyz and /metrics need a client key"
        ),
        "{}",
        out.stdout
    );
    let (out, _) = check(VALID);
    assert!(
        out.stdout.contains(
            "admin: no listener of its own; /healthz, /readyz, /metrics on the listen addresses"
        ),
        "{}",
        out.stdout
    );
}

/// A web-data upstream's webhook relay is shown: relayed or not, the receiver, which
/// signatures are checked and made, the schedule, the allowed ranges and the store; its
/// secrets never.
#[test]
fn the_summary_shows_a_webhook_relay() {
    let relay = VALID.replace(
        "    auth: { bearer: { env: LINGO_TEST_CHECK_CLI_KEY } }\n",
        "    auth: { bearer: { env: LINGO_TEST_CHECK_CLI_KEY } }\n    webhooks:\n      \
         relay: true\n      receiver: https://proxy.example.com\n      \
         verify: { value: up-secret-never-printed }\n      sign: { value: sign-never-printed }\n      \
         retry: [30s, 2m]\n      allow: [10.0.0.0/8]\n      store: hooks.redb\n",
    );
    assert_ne!(relay, VALID);
    let (out, path) = check(&relay);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let store = Path::new(&path).with_file_name("hooks.redb");
    for expected in [
        "webhooks: relayed through lingo's receiver; receiver https://proxy.example.com/"
            .to_owned(),
        "upstream's signature checked; deliveries signed".to_owned(),
        format!(
            "retry [30s, 120s], timeout 10s, private destinations allowed: 10.0.0.0/8; store {}",
            store.display()
        ),
    ] {
        assert!(
            out.stdout.contains(&expected),
            "missing {expected:?} in:\n{}",
            out.stdout
        );
    }
    assert!(!out.stdout.contains("never-printed"), "{}", out.stdout);
    let (out, _) = check(VALID);
    assert!(!out.stdout.contains("webhooks"), "{}", out.stdout);
}

/// A table with no client keys on an address beyond loopback is an open proxy: an error
/// naming the listen entry and both fixes, unless the entry says `allow_open: true`, which
/// is warned about; loopback addresses and tables with keys are not concerned.
#[test]
fn open_addresses_without_client_keys_need_allow_open() {
    let open = |addr: &str, extra: &str| {
        format!(
            "listen:\n  - addr: 127.0.0.1:8080\n  - addr: {addr}\n{extra}upstreams:\n  ollama: {{ url: http://127.0.0.1:11434, speaks: native }}\nroutes:\n  - {{ prefix: /api, to: ollama }}\n"
        )
    };
    for addr in [
        "0.0.0.0:8081",
        "\"[::]:8081\"",
        "192.168.1.5:8081",
        "\"[2001:db8::1]:8081\"",
    ] {
        let (out, path) = check(&open(addr, ""));
        assert_eq!(out.code, Some(1), "{addr}: {}", out.stdout);
        let addr = addr.trim_matches('"');
        let expected = format!(
            "error: {path}:3:5: listen {addr} is an open proxy: the table has no client keys, so anyone who reaches this address may use every upstream, with the keys lingo holds for them; add keys under `clients:`, or `allow_open: true` on this listen entry if that is meant"
        );
        assert_eq!(out.stderr.trim_end(), expected);
    }
    let (out, _) = check(&open("0.0.0.0:8081\n    allow_open: true", ""));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stdout.contains("OPEN PROXY: listen 0.0.0.0:8081 has `allow_open: true` and the table has no client keys"),
        "{}",
        out.stdout
    );
    for (addr, extra) in [
        ("127.0.0.2:8081", ""),
        ("\"[::1]:8081\"", "clients: []\n"),
        ("\"[::ffff:127.0.0.1]:8081\"", ""),
        (
            "0.0.0.0:8081",
            "clients:\n  - { name: dev, key: { env: LINGO_TEST_CHECK_CLI_KEY } }\n",
        ),
    ] {
        let (out, _) = check(&open(addr, extra));
        assert_eq!(out.code, Some(0), "{addr}: {}", out.stderr);
        assert!(!out.stdout.contains("OPEN PROXY"), "{}", out.stdout);
    }
    let (out, _) = check(&open(
        "0.0.0.0:8081\n    allow_open: true",
        "clients:\n  - { name: dev, key: { env: LINGO_TEST_CHECK_CLI_KEY } }\n",
    ));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stdout
            .contains("listen 0.0.0.0:8081: allow_open has no effect"),
        "{}",
        out.stdout
    );
}

/// Start-up refuses an open proxy as it refuses any table that does not load: exit 1, one
/// log line that says why, nothing bound.
#[test]
fn start_up_refuses_an_open_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("proxy.yaml");
    std::fs::write(
        &path,
        "listen:\n  - addr: 0.0.0.0:0\nupstreams:\n  models: { mock: {}, speaks: native }\nroutes:\n  - { prefix: /api, to: models }\n",
    )
    .unwrap();
    let out = lingo(&["--config", &path.display().to_string()], |c| {
        c.env_remove("LINGO_LOG_FORMAT");
    });
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let lines: Vec<_> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    for words in [
        "level=ERROR",
        "msg=\"the route table does not load; nothing is served",
        "listen 0.0.0.0:0 is an open proxy",
        "`allow_open: true` on this listen entry",
    ] {
        assert!(lines[0].contains(words), "{words}: {}", lines[0]);
    }
    assert!(!out.stderr.contains("listening on"), "{}", out.stderr);
}

#[test]
fn an_upstreams_backends_are_listed_with_how_they_are_used() {
    let (out, _) = check(
        "\
listen:
  - addr: 127.0.0.1:8080
upstreams:
  models:
    speaks: native
    backends:
      - { url: http://gpu-a:11434 }
      - { url: http://gpu-b:11434, weight: 2 }
      - { url: http://cpu-box:11434, priority: 1 }
    balance: { sticky: { header: X-Session-Id } }
routes:
  - { prefix: /api, to: models }
",
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    for expected in [
        "models  3 backends  speaks native",
        "backend http://gpu-a:11434/  weight 1, priority 0",
        "backend http://gpu-b:11434/  weight 2, priority 0",
        "backend http://cpu-box:11434/  weight 1, priority 1",
        "balance sticky on x-session-id; probed every 5s, ejected after 3 failures for 30s; retry budget 20%",
    ] {
        assert!(
            out.stdout.contains(expected),
            "missing {expected:?} in:\n{}",
            out.stdout
        );
    }
}
