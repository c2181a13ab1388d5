//! What the tests check again and again: an error in a dialect's shape, the events of an SSE
//! body, a stream that failed the way lingo fails streams.

use bytes::Bytes;
use hyper::Response;
use serde_json::Value;

use lingo::http::body::Body;

use super::WholeResponse;

/// An error response in `dialect`'s shape (`chat`, `native` or `web-data`) with `status`, its
/// message naming `needle`, and its machine-readable `code` where the dialect has one: the
/// chat-completions `code` as it is (`None` is `null`), with the `type` the official API gives
/// the status; the web-data `code` upper-cased (absent for `None`). The native shape is
/// `{"error": message}` and nothing else.
pub fn assert_shape(
    response: &WholeResponse,
    dialect: &str,
    status: u16,
    code: Option<&str>,
    needle: &str,
) {
    assert_eq!(response.status, status, "{dialect}: {}", response.body);
    assert_eq!(
        response.headers["content-type"], "application/json",
        "{dialect}: {}",
        response.body
    );
    let body = response.json();
    let message = match dialect {
        "chat" => {
            let error = &body["error"];
            assert_eq!(
                body.as_object().unwrap().len(),
                1,
                "chat error is just {{error}}: {body}"
            );
            assert_eq!(
                error.as_object().unwrap().len(),
                4,
                "chat error has message, type, param, code: {body}"
            );
            let want_type = if status < 500 {
                "invalid_request_error"
            } else {
                "server_error"
            };
            assert_eq!(error["type"], want_type, "{body}");
            assert_eq!(error["code"], serde_json::json!(code), "{body}");
            assert!(error.get("param").is_some(), "{body}");
            error["message"].as_str().unwrap().to_owned()
        }
        "native" => {
            assert_eq!(
                body.as_object().unwrap().len(),
                1,
                "native error is just {{error}}: {body}"
            );
            body["error"].as_str().unwrap().to_owned()
        }
        "web-data" => {
            assert_eq!(body["success"], false, "{body}");
            let want = code.map(str::to_ascii_uppercase);
            assert_eq!(
                body.get("code").map(|c| c.as_str().unwrap().to_owned()),
                want,
                "{body}"
            );
            let fields = if code.is_some() { 3 } else { 2 };
            assert_eq!(body.as_object().unwrap().len(), fields, "{body}");
            body["error"].as_str().unwrap().to_owned()
        }
        _ => unreachable!(),
    };
    assert!(
        message.contains(needle),
        "{dialect}: {message:?} should mention {needle:?}"
    );
}

/// The `data:` payloads of an SSE body, `[DONE]` included as a string.
pub fn events(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter(|f| !f.is_empty())
        .map(|f| {
            let data = f
                .strip_prefix("data: ")
                .unwrap_or_else(|| panic!("not an SSE data frame: {f:?}"));
            serde_json::from_str(data).unwrap_or_else(|_| Value::String(data.to_owned()))
        })
        .collect()
}

/// A stream that failed: no `[DONE]` anywhere, and the last event is an error object whose
/// message contains `needle`.
pub fn assert_failed_stream(body: &str, needle: &str) {
    let events = events(body);
    assert!(
        !events.iter().any(|e| e == "[DONE]"),
        "a failed stream must not look complete:\n{body}"
    );
    let last = events
        .last()
        .unwrap_or_else(|| panic!("no events:\n{body}"));
    let message = last["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("the last event is not an error: {last}"));
    assert!(
        message.contains(needle),
        "{message:?} should name {needle:?}"
    );
    assert_eq!(last["error"]["type"], "server_error", "{last}");
}

/// A whole NDJSON response.
pub fn ndjson_response(body: &'static str) -> Response<Body> {
    Response::builder()
        .header("content-type", "application/x-ndjson")
        .body(Body::full(Bytes::from_static(body.as_bytes())))
        .unwrap()
}
