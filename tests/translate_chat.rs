//! `/v1/chat/completions` over a native backend, over real sockets: the built-in mock for
//! the responses, and recording backends where the native request itself is the point.

mod support;

use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::channel::Channel;
use hyper::{Method, Response};
use lingo::http::body::{Body, BoxError};
use serde_json::{Value, json};
use support::*;

/// lingo with `/v1/chat/completions` translated to `upstream_yaml`'s native upstream.
async fn chat_lingo(upstream_yaml: &str) -> Lingo {
    Lingo::start(&table(&format!(
        "upstreams:\n  models:\n{upstream_yaml}    speaks: native\n    timeouts: {{ first_byte: 2s, idle: 2s }}\n\
         models:\n  gpt-4o-mini: {{ upstream: models, model: \"llama3.2:3b\" }}\n\
         routes:\n  - {{ path: /v1/chat/completions, speaks: chat-completions, to: models, options: {{ num_ctx: 4096 }} }}\n"
    )))
    .await
}

async fn mock_lingo() -> Lingo {
    chat_lingo("    mock: { tokens: 4 }\n").await
}

async fn chat(lingo: &Lingo, body: Value) -> WholeResponse {
    send(request(
        Method::POST,
        &lingo.url("/v1/chat/completions"),
        &[],
        &body.to_string(),
    ))
    .await
}

fn user(content: &str) -> Value {
    json!([{"role": "user", "content": content}])
}

fn content_of(events: &[Value]) -> String {
    events
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["content"].as_str())
        .collect()
}

#[tokio::test]
async fn non_stream_response_has_the_official_shape() {
    let lingo = mock_lingo().await;
    let response = chat(
        &lingo,
        json!({"model": "gpt-4o-mini", "messages": user("hello there")}),
    )
    .await;
    assert_eq!(response.status, 200, "{}", response.body);
    let body = response.json();
    // `chatcmpl-` and 32 lower-case hex characters, nothing else.
    let id = body["id"].as_str().unwrap();
    let hex = id
        .strip_prefix("chatcmpl-")
        .unwrap_or_else(|| panic!("{id}"));
    assert_eq!(hex.len(), 32, "{id}");
    assert!(
        hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
        "{id}"
    );
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(
        body["model"], "gpt-4o-mini",
        "the name the client asked for"
    );
    assert!(body["created"].as_u64().unwrap() > 1_700_000_000);
    let choice = &body["choices"][0];
    assert_eq!(choice["index"], 0);
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], "Lingo is a mock");
    assert_eq!(choice["finish_reason"], "stop");
    assert_eq!(
        body["usage"],
        json!({"prompt_tokens": 2, "completion_tokens": 4, "total_tokens": 6})
    );
    let other = chat(
        &lingo,
        json!({"model": "gpt-4o-mini", "messages": user("x")}),
    )
    .await
    .json();
    assert_ne!(other["id"], body["id"], "ids are unique");
}

#[tokio::test]
async fn stream_is_sse_in_the_official_format() {
    let lingo = mock_lingo().await;
    let response = chat(
        &lingo,
        json!({"model": "m", "stream": true, "messages": user("hi")}),
    )
    .await;
    assert_eq!(response.status, 200);
    assert_eq!(response.headers["content-type"], "text/event-stream");
    let events = events(&response.body);
    assert_eq!(events.last().unwrap(), "[DONE]");
    let chunks = &events[..events.len() - 1];
    let id = &chunks[0]["id"];
    assert!(
        chunks
            .iter()
            .all(|c| &c["id"] == id && c["created"] == chunks[0]["created"])
    );
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk" && c["model"] == "m")
    );
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert!(
        chunks[1..]
            .iter()
            .all(|c| c["choices"][0]["delta"].get("role").is_none()),
        "role only on the first delta"
    );
    assert_eq!(content_of(chunks), "Lingo is a mock");
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"][0]["delta"], json!({}));
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert!(
        chunks
            .iter()
            .all(|c| c.get("usage").is_none() || c["usage"].is_null())
    );
}

#[tokio::test]
async fn include_usage_adds_a_usage_chunk() {
    let lingo = mock_lingo().await;
    let body = json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}, "messages": user("a b c")});
    let events = events(&chat(&lingo, body).await.body);
    assert_eq!(events.last().unwrap(), "[DONE]");
    let usage = &events[events.len() - 2];
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(
        usage["usage"],
        json!({"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7})
    );
}

#[tokio::test]
async fn tool_calls_non_stream_and_stream() {
    let lingo = mock_lingo().await;
    let tools = json!([{"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]);
    let whole = chat(
        &lingo,
        json!({"model": "m", "messages": user("weather?"), "tools": tools}),
    )
    .await
    .json();
    let choice = &whole["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(call["function"]["arguments"], r#"{"city":"mock"}"#);
    assert!(call["id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(
        choice["message"]["content"].as_str(),
        Some(""),
        "content is always a string"
    );

    let streamed = events(
        &chat(
            &lingo,
            json!({"model": "m", "stream": true, "messages": user("w"), "tools": tools}),
        )
        .await
        .body,
    );
    let calls: Vec<&Value> = streamed
        .iter()
        .filter_map(|e| e["choices"][0]["delta"].get("tool_calls"))
        .collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0][0]["index"], 0);
    assert_eq!(calls[0][0]["function"]["arguments"], r#"{"city":"mock"}"#);
    let finish = &streamed[streamed.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
}

#[tokio::test]
async fn json_modes_ask_the_backend_for_a_format() {
    let lingo = mock_lingo().await;
    let object = chat(
        &lingo,
        json!({"model": "m", "messages": user("j"), "response_format": {"type": "json_object"}}),
    )
    .await
    .json();
    let text = object["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({"answer": "mock"})
    );
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let format = json!({"type": "json_schema", "json_schema": {"name": "x", "schema": schema}});
    let typed = chat(
        &lingo,
        json!({"model": "m", "messages": user("j"), "response_format": format}),
    )
    .await
    .json();
    let text = typed["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({"n": 0})
    );
}

/// What lingo sends upstream: images, joined text parts, alias, defaults, explicit stream.
#[tokio::test]
async fn the_native_request_carries_images_alias_and_only_what_was_set() {
    let backend = Backend::start(|seen| async move {
        let native: Value = serde_json::from_slice(&seen.body).unwrap();
        let model = native["model"].as_str().unwrap().to_owned();
        json_response(
            200,
            &json!({"model": model, "created_at": "2026-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": "ok"}, "done": true, "done_reason": "stop"})
            .to_string(),
        )
    })
    .await;
    let lingo = chat_lingo(&format!("    url: {}\n", backend.url())).await;
    let messages = json!([
        {"role": "developer", "content": "be brief"},
        {"role": "user", "content": [
            {"type": "text", "text": "what is"},
            {"type": "image_url", "image_url": {"url": "data:IMAGE/GIF;base64,R0lGODlh"}},
            {"type": "text", "text": "in this picture?"}
        ]}
    ]);
    let response = chat(&lingo, json!({"model": "gpt-4o-mini", "messages": messages, "max_completion_tokens": 7, "user": "ignored"})).await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.json()["model"], "gpt-4o-mini");
    assert_eq!(
        response.json()["usage"],
        json!({"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0})
    );
    let seen = backend.last();
    assert_eq!(seen.uri, "/api/chat");
    let native: Value = serde_json::from_slice(&seen.body).unwrap();
    assert_eq!(native["model"], "llama3.2:3b", "the alias's upstream model");
    assert_eq!(native["stream"], false, "stream is always sent");
    assert_eq!(
        native["messages"][0],
        json!({"role": "system", "content": "be brief"})
    );
    let user = &native["messages"][1];
    assert_eq!(
        native["messages"].as_array().unwrap().len(),
        2,
        "parts of one message stay one message"
    );
    assert!(user["content"].as_str().unwrap().contains("what is"));
    assert!(
        user["content"]
            .as_str()
            .unwrap()
            .contains("in this picture?")
    );
    assert_eq!(user["images"], json!(["R0lGODlh"]));
    assert_eq!(native["options"]["num_predict"], 7);
    assert_eq!(
        native["options"]["num_ctx"], 4096,
        "the route's default options"
    );
    assert!(
        native["options"].get("temperature").is_none(),
        "no injected sampling defaults"
    );
}

#[tokio::test]
async fn n_two_returns_two_choices_both_ways() {
    let lingo = mock_lingo().await;
    let whole = chat(
        &lingo,
        json!({"model": "m", "n": 2, "messages": user("hi")}),
    )
    .await
    .json();
    let choices = whole["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 2);
    assert_eq!(
        (choices[0]["index"].clone(), choices[1]["index"].clone()),
        (json!(0), json!(1))
    );
    assert_eq!(whole["usage"]["completion_tokens"], 8);

    let streamed = events(
        &chat(
            &lingo,
            json!({"model": "m", "n": 2, "stream": true, "messages": user("hi")}),
        )
        .await
        .body,
    );
    assert_eq!(streamed.iter().filter(|e| *e == "[DONE]").count(), 1);
    for index in [0, 1] {
        let mine: Vec<Value> = streamed
            .iter()
            .filter(|e| e["choices"][0]["index"] == index)
            .cloned()
            .collect();
        assert_eq!(content_of(&mine), "Lingo is a mock", "choice {index}");
        assert_eq!(mine.last().unwrap()["choices"][0]["finish_reason"], "stop");
    }
}

#[tokio::test]
async fn invalid_requests_are_400_naming_the_param() {
    let lingo = mock_lingo().await;
    for (body, param) in [
        (json!({"messages": user("x")}), "model"),
        (json!({"model": "m"}), "messages"),
        (
            json!({"model": "m", "messages": user("x"), "temperature": 3}),
            "temperature",
        ),
        (
            json!({"model": "m", "messages": user("x"), "stop": ["a", "b", "c", "d", "e"]}),
            "stop",
        ),
        (
            json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}]}),
            "messages",
        ),
    ] {
        let response = chat(&lingo, body.clone()).await;
        assert_eq!(response.status, 400, "{body}: {}", response.body);
        let error = &response.json()["error"];
        assert_eq!(error["type"], "invalid_request_error");
        assert_eq!(error["param"], param, "{body}");
        assert!(!error["message"].as_str().unwrap().is_empty());
    }
    let garbage = send(request(
        Method::POST,
        &lingo.url("/v1/chat/completions"),
        &[],
        "{not json",
    ))
    .await;
    assert_eq!(garbage.status, 400);
    assert_eq!(garbage.json()["error"]["type"], "invalid_request_error");
}

#[tokio::test]
async fn upstream_errors_before_the_first_byte_keep_their_status() {
    let lingo = mock_lingo().await;
    let missing = chat(
        &lingo,
        json!({"model": "missing-model", "messages": user("x")}),
    )
    .await;
    assert_eq!(missing.status, 404);
    let error = &missing.json()["error"];
    assert_eq!(
        (error["type"].clone(), error["code"].clone()),
        (json!("invalid_request_error"), json!("model_not_found"))
    );
    assert!(error["message"].as_str().unwrap().contains("missing-model"));
    for stream in [false, true] {
        let busy = chat(
            &lingo,
            json!({"model": "m@status=503", "stream": stream, "messages": user("x")}),
        )
        .await;
        assert_eq!(busy.status, 503);
        assert_eq!(busy.json()["error"]["type"], "server_error");
    }
}

#[tokio::test]
async fn mid_stream_failures_end_with_an_error_frame_and_no_done() {
    let lingo = mock_lingo().await;
    for knob in ["error_after=2", "cut_after=2"] {
        let response = chat(
            &lingo,
            json!({"model": format!("m@{knob}"), "stream": true, "messages": user("x")}),
        )
        .await;
        assert_eq!(response.status, 200, "{knob}");
        let events = events(&response.body);
        assert!(
            !events.iter().any(|e| e == "[DONE]"),
            "{knob}: a cut response must not look complete"
        );
        let last = events.last().unwrap();
        assert!(last["error"]["message"].is_string(), "{knob}: {last}");
        assert_eq!(
            content_of(&events),
            "Lingo is",
            "{knob}: what came before the failure arrived"
        );
    }
}

#[tokio::test]
async fn unreachable_and_slow_backends() {
    let dead = chat_lingo(&format!("    url: http://{}\n", closed_port().await)).await;
    let response = chat(&dead, json!({"model": "m", "messages": user("x")})).await;
    assert_eq!(response.status, 502);
    assert_eq!(response.json()["error"]["type"], "server_error");
    let slow = mock_lingo().await;
    let response = chat(
        &slow,
        json!({"model": "m@first_token_delay=10s", "messages": user("x")}),
    )
    .await;
    assert_eq!(response.status, 504);
}

/// The first token reaches the client before the backend sends the second.
#[tokio::test]
async fn tokens_are_not_buffered() {
    let (backend, lines_tx) = scripted_backend().await;
    let lingo = chat_lingo(&format!("    url: {}\n", backend.url())).await;
    let req = request(
        Method::POST,
        &lingo.url("/v1/chat/completions"),
        &[],
        &json!({"model": "m", "stream": true, "messages": user("x")}).to_string(),
    );
    let mut body = client().request(req).await.unwrap().into_body();
    let token = |text: &str, done: bool| {
        let mut line = json!({"model": "m", "created_at": "2026-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": text}, "done": done})
        .to_string();
        line.push('\n');
        Bytes::from(line)
    };
    lines_tx.send(token("first", false)).unwrap();
    let frame = tokio::time::timeout(Duration::from_secs(10), body.frame())
        .await
        .expect("first token in time")
        .unwrap()
        .unwrap();
    let text = String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap();
    assert!(text.contains("first"), "{text}");
    lines_tx.send(token(" second", false)).unwrap();
    lines_tx.send(token("", true)).unwrap();
    drop(lines_tx);
    let rest = String::from_utf8(body.collect().await.unwrap().to_bytes().to_vec()).unwrap();
    assert!(
        rest.contains("second") && rest.ends_with("data: [DONE]\n\n"),
        "{rest}"
    );
}

/// A client that goes away mid-stream cancels the upstream request: the backend's body
/// sender sees the receiver gone.
#[tokio::test]
async fn client_disconnect_cancels_the_upstream() {
    let (closed_tx, mut closed_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let backend = Backend::start(move |_| {
        let closed_tx = closed_tx.clone();
        async move {
            let (mut tx, body) = Channel::<Bytes, BoxError>::new(1);
            tokio::spawn(async move {
                let line = Bytes::from_static(
                    b"{\"message\":{\"role\":\"assistant\",\"content\":\"t\"},\"done\":false}\n",
                );
                for _ in 0..10_000 {
                    if tx.send_data(line.clone()).await.is_err() {
                        let _ = closed_tx.send(());
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            });
            Response::builder().body(Body::new(body)).unwrap()
        }
    })
    .await;
    let lingo = chat_lingo(&format!("    url: {}\n", backend.url())).await;
    let req = request(
        Method::POST,
        &lingo.url("/v1/chat/completions"),
        &[],
        &json!({"model": "m", "stream": true, "messages": user("x")}).to_string(),
    );
    let mut body = client().request(req).await.unwrap().into_body();
    body.frame().await.unwrap().unwrap();
    drop(body);
    tokio::time::timeout(Duration::from_secs(20), closed_rx.recv())
        .await
        .expect("the upstream stream was cancelled when the client left")
        .unwrap();
    // ...and lingo let go of the stream (the gauge counts responses being sent).
    let mut metrics = String::new();
    for _ in 0..100 {
        metrics = get(&lingo.url("/metrics")).await.body;
        if metrics.contains("lingo_open_streams 0\n") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the stream is still open after the client left:\n{metrics}");
}

/// An upstream that stalls mid-stream is cut by the idle limit: error frame, no `[DONE]`.
#[tokio::test]
async fn a_stalled_stream_ends_with_an_error_frame() {
    let lingo = chat_lingo("    mock: { tokens: 4 }\n").await;
    // The mock waits 5 s before its second token; the route's idle limit is 2 s.
    let body = json!({"model": "m@token_delay=5s", "stream": true, "messages": user("x")});
    let response = chat(&lingo, body).await;
    let events = events(&response.body);
    assert!(!events.iter().any(|e| e == "[DONE]"));
    let message = events.last().unwrap()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("upstream sent nothing for 2s"),
        "{message}"
    );
}

/// The client's end-to-end headers travel on with the translated request; its key and its
/// body's own headers do not.
#[tokio::test]
async fn client_headers_travel_with_the_translated_request() {
    let backend = Backend::start(|_| async {
        json_response(
            200,
            r#"{"message":{"role":"assistant","content":"ok"},"done":true}"#,
        )
    })
    .await;
    let lingo = chat_lingo(&format!("    url: {}\n", backend.url())).await;
    let headers = [
        ("traceparent", "00-abc-def-01"),
        ("authorization", "Bearer client-key"),
        ("x-request-id", "rid-7"),
    ];
    let body = json!({"model": "m", "messages": user("x")}).to_string();
    let response = send(request(
        Method::POST,
        &lingo.url("/v1/chat/completions"),
        &headers,
        &body,
    ))
    .await;
    assert_eq!(response.status, 200, "{}", response.body);
    let seen = backend.last();
    assert_eq!(seen.headers["traceparent"], "00-abc-def-01");
    assert_eq!(seen.headers["x-request-id"], "rid-7");
    assert_eq!(seen.headers["content-type"], "application/json");
    assert!(
        !seen.headers.contains_key("authorization"),
        "the client's key is not forwarded"
    );
    assert_eq!(
        seen.headers["content-length"],
        seen.body.len().to_string().as_str()
    );
}
