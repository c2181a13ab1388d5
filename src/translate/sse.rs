//! Server-sent-event frames: `data: <json>\n\n`, and the closing `data: [DONE]`.

use bytes::Bytes;
use serde::Serialize;

/// One `data:` frame holding `value` as compact JSON.
pub fn data(value: &impl Serialize) -> Bytes {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"data: ");
    // Serialising plain structs and maps into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, value);
    out.extend_from_slice(b"\n\n");
    super::frozen(out)
}

/// The frame that tells a client the stream is complete.
pub fn done() -> Bytes {
    Bytes::from_static(b"data: [DONE]\n\n")
}

/// A chat-completions error object as a frame: what a client gets when a stream breaks.
pub fn error_frame(message: &str, kind: &str, code: &str) -> Bytes {
    data(
        &serde_json::json!({"error": {"message": message, "type": kind, "param": null, "code": code}}),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn frames() {
        assert_eq!(
            super::data(&serde_json::json!({"a": 1})),
            "data: {\"a\":1}\n\n"
        );
        assert_eq!(super::done(), "data: [DONE]\n\n");
        assert_eq!(
            super::error_frame("cut", "server_error", "upstream_error"),
            "data: {\"error\":{\"code\":\"upstream_error\",\"message\":\"cut\",\"param\":null,\"type\":\"server_error\"}}\n\n"
        );
    }
}
