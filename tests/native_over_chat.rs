//! Native clients over a chat-completions upstream, over sockets: a route
//! `speaks: native` to a `mock:` upstream that `speaks: chat-completions`. `/api/chat` and
//! `/api/generate` streamed (NDJSON, the last line `done: true` with the counts) and whole,
//! a stream that fails midway, `/api/embed` and `/api/embeddings`, aliases, the upstream's
//! errors and lingo's refusals in the native shape, and a round trip through a second lingo
//! (chat-completions over native) that must say what the native mock says directly.

mod support;

use hyper::Method;
use serde_json::{Value, json};
use support::*;

/// A native route over a chat-completions mock (4 tokens a response), with two aliases: one
/// that changes the response's length, one to a model the mock does not have.
async fn lingo() -> Lingo {
    let yaml = table(
        "upstreams:\n  oai:\n    mock: { tokens: 4 }\n    speaks: chat-completions\n    \
         timeouts: { first_byte: 2s, idle: 2s }\n\
         models:\n  short: { upstream: oai, model: \"m@tokens=2\" }\n  \
         gone: { upstream: oai, model: \"missing-model\" }\n\
         routes:\n  - { prefix: /api, speaks: native, to: oai }\n",
    );
    Lingo::start(&yaml).await
}

async fn post(lingo: &Lingo, path: &str, body: &Value) -> WholeResponse {
    send(request(
        Method::POST,
        &lingo.url(path),
        &[],
        &body.to_string(),
    ))
    .await
}

/// The lines of an NDJSON body, each parsed.
fn lines(body: &str) -> Vec<Value> {
    assert!(body.ends_with('\n'), "NDJSON ends with a newline: {body:?}");
    body.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}")))
        .collect()
}

fn chat(model: &str, stream: Option<bool>) -> Value {
    let mut body =
        json!({"model": model, "messages": [{"role": "user", "content": "hello there"}]});
    if let Some(stream) = stream {
        body["stream"] = stream.into();
    }
    body
}

/// Every line but the last says something and is not done; the last is `done: true`.
fn assert_complete(lines: &[Value], model: &str, text: &str) {
    let (last, pieces) = lines.split_last().expect("no lines");
    assert!(pieces.len() >= 2, "several lines: {lines:?}");
    assert!(
        pieces
            .iter()
            .all(|l| l["done"] == false && l["model"] == model)
    );
    assert_eq!(last["done"], true);
    assert_eq!(last["done_reason"], "stop");
    assert!(last["eval_count"].as_u64().unwrap() > 0, "{last}");
    assert!(last["prompt_eval_count"].as_u64().unwrap() > 0, "{last}");
    assert!(last["total_duration"].as_u64().is_some());
    assert!(last["created_at"].as_str().unwrap().ends_with('Z'));
    assert!(!text.is_empty());
}

fn chat_text(lines: &[Value]) -> String {
    lines
        .iter()
        .filter_map(|l| l["message"]["content"].as_str())
        .collect()
}

#[tokio::test]
async fn chat_streams_ndjson_by_default_and_ends_with_done() {
    let lingo = lingo().await;
    let response = post(&lingo, "/api/chat", &chat("m", None)).await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.headers["content-type"], "application/x-ndjson");
    assert!(!response.body.contains("[DONE]"), "{}", response.body);
    let lines = lines(&response.body);
    assert_complete(&lines, "m", &chat_text(&lines));
    assert_eq!(lines.last().unwrap()["eval_count"], 4);
    assert_eq!(lines[0]["message"]["role"], "assistant");
}

#[tokio::test]
async fn chat_whole_is_one_object() {
    let lingo = lingo().await;
    let response = post(&lingo, "/api/chat", &chat("m", Some(false))).await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.headers["content-type"], "application/json");
    let body = response.json();
    assert_eq!(body["model"], "m");
    assert_eq!(body["done"], true);
    assert_eq!(body["eval_count"], 4);
    assert!(!body["message"]["content"].as_str().unwrap().is_empty());
}

#[tokio::test]
async fn a_stream_that_fails_midway_ends_with_an_error_line_and_no_done() {
    let lingo = lingo().await;
    let response = post(&lingo, "/api/chat", &chat("m@error_after=2", None)).await;
    assert_eq!(response.status, 200, "{}", response.body);
    let lines = lines(&response.body);
    let (last, before) = lines.split_last().unwrap();
    assert!(
        last["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{last}"
    );
    assert_eq!(
        before.len(),
        2,
        "two tokens, then the error: {}",
        response.body
    );
    assert!(lines.iter().all(|l| l["done"] != true), "{}", response.body);
}

#[tokio::test]
async fn generate_streamed_and_whole() {
    let lingo = lingo().await;
    let body = json!({"model": "m", "prompt": "why is the sky blue?"});
    let response = post(&lingo, "/api/generate", &body).await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.headers["content-type"], "application/x-ndjson");
    let lines = lines(&response.body);
    let text: String = lines
        .iter()
        .filter_map(|l| l["response"].as_str())
        .collect();
    assert_complete(&lines, "m", &text);
    assert!(lines.iter().all(|l| l.get("message").is_none()));

    let whole = json!({"model": "m", "prompt": "why is the sky blue?", "stream": false});
    let response = post(&lingo, "/api/generate", &whole).await;
    assert_eq!(response.status, 200, "{}", response.body);
    let body = response.json();
    assert_eq!(body["done"], true);
    assert_eq!(body["response"].as_str().unwrap(), text);
    assert_eq!(body["eval_count"], 4);
}

#[tokio::test]
async fn raw_generate_goes_as_a_text_completion() {
    let lingo = lingo().await;
    let body = json!({"model": "m", "prompt": "Once", "raw": true, "stream": false});
    let response = post(&lingo, "/api/generate", &body).await;
    assert_eq!(response.status, 200, "{}", response.body);
    let body = response.json();
    assert_eq!(body["done"], true);
    assert!(!body["response"].as_str().unwrap().is_empty(), "{body}");
}

#[tokio::test]
async fn embed_and_legacy_embeddings() {
    let lingo = lingo().await;
    let body = json!({"model": "e", "input": ["one", "two"]});
    let response = post(&lingo, "/api/embed", &body).await;
    assert_eq!(response.status, 200, "{}", response.body);
    let body = response.json();
    assert_eq!(body["model"], "e");
    let embeddings = body["embeddings"].as_array().unwrap();
    assert_eq!(embeddings.len(), 2);
    assert_eq!(embeddings[0].as_array().unwrap().len(), 16);
    assert!(body["prompt_eval_count"].as_u64().unwrap() > 0);

    let response = post(
        &lingo,
        "/api/embeddings",
        &json!({"model": "e", "prompt": "one"}),
    )
    .await;
    assert_eq!(response.status, 200, "{}", response.body);
    let body = response.json();
    assert_eq!(body["embedding"].as_array().unwrap().len(), 16);
    assert_eq!(
        body["embedding"], embeddings[0],
        "the same text, the same vector"
    );

    let response = post(&lingo, "/api/embed", &json!({"model": "e", "input": []})).await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.json(), json!({"model": "e", "embeddings": []}));
}

#[tokio::test]
async fn an_alias_resolves_and_responds_under_its_own_name() {
    let lingo = lingo().await;
    let response = post(&lingo, "/api/chat", &chat("short", Some(false))).await;
    assert_eq!(response.status, 200, "{}", response.body);
    let body = response.json();
    assert_eq!(body["model"], "short");
    assert_eq!(
        body["eval_count"], 2,
        "the alias's target model (2 tokens): {body}"
    );

    let response = post(&lingo, "/api/chat", &chat("gone", None)).await;
    assert_eq!(response.status, 404, "{}", response.body);
    assert!(
        response.json()["error"]
            .as_str()
            .unwrap()
            .contains("missing-model")
    );
}

#[tokio::test]
async fn a_missing_model_is_a_native_404() {
    let lingo = lingo().await;
    for path in ["/api/chat", "/api/generate"] {
        let body = json!({"model": "missing-x", "prompt": "p",
            "messages": [{"role": "user", "content": "hi"}]});
        let response = post(&lingo, path, &body).await;
        assert_eq!(response.status, 404, "{path}: {}", response.body);
        assert_eq!(response.headers["content-type"], "application/json");
        let body = response.json();
        let error = body["error"].as_str().expect("native error shape");
        assert!(error.contains("missing-x"), "{error}");
    }
    let response = post(
        &lingo,
        "/api/embed",
        &json!({"model": "missing-x", "input": "a"}),
    )
    .await;
    assert_eq!(response.status, 404, "{}", response.body);
    assert!(response.json()["error"].is_string());
}

#[tokio::test]
async fn bad_requests_are_native_400s() {
    let lingo = lingo().await;
    for (path, body) in [
        ("/api/chat", json!({"messages": []})),
        ("/api/chat", json!({"model": "m", "messages": "hi"})),
        (
            "/api/generate",
            json!({"model": "m", "prompt": "p", "context": [1, 2]}),
        ),
        ("/api/embed", json!({"model": "m", "input": 3})),
    ] {
        let response = post(&lingo, path, &body).await;
        assert_eq!(response.status, 400, "{path} {body}: {}", response.body);
        let error = response.json();
        assert!(
            error["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{error}"
        );
    }
    let response = send(request(
        Method::POST,
        &lingo.url("/api/chat"),
        &[],
        "{not json",
    ))
    .await;
    assert_eq!(response.status, 400, "{}", response.body);
    assert!(response.json()["error"].is_string());
}

#[tokio::test]
async fn options_become_top_level_fields_and_load_time_ones_are_dropped() {
    let lingo = lingo().await;
    let mut body = chat("m", Some(false));
    body["options"] = json!({"num_predict": 2, "num_ctx": 4096, "top_k": 5, "temperature": 0.1});
    let response = post(&lingo, "/api/chat", &body).await;
    assert_eq!(response.status, 200, "{}", response.body);
    let body = response.json();
    assert_eq!(body["eval_count"], 2, "num_predict is max_tokens: {body}");
    assert_eq!(body["done_reason"], "length");
}

#[tokio::test]
async fn a_request_with_nothing_to_generate_only_loads() {
    let lingo = lingo().await;
    let response = post(&lingo, "/api/chat", &json!({"model": "m", "messages": []})).await;
    assert_eq!(response.status, 200, "{}", response.body);
    let lines = lines(&response.body);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["done_reason"], "load");
}

#[tokio::test]
async fn tags_list_the_upstream_models_then_the_aliases() {
    let lingo = lingo().await;
    let response = send(request(Method::GET, &lingo.url("/api/tags"), &[], "")).await;
    assert_eq!(response.status, 200, "{}", response.body);
    let body = response.json();
    let names: Vec<&str> = body["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"llama3.2:3b"), "{names:?}");
    assert_eq!(
        names[names.len() - 2..],
        ["gone", "short"],
        "aliases last, by name"
    );
    let first = &body["models"][0];
    for key in ["model", "modified_at", "size", "digest", "details"] {
        assert!(!first[key].is_null(), "{key}: {first}");
    }
}

#[tokio::test]
async fn show_describes_a_model_and_a_missing_one_is_a_native_404() {
    let lingo = lingo().await;
    let response = post(&lingo, "/api/show", &json!({"model": "llama3.2:3b"})).await;
    assert_eq!(response.status, 200, "{}", response.body);
    let body = response.json();
    assert_eq!(body["details"]["family"], "llama");
    assert_eq!(body["details"]["parameter_size"], "3B");
    let response = post(&lingo, "/api/show", &json!({"name": "short"})).await;
    assert_eq!(
        response.status, 200,
        "the older `name`, an alias: {}",
        response.body
    );
    assert_eq!(response.json()["model"], "short");

    let response = post(&lingo, "/api/show", &json!({"model": "gone"})).await;
    assert_eq!(response.status, 404, "{}", response.body);
    assert!(
        response.json()["error"]
            .as_str()
            .unwrap()
            .contains("missing-model")
    );
    let response = post(&lingo, "/api/show", &json!({})).await;
    assert_eq!(response.status, 400, "{}", response.body);
    assert!(response.json()["error"].is_string());
}

#[tokio::test]
async fn ps_says_nothing_is_loaded() {
    let lingo = lingo().await;
    let response = send(request(Method::GET, &lingo.url("/api/ps"), &[], "")).await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.json(), json!({"models": []}));
}

#[tokio::test]
async fn version_is_the_native_api_lingo_translates() {
    let lingo = lingo().await;
    let response = send(request(Method::GET, &lingo.url("/api/version"), &[], "")).await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.json(), json!({"version": "0.12.0"}));
}

#[tokio::test]
async fn model_management_is_a_native_501_naming_the_path() {
    let lingo = lingo().await;
    for path in [
        "/api/pull",
        "/api/push",
        "/api/create",
        "/api/copy",
        "/api/delete",
        "/api/blobs/sha256:00",
    ] {
        let response = post(&lingo, path, &json!({"model": "m"})).await;
        assert_eq!(response.status, 501, "{path}: {}", response.body);
        assert_eq!(
            response.json(),
            json!({"error": format!("{path} is not available: this route's upstream speaks chat-completions, which has no model management")}),
            "{path}"
        );
    }
    let response = post(&lingo, "/api/unheard-of", &json!({})).await;
    assert_eq!(response.status, 501, "{}", response.body);
    assert!(
        response.json()["error"]
            .as_str()
            .unwrap()
            .contains("cannot do yet")
    );
}

/// A native route with `extra_options: <policy>` over a recording chat-completions upstream:
/// what lingo sent it, or its refusal.
async fn with_extras(policy: &str, options: Value) -> (WholeResponse, Option<Value>) {
    let upstream = Backend::start(|_| async {
        json_response(
            200,
            r#"{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#,
        )
    })
    .await;
    let lingo = Lingo::start(&table(&format!(
        "upstreams:\n  oai:\n    url: {}\n    speaks: chat-completions\n\
         routes:\n  - {{ prefix: /api, speaks: native, to: oai, extra_options: {policy} }}\n",
        upstream.url()
    )))
    .await;
    let mut body = chat("m", Some(false));
    body["options"] = options;
    let response = post(&lingo, "/api/chat", &body).await;
    let sent = upstream
        .requests()
        .last()
        .map(|seen| serde_json::from_slice(&seen.body).unwrap());
    (response, sent)
}

#[tokio::test]
async fn extra_options_pass_drop_or_refuse_the_native_only_options() {
    let options = json!({"temperature": 0.5, "top_k": 7, "repeat_penalty": 1.1, "num_ctx": 4096});
    let (response, sent) = with_extras("pass", options.clone()).await;
    assert_eq!(response.status, 200, "{}", response.body);
    let sent = sent.expect("pass asks the upstream");
    assert_eq!(sent["temperature"], 0.5);
    assert_eq!(sent["top_k"], 7, "{sent}");
    assert_eq!(sent["repetition_penalty"], 1.1, "{sent}");
    assert!(
        sent.get("num_ctx").is_none(),
        "load-time options never go: {sent}"
    );

    let (response, sent) = with_extras("drop", options.clone()).await;
    assert_eq!(response.status, 200, "{}", response.body);
    let sent = sent.expect("drop asks the upstream");
    assert_eq!(
        sent["temperature"], 0.5,
        "standard options still go: {sent}"
    );
    for key in ["top_k", "repetition_penalty", "repeat_penalty", "num_ctx"] {
        assert!(sent.get(key).is_none(), "{key} dropped: {sent}");
    }

    let (response, sent) = with_extras("refuse", options).await;
    assert_eq!(response.status, 400, "{}", response.body);
    let message = response.json()["error"].as_str().unwrap().to_owned();
    assert!(
        message.contains("is not supported by this route's chat-completions upstream"),
        "{message}"
    );
    assert!(
        sent.is_none(),
        "a refused request never reaches the upstream"
    );
    let (response, _) = with_extras("refuse", json!({"temperature": 0.5, "num_predict": 3})).await;
    assert_eq!(
        response.status, 200,
        "standard options are not refused: {}",
        response.body
    );
}

/// lingo (native over chat-completions) -> lingo (chat-completions over native) -> the
/// native mock says what the native mock says directly: the same text, the same counts.
#[tokio::test]
async fn a_round_trip_through_both_translations_changes_nothing() {
    let inner = Lingo::start(&table(
        "upstreams:\n  ollama:\n    mock: { tokens: 5 }\n    speaks: native\n\
         routes:\n  - { prefix: /v1, speaks: chat-completions, to: ollama }\n  \
         - { prefix: /api, speaks: native, to: ollama }\n",
    ))
    .await;
    let outer = Lingo::start(&table(&format!(
        "upstreams:\n  inner:\n    url: {}\n    speaks: chat-completions\n\
         routes:\n  - {{ prefix: /api, speaks: native, to: inner }}\n",
        inner.url("")
    )))
    .await;
    let weather = json!([{"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
        "required": ["city"]}}}]);
    for (stream, tools) in [(true, false), (false, false), (true, true), (false, true)] {
        let mut body = chat("llama3.2:3b", Some(stream));
        if tools {
            body["tools"] = weather.clone();
        }
        let direct = post(&inner, "/api/chat", &body).await;
        let around = post(&outer, "/api/chat", &body).await;
        assert_eq!(direct.status, 200, "{}", direct.body);
        assert_eq!(around.status, 200, "{}", around.body);
        let (direct, around) = if stream {
            (lines(&direct.body), lines(&around.body))
        } else {
            (vec![direct.json()], vec![around.json()])
        };
        assert_eq!(chat_text(&direct).is_empty(), tools, "stream: {stream}");
        assert_eq!(chat_text(&direct), chat_text(&around), "stream: {stream}");
        let calls = |lines: &[Value]| -> Vec<Value> {
            let calls = lines
                .iter()
                .filter_map(|l| l["message"]["tool_calls"].as_array());
            calls.flatten().map(|c| c["function"].clone()).collect()
        };
        assert_eq!(calls(&direct).len(), usize::from(tools), "stream: {stream}");
        assert_eq!(
            calls(&direct),
            calls(&around),
            "tool calls, stream: {stream}"
        );
        let (d, a) = (direct.last().unwrap(), around.last().unwrap());
        for key in [
            "done",
            "done_reason",
            "eval_count",
            "prompt_eval_count",
            "model",
        ] {
            assert_eq!(d[key], a[key], "{key}, stream: {stream}\n{d}\n{a}");
        }
    }
}
