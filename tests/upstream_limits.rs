//! The limits lingo keeps toward upstreams, each set from the route table and exercised over
//! real sockets: the connect timeout, the idle limit between chunks (a translated stream, a
//! translated whole response, a pass-through stream), the NDJSON line cap, and the cap on a
//! response read whole. (The first-byte timeout is in `errors.rs`.)

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::channel::Channel;
use hyper::{Method, Response};
use serde_json::json;
use tokio::net::{TcpListener, TcpSocket, TcpStream};

use lingo::http::body::{Body, BoxError};
use support::*;

const TOKEN: &str = "{\"message\":{\"role\":\"assistant\",\"content\":\"Hello\"},\"done\":false}\n";

/// lingo with a native upstream at `url` (plus `upstream` keys) and `limits`: chat
/// completions translated, `/api` passed through, `/v1` web-data passed through.
async fn lingo_for(url: &str, upstream: &str, limits: &str) -> Lingo {
    Lingo::start(&table(&format!(
        "limits: {{ {limits} }}\n\
         upstreams:\n  \
           models:\n    url: {url}\n    speaks: native\n{upstream}  \
           webdata:\n    url: {url}\n    speaks: web-data\n{upstream}\
         routes:\n  \
           - {{ path: /v1/chat/completions, speaks: chat-completions, to: models }}\n  \
           - {{ prefix: /api, to: models }}\n  \
           - {{ prefix: /v1, to: webdata }}\n"
    )))
    .await
}

/// How many upstream errors of `kind` the metrics count for `upstream`, once it is `want`
/// (a response is counted when lingo has let go of it, a moment after the client saw its end).
async fn upstream_errors(lingo: &Lingo, upstream: &str, kind: &str, want: u64) -> u64 {
    let name = format!(r#"lingo_upstream_errors_total{{upstream="{upstream}",kind="{kind}"}} "#);
    let mut count = 0;
    for _ in 0..100 {
        let text = get(&lingo.url("/metrics")).await.body;
        count = text
            .lines()
            .find_map(|l| l.strip_prefix(&name))
            .map_or(0, |v| v.parse().unwrap());
        if count == want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    count
}

// === connect ===

/// A listener whose accept queue is full and never drained: the kernel drops every further
/// SYN, so a connect to it neither succeeds nor fails until the connector gives up. The
/// returned values must be kept alive.
async fn black_hole() -> (SocketAddr, TcpListener, Vec<TcpStream>) {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(0).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut queued = Vec::new();
    loop {
        let connect = TcpStream::connect(addr);
        match tokio::time::timeout(Duration::from_millis(300), connect).await {
            Ok(stream) => queued.push(stream.unwrap()),
            Err(_) => return (addr, listener, queued), // the queue is full
        }
        assert!(queued.len() < 64, "the accept queue never filled");
    }
}

#[tokio::test]
async fn an_upstream_that_never_accepts_is_504_after_the_connect_timeout() {
    let (addr, _listener, _queued) = black_hole().await;
    let timeouts = "    timeouts: { connect: 250ms }\n";
    let lingo = lingo_for(&format!("http://{addr}"), timeouts, "").await;
    for (dialect, path) in [
        ("chat", "/v1/chat/completions"),
        ("native", "/api/chat"),
        ("web-data", "/v1/scrape"),
    ] {
        let body = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
        let response = send(request(Method::POST, &lingo.url(path), &[], body)).await;
        assert_shape(
            &response,
            dialect,
            504,
            Some("upstream_timeout"),
            "connect timeout of 250ms",
        );
        let body = response.json();
        let code = match dialect {
            "chat" => &body["error"]["code"],
            "web-data" => &body["code"],
            _ => &json!("upstream_timeout"), // the native shape has no code
        };
        let code = code.as_str().unwrap_or_default().to_ascii_lowercase();
        assert_eq!(code, "upstream_timeout", "{dialect}: {body}");
    }
    assert_eq!(
        upstream_errors(&lingo, "models", "connect_timeout", 2).await,
        2
    );
    assert_eq!(
        upstream_errors(&lingo, "webdata", "connect_timeout", 1).await,
        1
    );
}

/// An https upstream that accepts the TCP connection and then says nothing: the TLS handshake
/// never finishes. The connect timeout covers the handshake, so this is a connect timeout
/// after 250ms, not a first-byte timeout.
#[tokio::test]
async fn a_tls_handshake_that_never_finishes_is_a_connect_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let held = tokio::spawn(async move {
        let mut silent = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            silent.push(stream);
        }
    });
    let timeouts = "    timeouts: { connect: 250ms, first_byte: 2s }\n";
    let lingo = lingo_for(&format!("https://localhost:{}", addr.port()), timeouts, "").await;
    let response = chat(&lingo, false).await;
    assert_shape(
        &response,
        "chat",
        504,
        Some("upstream_timeout"),
        "connect timeout of 250ms",
    );
    let native = send(request(Method::GET, &lingo.url("/api/tags"), &[], "")).await;
    assert_shape(&native, "native", 504, None, "connect timeout of 250ms");
    assert_eq!(
        upstream_errors(&lingo, "models", "connect_timeout", 2).await,
        2
    );
    held.abort();
}

// === idle between chunks ===

/// A backend that sends `first` and then nothing, keeping the response open, for each request.
async fn stalling_backend(content_type: &'static str, first: &'static str) -> Backend {
    Backend::start(move |_| async move {
        let (mut tx, body) = Channel::<Bytes, BoxError>::new(1);
        tokio::spawn(async move {
            let _ = tx.send_data(Bytes::from_static(first.as_bytes())).await;
            // Hold the response open far longer than any idle limit in these tests.
            tokio::time::sleep(Duration::from_secs(30)).await;
            drop(tx);
        });
        Response::builder()
            .header("content-type", content_type)
            .body(Body::new(body))
            .unwrap()
    })
    .await
}

#[tokio::test]
async fn a_translated_stream_that_stalls_ends_with_an_error_frame() {
    let backend = stalling_backend("application/x-ndjson", TOKEN).await;
    let timeouts = "    timeouts: { idle: 300ms }\n";
    let lingo = lingo_for(&backend.url(), timeouts, "").await;
    let response = chat(&lingo, true).await;
    assert_eq!(response.status, 200);
    let content: String = events(&response.body)
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(content, "Hello", "the token before the stall arrives");
    assert_failed_stream(&response.body, "upstream sent nothing for 300ms");
    assert_eq!(upstream_errors(&lingo, "models", "mid_stream", 1).await, 1);
}

#[tokio::test]
async fn a_whole_response_that_stalls_is_504() {
    let backend = stalling_backend("application/json", "{\"message\":{\"role\":").await;
    let timeouts = "    timeouts: { idle: 300ms }\n";
    let lingo = lingo_for(&backend.url(), timeouts, "").await;
    let response = chat(&lingo, false).await;
    assert_shape(
        &response,
        "chat",
        504,
        Some("upstream_timeout"),
        "idle timeout of 300ms",
    );
    assert_eq!(
        upstream_errors(&lingo, "models", "idle_timeout", 1).await,
        1
    );
}

/// A pass-through response is already on its way when the upstream stalls: the client gets
/// what was sent, then a cut (no clean end it could mistake for the whole response).
#[tokio::test]
async fn a_pass_through_stream_that_stalls_is_cut() {
    let backend = stalling_backend("application/x-ndjson", TOKEN).await;
    let timeouts = "    timeouts: { idle: 300ms }\n";
    let lingo = lingo_for(&backend.url(), timeouts, "").await;
    let req = request(Method::POST, &lingo.url("/api/chat"), &[], "{}");
    let response = client().request(req).await.unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert_eq!(first, TOKEN.as_bytes());
    let rest = tokio::time::timeout(Duration::from_secs(10), body.collect())
        .await
        .expect("the idle limit ends the response");
    assert!(rest.is_err(), "a stalled response must not end cleanly");
}

// === line cap ===

#[tokio::test]
async fn a_line_over_limits_max_line_ends_the_stream_with_an_error_frame() {
    let long = format!(
        "{{\"message\":{{\"role\":\"assistant\",\"content\":\"{}\"}},\"done\":false}}\n",
        "x".repeat(2000)
    );
    let done = "{\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true}\n";
    let long: &'static str = Box::leak(format!("{TOKEN}{long}{done}").into_boxed_str());
    let backend = Backend::start(move |_| async move { ndjson_response(long) }).await;
    let lingo = lingo_for(&backend.url(), "", "max_line: 1KiB").await;
    let response = chat(&lingo, true).await;
    assert_failed_stream(&response.body, "longer than 1024 bytes");
    // Within the cap, the same stream goes through.
    let lingo = lingo_for(&backend.url(), "", "max_line: 4KiB").await;
    let response = chat(&lingo, true).await;
    assert!(
        response.body.ends_with("data: [DONE]\n\n"),
        "{}",
        response.body
    );
}

// === responses read whole ===

/// A backend whose response never ends: 1 KiB chunks for as long as someone reads them.
/// `stopped` turns true when the reader went away.
async fn endless_backend(content_type: &'static str) -> (Backend, Arc<AtomicBool>) {
    let stopped = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stopped);
    let backend = Backend::start(move |_| {
        let flag = Arc::clone(&flag);
        async move {
            let (mut tx, body) = Channel::<Bytes, BoxError>::new(1);
            tokio::spawn(async move {
                let chunk = Bytes::from(vec![b' '; 1024]);
                let _ = tx.send_data(Bytes::from_static(b"{\"a\":\"")).await;
                while tx.send_data(chunk.clone()).await.is_ok() {}
                flag.store(true, Ordering::SeqCst);
            });
            Response::builder()
                .header("content-type", content_type)
                .body(Body::new(body))
                .unwrap()
        }
    })
    .await;
    (backend, stopped)
}

#[tokio::test]
async fn a_whole_response_over_limits_max_response_is_502_and_not_read_on() {
    let (backend, stopped) = endless_backend("application/json").await;
    let lingo = lingo_for(&backend.url(), "", "max_response: 64KiB").await;
    let response = tokio::time::timeout(Duration::from_secs(20), chat(&lingo, false))
        .await
        .expect("lingo stops reading at the cap");
    assert_shape(
        &response,
        "chat",
        502,
        None,
        "limits.max_response (65536 bytes)",
    );
    assert_eq!(
        upstream_errors(&lingo, "models", "bad_response", 1).await,
        1
    );
    // lingo dropped the upstream response rather than reading on.
    for _ in 0..100 {
        if stopped.load(Ordering::SeqCst) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the upstream is still being read");
}

/// A web-data response over the cap is still delivered whole, only without its links
/// re-based; under the cap, they are.
#[tokio::test]
async fn a_web_data_response_over_limits_max_response_passes_unchanged() {
    static SENT: AtomicUsize = AtomicUsize::new(0);
    let backend = Backend::start(|seen| async move {
        SENT.fetch_add(1, Ordering::SeqCst);
        let padding = if seen.uri.contains("big") { 8192 } else { 0 };
        let body = format!(
            r#"{{"success":true,"url":"http://upstream.internal/v1/crawl/1","pad":"{}"}}"#,
            " ".repeat(padding)
        );
        json_response(200, &body)
    })
    .await;
    let lingo = lingo_for(&backend.url(), "", "max_response: 4KiB").await;
    let small = get(&lingo.url("/v1/crawl?small")).await;
    assert_eq!(
        small.json()["url"],
        format!("http://{}/v1/crawl/1", lingo.addr)
    );
    let big = get(&lingo.url("/v1/crawl?big")).await;
    assert_eq!(big.status, 200);
    let big = big.json();
    assert_eq!(big["url"], "http://upstream.internal/v1/crawl/1");
    assert_eq!(big["pad"].as_str().unwrap().len(), 8192, "delivered whole");
    assert_eq!(SENT.load(Ordering::SeqCst), 2);
}
