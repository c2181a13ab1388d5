//! Native clients over a chat-completions upstream: `/api/chat`, `/api/generate`,
//! `/api/embed(dings)`, `/api/tags`, `/api/show`, `/api/version`, `/api/ps` in, the official
//! `/v1/*` shapes out, and the responses back. Pure and sans-IO like the other translators:
//! ids, timestamps and measured durations come in as arguments ([`Stamp`], id closures).
//!
//! - [`chat`]: `/api/chat` -> `/v1/chat/completions`, and the response (streamed or whole).
//! - [`generate`]: `/api/generate` -> a chat completion, or `/v1/completions` (`raw`, `suffix`).
//! - [`embed`]: `/api/embed` and `/api/embeddings` -> `/v1/embeddings`.
//! - [`models`]: `/api/tags`, `/api/show`, `/api/version`, `/api/ps`; management refused.
//! - [`NativeStream`]: SSE lines in (behind the same `LineFramer`), NDJSON lines out.
//! - [`Generation`], [`Embed`]: the above as [`crate::translate::Translation`]s, for the
//!   one driver (`proxy::run::drive`).

pub mod chat;
mod chunk;
pub mod embed;
pub mod generate;
mod messages;
pub mod models;
mod params;
mod request;
mod response;
mod stream;
mod translation;

use bytes::Bytes;
use serde_json::{Value, json};

pub use messages::{data_uri, sniff};
pub use params::{EXTRA_OPTIONS, Extras};
pub use request::Translated;
pub use response::{Meta, Output, Stamp, done_reason, whole};
pub use stream::{Clock, NativeStream};
pub use translation::{Embed, Generation, Now};

/// The upstream path of a chat completion.
pub const CHAT_PATH: &str = crate::base::dialect::paths::CHAT;
/// The upstream path of a text completion (`/api/generate` with `raw` or `suffix`).
pub const COMPLETIONS_PATH: &str = crate::base::dialect::paths::COMPLETIONS;
/// The upstream path of embeddings.
pub const EMBEDDINGS_PATH: &str = crate::base::dialect::paths::EMBEDDINGS;

/// A request lingo refuses, rendered in the native shape (`{"error": ...}`) with `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NativeError {
    pub status: u16,
    pub message: String,
}

// === impl Refusal ===

impl NativeError {
    /// A 400: the client's request is at fault.
    pub fn bad(message: impl Into<String>) -> Self {
        NativeError {
            status: 400,
            message: message.into(),
        }
    }

    /// The native error body.
    pub fn body(&self) -> Bytes {
        error_body(&self.message)
    }
}

/// `{"error": message}`: the native error shape, whole responses and stream lines alike (a
/// stream line adds the newline).
pub fn error_body(message: &str) -> Bytes {
    Bytes::from(json!({ "error": message }).to_string())
}

/// A chat-completions error response (status + `{"error":{"message",...}}`) as the native
/// (status, `{"error":"<message>"}`) a native client reads. The status is kept; a non-error
/// status (an upstream that sent garbage with 200) is a 502. A body that is not the
/// official shape still says something: `{"error":"..."}`, `{"message":...}`, or its text.
pub fn upstream_error(status: u16, body: &[u8]) -> (u16, Bytes) {
    let (status, message) = upstream_message(status, body);
    (status, error_body(&message))
}

/// [`upstream_error`]'s status and message, for a shell that renders the native error shape
/// itself (lingo's `ProxyError` is told in the route's dialect in one place).
pub fn upstream_message(status: u16, body: &[u8]) -> (u16, String) {
    let status = if status >= 400 { status } else { 502 };
    let message = match serde_json::from_slice::<Value>(body) {
        Ok(v) => match v.get("error").or_else(|| v.get("message")) {
            Some(error) if !error.is_null() => response::error_message(error),
            _ => format!("upstream responded with {status} without an error message"),
        },
        Err(_) => match String::from_utf8_lossy(body).trim() {
            "" => format!("upstream responded with {status}"),
            text => text.chars().take(1000).collect(),
        },
    };
    (status, message)
}

#[cfg(test)]
mod tests;
