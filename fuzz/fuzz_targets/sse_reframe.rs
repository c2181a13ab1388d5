//! The SSE writer and the NDJSON -> SSE re-framer lingo serves translated streams through:
//! arbitrary upstream bytes give well-formed `data:` frames ending in `[DONE]` or one error
//! frame, the same however the bytes were chunked; any JSON value is one frame.

#![no_main]

#[path = "../../tests/support/hostile.rs"]
mod hostile;

use bytes::Bytes;
use hostile::{chunks, frame_payload, reframe, stream_shape, without_call_ids};
use libfuzzer_sys::fuzz_target;
use lingo::translate::Meta;
use lingo::translate::chat::ChatStream;
use lingo::translate::completions::CompletionStream;
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
    let split = chunks(data, mode, 22);
    let (a, b) = if mode & 2 == 0 {
        let meta = Meta {
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
    let a: Vec<Value> = a.iter().map(|f| without_call_ids(one_frame(f))).collect();
    let b: Vec<Value> = b.iter().map(|f| without_call_ids(one_frame(f))).collect();
    assert_eq!(a, b, "chunking changed the stream");
    if let Err(broken) = stream_shape(&a) {
        panic!("{broken}");
    }
});

/// The payload of one frame, which must be one `data:` line.
fn one_frame(frame: &[u8]) -> Value {
    frame_payload(frame).unwrap_or_else(|broken| panic!("{broken}"))
}
