//! Logging: the tracing subscriber and the one access-log line per request.
//!
//! The access line is written when the answer's body ends (or is dropped because the client
//! went away), so it carries the real byte count and the full duration of a stream.

use std::cell::Cell;
use std::io::IsTerminal;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http_body::Frame;
use pin_project_lite::pin_project;

use crate::base::dialect::Dialect;
use crate::http::body::BoxError;
use crate::limits::InFlight;
use crate::metrics::{Finish, Outcome};

/// Installs the global subscriber: `RUST_LOG` filters (default `info`), output on stderr.
pub fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init();
}

/// Everything the access-log line says, filled in as the request goes.
#[derive(Debug)]
pub struct AccessLog {
    pub method: String,
    pub path: String,
    pub request_id: String,
    pub route: Option<String>,
    pub upstream: Option<String>,
    /// The client key's *name*, never the key.
    pub client: Option<String>,
    pub status: u16,
    /// Why lingo answered an error itself, or why the stream broke.
    pub error: Option<String>,
    /// The dialect the client was answered in, once known.
    pub dialect: Option<Dialect>,
    pub bytes: u64,
    pub started: Instant,
}

// === impl AccessLog ===

impl AccessLog {
    pub fn new(method: &str, path: &str, request_id: &str) -> Self {
        AccessLog {
            method: method.to_owned(),
            path: path.to_owned(),
            request_id: request_id.to_owned(),
            route: None,
            upstream: None,
            client: None,
            status: 0,
            error: None,
            dialect: None,
            bytes: 0,
            started: Instant::now(),
        }
    }

    fn emit(&self, outcome: Outcome) {
        tracing::info!(
            target: "lingo::access",
            method = %self.method,
            path = %self.path,
            route = %self.route.as_deref().unwrap_or("-"),
            upstream = %self.upstream.as_deref().unwrap_or("-"),
            status = self.status,
            duration_ms = %format_args!("{:.3}", self.started.elapsed().as_secs_f64() * 1000.0),
            bytes = self.bytes,
            client = %self.client.as_deref().unwrap_or("-"),
            request_id = %self.request_id,
            outcome = %outcome.as_str(),
            error = self.error.as_deref().unwrap_or(""),
        );
    }
}

pin_project! {
    /// Counts the bytes of an answer and writes the access line when it ends.
    pub struct Logged<B> {
        #[pin]
        inner: B,
        log: Option<AccessLog>,
        // Set when hyper learns from `is_end_stream` that the answer is complete; hyper then
        // stops polling, so the line is written on drop.
        ended: Cell<bool>,
        // The request's in-flight slot, released when the answer ends.
        held: Option<InFlight>,
        // Its metrics, recorded when the answer ends.
        finish: Option<Finish>,
    }

    impl<B> PinnedDrop for Logged<B> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            let outcome = if this.ended.get() {
                Outcome::Complete
            } else {
                Outcome::ClientClosed
            };
            write(this.log, this.finish, outcome, None);
        }
    }
}

/// Writes the access line and records the metrics, once. A stream that reported its own
/// failure (a translated stream ends its body cleanly, with an error frame) is told as that
/// failure; otherwise as `outcome`, which the body's end decided.
fn write(
    log: &mut Option<AccessLog>,
    finish: &mut Option<Finish>,
    outcome: Outcome,
    error: Option<String>,
) {
    let Some(mut log) = log.take() else {
        return;
    };
    let (outcome, error) = match finish.as_ref().and_then(Finish::stream_failure) {
        Some((failed, reason)) => (failed, Some(reason)),
        None => (outcome, error),
    };
    if error.is_some() {
        log.error = error;
    }
    log.emit(outcome);
    if let Some(finish) = finish.take() {
        finish.done(&log, outcome);
    }
}

impl<B> Logged<B> {
    pub fn new(inner: B, log: AccessLog) -> Self {
        Logged {
            inner,
            log: Some(log),
            ended: Cell::new(false),
            held: None,
            finish: None,
        }
    }

    /// Records the request's metrics when the answer ends or is dropped.
    pub fn recording(mut self, finish: Finish) -> Self {
        self.finish = Some(finish);
        self
    }

    /// Keeps the request's in-flight slot until the answer has ended or been dropped.
    pub fn holding(mut self, held: Option<InFlight>) -> Self {
        self.held = held;
        self
    }
}

impl<B> http_body::Body for Logged<B>
where
    B: http_body::Body<Data = Bytes, Error = BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.project();
        let polled = this.inner.poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(log), Some(data)) = (this.log.as_mut(), frame.data_ref()) {
                    log.bytes += data.len() as u64;
                }
            }
            Poll::Ready(Some(Err(err))) => {
                let outcome = Outcome::of_error(err.as_ref());
                write(this.log, this.finish, outcome, Some(err.to_string()));
            }
            Poll::Ready(None) => write(this.log, this.finish, Outcome::Complete, None),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        let ended = self.inner.is_end_stream();
        if ended {
            self.ended.set(true);
        }
        ended
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
