//! Every error lingo makes itself, in the route's dialect, with the right status.

mod support;

use std::time::Duration;

use hyper::Method;
use serde_json::{Value, json};
use support::*;

fn routes_to(url: &str, extra_upstream: &str) -> String {
    table(&format!(
        "limits: {{ max_body: 1KiB }}\n\
         upstreams:\n  \
           models:\n    url: {url}\n    speaks: native\n{extra_upstream}  \
           webdata:\n    url: {url}\n    speaks: web-data\n{extra_upstream}  \
           openai:\n    url: {url}\n    speaks: chat-completions\n{extra_upstream}\
         routes:\n  \
           - {{ path: /v1/chat/completions, speaks: chat-completions, to: openai }}\n  \
           - {{ prefix: /api, to: models }}\n  \
           - {{ prefix: /v1, to: webdata }}\n"
    ))
}

const PATHS: [(&str, &str); 3] = [
    ("chat", "/v1/chat/completions"),
    ("native", "/api/chat"),
    ("web-data", "/v1/scrape"),
];

#[tokio::test]
async fn no_route_is_404_in_the_dialect_the_path_implies() {
    let backend = Backend::json(200, "{}").await;
    let yaml = table(&format!(
        "upstreams:\n  m:\n    url: {}\n    speaks: native\nroutes:\n  - {{ path: /only, to: m }}\n",
        backend.url()
    ));
    let lingo = Lingo::start(&yaml).await;
    for (dialect, path) in [
        ("chat", "/v1/embeddings"),
        ("native", "/api/tags"),
        ("web-data", "/v2/crawl"),
        ("chat", "/elsewhere"),
    ] {
        let response = get(&lingo.url(path)).await;
        assert_shape(
            &response,
            dialect,
            404,
            Some("unknown_url"),
            "no route for GET",
        );
    }
    let chat = get(&lingo.url("/v1/models")).await.json();
    assert_eq!(chat["error"]["type"], "invalid_request_error");
    assert_eq!(chat["error"]["code"], "unknown_url");
}

/// A 502 says which upstream failed and why, in words: not the system's error text.
#[tokio::test]
async fn unreachable_upstream_is_502() {
    let dead = format!("http://{}", closed_port().await);
    let lingo = Lingo::start(&routes_to(&dead, "")).await;
    for ((dialect, path), upstream) in PATHS.into_iter().zip(["openai", "models", "webdata"]) {
        let response = send(request(Method::POST, &lingo.url(path), &[], "{}")).await;
        assert_shape(
            &response,
            dialect,
            502,
            Some("upstream_unreachable"),
            &format!("upstream `{upstream}` is unreachable: connection refused"),
        );
        assert!(!response.body.contains("os error"), "{}", response.body);
    }
}

/// An https upstream that responds in plain HTTP: reported as a failed TLS handshake. (A name
/// that does not resolve is told "DNS lookup ... failed": a unit test, since a resolver's
/// speed is the machine's.)
#[tokio::test]
async fn a_tls_failure_is_told_in_words() {
    let plain = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&routes_to(&plain.url().replace("http://", "https://"), "")).await;
    let response = send(request(Method::POST, &lingo.url("/api/chat"), &[], "{}")).await;
    assert_shape(
        &response,
        "native",
        502,
        None,
        "upstream `models` is unreachable: TLS handshake failed: ",
    );
    assert!(!response.body.contains("os error"), "{}", response.body);
}

#[tokio::test]
async fn slow_upstream_is_504_naming_the_limit() {
    let backend = Backend::start(|_| async {
        tokio::time::sleep(Duration::from_secs(5)).await;
        json_response(200, "{}")
    })
    .await;
    let timeouts = "    timeouts: { first_byte: 300ms }\n";
    let lingo = Lingo::start(&routes_to(&backend.url(), timeouts)).await;
    for (dialect, path) in PATHS {
        let response = send(request(Method::POST, &lingo.url(path), &[], "{}")).await;
        assert_shape(
            &response,
            dialect,
            504,
            Some("upstream_timeout"),
            "first-byte timeout of 300ms",
        );
    }
}

#[tokio::test]
async fn body_over_the_limit_is_413_declared_or_streamed() {
    let backend = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&routes_to(&backend.url(), "")).await;
    let big = "y".repeat(2048);
    for (dialect, path) in PATHS {
        let whole = send(request(Method::POST, &lingo.url(path), &[], &big)).await;
        assert_shape(
            &whole,
            dialect,
            413,
            Some("request_too_large"),
            "1024 bytes",
        );
    }
    // Without Content-Length (chunked), the limit is enforced while streaming up.
    let (mut tx, body) =
        http_body_util::channel::Channel::<bytes::Bytes, std::convert::Infallible>::new(4);
    tokio::spawn(async move {
        for _ in 0..8 {
            if tx
                .send_data(bytes::Bytes::from(vec![b'z'; 512]))
                .await
                .is_err()
            {
                break;
            }
        }
    });
    let req = hyper::Request::post(lingo.url("/api/chat"))
        .body(body)
        .unwrap();
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http();
    let response = client.request(req).await.unwrap();
    assert_eq!(response.status(), 413);
}

#[tokio::test]
async fn translating_route_without_translator_is_501() {
    let backend = Backend::json(200, "{}").await;
    let yaml = table(&format!(
        "upstreams:\n  models:\n    url: {}\n    speaks: native\n\
         routes:\n  - {{ path: /v1/responses, speaks: chat-completions, to: models }}\n",
        backend.url()
    ));
    let lingo = Lingo::start(&yaml).await;
    let response = send(request(
        Method::POST,
        &lingo.url("/v1/responses"),
        &[],
        "{}",
    ))
    .await;
    assert_shape(
        &response,
        "chat",
        501,
        Some("not_implemented"),
        "chat-completions to native",
    );
    assert!(backend.requests().is_empty());
}

#[tokio::test]
async fn refused_paths_are_400() {
    let backend = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&routes_to(&backend.url(), "")).await;
    // Refused before routing: rendered in the dialect the path implies.
    for (dialect, path, needle) in [
        ("native", "/api/../v1/x", "dot segments"),
        ("native", "/api//tags", "not acceptable"),
        ("chat", "/v1/chat/completions/%2e%2e/x", "dot segments"),
        ("chat", "/v1%2fscrape", "encoded"),
        ("web-data", "/v1/scrape%2fx", "encoded"),
        ("web-data", "/v2/crawl/..%5cx", "encoded slashes"),
    ] {
        let response = get(&lingo.url(path)).await;
        assert_shape(&response, dialect, 400, Some("invalid_path"), needle);
        assert!(
            response.body.contains("the request path is not acceptable"),
            "{path}: {}",
            response.body
        );
    }
    assert!(backend.requests().is_empty());
}

#[tokio::test]
async fn upstream_errors_pass_through_unchanged() {
    let backend = Backend::json(429, r#"{"success":false,"error":"Rate limit exceeded"}"#).await;
    let lingo = Lingo::start(&routes_to(&backend.url(), "")).await;
    let response = send(request(Method::POST, &lingo.url("/v1/scrape"), &[], "{}")).await;
    assert_eq!(response.status, 429);
    assert_eq!(
        response.json(),
        json!({"success": false, "error": "Rate limit exceeded"})
    );
}

#[tokio::test]
async fn healthz_responds_without_a_key() {
    let backend = Backend::json(200, "{}").await;
    let yaml = routes_to(&backend.url(), "").replacen(
        "upstreams:",
        "clients:\n  - { name: a, key: { value: k } }\nupstreams:",
        1,
    );
    let lingo = Lingo::start(&yaml).await;
    let response = get(&lingo.url("/healthz")).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.json()["status"], Value::from("ok"));
}
