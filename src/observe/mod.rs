//! Observability: one record per request, told as the access line and as metrics when its
//! response ends. [`access`] writes the line, [`metrics`] counts, and [`Ended`] is the one body
//! wrapper that notices the end (complete, broken, or dropped by a client that went away).
//! [`log`] writes every log line (the access line's included) in logfmt or as JSON;
//! [`webhooks`] counts the webhook relay's events and writes a line per delivery attempt.

pub mod access;
pub mod ended;
mod handles;
pub mod log;
pub mod metrics;
pub mod quota;
mod timing;
pub mod webhooks;

pub use access::AccessLog;
pub use ended::{Ended, Record};
pub use log::{LogFormat, init};
pub use metrics::{Finish, Metrics, RequestStats};

use crate::http::idle::IdleTimeout;

/// How a response's body ended: what the access line and `lingo_requests_total` say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Everything was sent.
    Complete,
    /// The client went away before the end.
    ClientClosed,
    /// The upstream broke off, sent an error line or something lingo could not read.
    UpstreamFailed,
    /// The upstream went silent for longer than its idle limit.
    IdleTimeout,
    /// An upstream line was longer than `limits.max_line`.
    LineCap,
}

// === impl Outcome ===

impl Outcome {
    /// The name in the access line and the `outcome` label.
    pub const fn as_str(self) -> &'static str {
        match self {
            Outcome::Complete => "complete",
            Outcome::ClientClosed => "client_closed",
            Outcome::UpstreamFailed => "upstream_failed",
            Outcome::IdleTimeout => "idle_timeout",
            Outcome::LineCap => "line_cap",
        }
    }

    /// Whether the upstream's side broke the response (counted as a `mid_stream` error).
    pub const fn is_upstream_failure(self) -> bool {
        matches!(
            self,
            Outcome::UpstreamFailed | Outcome::IdleTimeout | Outcome::LineCap
        )
    }

    /// What a body error that cut a response means: the idle limit, or another failure.
    pub fn of_error(err: &(dyn std::error::Error + 'static)) -> Outcome {
        let mut source = Some(err);
        while let Some(err) = source {
            if err.is::<IdleTimeout>() {
                return Outcome::IdleTimeout;
            }
            source = err.source();
        }
        Outcome::UpstreamFailed
    }
}
