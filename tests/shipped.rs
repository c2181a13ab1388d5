//! The shipped `proxy.yaml` responds on a machine with no other server: its upstreams are
//! the built-in mock.

mod support;

use hyper::Method;
use serde_json::Value;
use support::*;

async fn shipped() -> Lingo {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/proxy.yaml")).unwrap();
    let text = text.replacen("127.0.0.1:8080", "127.0.0.1:0", 1);
    assert!(
        text.contains("127.0.0.1:0"),
        "the shipped file listens on 127.0.0.1:8080"
    );
    Lingo::start(&text).await
}

#[tokio::test]
async fn shipped_table_streams_a_native_chat_from_the_mock() {
    let lingo = shipped().await;
    let body =
        r#"{"model":"llama3.2:3b@token_delay=0ms","messages":[{"role":"user","content":"hi"}]}"#;
    let response = send(request(Method::POST, &lingo.url("/api/chat"), &[], body)).await;
    assert_eq!(response.status, 200);
    let events: Vec<Value> = response
        .body
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 17);
    assert_eq!(events.last().unwrap()["done"], true);
}

#[tokio::test]
async fn shipped_table_serves_web_data_from_the_mock() {
    let lingo = shipped().await;
    let body = r#"{"url":"https://example.com"}"#;
    let scraped = send(request(Method::POST, &lingo.url("/v1/scrape"), &[], body))
        .await
        .json();
    assert_eq!(scraped["success"], true);
    let crawl = send(request(Method::POST, &lingo.url("/v2/crawl"), &[], body))
        .await
        .json();
    let url = crawl["url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!("http://{}/v2/crawl/", lingo.addr)),
        "{url}"
    );
    let status = get(url).await.json();
    assert_eq!(status["status"], "completed");
}

/// The README's first command: the shipped table responds to a chat completion, streamed,
/// with no other server running.
#[tokio::test]
async fn shipped_table_responds_to_a_chat_completion() {
    let lingo = shipped().await;
    let body =
        r#"{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let response = send(request(
        Method::POST,
        &lingo.url("/v1/chat/completions"),
        &[],
        body,
    ))
    .await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.headers["content-type"], "text/event-stream");
    assert!(
        response.body.ends_with("data: [DONE]\n\n"),
        "{}",
        response.body
    );
    let chunks = response.body.matches("chat.completion.chunk").count();
    assert_eq!(chunks, 17, "16 tokens and the finish chunk");
    let whole = send(request(
        Method::POST,
        &lingo.url("/v1/chat/completions"),
        &[],
        &body.replace("true", "false"),
    ))
    .await;
    assert_eq!(
        whole.json()["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .split(' ')
            .count(),
        16
    );
}

/// The default demo is consistent: the shipped alias (`gpt-4o-mini`) and its target
/// (`llama3.2:3b`) are both listed, by `/v1/models` and by the native `/api/tags`, the
/// alias's native entry being its target's.
#[tokio::test]
async fn shipped_table_lists_the_alias_beside_its_target() {
    let lingo = shipped().await;
    let list = get(&lingo.url("/v1/models")).await.json();
    let ids: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"llama3.2:3b") && ids.contains(&"gpt-4o-mini"),
        "{ids:?}"
    );
    let tags = get(&lingo.url("/api/tags")).await.json();
    let entry = |name: &str| {
        tags["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("{name} not in {tags}"))
            .clone()
    };
    let (alias, target) = (entry("gpt-4o-mini"), entry("llama3.2:3b"));
    for field in ["size", "digest", "details", "modified_at"] {
        assert_eq!(alias[field], target[field], "{field}");
    }
    assert!(target["size"].as_u64().unwrap() > 0);
}
