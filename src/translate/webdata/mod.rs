//! Web-data v1 clients over a v2-only upstream: the `/v1/...` request becomes its
//! `/v2/...` counterpart, and the v2 response is rewritten in v1's shapes. Pure and sans-IO like
//! the other translators: bytes and `serde_json` values in and out; the client-facing base
//! and, for job memory, the clock come in as arguments.
//!
//! - [`mod@route`]: the path map, including the v1 endpoints v2 has no home for (501).
//! - [`mod@request`]: the bodies, per endpoint: scrape options (in `scrape`), crawl and map
//!   (in `crawl`), batch, search and extract.
//! - [`mod@response`]: v2 responses back to v1, per endpoint, WebSocket frames included.
//! - [`Frames`]: the WebSocket watcher's frames, upstream to client, with the same rule.
//! - [`Jobs`]: which v1 formats a crawl or batch asked for, so status pages polled on another
//!   connection still say `extract` where the client asked for `extract`.
//! - [`V1Error`]: what lingo responds with instead of translating: a v1-shaped error naming the field.
//!
//! Nothing a v1 client sends is dropped without either a v2 meaning or a refusal: every key is
//! checked against the v1 (and v2) schema of its endpoint, so a field v2 would not honour is
//! a 400 the client can read, not a silent change of behaviour.

mod crawl;
mod formats;
mod frames;
mod jobs;
mod keys;
pub mod request;
pub mod response;
pub mod route;
mod scrape;
mod v1_error;

pub use frames::{Frames, encode};
pub use jobs::{Jobs, TTL, job_id, status_id};
pub use request::{Translated, request};
pub use response::{JsonAs, ResponseContext, documents_v1, response, retry_after, ws_frame};
pub use route::{Call, Route, route};
pub use v1_error::V1Error;

/// What a route from web-data clients to a v2-only upstream does, for `lingo check`.
pub const SUMMARY: &str = "translate v1 -> v2 (scrape, crawl, batch, map, search, extract, usage; \
     /v2 passes; /v1/llmstxt, deep-research, x402, schedules, fireclaw respond with 501)";

#[cfg(test)]
mod tests;
