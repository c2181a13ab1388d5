//! lingo's log as a program reads it: every line of a run (start-up, access lines, a refused
//! reload, shutdown) is one logfmt line (the default) or one JSON object (`--log-format
//! json`, `LINGO_LOG_FORMAT=json`), with the same keys either way.

#![cfg(unix)]

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::Method;
use serde_json::Value;
use support::*;

/// A line's keys and values: JSON's as they are; logfmt's values as strings.
type Fields = BTreeMap<String, Value>;

/// A `lingo` child process and everything it wrote to stderr.
struct Run {
    child: Child,
    addr: SocketAddr,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Run {
    /// `lingo ARGS...` with `env` set, once it says where it listens.
    fn start(args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lingo"))
            .args(args)
            .env_remove("LINGO_LOG_FORMAT")
            .env_remove("RUST_LOG")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let kept = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("listening on ").nth(1) {
                    let addr: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_digit() || matches!(c, '.' | ':'))
                        .collect();
                    let _ = addr_tx.send(addr.parse::<SocketAddr>().unwrap());
                }
                kept.lock().unwrap().push(line);
            }
        });
        let addr = addr_rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("lingo did not start: {:?}", lines.lock().unwrap()));
        Run { child, addr, lines }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits until a line contains `needle` (failing the test if none does for long).
    async fn wait_for(&self, needle: &str) {
        for _ in 0..1500 {
            if self.text().contains(needle) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("no line with {needle:?}:\n{}", self.text());
    }

    fn text(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }

    /// Stops it with SIGTERM; every line it wrote.
    async fn stop(mut self) -> Vec<String> {
        self.signal("TERM");
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status:?}");
        // The reading thread ends at the pipe's end, a moment after the exit.
        for _ in 0..200 {
            if self.text().contains("all connections drained") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.lines.lock().unwrap().clone()
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads a logfmt line: `key=value` pairs separated by spaces, a value bare (no space, `=`
/// or `"`) or quoted with `\"`, `\\`, `\n`, `\r`, `\t` and `\uXXXX` escapes. Anything else is
/// an error.
fn logfmt(line: &str) -> Result<Fields, String> {
    let mut fields = Fields::new();
    let mut rest = line;
    while !rest.is_empty() {
        let (key, after) = rest.split_once('=').ok_or("a key without `=`")?;
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.:".contains(c))
        {
            return Err(format!("bad key `{key}`"));
        }
        let (value, after) = match after.strip_prefix('"') {
            Some(quoted) => unquote(quoted)?,
            None => {
                let end = after.find(' ').unwrap_or(after.len());
                let value = &after[..end];
                if value.is_empty()
                    || value.contains(['=', '"'])
                    || value.chars().any(char::is_control)
                {
                    return Err(format!("bad bare value `{value}`"));
                }
                (value.to_owned(), &after[end..])
            }
        };
        if fields
            .insert(key.to_owned(), Value::String(value))
            .is_some()
        {
            return Err(format!("`{key}` twice"));
        }
        rest = match after.strip_prefix(' ') {
            Some(next) if !next.is_empty() => next,
            None if after.is_empty() => after,
            _ => return Err(format!("no single space after `{key}`")),
        };
    }
    Ok(fields)
}

/// A quoted value's text (after its opening quote) and what follows its closing quote.
fn unquote(text: &str) -> Result<(String, &str), String> {
    let mut value = String::new();
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => return Ok((value, &text[at + 1..])),
            '\\' => match chars.next().map(|(_, c)| c) {
                Some('"') => value.push('"'),
                Some('\\') => value.push('\\'),
                Some('n') => value.push('\n'),
                Some('r') => value.push('\r'),
                Some('t') => value.push('\t'),
                Some('u') => {
                    let hex: String = (0..4)
                        .filter_map(|_| chars.next().map(|(_, c)| c))
                        .collect();
                    let code = u32::from_str_radix(&hex, 16).map_err(|_| "bad \\u escape")?;
                    value.push(char::from_u32(code).ok_or("bad \\u escape")?);
                }
                other => return Err(format!("bad escape {other:?}")),
            },
            c if c.is_control() => return Err("a raw control character".into()),
            c => value.push(c),
        }
    }
    Err("no closing quote".into())
}

/// Every line, read as `json` or logfmt; fails on the first that is neither.
fn read_all(lines: &[String], json: bool) -> Vec<Fields> {
    let read = |line: &String| -> Fields {
        let fields = if json {
            serde_json::from_str::<Fields>(line).map_err(|e| e.to_string())
        } else {
            logfmt(line)
        };
        let fields = fields.unwrap_or_else(|e| panic!("{e}: {line}"));
        for key in ["time", "level", "target"] {
            assert!(fields.contains_key(key), "no {key}: {line}");
        }
        fields
    };
    lines.iter().map(read).collect()
}

/// A value as text: a string's own, a number's digits.
fn text(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "<absent>".into(),
    }
}

/// The first line whose `key` is `value`.
fn find<'a>(lines: &'a [Fields], key: &str, value: &str) -> &'a Fields {
    lines
        .iter()
        .find(|f| text(f.get(key)) == value)
        .unwrap_or_else(|| panic!("no line with {key}={value:?} in {lines:#?}"))
}

const REQUEST_ID: &str = r#"rid one "two"=3"#;

/// A run with a served request, a refused one, a refused reload and a shutdown: what
/// its lines must hold, whichever the format.
async fn a_run_logs(args: &[&str], env: &[(&str, &str)], json: bool) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("proxy.yaml");
    let good = table(
        "clients:\n  - { name: app, key: { value: k-logs } }\n\
         upstreams:\n  models:\n    mock: { tokens: 2 }\n    speaks: native\n\
         routes:\n  - { prefix: /api, to: models }\n",
    );
    std::fs::write(&config, &good).unwrap();
    let config_arg = config.display().to_string();
    let mut all_args = args.to_vec();
    all_args.extend(["--config", &config_arg]);
    let lingo = Run::start(&all_args, env);
    let key = ("authorization", "Bearer k-logs");
    let response = send(request(
        Method::GET,
        &lingo.url("/api/tags"),
        &[key, ("x-request-id", REQUEST_ID)],
        "",
    ))
    .await;
    assert_eq!(response.status, 200, "{}", response.body);
    let refused = send(request(Method::GET, &lingo.url("/api/tags"), &[], "")).await;
    assert_eq!(refused.status, 401);
    // Two problems: one line, both in its `errors`.
    std::fs::write(
        &config,
        good.replace("to: models", "to: nobody") + "limits: { drain: forever }\n",
    )
    .unwrap();
    lingo.signal("HUP");
    lingo.wait_for("refused").await;
    lingo.wait_for("missing client key").await;
    let lines = lingo.stop().await;
    let all = read_all(&lines, json);

    let started = find(&all, "target", "lingo::server");
    assert!(
        text(started.get("msg")).starts_with("listening on 127.0.0.1:"),
        "{started:?}"
    );
    assert_eq!(text(started.get("level")), "INFO");

    let access = find(&all, "request_id", REQUEST_ID);
    for (key, value) in [
        ("target", "lingo::access"),
        ("method", "GET"),
        ("path", "/api/tags"),
        ("route", "prefix /api"),
        ("upstream", "models"),
        ("status", "200"),
        ("client", "app"),
        ("outcome", "complete"),
        ("error", ""),
    ] {
        assert_eq!(text(access.get(key)), value, "{key} in {access:?}");
    }
    let duration: f64 = text(access.get("duration_ms")).parse().unwrap();
    let bytes: u64 = text(access.get("bytes")).parse().unwrap();
    assert!(duration >= 0.0 && bytes > 0, "{access:?}");
    if json {
        assert!(
            access["status"].is_u64() && access["duration_ms"].is_number(),
            "{access:?}"
        );
    }
    let unauthorised = find(&all, "status", "401");
    assert!(
        text(unauthorised.get("error")).contains("missing client key"),
        "{unauthorised:?}"
    );

    let reload = find(&all, "target", "lingo::reload");
    assert_eq!(text(reload.get("level")), "ERROR", "{reload:?}");
    assert!(text(reload.get("msg")).contains("refused (SIGHUP); still serving generation 1"));
    let errors = text(reload.get("errors"));
    let problems: Vec<_> = errors.lines().collect();
    assert_eq!(problems.len(), 2, "{errors}");
    assert!(
        problems[0].contains("undefined upstream `nobody`"),
        "{errors}"
    );
    assert!(problems[1].contains("limits.drain"), "{errors}");
    assert_eq!(
        lines.iter().filter(|l| l.contains("nobody")).count(),
        1,
        "the refusal is one line: {lines:#?}"
    );
    assert!(
        lines.last().unwrap().contains("all connections drained"),
        "{lines:#?}"
    );
}

#[tokio::test]
async fn lines_are_logfmt_by_default_and_with_the_option_over_the_environment() {
    a_run_logs(&[], &[], false).await;
    a_run_logs(
        &["--log-format", "text"],
        &[("LINGO_LOG_FORMAT", "json")],
        false,
    )
    .await;
}

#[tokio::test]
async fn lines_are_json_objects_with_the_environment_or_the_option() {
    a_run_logs(&[], &[("LINGO_LOG_FORMAT", "json")], true).await;
    a_run_logs(&["serve", "--log-format", "json"], &[], true).await;
}

#[tokio::test]
async fn the_mock_logs_in_the_format_asked_for() {
    let mut mock = Run::start(
        &["mock", "--listen", "127.0.0.1:0", "--log-format", "json"],
        &[],
    );
    assert_eq!(get(&mock.url("/api/tags")).await.status, 200);
    mock.signal("TERM");
    let status = mock.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let lines = mock.lines.lock().unwrap().clone();
    let all = read_all(&lines, true);
    assert!(
        text(all[0].get("msg")).starts_with("mock backend listening on"),
        "{lines:?}"
    );
}

#[test]
fn the_logfmt_reader_refuses_what_is_not_logfmt() {
    assert_eq!(
        logfmt(r#"a=1 b="x y" c="q\"\\\n" d=é"#).unwrap(),
        Fields::from([
            ("a".into(), "1".into()),
            ("b".into(), "x y".into()),
            ("c".into(), "q\"\\\n".into()),
            ("d".into(), "é".into()),
        ])
    );
    for bad in [
        "a=x y",
        "route=prefix /api",
        "a=\"open",
        "a=1  b=2",
        "a=",
        "=1",
        "a=1 a=2",
        "a=b=c",
        "2026-01-01T00:00:00Z  INFO lingo::server: listening",
    ] {
        assert!(logfmt(bad).is_err(), "{bad}");
    }
}
