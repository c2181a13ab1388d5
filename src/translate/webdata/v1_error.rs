//! What lingo sends a v1 client instead of translating its request: the v1 error envelope
//! `{"success": false, "error": ..., "details": [...]}`, with zod-like issues in `details`
//! (`code`, `path`, `message`) so that SDKs that print `details` name the field at fault.

use bytes::Bytes;
use serde_json::{Value, json};

/// A v1 request lingo will not send on: the status, the `error` text and the `details`.
#[derive(Debug, Clone, PartialEq)]
pub struct V1Error {
    pub status: u16,
    /// v1's `code` (`BAD_REQUEST`, `BAD_REQUEST_INVALID_JSON`) where v1 sends one.
    pub code: Option<&'static str>,
    pub error: String,
    pub details: Vec<Value>,
}

// === impl Refusal ===

impl V1Error {
    /// A 400 about the field at `path` (`["scrapeOptions", "agent"]`).
    pub fn field(path: &[&str], message: impl Into<String>) -> Self {
        let message = message.into();
        V1Error {
            code: Some("BAD_REQUEST"),
            status: 400,
            error: format!("Bad Request: {message}"),
            details: vec![json!({"code": "custom", "path": path, "message": message})],
        }
    }

    /// A 400 naming keys that are neither v1 nor v2 (zod's `unrecognized_keys` issue, with
    /// the message v1 servers give).
    pub fn unknown_keys(path: &[&str], keys: Vec<String>) -> Self {
        let message = "Unrecognized key in body -- please review the v1 API documentation for request body changes";
        V1Error {
            code: Some("BAD_REQUEST"),
            status: 400,
            error: format!("Bad Request: unrecognized key(s) {}", quoted(&keys)),
            details: vec![json!({
                "code": "unrecognized_keys", "keys": keys, "path": path, "message": message
            })],
        }
    }

    /// A body that is not JSON: v1's own response to it.
    pub fn malformed() -> Self {
        V1Error {
            code: Some("BAD_REQUEST_INVALID_JSON"),
            status: 400,
            error: "Bad request, malformed JSON".into(),
            details: Vec::new(),
        }
    }

    /// A v1 endpoint v2 has no counterpart for.
    pub fn no_counterpart(path: &str) -> Self {
        V1Error {
            code: None,
            status: 501,
            error: format!("{path} has no v2 equivalent on this upstream"),
            details: Vec::new(),
        }
    }

    /// A path that is no v1 endpoint at all (or not with this method).
    pub fn not_found(method: &str, path: &str) -> Self {
        V1Error {
            code: None,
            status: 404,
            error: format!("{method} {path} is not a v1 endpoint lingo can translate"),
            details: Vec::new(),
        }
    }

    /// The v1 error body; `details` only when there are some.
    pub fn body(&self) -> Bytes {
        let mut body = json!({"success": false, "error": self.error});
        if let Some(code) = self.code {
            body["code"] = code.into();
        }
        if !self.details.is_empty() {
            body["details"] = Value::Array(self.details.clone());
        }
        Bytes::from(body.to_string())
    }
}

/// `"a", "b"` for a message.
fn quoted(keys: &[String]) -> String {
    keys.iter()
        .map(|k| format!("'{k}'"))
        .collect::<Vec<_>>()
        .join(", ")
}
