//! Server-sent-event frames: `data: <json>\n\n`, and the closing `data: [DONE]`; and how a
//! stream's chunks are written in place: a head made once per stream ([`chunk_head`]), then
//! fields with their keys as literals ([`field`], [`usage_field`]).
//!
//! Keys are written as literals because serde_json escapes every key byte by byte, which is
//! most of a chunk's serialising (docs/benchmarks.md has the figures); the values are
//! serde's own. Each writer that stands in for a serde struct is tested against it, field by
//! field, so a field added to the struct and not to the writer fails a test.

use bytes::Bytes;
use serde::Serialize;

use super::ndjson::LineFramer;
use super::translation::{FINGERPRINT, Meta};
use crate::base::usage::Usage;

/// One `data:` frame holding `value` as compact JSON.
pub fn data(value: &impl Serialize) -> Bytes {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"data: ");
    // Serialising plain structs and maps into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, value);
    out.extend_from_slice(b"\n\n");
    super::frozen(out)
}

/// `key` (a literal: its quotes and colon, and whatever JSON goes before it) and `value`
/// as serde writes it. Always inlined: it is a few instructions around serde's own call.
#[inline(always)]
pub fn field<T: Serialize + ?Sized>(out: &mut Vec<u8>, key: &[u8], value: &T) {
    out.extend_from_slice(key);
    // Serialising plain values into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

/// `key` and the usage object as serde writes [`Usage`], its keys as literals.
pub fn usage_field(out: &mut Vec<u8>, key: &[u8], usage: &Usage) {
    let Usage {
        prompt_tokens,
        completion_tokens,
        total_tokens,
    } = usage;
    out.extend_from_slice(key);
    field(out, b"{\"prompt_tokens\":", prompt_tokens);
    field(out, b",\"completion_tokens\":", completion_tokens);
    field(out, b",\"total_tokens\":", total_tokens);
    out.push(b'}');
}

/// Room for the chunks the complete native lines `framer` holds become, each written after
/// a head of `head` bytes: a chunk is its native line give or take some keys, plus the head.
pub fn room(head: usize, framer: &LineFramer) -> usize {
    let (bytes, lines) = framer.pending();
    bytes + lines * (head + 48)
}

/// What every chunk of a stream starts with, the same from first to last, up to its
/// `choices`: `data: {"id":…,"object":…,"created":…,"model":…,"system_fingerprint":…,
/// "choices":`. Made once per stream, not once per token.
pub fn chunk_head(meta: &Meta, object: &'static str) -> Vec<u8> {
    let known = meta.id.len() + object.len() + meta.model.len() + FINGERPRINT.len();
    // Room for the keys, the quotes and `created` too.
    let mut out = Vec::with_capacity(known + 128);
    field(&mut out, b"data: {\"id\":", &meta.id);
    field(&mut out, b",\"object\":", object);
    field(&mut out, b",\"created\":", &meta.created);
    field(&mut out, b",\"model\":", &meta.model);
    field(&mut out, b",\"system_fingerprint\":", FINGERPRINT);
    out.extend_from_slice(b",\"choices\":");
    // Left open: each chunk's choices and its own `}` follow.
    out
}

/// The frame that tells a client the stream is complete.
pub fn done() -> Bytes {
    Bytes::from_static(b"data: [DONE]\n\n")
}

/// A chat-completions error object as a frame: what a client gets when a stream breaks.
pub fn error_frame(message: &str, kind: &str, code: &str) -> Bytes {
    data(
        &serde_json::json!({"error": {"message": message, "type": kind, "param": null, "code": code}}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_written_as_serde_writes_it() {
        for usage in [
            Usage::default(),
            Usage::new(26, 282),
            Usage::new(u64::MAX, 1),
        ] {
            let mut ours = b"x".to_vec();
            usage_field(&mut ours, b",\"usage\":", &usage);
            let serde = format!("x,\"usage\":{}", serde_json::to_string(&usage).unwrap());
            assert_eq!(String::from_utf8(ours).unwrap(), serde);
        }
    }

    /// A stream's chunk head is what serde writes for its fields, whatever the client's
    /// model name holds (quotes, controls, non-ASCII), cut before the closing brace.
    #[test]
    fn chunk_head_is_written_as_serde_writes_it() {
        for model in [
            "gpt-4o-mini",
            "",
            "a\"b\\c\n\u{1}\u{7f}\u{e9}\u{1f600}",
            "</script>",
        ] {
            let meta = Meta {
                id: "chatcmpl-0123abc".into(),
                created: 1_764_000_000,
                model: model.into(),
            };
            let object = "chat.completion.chunk";
            #[derive(Serialize)]
            struct Head<'a> {
                id: &'a str,
                object: &'a str,
                created: u64,
                model: &'a str,
                system_fingerprint: &'a str,
            }
            let serde = serde_json::to_string(&Head {
                id: &meta.id,
                object,
                created: meta.created,
                model: &meta.model,
                system_fingerprint: FINGERPRINT,
            })
            .unwrap();
            let serde = format!("data: {},\"choices\":", &serde[..serde.len() - 1]);
            let ours = String::from_utf8(chunk_head(&meta, object)).unwrap();
            assert_eq!(ours, serde, "{model:?}");
        }
    }

    #[test]
    fn frames() {
        assert_eq!(
            super::data(&serde_json::json!({"a": 1})),
            "data: {\"a\":1}\n\n"
        );
        assert_eq!(super::done(), "data: [DONE]\n\n");
        assert_eq!(
            super::error_frame("cut", "server_error", "upstream_error"),
            "data: {\"error\":{\"code\":\"upstream_error\",\"message\":\"cut\",\"param\":null,\"type\":\"server_error\"}}\n\n"
        );
    }
}
