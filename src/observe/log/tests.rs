use std::io::Write as _;
use std::sync::{Arc, Mutex};

use super::*;

struct Sink(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What `emit` logs in `format`.
fn capture(format: LogFormat, emit: impl FnOnce()) -> String {
    let buf = Arc::new(Mutex::new(Vec::new()));
    let writer = Arc::clone(&buf);
    let subscriber = tracing_subscriber::fmt()
        .event_format(Lines(format))
        .with_writer(move || Sink(Arc::clone(&writer)))
        .finish();
    tracing::subscriber::with_default(subscriber, emit);
    let mut out = buf.lock().unwrap();
    out.flush().unwrap();
    String::from_utf8(out.clone()).unwrap()
}

/// One event with a value of each kind that needs care.
fn awkward() {
    tracing::info!(
        target: "lingo::test",
        path = "/a b",
        n = 3u64,
        signed = -4i64,
        empty = "",
        quote = %"say \"hi\"",
        eq = "a=b",
        newline = "x\ny",
        escape = "\u{1b}[1m",
        backslash = "C:\\x",
        ok = true,
        ms = 1.046,
        whole = 2.0,
        plain = "prefix-/api",
        "listening on {}",
        "127.0.0.1:1"
    );
}

/// The line without its time (which changes).
fn after_time(line: &str) -> &str {
    let (time, rest) = line.split_once(' ').unwrap();
    assert!(time.starts_with("time=20") && time.ends_with('Z'), "{line}");
    rest
}

#[test]
fn text_lines_are_logfmt_with_values_quoted_only_when_needed() {
    let out = capture(LogFormat::Text, awkward);
    assert_eq!(out.lines().count(), 1, "{out}");
    assert_eq!(
        after_time(out.trim_end()),
        r#"level=INFO target=lingo::test msg="listening on 127.0.0.1:1" path="/a b" n=3 signed=-4 empty="" quote="say \"hi\"" eq="a=b" newline="x\ny" escape="\u001b[1m" backslash="C:\\x" ok=true ms=1.046 whole=2 plain=prefix-/api"#
    );
}

#[test]
fn json_lines_are_one_object_with_the_same_keys() {
    let out = capture(LogFormat::Json, awkward);
    assert_eq!(out.lines().count(), 1, "{out}");
    let value: serde_json::Value = serde_json::from_str(&out).unwrap();
    let expected = serde_json::json!({
        "time": value["time"],
        "level": "INFO",
        "target": "lingo::test",
        "msg": "listening on 127.0.0.1:1",
        "path": "/a b",
        "n": 3,
        "signed": -4,
        "empty": "",
        "quote": "say \"hi\"",
        "eq": "a=b",
        "newline": "x\ny",
        "escape": "\u{1b}[1m",
        "backslash": "C:\\x",
        "ok": true,
        "ms": 1.046,
        "whole": 2,
        "plain": "prefix-/api",
    });
    assert_eq!(value, expected);
    assert!(value["time"].as_str().unwrap().ends_with('Z'), "{out}");
    // The keys in the order the text line has them.
    let at = |key: &str| out.find(&format!("\"{key}\":")).unwrap();
    let keys = ["time", "level", "target", "msg", "path", "plain"];
    assert!(keys.windows(2).all(|w| at(w[0]) < at(w[1])), "{out}");
}

#[test]
fn the_message_comes_first_and_an_event_without_one_has_no_msg() {
    let text = capture(LogFormat::Text, || {
        tracing::warn!(target: "t", a = 1u64, message = "late");
        tracing::warn!(target: "t", a = 1u64);
    });
    let lines: Vec<_> = text.lines().map(after_time).collect();
    assert_eq!(
        lines,
        [
            "level=WARN target=t msg=late a=1",
            "level=WARN target=t a=1"
        ]
    );
    let json = capture(LogFormat::Json, || tracing::warn!(target: "t", a = 1u64));
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(value.get("msg").is_none(), "{json}");
}

#[test]
fn escapes_cover_every_control_character_and_the_line_separators() {
    let mut out = String::new();
    escape(&mut out, "a\u{0}b\u{7f}c\u{85}\u{2028}\u{2029}é\r\t").unwrap();
    assert_eq!(out, r"a\u0000b\u007fc\u0085\u2028\u2029é\r\t");
    let back: String = serde_json::from_str(&format!("\"{out}\"")).unwrap();
    assert_eq!(back, "a\u{0}b\u{7f}c\u{85}\u{2028}\u{2029}é\r\t");
}

#[test]
fn formats_are_named_json_or_text() {
    assert_eq!(LogFormat::parse("json"), Some(LogFormat::Json));
    assert_eq!(LogFormat::parse("text"), Some(LogFormat::Text));
    assert_eq!(LogFormat::parse("JSON"), None);
    assert_eq!(LogFormat::default(), LogFormat::Text);
}
