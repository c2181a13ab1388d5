//! The three wire dialects lingo speaks, and how an error is rendered in each.
//!
//! Every error lingo produces itself (no route, bad key, upstream down, ...) is rendered by
//! [`render`] in the dialect of the route the client called, so each client sees the error
//! shape its SDK parses.

use bytes::Bytes;
use hyper::header::{CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use hyper::{Response, StatusCode};
use serde_json::json;

use crate::body::Body;
use crate::error::ProxyError;

/// A wire dialect: what a client or an upstream speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// `/v1/chat/completions`, `/v1/completions`, `/v1/embeddings`, `/v1/models`.
    Chat,
    /// `/api/chat`, `/api/generate`, `/api/embed(dings)`, `/api/tags`, `/api/show`.
    Native,
    /// The scrape/crawl API (`/v1/...`, `/v2/...`).
    WebData,
}

// === impl Dialect ===

impl Dialect {
    /// The name used in `proxy.yaml`'s `speaks:`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Dialect::Chat => "chat-completions",
            Dialect::Native => "native",
            Dialect::WebData => "web-data",
        }
    }

    /// Parses a `speaks:` value; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "chat-completions" => Some(Dialect::Chat),
            "native" => Some(Dialect::Native),
            "web-data" => Some(Dialect::WebData),
            _ => None,
        }
    }

    /// All dialects, in the order they are documented.
    pub const ALL: [Dialect; 3] = [Dialect::Chat, Dialect::Native, Dialect::WebData];
}

impl std::fmt::Display for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Renders an error lingo produced in the given dialect, with its status.
///
/// The three shapes are what each dialect's SDKs parse:
/// - chat-completions: `{"error":{"message","type","param","code"}}`
/// - native: `{"error":"..."}`
/// - web-data: `{"success":false,"error":"...","code":"..."}`
pub fn render(err: &ProxyError, dialect: Dialect) -> Response<Body> {
    let status = err.status();
    let message = err.to_string();
    let value = match dialect {
        Dialect::Chat => json!({"error": {
            "message": message,
            "type": chat_type(status),
            "param": err.param(),
            "code": err.code(),
        }}),
        Dialect::Native => json!({ "error": message }),
        Dialect::WebData => json!({
            "success": false,
            "error": message,
            "code": err.code().to_ascii_uppercase(),
        }),
    };
    let mut response = Response::new(Body::full(Bytes::from(value.to_string())));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(secs) = err.retry_after() {
        headers.insert(RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

/// The chat-completions error `type` for a status, as the official API assigns them.
fn chat_type(status: StatusCode) -> &'static str {
    match status.as_u16() {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        400..=499 => "invalid_request_error",
        _ => "api_error",
    }
}

/// The dialect to answer in when no route decided it (no route matched, or the path was
/// refused before routing): guessed from the path the way the seeds' services split `/v1`.
pub fn guess(path: &str) -> Dialect {
    const CHAT: [&str; 4] = [
        "/v1/chat/completions",
        "/v1/completions",
        "/v1/embeddings",
        "/v1/models",
    ];
    let is_under = |p: &str| path == p || path.starts_with(&format!("{p}/"));
    if is_under("/api") {
        Dialect::Native
    } else if CHAT.iter().any(|p| is_under(p)) {
        Dialect::Chat
    } else if is_under("/v1") || is_under("/v2") {
        Dialect::WebData
    } else {
        Dialect::Chat
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guess_follows_the_seeds_split_of_v1() {
        for (path, want) in [
            ("/api/tags", Dialect::Native),
            ("/api", Dialect::Native),
            ("/apix", Dialect::Chat),
            ("/v1/chat/completions", Dialect::Chat),
            ("/v1/models/llama3:8b", Dialect::Chat),
            ("/v1/scrape", Dialect::WebData),
            ("/v1/modelsx", Dialect::WebData),
            ("/v2/crawl/1", Dialect::WebData),
            ("/", Dialect::Chat),
        ] {
            assert_eq!(guess(path), want, "{path}");
        }
    }

    #[test]
    fn parse_round_trips() {
        for d in Dialect::ALL {
            assert_eq!(Dialect::parse(d.as_str()), Some(d));
        }
        assert_eq!(Dialect::parse("openai"), None);
    }
}
