//! The one access-log line per request.

use std::sync::Arc;

use hyper::header::HeaderValue;
use hyper::{Method, Uri};
use tokio::time::Instant;

use super::Outcome;
use crate::base::clock;
use crate::base::dialect::Dialect;

/// Everything the access-log line says, filled in as the request goes.
#[derive(Debug)]
pub struct AccessLog {
    pub method: Method,
    /// The request's path as the client sent it, copied: hyper's request head is a slice of
    /// the connection's read buffer, and a reference held for a stream's whole life would
    /// keep that buffer (8 KiB) from being reused, so that hyper allocates a second one for
    /// its next read.
    pub path: Box<str>,
    /// Its own bytes (see [`AccessLog::new`]'s caller), for the same reason.
    pub request_id: HeaderValue,
    /// Shared with the table (and the metric labels): no copy per request.
    pub route: Option<Arc<str>>,
    pub upstream: Option<Arc<str>>,
    /// The client key's *name*, never the key.
    pub client: Option<String>,
    pub status: u16,
    /// Why lingo returned an error itself, or why the stream broke.
    pub error: Option<String>,
    /// The dialect the client got a response in, once known.
    pub dialect: Option<Dialect>,
    pub bytes: u64,
    /// The reading of the poll where the request began (`base::clock`): lingo's own time and
    /// the logged duration count from it.
    pub started: Instant,
}

// === impl AccessLog ===

impl AccessLog {
    /// The method is a constant or its own copy; the path is copied (see `path`).
    pub fn new(method: &Method, uri: &Uri, request_id: &HeaderValue) -> Self {
        AccessLog {
            method: method.clone(),
            path: uri.path().into(),
            request_id: request_id.clone(),
            route: None,
            upstream: None,
            client: None,
            status: 0,
            error: None,
            dialect: None,
            bytes: 0,
            started: clock::now(),
        }
    }

    pub(super) fn emit(&self, outcome: Outcome) {
        tracing::info!(
            target: "lingo::access",
            method = %self.method,
            path = %self.path,
            route = %self.route.as_deref().unwrap_or("-"),
            upstream = %self.upstream.as_deref().unwrap_or("-"),
            status = self.status,
            // Whole microseconds: a number in both formats, written with at most 3 decimals.
            duration_ms = clock::since(self.started).as_micros() as f64 / 1000.0,
            bytes = self.bytes,
            client = %self.client.as_deref().unwrap_or("-"),
            request_id = %self.request_id.to_str().unwrap_or("-"),
            outcome = %outcome.as_str(),
            error = self.error.as_deref().unwrap_or(""),
        );
    }
}
