//! `ProxyError`: every failure lingo reports itself, with its status.
//!
//! One enum, one exhaustive status mapping (no `_ =>`), and no dialect knowledge: rendering
//! into the caller's JSON shape is the proxy's `respond::render`'s job. Messages never contain
//! a key: variants carry names and durations, not header values.

use std::time::Duration;

use hyper::StatusCode;
use hyper::header::HeaderValue;

use crate::base::dialect::Dialect;
use crate::base::units::{format_duration, format_wait};

/// A client's limit that has no room for a request: what it counts and when it has room
/// again. Only names and numbers: nothing of the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The limit's unit as the table writes it (`requests`, `tokens`, ...).
    pub unit: &'static str,
    pub amount: u64,
    pub per: Duration,
    /// A spent budget (a long window), not a rate limit.
    pub budget: bool,
    /// How long until the request would fit.
    pub retry_after: Duration,
}

impl Refusal {
    /// The message every dialect tells.
    pub fn message(&self) -> String {
        let (limit, per) = (self.amount, format_duration(self.per));
        let unit = self.unit.replace('_', " ");
        let when = format_wait(self.retry_after.as_nanos().div_ceil(1_000_000) as u64);
        if self.budget {
            format!("the budget of {limit} {unit} per {per} is spent; it renews in {when}")
        } else {
            format!("rate limit of {limit} {unit} per {per} reached; retry in {when}")
        }
    }

    /// Whether it is spent web-data credits (a 402 on web-data routes).
    pub fn is_spent_credits(&self) -> bool {
        self.budget && self.unit == "credits"
    }
}

/// Which limit fired on the way to an upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutKind {
    Connect,
    FirstByte,
    Idle,
}

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("no route for {method} {path}")]
    NoRoute { method: String, path: String },

    #[error("the request path is not acceptable: {0}")]
    BadPath(&'static str),

    /// A request whose framing or headers are unsound (refused before routing).
    #[error("bad request: {0}")]
    BadRequest(&'static str),

    /// The client's request body broke off or was malformed while it was streamed up.
    #[error("the request body could not be read: {reason}")]
    BadBody { reason: String },

    /// The client's request body stalled: nothing of it came for `limits.body_timeout`.
    #[error("the request body stalled: nothing of it came for {} (limits.body_timeout)", format_duration(*limit))]
    BodyTimeout { limit: Duration },

    #[error("missing client key: send it as `Authorization: Bearer <key>`")]
    MissingKey,

    #[error("invalid client key")]
    InvalidKey,

    #[error(
        "{path} is a model-management call, which this route does not allow (`allow_model_management: true` on the route allows it)"
    )]
    ModelManagement { path: String },

    /// Model management on a native route over a chat-completions upstream, which has none.
    #[error(
        "{path} is not available: this route's upstream speaks chat-completions, which has no model management"
    )]
    NoModelManagement { path: String },

    #[error("request body is larger than this route's limit of {limit} bytes")]
    BodyTooLarge { limit: u64 },

    #[error("request headers are too large: {what}")]
    HeadersTooLarge { what: String },

    /// A listener's connection or in-flight limit is reached; the client should come back.
    #[error("lingo is at its limit of {limit} {what} on this listener; retry shortly")]
    Overloaded { what: &'static str, limit: usize },

    #[error("this route translates {client} to {upstream}, which lingo cannot do yet")]
    NoTranslator { client: Dialect, upstream: Dialect },

    /// An upstream that could not be used. `reason` is in words for the client ("connection
    /// refused"); `detail` is the system's own text, for the log only (empty when there is
    /// none).
    #[error("upstream `{upstream}` is unreachable: {reason}")]
    Unreachable {
        upstream: String,
        reason: String,
        detail: String,
    },

    #[error("upstream `{upstream}` did not respond: {} timeout of {} fired", kind.as_str(), format_duration(*limit))]
    Timeout {
        upstream: String,
        kind: TimeoutKind,
        limit: Duration,
    },

    /// The client's request cannot be translated (chat-completions `param` names the field).
    #[error("{message}")]
    Invalid {
        message: String,
        param: Option<String>,
    },

    /// An upstream response lingo could not read as what it should be (not JSON, a wrong shape,
    /// over `limits.max_response`). `message` is already free of the upstream's key.
    #[error("upstream `{upstream}`: {message}")]
    BadResponse { upstream: String, message: String },

    /// An error response of an upstream, rewritten in the client's dialect.
    #[error("{message}")]
    Upstream {
        status: StatusCode,
        message: String,
        code: Option<&'static str>,
        /// The upstream's `Retry-After`, verbatim (seconds or an HTTP date).
        retry_after: Option<HeaderValue>,
    },

    /// A client's limit or budget has no room for the request.
    #[error("{}", .0.message())]
    OverLimit(Refusal),

    /// A limit that refuses while the shared quota store is away (`on_store_error: deny`).
    #[error(
        "usage limits cannot be checked right now (the quota store is unreachable); retry shortly"
    )]
    QuotaUnavailable,

    /// A request a translator refuses with its own status and the API's list of issues
    /// (web-data v1 over a v2 upstream: a 400 naming the field, a 501 for an endpoint v2
    /// has no counterpart for). The web-data rendering carries `details`.
    #[error("{message}")]
    Refused {
        status: StatusCode,
        message: String,
        /// The API's own code for it (`BAD_REQUEST`), if it has one.
        code: Option<&'static str>,
        details: Vec<serde_json::Value>,
    },
}

// === impl ProxyError ===

impl ProxyError {
    /// The HTTP status of this error's response.
    pub fn status(&self) -> StatusCode {
        match self {
            ProxyError::NoRoute { .. } => StatusCode::NOT_FOUND,
            ProxyError::BadPath(_) => StatusCode::BAD_REQUEST,
            ProxyError::BadRequest(_) | ProxyError::BadBody { .. } => StatusCode::BAD_REQUEST,
            ProxyError::BodyTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            ProxyError::MissingKey | ProxyError::InvalidKey => StatusCode::UNAUTHORIZED,
            ProxyError::ModelManagement { .. } => StatusCode::FORBIDDEN,
            ProxyError::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ProxyError::HeadersTooLarge { .. } => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            ProxyError::Overloaded { .. } | ProxyError::QuotaUnavailable => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ProxyError::OverLimit(_) => StatusCode::TOO_MANY_REQUESTS,
            ProxyError::NoTranslator { .. } | ProxyError::NoModelManagement { .. } => {
                StatusCode::NOT_IMPLEMENTED
            }
            ProxyError::Unreachable { .. } | ProxyError::BadResponse { .. } => {
                StatusCode::BAD_GATEWAY
            }
            ProxyError::Timeout { .. } => StatusCode::GATEWAY_TIMEOUT,
            ProxyError::Invalid { .. } => StatusCode::BAD_REQUEST,
            ProxyError::Upstream { status, .. } | ProxyError::Refused { status, .. } => *status,
        }
    }

    /// A stable machine-readable code (chat-completions `code`; web-data `code` upper-cased).
    pub fn code(&self) -> Option<&'static str> {
        Some(match self {
            ProxyError::NoRoute { .. } => "unknown_url",
            ProxyError::BadPath(_) => "invalid_path",
            ProxyError::BadRequest(_) => "invalid_request",
            ProxyError::BadBody { .. } => "invalid_request_body",
            ProxyError::BodyTimeout { .. } => "request_timeout",
            ProxyError::MissingKey => "missing_api_key",
            ProxyError::InvalidKey => "invalid_api_key",
            ProxyError::ModelManagement { .. } => "model_management_forbidden",
            ProxyError::BodyTooLarge { .. } => "request_too_large",
            ProxyError::HeadersTooLarge { .. } => "headers_too_large",
            ProxyError::Overloaded { .. } => "overloaded",
            ProxyError::OverLimit(r) if r.budget => "insufficient_quota",
            ProxyError::OverLimit(_) => "rate_limit_exceeded",
            ProxyError::QuotaUnavailable => "quota_unavailable",
            ProxyError::NoTranslator { .. } | ProxyError::NoModelManagement { .. } => {
                "not_implemented"
            }
            ProxyError::Unreachable { .. } => "upstream_unreachable",
            ProxyError::Timeout { .. } => "upstream_timeout",
            ProxyError::Invalid { .. } | ProxyError::BadResponse { .. } => return None,
            ProxyError::Upstream { code, .. } | ProxyError::Refused { code, .. } => return *code,
        })
    }

    /// The request parameter at fault, when there is one (chat-completions `param`).
    pub fn param(&self) -> Option<&str> {
        match self {
            ProxyError::Invalid { param, .. } => param.as_deref(),
            _ => None,
        }
    }

    /// What the log adds to the message: the system's own words for an unreachable
    /// upstream, which the client is not told.
    pub fn detail(&self) -> Option<&str> {
        match self {
            ProxyError::Unreachable { detail, .. } if !detail.is_empty() => Some(detail),
            _ => None,
        }
    }

    /// A `Retry-After` header value (an upstream's, passed on, or lingo's own when full).
    pub fn retry_after(&self) -> Option<HeaderValue> {
        match self {
            ProxyError::Upstream { retry_after, .. } => retry_after.clone(),
            ProxyError::Overloaded { .. } | ProxyError::QuotaUnavailable => {
                Some(HeaderValue::from_static("1"))
            }
            ProxyError::OverLimit(r) => {
                let seconds = r.retry_after.as_millis().div_ceil(1000).max(1);
                HeaderValue::from_str(&seconds.to_string()).ok()
            }
            _ => None,
        }
    }
}

impl TimeoutKind {
    fn as_str(self) -> &'static str {
        match self {
            TimeoutKind::Connect => "connect",
            TimeoutKind::FirstByte => "first-byte",
            TimeoutKind::Idle => "idle",
        }
    }
}
