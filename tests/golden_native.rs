//! Golden files for native clients over a chat-completions upstream: SSE streams as a
//! chat-completions server sends them (`tests/fixtures/sse/*.sse`) in, native NDJSON out
//! (`tests/fixtures/expected/native/*.ndjson`), through the `LineFramer` and `NativeStream`,
//! whole, split at every byte boundary, and one byte at a time. A stream that fails ends with
//! the native error line and no `done: true` line, as the shell will write it.
//! The same files also go through the shell's own `Reframe` body, as a `LineTranslator`.
//! `LINGO_BLESS=1 cargo test --test golden_native` rewrites the expected files.

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use lingo::http::body::Body;
use lingo::proxy::run::reframe::Reframe;
use lingo::translate::native::{Meta, NativeStream, Output, Stamp};
use lingo::translate::ndjson::LineFramer;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

/// A stream with a clock that ticks 100 ms a line: `generate_*` files as `/api/generate`.
fn stream(name: &str) -> NativeStream {
    let output = if name.starts_with("generate_") {
        Output::Generate
    } else {
        Output::Chat
    };
    let meta = Meta {
        model: "alias:latest".into(),
        output,
    };
    let mut ticks = 0;
    NativeStream::new(
        meta,
        Box::new(move || {
            ticks += 1;
            Stamp {
                created_at: format!("2026-01-01T00:00:0{ticks}Z"),
                elapsed: Duration::from_millis(100 * ticks),
            }
        }),
    )
}

/// What the shell sends a native client for `chunks` of the upstream body.
fn translate(name: &str, chunks: &[Bytes]) -> String {
    let mut stream = stream(name);
    let mut framer = LineFramer::new(1 << 20);
    let mut out = Vec::new();
    let mut failed = None;
    'body: for chunk in chunks {
        framer.push(chunk);
        while let Some(line) = framer.next_line() {
            match stream.on_line(line.unwrap()) {
                Ok(lines) => out.extend(lines),
                Err(e) => {
                    failed = Some(e.to_string());
                    break 'body;
                }
            }
        }
    }
    if failed.is_none() {
        let last = framer.finish().map(|l| stream.on_line(l.unwrap()));
        match last.unwrap_or(Ok(Vec::new())).and_then(|l| {
            out.extend(l);
            stream.finish()
        }) {
            Ok(lines) => out.extend(lines),
            Err(e) => failed = Some(e.to_string()),
        }
    }
    if let Some(message) = failed {
        out.push(stream.error_frame(&message));
    }
    out.iter()
        .map(|b| std::str::from_utf8(b).unwrap())
        .collect()
}

#[test]
fn golden_native_streams() {
    let bless = std::env::var_os("LINGO_BLESS").is_some();
    let mut inputs: Vec<_> = std::fs::read_dir(Path::new(FIXTURES).join("sse"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    inputs.sort();
    assert!(inputs.len() >= 6);
    for input in inputs {
        let name = input.file_stem().unwrap().to_str().unwrap().to_owned();
        let bytes = Bytes::from(std::fs::read(&input).unwrap());
        let whole = translate(&name, std::slice::from_ref(&bytes));
        let expected_path = Path::new(FIXTURES)
            .join("expected/native")
            .join(format!("{name}.ndjson"));
        if bless {
            std::fs::write(&expected_path, &whole).unwrap();
        }
        let expected = std::fs::read_to_string(&expected_path)
            .unwrap_or_else(|_| panic!("{expected_path:?} is missing: run with LINGO_BLESS=1"));
        assert_eq!(whole, expected, "{name}");
        for i in 0..=bytes.len() {
            let split = translate(&name, &[bytes.slice(..i), bytes.slice(i..)]);
            assert_eq!(split, expected, "{name} split at byte {i}");
        }
        let bytewise: Vec<Bytes> = (0..bytes.len()).map(|i| bytes.slice(i..i + 1)).collect();
        assert_eq!(
            translate(&name, &bytewise),
            expected,
            "{name} one byte at a time"
        );
    }
}

/// The same files through the shell's own `Reframe` body: the translator fits it as it is.
#[tokio::test]
async fn golden_native_streams_through_reframe() {
    let mut inputs: Vec<_> = std::fs::read_dir(Path::new(FIXTURES).join("sse"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    inputs.sort();
    for input in inputs {
        let name = input.file_stem().unwrap().to_str().unwrap().to_owned();
        let bytes = Bytes::from(std::fs::read(&input).unwrap());
        let expected_path = Path::new(FIXTURES)
            .join("expected/native")
            .join(format!("{name}.ndjson"));
        let expected = std::fs::read_to_string(&expected_path).unwrap();
        for chunks in [
            vec![bytes.clone()],
            (0..bytes.len()).map(|i| bytes.slice(i..i + 1)).collect(),
        ] {
            let body = Reframe::new(Body::pieces(chunks), 1 << 20, stream(&name));
            let out = body.collect().await.unwrap().to_bytes();
            assert_eq!(std::str::from_utf8(&out).unwrap(), expected, "{name}");
        }
    }
}
