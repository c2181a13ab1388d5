//! Golden files: native NDJSON streams in, chat-completions (and completions) SSE out, through the same
//! `Reframe`/`Merged` bodies lingo serves, whole and split at every byte boundary.
//! See `tests/fixtures/README.md`.

use std::path::Path;

use bytes::Bytes;
use http_body_util::BodyExt;
use lingo::http::body::Body;
use lingo::observe::RequestStats;
use lingo::proxy::run::reframe::{Merged, Reframe};
use lingo::translate::Meta;
use lingo::translate::chat::ChatStream;
use lingo::translate::completions::CompletionStream;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

fn meta() -> Meta {
    Meta {
        id: "chatcmpl-golden".into(),
        created: 1_700_000_000,
        model: "gpt-4o-mini".into(),
    }
}

/// The SSE lingo makes of `chunks`, with synthesised tool-call ids made readable:
/// `/api/generate` streams (files named `generate_*`) as completions, the rest as chat.
async fn reframe(name: &str, chunks: Vec<Bytes>) -> String {
    let body = Body::pieces(chunks);
    let bytes = if name.starts_with("generate_") {
        let meta = Meta {
            id: "cmpl-golden".into(),
            created: 1_700_000_000,
            model: "gpt-3.5-turbo-instruct".into(),
        };
        let stream = CompletionStream::new(&meta, 0, true, None);
        Merged::new(
            vec![Reframe::new(body, 1 << 20, stream)],
            Box::new(|_| vec![lingo::translate::sse::done()]),
            RequestStats::new(),
        )
        .collect()
        .await
    } else {
        let stream = ChatStream::new(&meta(), 0, true);
        Merged::new(
            vec![Reframe::new(body, 1 << 20, stream)],
            Box::new(|_| vec![lingo::translate::sse::done()]),
            RequestStats::new(),
        )
        .collect()
        .await
    };
    normalise_ids(std::str::from_utf8(&bytes.unwrap().to_bytes()).unwrap())
}

fn normalise_ids(sse: &str) -> String {
    let mut out = String::with_capacity(sse.len());
    let mut rest = sse;
    while let Some(at) = rest.find("\"call_") {
        let (head, tail) = rest.split_at(at + 6);
        out.push_str(head);
        let id_len = tail.find('"').unwrap_or(0);
        let id = &tail[..id_len];
        if id.len() == 24 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
            out.push_str("<synthesised>");
        } else {
            out.push_str(id);
        }
        rest = &tail[id_len..];
    }
    out.push_str(rest);
    out
}

#[tokio::test]
async fn golden_streams() {
    let bless = std::env::var_os("LINGO_BLESS").is_some();
    let mut names: Vec<_> = std::fs::read_dir(Path::new(FIXTURES).join("native"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    assert!(names.len() >= 8);
    for native in names {
        let name = native.file_stem().unwrap().to_str().unwrap().to_owned();
        let input = Bytes::from(std::fs::read(&native).unwrap());
        let whole = reframe(&name, vec![input.clone()]).await;
        let expected_path = Path::new(FIXTURES)
            .join("expected")
            .join(format!("{name}.sse"));
        if bless {
            std::fs::write(&expected_path, &whole).unwrap();
        }
        let expected = std::fs::read_to_string(&expected_path)
            .unwrap_or_else(|_| panic!("{expected_path:?} is missing: run with LINGO_BLESS=1"));
        assert_eq!(whole, expected, "{name}");
        for i in 0..=input.len() {
            let split = reframe(&name, vec![input.slice(..i), input.slice(i..)]).await;
            assert_eq!(split, expected, "{name} split at byte {i}");
        }
        let bytewise = reframe(
            &name,
            (0..input.len()).map(|i| input.slice(i..i + 1)).collect(),
        )
        .await;
        assert_eq!(bytewise, expected, "{name} one byte at a time");
    }
}

#[tokio::test]
async fn a_line_over_the_cap_is_an_upstream_error() {
    let stream = ChatStream::new(&meta(), 0, false);
    let line = Bytes::from(format!(
        "{{\"message\":{{\"content\":\"{}\"}},\"done\":false}}\n",
        "x".repeat(100)
    ));
    let body = Merged::new(
        vec![Reframe::new(Body::pieces(vec![line]), 64, stream)],
        Box::new(|_| vec![lingo::translate::sse::done()]),
        RequestStats::new(),
    );
    let out = String::from_utf8(body.collect().await.unwrap().to_bytes().to_vec()).unwrap();
    assert!(out.contains("longer than 64 bytes"), "{out}");
    assert!(!out.contains("[DONE]"));
}
