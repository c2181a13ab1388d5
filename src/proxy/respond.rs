//! The one place an error becomes a response: each dialect's error shape, with its status.
//!
//! Every error lingo produces itself (no route, bad key, upstream down, ...) is rendered by
//! [`render`] in the dialect of the route the client called, so each client sees the error
//! shape its SDK parses.

use bytes::Bytes;
use hyper::StatusCode;
use hyper::header::{CONNECTION, HeaderName, HeaderValue, RETRY_AFTER};
use serde_json::json;

use super::exchange::Arrival;
use crate::base::dialect::Dialect;
use crate::error::{ProxyError, Refusal};
use crate::http::message::Response;
use crate::observe::{AccessLog, Metrics};
use crate::upstream::headers::X_REQUEST_ID;

/// The response to a request: the run's, or its error told in the request's dialect (an
/// upstream's failure counted); either way with the request id, and its status logged.
pub fn finish(
    result: Result<Response, ProxyError>,
    metrics: &Metrics,
    arrival: &Arrival,
    log: &mut AccessLog,
) -> Response {
    let mut response = match result {
        Ok(response) => response,
        Err(err) => {
            metrics.upstream_error(&err);
            log.error = Some(match err.detail() {
                Some(detail) => format!("{err} ({detail})"),
                None => err.to_string(),
            });
            log.dialect.get_or_insert(arrival.dialect);
            render(&err, arrival.dialect)
        }
    };
    response.insert_header(X_REQUEST_ID, arrival.request_id.clone());
    log.status = response.status().as_u16();
    response
}

/// A request whose framing or headers are unsound: refused before it is admitted, and the
/// connection closed after (the rest of it cannot be trusted to be framed the way lingo
/// reads it).
pub fn unframed(why: &'static str, arrival: &Arrival, log: &mut AccessLog) -> Response {
    let mut response = render(&ProxyError::BadRequest(why), arrival.dialect);
    response
        .headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    log.status = 400;
    log.error = Some(why.to_owned());
    response
}

/// Renders an error lingo produced in the given dialect, with its status.
///
/// The three shapes are what each dialect's SDKs parse:
/// - chat-completions: `{"error":{"message","type","param","code"}}`
/// - native: `{"error":"..."}`
/// - web-data: `{"success":false,"error":"...","code":"..."}`
pub fn render(err: &ProxyError, dialect: Dialect) -> Response {
    let mut status = err.status();
    let message = err.to_string();
    let value = match dialect {
        Dialect::Chat => json!({"error": {
            "message": message,
            "type": chat_error_type(err, status),
            "param": err.param(),
            "code": err.code(),
        }}),
        Dialect::Native => json!({ "error": message }),
        Dialect::WebData | Dialect::WebDataV2 => {
            if let ProxyError::OverLimit(refusal) = err
                && refusal.is_spent_credits()
            {
                status = StatusCode::PAYMENT_REQUIRED;
            }
            web_data(err, message)
        }
    };
    let mut response = Response::json(status, value.to_string());
    if let Some(value) = err.retry_after() {
        response.headers_mut().insert(RETRY_AFTER, value);
    }
    if let ProxyError::OverLimit(refusal) = err {
        over_limit_fields(&mut response, refusal);
    }
    response
}

/// The chat-completions error `type`: a limit's own (`requests`, `tokens`,
/// `insufficient_quota`), else the status's.
fn chat_error_type(err: &ProxyError, status: StatusCode) -> &'static str {
    match err {
        ProxyError::OverLimit(r) if r.budget => "insufficient_quota",
        ProxyError::OverLimit(r) if r.unit.ends_with("tokens") => "tokens",
        ProxyError::OverLimit(_) => "requests",
        _ => chat_type(status),
    }
}

/// What the official SDKs read of a refusal: `retry-after-ms` (how long they wait), and for a
/// spent budget `x-should-retry: false` (they do not retry at all).
fn over_limit_fields(response: &mut Response, refusal: &Refusal) {
    let millis = refusal.retry_after.as_millis().max(1);
    if let Ok(value) = HeaderValue::from_str(&millis.to_string()) {
        response.insert_header(RETRY_AFTER_MS, value);
    }
    if refusal.budget {
        response.insert_header(X_SHOULD_RETRY, HeaderValue::from_static("false"));
    }
}

/// The refusal fields of the chat-completions API.
const RETRY_AFTER_MS: HeaderName = HeaderName::from_static("retry-after-ms");
const X_SHOULD_RETRY: HeaderName = HeaderName::from_static("x-should-retry");

/// `{"success":false,"error","code"?,"details"?}`: the web-data shape, both versions.
fn web_data(err: &ProxyError, message: String) -> serde_json::Value {
    let mut body = json!({"success": false, "error": message});
    if let Some(code) = err.code() {
        body["code"] = code.to_ascii_uppercase().into();
    }
    if let ProxyError::Refused { details, .. } = err
        && !details.is_empty()
    {
        body["details"] = serde_json::Value::Array(details.clone());
    }
    body
}

/// The last frame of a stream that broke after its head was sent, in the stream's dialect:
/// a chat-completions error event (and no `[DONE]` after it), or a native `{"error"}` line
/// (and no `done: true` line after it).
pub fn stream_error(dialect: Dialect, message: &str) -> Bytes {
    match dialect {
        Dialect::Chat => {
            let kind = chat_type(StatusCode::BAD_GATEWAY);
            crate::translate::sse::error_frame(message, kind, "upstream_error")
        }
        Dialect::Native | Dialect::WebData | Dialect::WebDataV2 => {
            let mut line = json!({ "error": message }).to_string().into_bytes();
            line.push(b'\n');
            Bytes::from(line)
        }
    }
}

/// The chat-completions error `type` for a status, as the official API assigns them: every
/// client error (a wrong key and an unknown model included; `code` tells them apart) is an
/// `invalid_request_error`, every server-side failure a `server_error`.
pub fn chat_type(status: StatusCode) -> &'static str {
    if status.is_client_error() {
        "invalid_request_error"
    } else {
        "server_error"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::dialect::Dialect;

    fn body_of(response: Response) -> (u16, serde_json::Value) {
        use http_body_util::BodyExt;
        let status = response.status().as_u16();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let bytes = rt
            .block_on(response.into_body().collect())
            .unwrap()
            .to_bytes();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    /// Each variant: its status, and its exact body in each dialect.
    #[test]
    fn every_error_renders_in_every_dialect() {
        use crate::error::TimeoutKind;
        use std::time::Duration;
        let cases: Vec<(ProxyError, u16, &str, &str, Option<&str>)> = vec![
            (
                ProxyError::NoRoute {
                    method: "GET".into(),
                    path: "/x".into(),
                },
                404,
                "no route for GET /x",
                "invalid_request_error",
                Some("unknown_url"),
            ),
            (
                ProxyError::BadPath("dot segments (. and ..) are not allowed"),
                400,
                "the request path is not acceptable: dot segments (. and ..) are not allowed",
                "invalid_request_error",
                Some("invalid_path"),
            ),
            (
                ProxyError::MissingKey,
                401,
                "missing client key: send it as `Authorization: Bearer <key>`",
                "invalid_request_error",
                Some("missing_api_key"),
            ),
            (
                ProxyError::InvalidKey,
                401,
                "invalid client key",
                "invalid_request_error",
                Some("invalid_api_key"),
            ),
            (
                ProxyError::ModelManagement {
                    path: "/api/pull".into(),
                },
                403,
                "/api/pull is a model-management call, which this route does not allow (`allow_model_management: true` on the route allows it)",
                "invalid_request_error",
                Some("model_management_forbidden"),
            ),
            (
                ProxyError::BodyTooLarge { limit: 10 },
                413,
                "request body is larger than this route's limit of 10 bytes",
                "invalid_request_error",
                Some("request_too_large"),
            ),
            (
                ProxyError::BadRequest("an HTTP/1.1 request needs exactly one Host header"),
                400,
                "bad request: an HTTP/1.1 request needs exactly one Host header",
                "invalid_request_error",
                Some("invalid_request"),
            ),
            (
                ProxyError::BadBody {
                    reason: "Invalid chunk size line".into(),
                },
                400,
                "the request body could not be read: Invalid chunk size line",
                "invalid_request_error",
                Some("invalid_request_body"),
            ),
            (
                ProxyError::BodyTimeout {
                    limit: Duration::from_secs(60),
                },
                408,
                "the request body stalled: nothing of it came for 60s (limits.body_timeout)",
                "invalid_request_error",
                Some("request_timeout"),
            ),
            (
                ProxyError::HeadersTooLarge {
                    what: "101 header fields; the limit is 100".into(),
                },
                431,
                "request headers are too large: 101 header fields; the limit is 100",
                "invalid_request_error",
                Some("headers_too_large"),
            ),
            (
                ProxyError::Overloaded {
                    what: "requests in flight",
                    limit: 8,
                },
                503,
                "lingo is at its limit of 8 requests in flight on this listener; retry shortly",
                "server_error",
                Some("overloaded"),
            ),
            (
                ProxyError::NoTranslator {
                    client: Dialect::Chat,
                    upstream: Dialect::Native,
                },
                501,
                "this route translates chat-completions to native, which lingo cannot do yet",
                "server_error",
                Some("not_implemented"),
            ),
            (
                ProxyError::NoModelManagement {
                    path: "/api/pull".into(),
                },
                501,
                "/api/pull is not available: this route's upstream speaks chat-completions, which has no model management",
                "server_error",
                Some("not_implemented"),
            ),
            (
                ProxyError::Unreachable {
                    upstream: "m".into(),
                    reason: "connection refused".into(),
                    detail: "Connection refused (os error 111)".into(),
                },
                502,
                "upstream `m` is unreachable: connection refused",
                "server_error",
                Some("upstream_unreachable"),
            ),
            (
                ProxyError::Timeout {
                    upstream: "m".into(),
                    kind: TimeoutKind::FirstByte,
                    limit: Duration::from_millis(1500),
                },
                504,
                "upstream `m` did not respond: first-byte timeout of 1500ms fired",
                "server_error",
                Some("upstream_timeout"),
            ),
            (
                ProxyError::Invalid {
                    message: "temperature must be between 0 and 2".into(),
                    param: Some("temperature".into()),
                },
                400,
                "temperature must be between 0 and 2",
                "invalid_request_error",
                None,
            ),
            (
                ProxyError::BadResponse {
                    upstream: "models".into(),
                    message: "the response is not JSON".into(),
                },
                502,
                "upstream `models`: the response is not JSON",
                "server_error",
                None,
            ),
            (
                ProxyError::Upstream {
                    status: StatusCode::NOT_FOUND,
                    message: "model 'x' not found".into(),
                    code: Some("model_not_found"),
                    retry_after: None,
                },
                404,
                "model 'x' not found",
                "invalid_request_error",
                Some("model_not_found"),
            ),
            (
                ProxyError::Refused {
                    status: StatusCode::NOT_IMPLEMENTED,
                    message: "/v1/llmstxt has no v2 equivalent on this upstream".into(),
                    code: None,
                    details: Vec::new(),
                },
                501,
                "/v1/llmstxt has no v2 equivalent on this upstream",
                "server_error",
                None,
            ),
        ];
        for (err, status, message, kind, code) in cases {
            let param = err.param().map(str::to_owned);
            let (got_status, chat) = body_of(render(&err, Dialect::Chat));
            assert_eq!(got_status, status, "{err:?}");
            assert_eq!(
                chat,
                json!({"error": {"message": message, "type": kind, "param": param, "code": code}})
            );
            assert_eq!(
                body_of(render(&err, Dialect::Native)),
                (status, json!({"error": message}))
            );
            let mut web = json!({"success": false, "error": message});
            if let Some(code) = code {
                web["code"] = code.to_ascii_uppercase().into();
            }
            assert_eq!(body_of(render(&err, Dialect::WebData)), (status, web));
        }
    }

    #[test]
    fn web_data_refusals_carry_their_details() {
        let err = ProxyError::Refused {
            status: StatusCode::BAD_REQUEST,
            message: "Bad Request: agent (FIRE-1) is not supported by this upstream".into(),
            code: Some("BAD_REQUEST"),
            details: vec![json!({"code": "custom", "path": ["agent"], "message": "m"})],
        };
        let want = json!({"success": false, "code": "BAD_REQUEST",
            "error": "Bad Request: agent (FIRE-1) is not supported by this upstream",
            "details": [{"code": "custom", "path": ["agent"], "message": "m"}]});
        assert_eq!(body_of(render(&err, Dialect::WebData)), (400, want));
        let (_, native) = body_of(render(&err, Dialect::Native));
        assert!(native.get("details").is_none());
    }

    #[test]
    fn upstream_retry_after_is_kept() {
        let err = ProxyError::Upstream {
            status: StatusCode::TOO_MANY_REQUESTS,
            message: "slow down".into(),
            code: None,
            retry_after: Some(HeaderValue::from_static("7")),
        };
        let response = render(&err, Dialect::Chat);
        assert_eq!(response.headers().get(&RETRY_AFTER), Some(&b"7"[..]));
    }
}
