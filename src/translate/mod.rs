//! Translators between dialects: pure, sans-IO functions.
//!
//! Bytes and values in, bytes and values out: no sockets, no clocks (ids and `created` are
//! passed in), no tasks. That keeps them table-testable with golden files, and keeps the I/O
//! shell (`inference`) thin. Each native line is parsed once and each frame serialised once.

pub mod chat;
pub mod embeddings;
pub mod ndjson;
pub mod sse;

use crate::dialect::Dialect;

/// A client endpoint lingo can translate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `/v1/chat/completions` -> `/api/chat`.
    ChatCompletions,
    /// `/v1/embeddings` -> `/api/embed` (or `/api/embeddings`).
    Embeddings,
}

/// Every translated endpoint: (client dialect, upstream dialect, exact path, endpoint).
pub const ENDPOINTS: [(Dialect, Dialect, &str, Endpoint); 2] = [
    (
        Dialect::Chat,
        Dialect::Native,
        "/v1/chat/completions",
        Endpoint::ChatCompletions,
    ),
    (
        Dialect::Chat,
        Dialect::Native,
        "/v1/embeddings",
        Endpoint::Embeddings,
    ),
];

/// The translator for a request on a route from `client` to `upstream`, if lingo has one.
pub fn endpoint(client: Dialect, upstream: Dialect, path: &str) -> Option<Endpoint> {
    ENDPOINTS
        .iter()
        .find(|(c, u, p, _)| *c == client && *u == upstream && *p == path)
        .map(|(.., e)| *e)
}
