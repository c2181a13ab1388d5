//! The SSE writer and the NDJSON -> SSE re-framer lingo serves translated streams through:
//! arbitrary upstream bytes give well-formed `data:` frames ending in `[DONE]` or one error
//! frame, the same however the bytes were chunked; any JSON value is one frame.

#![no_main]

use std::pin::pin;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http_body::Body as _;
use libfuzzer_sys::fuzz_target;
use lingo::body::Body;
use lingo::inference::reframe::{Merged, Reframe, Translator};
use lingo::metrics::RequestStats;
use lingo::translate::chat::{ChatStream, ResponseMeta};
use lingo::translate::completions::{CompletionStream, Meta};
use lingo::translate::sse;
use serde_json::Value;

fuzz_target!(|input: &[u8]| {
    let Some((&mode, data)) = input.split_first() else {
        return;
    };
    // The SSE writer on its own.
    if let Ok(value) = serde_json::from_slice::<Value>(data) {
        one_frame(&sse::data(&value));
    }
    let text = String::from_utf8_lossy(data);
    one_frame(&sse::error_frame(&text, &text, &text));

    let max_line = if mode & 1 == 0 {
        1 << 20
    } else {
        usize::from(mode >> 1) + 1
    };
    let whole = vec![Bytes::copy_from_slice(data)];
    let split = chunks(data, mode);
    let (a, b) = if mode & 2 == 0 {
        let meta = ResponseMeta {
            id: "chatcmpl-fuzz".into(),
            created: 0,
            model: "m".into(),
        };
        let make = || ChatStream::new(&meta, 0, mode & 4 == 0);
        (
            reframe(whole, max_line, make()),
            reframe(split, max_line, make()),
        )
    } else {
        let meta = Meta {
            id: "cmpl-fuzz".into(),
            created: 0,
            model: "m".into(),
        };
        let echo = (mode & 4 == 0).then(|| "echo".to_owned());
        let make = || CompletionStream::new(&meta, 0, mode & 8 == 0, echo.clone());
        (
            reframe(whole, max_line, make()),
            reframe(split, max_line, make()),
        )
    };
    let a: Vec<Value> = a.iter().map(|f| normalised(one_frame(f))).collect();
    let b: Vec<Value> = b.iter().map(|f| normalised(one_frame(f))).collect();
    assert_eq!(a, b, "chunking changed the stream");
    let done = a.iter().position(|e| e == "[DONE]");
    let error = a.iter().position(|e| e.get("error").is_some());
    match (done, error) {
        (Some(i), None) | (None, Some(i)) => assert_eq!(i, a.len() - 1, "{a:?}"),
        _ => panic!("a stream ends with [DONE] xor an error frame: {a:?}"),
    }
});

fn reframe<T: Translator>(pieces: Vec<Bytes>, max_line: usize, translator: T) -> Vec<Bytes> {
    let body = Merged::new(
        vec![Reframe::new(Body::pieces(pieces), max_line, translator)],
        None,
        RequestStats::new(),
    );
    let mut body = pin!(body);
    let mut cx = Context::from_waker(Waker::noop());
    let mut frames = Vec::new();
    loop {
        match body.as_mut().poll_frame(&mut cx) {
            Poll::Ready(Some(Ok(frame))) => frames.extend(frame.into_data().ok()),
            Poll::Ready(Some(Err(e))) => panic!("the re-framed body failed: {e}"),
            Poll::Ready(None) => return frames,
            Poll::Pending => panic!("a body of ready pieces waited"),
        }
    }
}

/// The payload of one `data:` frame on one line.
fn one_frame(frame: &[u8]) -> Value {
    let text = std::str::from_utf8(frame).expect("frames are UTF-8");
    let body = text
        .strip_prefix("data: ")
        .and_then(|t| t.strip_suffix("\n\n"))
        .unwrap_or_else(|| panic!("not one data frame: {text:?}"));
    assert!(!body.contains(['\n', '\r']), "{text:?}");
    if body == "[DONE]" {
        return Value::from("[DONE]");
    }
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body:?}"))
}

/// Synthesised tool-call ids are random: blank them before comparing.
fn normalised(mut v: Value) -> Value {
    if let Some(choices) = v.get_mut("choices").and_then(Value::as_array_mut) {
        for choice in choices {
            if let Some(calls) = choice
                .pointer_mut("/delta/tool_calls")
                .and_then(Value::as_array_mut)
            {
                for call in calls {
                    call["id"] = Value::Null;
                }
            }
        }
    }
    v
}

fn chunks(data: &[u8], seed: u8) -> Vec<Bytes> {
    let mut state = u32::from(seed) | 1;
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let len = (state as usize % 23).min(rest.len());
        let (piece, tail) = rest.split_at(len);
        out.push(Bytes::copy_from_slice(piece));
        rest = tail;
    }
    out
}
