//! What the hostile-input properties need, written once for both searches for a
//! counterexample: the proptest cases (`tests/proptest_hostile.rs`, run in CI) and the
//! cargo-fuzz targets (`fuzz/`, which include this file by path).

#![allow(dead_code)] // each includer uses its own part

use std::pin::pin;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use lingo::http::body::Body;
use lingo::observe::RequestStats;
use lingo::proxy::run::reframe::{Merged, Reframe};
use lingo::translate::LineTranslator;
use lingo::translate::ndjson::{FrameError, LineFramer};
use serde_json::Value;

/// Runs the framer over `chunks`, stopping at the first error, as `Reframe` does.
pub fn framed(chunks: &[Bytes], max: usize) -> Vec<Result<Vec<u8>, FrameError>> {
    let mut framer = LineFramer::new(max);
    let mut out = Vec::new();
    for chunk in chunks {
        framer.push(chunk);
        while let Some(line) = framer.next_line() {
            let failed = line.is_err();
            out.push(line.map(|b| b.to_vec()));
            if failed {
                return out;
            }
        }
    }
    out.extend(framer.finish().map(|l| l.map(|b| b.to_vec())));
    out
}

/// `data` cut into pieces of at most `longest` bytes (some empty), their lengths drawn from a
/// small generator seeded by `seed`: the same input, chunked as a network might.
pub fn chunks(data: &[u8], seed: u8, longest: usize) -> Vec<Bytes> {
    let mut state = u32::from(seed) | 1;
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let len = (state as usize % (longest + 1)).min(rest.len());
        let (piece, tail) = rest.split_at(len);
        out.push(Bytes::copy_from_slice(piece));
        rest = tail;
    }
    out
}

/// One upstream body re-framed as lingo serves it (`Reframe` inside `Merged`), polled to its
/// end, cut into its SSE events (a body frame carries every event one upstream read brought):
/// the pieces are all ready, so the body never waits, and it never fails (a failure is an
/// error frame). Bytes after the last event's blank line are one more item, so that a cut
/// event shows.
pub fn reframe<T: LineTranslator>(
    pieces: Vec<Bytes>,
    max_line: usize,
    translator: T,
) -> Vec<Bytes> {
    let body = Merged::new(
        vec![Reframe::new(Body::pieces(pieces), max_line, translator)],
        Box::new(|_| vec![lingo::translate::sse::done()]),
        RequestStats::new(),
    );
    let mut body = pin!(body);
    let mut cx = Context::from_waker(Waker::noop());
    let mut stream = Vec::new();
    loop {
        match http_body::Body::poll_frame(body.as_mut(), &mut cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let data = frame.into_data().unwrap_or_default();
                // `Merged` interleaves streams frame by frame: a frame must end on an event.
                assert!(
                    data.ends_with(b"\n\n"),
                    "a frame cut inside an event: {data:?}"
                );
                stream.extend_from_slice(&data);
            }
            Poll::Ready(Some(Err(e))) => panic!("the re-framed body failed: {e}"),
            Poll::Ready(None) => return events(Bytes::from(stream)),
            Poll::Pending => panic!("a body of ready pieces waited"),
        }
    }
}

/// `stream` cut after each blank line.
fn events(mut stream: Bytes) -> Vec<Bytes> {
    let mut events = Vec::new();
    while let Some(end) = stream.windows(2).position(|w| w == b"\n\n") {
        events.push(stream.split_to(end + 2));
    }
    if !stream.is_empty() {
        events.push(stream);
    }
    events
}

/// The payload of one SSE frame (`[DONE]` as a string), or why it is not exactly one
/// `data:` line of JSON.
pub fn frame_payload(frame: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(frame).map_err(|e| format!("not UTF-8: {e}"))?;
    let body = text
        .strip_prefix("data: ")
        .and_then(|t| t.strip_suffix("\n\n"))
        .ok_or_else(|| format!("not one data frame: {text:?}"))?;
    if body.contains(['\n', '\r']) {
        return Err(format!("more than one line: {text:?}"));
    }
    if body == "[DONE]" {
        return Ok(Value::from("[DONE]"));
    }
    serde_json::from_str(body).map_err(|e| format!("{e}: {body:?}"))
}

/// Synthesised tool-call ids are random: blanked, so that two streams can be compared.
pub fn without_call_ids(mut v: Value) -> Value {
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

/// Percent-decodes `s` once (lossily), as an upstream's router would.
pub fn decode_once(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (b[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Fails with `message` unless `ok`.
fn ensure(ok: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if ok { Ok(()) } else { Err(message()) }
}

/// A translated stream's payloads end with `[DONE]` xor one error frame (with a message),
/// and nothing follows it.
pub fn stream_shape(events: &[Value]) -> Result<(), String> {
    let done_at = events.iter().position(|e| e == "[DONE]");
    let error_at = events.iter().position(|e| e.get("error").is_some());
    let last = events.len().wrapping_sub(1);
    match (done_at, error_at) {
        (Some(d), None) => ensure(d == last, || format!("[DONE] is not last: {events:?}")),
        (None, Some(e)) => {
            ensure(e == last, || {
                format!("the error frame is not last: {events:?}")
            })?;
            ensure(events[e]["error"]["message"].is_string(), || {
                format!("an error frame without a message: {events:?}")
            })
        }
        (None, None) => Err(format!(
            "neither [DONE] nor an error at the end: {events:?}"
        )),
        (Some(_), Some(_)) => Err(format!("both [DONE] and an error: {events:?}")),
    }
}

/// What path normalisation promises about `raw`, if it accepts it: an absolute path with no
/// empty or dot segment, no backslash, control byte, space or non-ASCII byte, no encoded
/// slash, backslash or dot, none of these after an upstream's own decoding either; and
/// normalising again changes nothing (nor does normalising a path with no `%` at all).
pub fn path_properties(raw: &str) -> Result<(), String> {
    let Ok(out) = lingo::http::path::normalize(raw) else {
        return Ok(());
    };
    let says = || format!("{raw:?} -> {out:?}");
    ensure(out.starts_with('/'), says)?;
    ensure(!out.contains("//") && !out.contains('\\'), says)?;
    let odd = |b: u8| b.is_ascii_control() || b == b' ' || b >= 0x80;
    ensure(!out.bytes().any(odd), says)?;
    let lower = out.to_ascii_lowercase();
    for encoded in ["%2f", "%5c", "%2e"] {
        ensure(!lower.contains(encoded), || {
            format!("{} keeps {encoded}", says())
        })?;
    }
    for segment in out.split('/').skip(1) {
        // What an upstream sees after its own (single) decoding: still one segment, no dots.
        let decoded = decode_once(segment);
        let dots = |s: &str| s == "." || s == "..";
        ensure(
            !dots(segment) && !dots(&decoded) && !decoded.contains(['/', '\\']),
            || format!("{}: segment {segment:?} decodes to {decoded:?}", says()),
        )?;
    }
    let again = lingo::http::path::normalize(&out);
    ensure(again.as_deref() == Ok(&*out), || {
        format!("not idempotent: {}", says())
    })?;
    ensure(raw.contains('%') || *out == *raw, || {
        format!("nothing to decode, yet changed: {}", says())
    })
}

/// Key redaction over `pieces` of `data` (see `lingo::http::redact`): the joined output is `data`
/// with each occurrence of `key` (leftmost first, not overlapping) replaced, which no
/// occurrence survives, and the redactor never holds back as much as the key.
pub fn redaction_properties(key: &[u8], data: &[u8], pieces: &[Bytes]) -> Result<(), String> {
    use lingo::base::secret::Secret;
    use lingo::http::redact::Redactor;
    let Ok(key_text) = std::str::from_utf8(key) else {
        return Ok(()); // keys come from YAML: text
    };
    let mut want = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        if !key.is_empty() && rest.starts_with(key) {
            want.extend_from_slice(b"<redacted>");
            rest = &rest[key.len()..];
        } else {
            want.push(rest[0]);
            rest = &rest[1..];
        }
    }
    let mut redactor = Redactor::new(&Secret::new(key_text));
    let mut got = Vec::new();
    for piece in pieces {
        got.extend_from_slice(&redactor.feed(piece));
        if !key.is_empty() && redactor.held() >= key.len() {
            return Err(format!(
                "{} bytes held back for a key of {}",
                redactor.held(),
                key.len()
            ));
        }
    }
    got.extend_from_slice(&redactor.finish());
    if got != want {
        return Err(format!("got {got:?}, want {want:?}"));
    }
    Ok(())
}
