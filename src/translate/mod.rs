//! Translators between dialects: pure, sans-IO functions.
//!
//! Bytes and values in, bytes and values out: no sockets, no clocks (ids and `created` are
//! passed in), no tasks. That keeps them table-testable with golden files, and keeps the I/O
//! shell (`proxy::run::drive`) thin. Each native line is parsed once and each frame
//! serialised once.
//!
//! Beside serde, two fast paths do the work of a stream: [`scan`] reads native lines and
//! requests in one pass, and the chunk writers (`sse::field`, each translator's
//! `write_plain`) write keys as literals. Each is tested against the serde struct it
//! stands in for, field by field, so that a field added to the struct is not left out.

pub mod chat;
pub mod completions;
pub mod embeddings;
pub mod frames;
pub mod json;
pub mod links;
pub mod models;
pub mod native;
pub mod ndjson;
pub mod params;
pub mod rename;
pub mod scan;
pub mod splice;
pub mod sse;
pub mod translation;
pub mod webdata;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::base::dialect::{Dialect, paths};

pub use translation::{
    FINGERPRINT, InvalidRequest, LineTranslator, Meta, NoStream, Translation, UpstreamCall,
};

/// Parses JSON (an upstream line or response, a client's request) checking its UTF-8 once.
///
/// serde_json's slice reader checks each string it reads on its own, keys included. Valid
/// UTF-8 (every line a JSON server sends) is read as `&str`, which is checked once here and
/// not again; anything else goes to the slice reader, which skips strings it ignores.
pub fn parse_json<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(bytes),
    }
}

/// [`parse_json`] into `out`, trying `scan` first (a [`scan::Scan`] of the shape lingo
/// expects, over the bytes as they are, which returns `None` where it is not sure that serde
/// would read the same; what it wrote into `out` by then is replaced by serde's value, or
/// left there with serde's error, for the caller to drop).
///
/// Read into the caller's value rather than returned, so that a line's event is written
/// once, where its caller keeps it; always inlined, as are its callers on a stream's path.
#[inline(always)]
pub fn parse_json_or_scan<'a, T: Deserialize<'a>>(
    bytes: &'a [u8],
    out: &mut T,
    scan: impl FnOnce(&'a [u8], &mut T) -> Option<()>,
) -> serde_json::Result<()> {
    if scan(bytes, out).is_none() {
        *out = parse_json(bytes)?;
    }
    Ok(())
}

/// `value` as JSON, in a buffer with `room` made at once rather than grown as it fills.
pub fn to_json<T: Serialize>(value: &T, room: usize) -> serde_json::Result<Vec<u8>> {
    let mut json = Vec::with_capacity(room);
    serde_json::to_writer(&mut json, value)?;
    Ok(json)
}

/// `bytes` as `Bytes` with no second allocation: from a `Vec` with room to spare, `Bytes`
/// allocates a header to share it; a boxed slice needs none, and the allocator shrinks it
/// in place.
pub fn frozen(bytes: Vec<u8>) -> Bytes {
    Bytes::from(bytes.into_boxed_slice())
}

/// A client endpoint lingo can translate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `/v1/chat/completions` -> `/api/chat`.
    ChatCompletions,
    /// `/v1/completions` -> `/api/generate`.
    Completions,
    /// `/v1/embeddings` -> `/api/embed` (or `/api/embeddings`).
    Embeddings,
    /// `/v1/models` -> `/api/tags`.
    Models,
    /// `/v1/models/{id}` -> `/api/show` (the id may contain `/`).
    Model,
    /// `/api/chat` -> `/v1/chat/completions` (native clients over a chat-completions upstream).
    NativeChat,
    /// `/api/generate` -> `/v1/chat/completions` (or `/v1/completions`: `raw`, `suffix`).
    NativeGenerate,
    /// `/api/embed` -> `/v1/embeddings`.
    NativeEmbed,
    /// The legacy `/api/embeddings` -> `/v1/embeddings`.
    NativeEmbeddings,
    /// `/api/tags` -> `/v1/models` (plus the table's aliases).
    NativeTags,
    /// `/api/show` -> `/v1/models/{id}`.
    NativeShow,
    /// `/api/ps`: served by lingo (no model is known to be loaded).
    NativePs,
    /// `/api/version`: served by lingo ([`native::models::NATIVE_VERSION`]).
    NativeVersion,
    /// Any web-data `/v1/...` call over a v2-only upstream: [`webdata`] maps the
    /// path, the body and the response (`/v2/...` passes through).
    WebDataV1,
}

/// Every translated endpoint: (client dialect, upstream dialect, path, endpoint). A path
/// ending in `*` matches anything non-empty in its place.
pub const ENDPOINTS: [(Dialect, Dialect, &str, Endpoint); 14] = [
    (
        Dialect::Chat,
        Dialect::Native,
        paths::CHAT,
        Endpoint::ChatCompletions,
    ),
    (
        Dialect::Chat,
        Dialect::Native,
        paths::COMPLETIONS,
        Endpoint::Completions,
    ),
    (
        Dialect::Chat,
        Dialect::Native,
        paths::EMBEDDINGS,
        Endpoint::Embeddings,
    ),
    (
        Dialect::Chat,
        Dialect::Native,
        paths::MODELS,
        Endpoint::Models,
    ),
    (
        Dialect::Chat,
        Dialect::Native,
        "/v1/models/*",
        Endpoint::Model,
    ),
    (
        Dialect::Native,
        Dialect::Chat,
        "/api/chat",
        Endpoint::NativeChat,
    ),
    (
        Dialect::Native,
        Dialect::Chat,
        "/api/generate",
        Endpoint::NativeGenerate,
    ),
    (
        Dialect::Native,
        Dialect::Chat,
        "/api/embed",
        Endpoint::NativeEmbed,
    ),
    (
        Dialect::Native,
        Dialect::Chat,
        "/api/embeddings",
        Endpoint::NativeEmbeddings,
    ),
    (
        Dialect::Native,
        Dialect::Chat,
        "/api/tags",
        Endpoint::NativeTags,
    ),
    (
        Dialect::Native,
        Dialect::Chat,
        "/api/show",
        Endpoint::NativeShow,
    ),
    (
        Dialect::Native,
        Dialect::Chat,
        "/api/ps",
        Endpoint::NativePs,
    ),
    (
        Dialect::Native,
        Dialect::Chat,
        "/api/version",
        Endpoint::NativeVersion,
    ),
    (
        Dialect::WebData,
        Dialect::WebDataV2,
        "/v1/*",
        Endpoint::WebDataV1,
    ),
];

/// Whether `path` matches an [`ENDPOINTS`] pattern.
pub fn matches(pattern: &str, path: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => path.len() > prefix.len() && path.starts_with(prefix),
        None => pattern == path,
    }
}

/// A path an [`ENDPOINTS`] pattern matches (for checking which routes cover it).
pub fn example(pattern: &str) -> String {
    pattern.replace('*', "x")
}

/// The translator for a request on a route from `client` to `upstream`, if lingo has one.
pub fn endpoint(client: Dialect, upstream: Dialect, path: &str) -> Option<Endpoint> {
    ENDPOINTS
        .iter()
        .find(|(c, u, p, _)| *c == client && *u == upstream && matches(p, path))
        .map(|(.., e)| *e)
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Line<'a> {
        #[serde(borrow)]
        content: Cow<'a, str>,
    }

    /// Whatever the reader, the same response as serde_json's slice reader: the same value, the
    /// same refusals, and a line with broken UTF-8 in a field nobody reads still accepted.
    #[test]
    fn parses_as_the_slice_reader_does() {
        let cases: &[&[u8]] = &[
            br#"{"content":"caf\u00e9 \"x\"","other":1}"#,
            "{\"content\":\"café\"}".as_bytes(),
            b"{\"content\":\"ok\",\"ignored\":\"\xff\xfe\"}",
            b"{\"content\":\"\xff\"}",
            br#"{"content":"cut"#,
            b"",
            br#"{"content":1}"#,
        ];
        for bytes in cases {
            let ours = parse_json::<Line>(bytes).map_err(|e| e.to_string());
            let slice = serde_json::from_slice::<Line>(bytes).map_err(|e| e.to_string());
            assert_eq!(ours, slice, "{}", String::from_utf8_lossy(bytes));
        }
        let broken = b"{\"content\":\"ok\",\"ignored\":\"\xff\xfe\"}";
        assert_eq!(parse_json::<Line>(broken).unwrap().content, "ok");
    }

    #[test]
    fn a_star_matches_something_non_empty() {
        for (pattern, path, expected) in [
            ("/v1/models/*", "/v1/models/llama", true),
            ("/v1/models/*", "/v1/models/", false),
            ("/v1/models/*", "/v1/models", false),
            ("/v1/models/*", "/v2/models/llama", false),
            ("/api/chat", "/api/chat", true),
            ("/api/chat", "/api/chats", false),
        ] {
            assert_eq!(matches(pattern, path), expected, "{pattern} {path}");
        }
    }

    #[test]
    fn endpoints_are_found_by_both_dialects_and_the_path() {
        use Dialect::*;
        for (client, upstream, path, expected) in [
            (
                Chat,
                Native,
                "/v1/chat/completions",
                Some(Endpoint::ChatCompletions),
            ),
            (Chat, Native, "/v1/models/x", Some(Endpoint::Model)),
            (Native, Chat, "/api/chat", Some(Endpoint::NativeChat)),
            (WebData, WebDataV2, "/v1/scrape", Some(Endpoint::WebDataV1)),
            (Native, Native, "/api/chat", None),
            (Chat, Chat, "/v1/chat/completions", None),
            (Chat, Native, "/api/chat", None),
        ] {
            assert_eq!(endpoint(client, upstream, path), expected, "{path}");
        }
    }
}
