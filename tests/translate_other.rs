//! `/v1/embeddings` over a native backend, over real sockets.

mod support;

use hyper::{Method, Response};
use lingo::http::body::Body;
use serde_json::{Value, json};
use support::*;

async fn embed_lingo(upstream_yaml: &str) -> Lingo {
    Lingo::start(&table(&format!(
        "upstreams:\n  models:\n{upstream_yaml}    speaks: native\n\
         models:\n  text-embedding-3-small: {{ upstream: models, model: all-minilm }}\n\
         routes:\n  - {{ path: /v1/embeddings, speaks: chat-completions, to: models }}\n"
    )))
    .await
}

async fn embed(lingo: &Lingo, body: Value) -> WholeResponse {
    send(request(
        Method::POST,
        &lingo.url("/v1/embeddings"),
        &[],
        &body.to_string(),
    ))
    .await
}

#[tokio::test]
async fn embeddings_float_base64_batch_and_dimensions() {
    let lingo = embed_lingo("    mock: { embedding_size: 8 }\n").await;
    let one = embed(
        &lingo,
        json!({"model": "text-embedding-3-small", "input": "hello world"}),
    )
    .await;
    assert_eq!(one.status, 200, "{}", one.body);
    let one = one.json();
    assert_eq!(one["object"], "list");
    assert_eq!(one["model"], "text-embedding-3-small");
    assert_eq!(one["data"][0]["object"], "embedding");
    assert_eq!(one["data"][0]["index"], 0);
    let vector: Vec<f64> = one["data"][0]["embedding"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(vector.len(), 8);
    assert_eq!(one["usage"], json!({"prompt_tokens": 2, "total_tokens": 2}));

    let batch = embed(
        &lingo,
        json!({"model": "m", "input": ["a", "hello world"], "dimensions": 4}),
    )
    .await
    .json();
    let data = batch["data"].as_array().unwrap();
    assert_eq!(data.len(), 2);
    assert_eq!(
        (data[0]["index"].clone(), data[1]["index"].clone()),
        (json!(0), json!(1))
    );
    assert_eq!(data[1]["embedding"].as_array().unwrap().len(), 4);

    let b64 = embed(
        &lingo,
        json!({"model": "m", "input": "hello world", "encoding_format": "base64"}),
    )
    .await
    .json();
    let text = b64["data"][0]["embedding"].as_str().unwrap();
    assert_eq!(
        text.len(),
        44,
        "8 float32 = 32 bytes = 44 base64 characters"
    );
    let floats = decode_f32(text);
    for (a, b) in floats.iter().zip(&vector) {
        assert!((f64::from(*a) - b).abs() < 1e-6, "{floats:?} vs {vector:?}");
    }
}

/// Standard base64 -> little-endian float32s (the test's own decoder).
fn decode_f32(text: &str) -> Vec<f32> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let mut bytes = Vec::new();
    for chunk in text.as_bytes().chunks(4) {
        let n = chunk
            .iter()
            .filter(|c| **c != b'=')
            .enumerate()
            .fold(0u32, |n, (i, c)| n | (u32::from(value(*c)) << (18 - 6 * i)));
        let real = chunk.iter().filter(|c| **c != b'=').count() - 1;
        bytes.extend(
            [(n >> 16) as u8, (n >> 8) as u8, n as u8]
                .into_iter()
                .take(real),
        );
    }
    bytes
        .chunks(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

#[tokio::test]
async fn embeddings_errors() {
    let lingo = embed_lingo("    mock: {}\n").await;
    for (body, param) in [
        (json!({"model": "m", "input": ""}), "input"),
        (json!({"model": "m", "input": []}), "input"),
        (json!({"model": "m", "input": [[1, 2]]}), "input"),
        (
            json!({"model": "m", "input": "x", "encoding_format": "json"}),
            "encoding_format",
        ),
        (json!({"input": "x"}), "model"),
    ] {
        let response = embed(&lingo, body.clone()).await;
        assert_eq!(response.status, 400, "{body}");
        assert_eq!(response.json()["error"]["param"], param, "{body}");
    }
    let missing = embed(&lingo, json!({"model": "missing-embedder", "input": "x"})).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["error"]["code"], "model_not_found");
}

/// An upstream without `/api/embed` is served through `/api/embeddings`, one call per input,
/// and lingo remembers it.
#[tokio::test]
async fn falls_back_to_the_legacy_endpoint_and_remembers() {
    let backend = Backend::start(|seen| async move {
        if seen.uri == "/api/embed" {
            return Response::builder()
                .status(404)
                .header("content-type", "text/plain")
                .body(Body::full("404 page not found"))
                .unwrap();
        }
        let native: Value = serde_json::from_slice(&seen.body).unwrap();
        let prompt = native["prompt"].as_str().unwrap();
        json_response(
            200,
            &json!({"embedding": [prompt.len() as f64, 0.5]}).to_string(),
        )
    })
    .await;
    let lingo = embed_lingo(&format!("    url: {}\n", backend.url())).await;
    let response = embed(
        &lingo,
        json!({"model": "text-embedding-3-small", "input": ["a", "bcd"]}),
    )
    .await;
    assert_eq!(response.status, 200, "{}", response.body);
    let data = response.json()["data"].clone();
    assert_eq!(data[0]["embedding"], json!([1.0, 0.5]));
    assert_eq!(data[1]["embedding"], json!([3.0, 0.5]));
    let paths: Vec<String> = backend.requests().iter().map(|s| s.uri.clone()).collect();
    assert_eq!(paths, ["/api/embed", "/api/embeddings", "/api/embeddings"]);
    let legacy: Value = serde_json::from_slice(&backend.requests()[1].body).unwrap();
    assert_eq!(legacy["model"], "all-minilm");

    embed(&lingo, json!({"model": "m", "input": "x"})).await;
    let paths: Vec<String> = backend.requests().iter().map(|s| s.uri.clone()).collect();
    assert_eq!(paths.last().unwrap(), "/api/embeddings");
    assert_eq!(
        paths.iter().filter(|p| *p == "/api/embed").count(),
        1,
        "remembered: no second try of /api/embed"
    );
}

async fn models_lingo(upstream_yaml: &str, extra: &str) -> Lingo {
    Lingo::start(&table(&format!(
        "{extra}upstreams:\n  models:\n{upstream_yaml}    speaks: native\n\
         models:\n  gpt-4o-mini: {{ upstream: models, model: \"llama3.2:3b\" }}\n\
         routes:\n  - {{ prefix: /v1/models, speaks: chat-completions, to: models }}\n"
    )))
    .await
}

#[tokio::test]
async fn models_list_includes_aliases_and_owner() {
    let lingo = models_lingo("    mock: {}\n", "owned_by: acme\n").await;
    let list = get(&lingo.url("/v1/models")).await;
    assert_eq!(list.status, 200, "{}", list.body);
    let list = list.json();
    assert_eq!(list["object"], "list");
    let ids: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["llama3.2:3b", "all-minilm:latest", "gpt-4o-mini"]);
    for model in list["data"].as_array().unwrap() {
        assert_eq!(model["object"], "model");
        assert_eq!(model["owned_by"], "acme");
        assert_eq!(
            model["created"], 1_767_225_600,
            "the mock's modified_at, 2026-01-01"
        );
    }
}

#[tokio::test]
async fn an_empty_list_is_an_empty_array() {
    let backend = Backend::json(200, r#"{"models":[]}"#).await;
    let lingo = Lingo::start(&table(&format!(
        "upstreams:\n  models:\n    url: {}\n    speaks: native\nroutes:\n  - {{ prefix: /v1/models, speaks: chat-completions, to: models }}\n",
        backend.url()
    )))
    .await;
    let list = get(&lingo.url("/v1/models")).await.json();
    assert_eq!(list, json!({"object": "list", "data": []}));
    assert_eq!(backend.last().uri, "/api/tags");
}

/// A model listing is lingo's own request: none of the client's fields go up with it (its
/// cookies, an organisation header, another key), whatever connection the client came on;
/// a translated chat completion, made for the client, carries its end-to-end fields.
#[tokio::test]
async fn a_model_listing_carries_none_of_the_clients_fields() {
    let backend = Backend::json(200, r#"{"models":[]}"#).await;
    let lingo = Lingo::start(&table(&format!(
        "upstreams:\n  models:\n    url: {}\n    speaks: native\n\
         routes:\n  - {{ prefix: /v1, speaks: chat-completions, to: models }}\n",
        backend.url()
    )))
    .await;
    let theirs = [
        ("cookie", "session=1"),
        ("openai-organization", "org-1"),
        ("x-secret", "s"),
    ];
    for path in ["/v1/models", "/v1/models/m"] {
        send(request(Method::GET, &lingo.url(path), &theirs, "")).await;
        let seen = backend.last();
        for (name, _) in theirs {
            assert!(!seen.headers.contains_key(name), "{path}: {name} went up");
        }
    }
    let chat = request(
        Method::POST,
        &lingo.url("/v1/chat/completions"),
        &theirs,
        &chat_body(false),
    );
    send(chat).await;
    let seen = backend.last();
    assert_eq!(seen.uri, "/api/chat");
    assert_eq!(
        seen.headers["x-secret"], "s",
        "a translated request's own fields go up"
    );
}

#[tokio::test]
async fn one_model_by_id_alias_or_slashed_name() {
    let lingo = models_lingo("    mock: {}\n", "").await;
    for id in ["llama3.2:3b", "gpt-4o-mini", "hf.co/org/model:Q4_K_M"] {
        let response = get(&lingo.url(&format!("/v1/models/{}", id.replace(':', "%3A")))).await;
        assert_eq!(response.status, 200, "{id}: {}", response.body);
        assert_eq!(
            response.json(),
            json!({"id": id, "object": "model", "created": 1_767_225_600, "owned_by": "lingo"})
        );
    }
    let missing = get(&lingo.url("/v1/models/missing-model")).await;
    assert_eq!(missing.status, 404);
    let error = &missing.json()["error"];
    assert_eq!(
        (error["type"].clone(), error["code"].clone()),
        (json!("invalid_request_error"), json!("model_not_found"))
    );
}

async fn completions_lingo() -> Lingo {
    Lingo::start(&table(
        "upstreams:\n  models:\n    mock: { tokens: 20 }\n    speaks: native\n\
         models:\n  gpt-3.5-turbo-instruct: { upstream: models, model: llama3.2 }\n\
         routes:\n  - { path: /v1/completions, speaks: chat-completions, to: models }\n",
    ))
    .await
}

async fn complete(lingo: &Lingo, body: Value) -> WholeResponse {
    send(request(
        Method::POST,
        &lingo.url("/v1/completions"),
        &[],
        &body.to_string(),
    ))
    .await
}

#[tokio::test]
async fn completions_whole_batch_and_echo() {
    let lingo = completions_lingo().await;
    let one = complete(
        &lingo,
        json!({"model": "gpt-3.5-turbo-instruct", "prompt": "Say this"}),
    )
    .await;
    assert_eq!(one.status, 200, "{}", one.body);
    let one = one.json();
    assert_eq!(one["object"], "text_completion");
    assert!(one["id"].as_str().unwrap().starts_with("cmpl-"));
    assert_eq!(one["model"], "gpt-3.5-turbo-instruct");
    let choice = &one["choices"][0];
    assert_eq!(
        choice["text"].as_str().unwrap().split(' ').count(),
        16,
        "max_tokens defaults to 16"
    );
    assert_eq!(choice["finish_reason"], "length");
    assert_eq!(
        one["usage"],
        json!({"prompt_tokens": 2, "completion_tokens": 16, "total_tokens": 18})
    );

    let batch = complete(
        &lingo,
        json!({"model": "m", "prompt": ["a", "b c"], "max_tokens": 2, "echo": true}),
    )
    .await
    .json();
    let choices = batch["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 2);
    assert_eq!(
        choices[0],
        json!({"text": "aLingo is", "index": 0, "logprobs": null, "finish_reason": "length"})
    );
    assert_eq!(choices[1]["text"], "b cLingo is");
    assert_eq!(choices[1]["index"], 1);
}

#[tokio::test]
async fn completions_stream_with_usage() {
    let lingo = completions_lingo().await;
    let body = json!({"model": "m", "prompt": ["x", "y"], "max_tokens": 3, "stream": true, "stream_options": {"include_usage": true}});
    let response = complete(&lingo, body).await;
    assert_eq!(response.headers["content-type"], "text/event-stream");
    assert!(response.body.ends_with("data: [DONE]\n\n"));
    let chunks: Vec<Value> = response
        .body
        .split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    for index in [0, 1] {
        let text: String = chunks
            .iter()
            .filter(|c| c["choices"][0]["index"] == index)
            .filter_map(|c| c["choices"][0]["text"].as_str())
            .collect();
        assert_eq!(text, "Lingo is a", "choice {index}");
    }
    let usage: Vec<&Value> = chunks.iter().filter(|c| c.get("usage").is_some()).collect();
    assert_eq!(usage.len(), 1, "usage only in the final usage chunk");
    assert_eq!(usage[0]["choices"], json!([]));
    assert_eq!(usage[0]["usage"]["completion_tokens"], 6);
    let finished = chunks
        .iter()
        .filter(|c| c["choices"][0]["finish_reason"] == "length")
        .count();
    assert_eq!(finished, 2);
}

#[tokio::test]
async fn completions_errors() {
    let lingo = completions_lingo().await;
    let bad = complete(
        &lingo,
        json!({"model": "m", "prompt": "x", "temperature": 3}),
    )
    .await;
    assert_eq!(
        (bad.status.as_u16(), bad.json()["error"]["param"].clone()),
        (400, json!("temperature"))
    );
    let missing = complete(&lingo, json!({"model": "missing-x", "prompt": "x"})).await;
    assert_eq!(missing.status, 404);
    let cut = complete(
        &lingo,
        json!({"model": "m@cut_after=1", "prompt": "x", "stream": true}),
    )
    .await;
    assert!(!cut.body.contains("[DONE]"), "{}", cut.body);
    assert!(cut.body.contains(r#""error""#), "{}", cut.body);
}

/// Native pass-through routes honour aliases: routed to the alias's upstream with its model
/// name, and every `model` in the response is the alias again.
#[tokio::test]
async fn native_requests_for_an_alias() {
    let plain = Backend::json(200, r#"{"model":"x","done":true}"#).await;
    let lingo = Lingo::start(&table(&format!(
        "upstreams:\n  models:\n    url: {}\n    speaks: native\n  gpus:\n    mock: {{ tokens: 3 }}\n    speaks: native\n\
         models:\n  gpt-4o-mini: {{ upstream: gpus, model: \"llama3.2:3b\" }}\n\
         routes:\n  - {{ prefix: /api, to: models }}\n",
        plain.url()
    )))
    .await;
    let streamed = send(request(
        Method::POST,
        &lingo.url("/api/chat"),
        &[],
        &json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]})
            .to_string(),
    ))
    .await;
    assert_eq!(streamed.status, 200, "{}", streamed.body);
    let lines: Vec<Value> = streamed
        .body
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    assert!(
        lines.iter().all(|l| l["model"] == "gpt-4o-mini"),
        "{}",
        streamed.body
    );
    assert!(!streamed.body.contains("llama3.2:3b"));

    let whole = send(request(
        Method::POST,
        &lingo.url("/api/generate"),
        &[],
        &json!({"model": "gpt-4o-mini", "prompt": "x", "stream": false}).to_string(),
    ))
    .await
    .json();
    assert_eq!(
        (whole["model"].clone(), whole["response"].clone()),
        (json!("gpt-4o-mini"), json!("Lingo is a"))
    );
    assert!(
        plain.requests().is_empty(),
        "aliased requests went to the alias's upstream"
    );

    let other = send(request(
        Method::POST,
        &lingo.url("/api/chat"),
        &[],
        r#"{"model":"qwen3","messages":[]}"#,
    ))
    .await;
    assert_eq!(other.body, r#"{"model":"x","done":true}"#);
    let seen = plain.last();
    assert_eq!(
        seen.body, r#"{"model":"qwen3","messages":[]}"#,
        "other models pass through byte for byte"
    );
}
