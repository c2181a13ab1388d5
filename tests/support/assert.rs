//! What the tests check again and again: an error in a dialect's shape, the events of an SSE
//! body, a stream that failed the way lingo fails streams.

use bytes::Bytes;
use hyper::Response;
use serde_json::Value;

use lingo::http::body::Body;

use super::Answer;

/// An error answer in `dialect`'s shape (`chat`, `native` or `web-data`) with `status`, its
/// message naming `needle`.
pub fn assert_shape(answer: &Answer, dialect: &str, status: u16, needle: &str) {
    assert_eq!(answer.status, status, "{dialect}: {}", answer.body);
    assert_eq!(answer.headers["content-type"], "application/json");
    let body = answer.json();
    let message = match dialect {
        "chat" => {
            let error = &body["error"];
            for field in ["message", "type", "param", "code"] {
                assert!(
                    error.get(field).is_some(),
                    "chat error lacks {field}: {body}"
                );
            }
            assert!(error["type"].is_string(), "{body}");
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

/// A whole NDJSON answer.
pub fn ndjson_response(body: &'static str) -> Response<Body> {
    Response::builder()
        .header("content-type", "application/x-ndjson")
        .body(Body::full(Bytes::from_static(body.as_bytes())))
        .unwrap()
}
