//! The mock speaking chat-completions, over sockets, behind lingo: a pass-through route
//! `speaks: chat-completions` to a `mock:` upstream that `speaks: chat-completions`. Each
//! endpoint, the streamed shapes (usage chunk, tool calls in fragments, reasoning), the knobs
//! and the failures in the official shapes.

mod support;

use hyper::Method;
use serde_json::{Value, json};
use support::*;

async fn lingo() -> Lingo {
    let yaml = table(
        "upstreams:\n  oai:\n    mock: { tokens: 4 }\n    speaks: chat-completions\n    \
         timeouts: { first_byte: 2s, idle: 2s }\n\
         routes:\n  - { prefix: /v1, speaks: chat-completions, to: oai }\n",
    );
    Lingo::start(&yaml).await
}

async fn post(lingo: &Lingo, path: &str, body: Value, headers: &[(&str, &str)]) -> WholeResponse {
    send(request(
        Method::POST,
        &lingo.url(path),
        headers,
        &body.to_string(),
    ))
    .await
}

#[tokio::test]
async fn chat_streams_sse_with_a_usage_chunk_and_done() {
    let lingo = lingo().await;
    let body = json!({"model": "m", "stream": true, "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "hello there"}]});
    let response = post(&lingo, "/v1/chat/completions", body, &[]).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.headers["content-type"], "text/event-stream");
    let events = events(&response.body);
    assert_eq!(
        events.len(),
        7,
        "4 words, finish, usage, [DONE]: {}",
        response.body
    );
    assert_eq!(
        events[0]["choices"][0]["delta"],
        json!({"role": "assistant", "content": "Lingo"})
    );
    assert!(
        events[..5]
            .iter()
            .all(|e| e["object"] == "chat.completion.chunk" && e["usage"].is_null())
    );
    assert_eq!(
        events[4]["choices"][0],
        json!({"index": 0, "delta": {}, "logprobs": null, "finish_reason": "stop"})
    );
    assert_eq!(events[5]["choices"], json!([]));
    assert_eq!(
        events[5]["usage"],
        json!({"prompt_tokens": 2, "completion_tokens": 4, "total_tokens": 6})
    );
    assert_eq!(events[6], "[DONE]");
    lingo.shutdown().await;
}

#[tokio::test]
async fn tool_calls_stream_in_fragments_and_reasoning_first() {
    let lingo = lingo().await;
    let body = json!({"model": "m", "stream": true, "reasoning_effort": "high",
        "messages": [{"role": "user", "content": "weather?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
            "properties": {"location": {"type": "string"}}, "required": ["location"]}}}]});
    let events = events(&post(&lingo, "/v1/chat/completions", body, &[]).await.body);
    let deltas: Vec<&Value> = events
        .iter()
        .filter_map(|e| e.pointer("/choices/0/delta"))
        .collect();
    assert_eq!(deltas[0]["reasoning_content"], "Lingo");
    let fragments: Vec<&Value> = deltas
        .iter()
        .filter_map(|d| d.pointer("/tool_calls/0"))
        .collect();
    assert!(
        fragments.len() >= 3,
        "id and name, then argument pieces: {fragments:?}"
    );
    assert_eq!(
        (&fragments[0]["id"], &fragments[0]["function"]["name"]),
        (&json!("call_mock0000"), &json!("get_weather"))
    );
    assert!(fragments[1].get("id").is_none());
    let arguments: String = fragments
        .iter()
        .filter_map(|f| f["function"]["arguments"].as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&arguments).unwrap(),
        json!({"location": "mock"})
    );
    let finish = events.iter().find_map(|e| {
        e.pointer("/choices/0/finish_reason")
            .filter(|f| !f.is_null())
    });
    assert_eq!(finish, Some(&json!("tool_calls")));
    lingo.shutdown().await;
}

#[tokio::test]
async fn whole_responses_completions_embeddings_and_models() {
    let lingo = lingo().await;
    let chat = post(
        &lingo,
        "/v1/chat/completions",
        json!({"model": "m", "max_completion_tokens": 2,
        "messages": [{"role": "user", "content": "hi"}]}),
        &[],
    )
    .await
    .json();
    assert_eq!(
        chat["choices"][0]["message"],
        json!({"role": "assistant", "content": "Lingo is"})
    );
    assert_eq!(chat["choices"][0]["finish_reason"], "length");
    let text = post(
        &lingo,
        "/v1/completions",
        json!({"model": "m", "prompt": "Once upon"}),
        &[],
    )
    .await
    .json();
    assert_eq!(
        (&text["object"], &text["choices"][0]["text"]),
        (&json!("text_completion"), &json!("Lingo is a mock"))
    );
    let embed = post(
        &lingo,
        "/v1/embeddings",
        json!({"model": "e", "input": ["a", "b"], "dimensions": 3}),
        &[],
    )
    .await
    .json();
    assert_eq!(embed["data"].as_array().unwrap().len(), 2);
    assert_eq!(embed["data"][1]["embedding"].as_array().unwrap().len(), 3);
    let models = get(&lingo.url("/v1/models")).await.json();
    assert_eq!(
        models["data"][0],
        json!({"id": "llama3.2:3b", "object": "model", "created": 1_767_225_600, "owned_by": "lingo-mock"})
    );
    assert_eq!(
        get(&lingo.url("/v1/models/llama3.2:3b")).await.json()["id"],
        "llama3.2:3b"
    );
    let missing = get(&lingo.url("/v1/models/missing-model")).await;
    assert_eq!(
        (missing.status.as_u16(), &missing.json()["error"]["code"]),
        (404, &json!("model_not_found"))
    );
    lingo.shutdown().await;
}

#[tokio::test]
async fn knobs_and_failures_in_the_official_shapes() {
    let lingo = lingo().await;
    let stream = |model: &str| json!({"model": model, "stream": true, "messages": [{"role": "user", "content": "x"}]});
    let errored = post(
        &lingo,
        "/v1/chat/completions",
        stream("m@error_after=2"),
        &[],
    )
    .await;
    let events = events(&errored.body);
    assert_eq!(events.len(), 3, "{}", errored.body);
    assert_eq!(events[2]["error"]["message"], "mock error after 2 tokens");
    assert!(!errored.body.contains("[DONE]"));
    let tokens = post(
        &lingo,
        "/v1/chat/completions",
        stream("m"),
        &[("x-mock", "tokens=1")],
    )
    .await;
    assert_eq!(events_of(&tokens).len(), 3, "1 word, finish, [DONE]");
    let status = post(&lingo, "/v1/chat/completions", stream("m@status=503"), &[]).await;
    assert_eq!(status.status.as_u16(), 503);
    assert_eq!(status.json()["error"]["type"], "server_error");
    let whole_error = post(
        &lingo,
        "/v1/completions",
        json!({"model": "m@error_after=1", "prompt": "x"}),
        &[],
    )
    .await;
    assert_eq!(whole_error.status.as_u16(), 500);
    let missing = post(&lingo, "/v1/chat/completions", stream("missing-model"), &[]).await;
    assert_eq!(missing.json()["error"]["code"], "model_not_found");
    let cut = json!({"model": "m@cut_after=1", "messages": [{"role": "user", "content": "x"}]});
    let cut = post(&lingo, "/v1/chat/completions", cut, &[]).await;
    assert_eq!(cut.status.as_u16(), 502, "{}", cut.body);
    let unknown = post(&lingo, "/v1/responses", json!({"model": "m"}), &[]).await;
    assert_eq!(
        (unknown.status.as_u16(), &unknown.json()["error"]["type"]),
        (404, &json!("invalid_request_error"))
    );
    lingo.shutdown().await;
}

fn events_of(response: &WholeResponse) -> Vec<Value> {
    events(&response.body)
}

/// `lingo mock --speaks chat-completions` (and the knob per request) serves the same dialect
/// on its own, for load tests of a chat-completions backend.
#[tokio::test]
async fn the_standalone_mock_speaks_it_when_told() {
    use lingo::mock::knobs::Knobs;
    use lingo::table::MockSpec;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/v1/chat/completions",
        listener.local_addr().unwrap()
    );
    tokio::spawn(lingo::mock::serve_on(
        listener,
        Knobs::from_spec(&MockSpec::default()),
    ));
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "x"}]}).to_string();
    let web_data = send(request(Method::POST, &url, &[], &body)).await;
    assert_eq!(
        web_data.json()["success"],
        false,
        "by default /v1/* is the web-data API"
    );
    let header = [("x-mock", "speaks=chat-completions,tokens=2")];
    let chat = send(request(Method::POST, &url, &header, &body))
        .await
        .json();
    assert_eq!(chat["choices"][0]["message"]["content"], "Lingo is");
}
