//! How a response really ended, told by the access line and `lingo_requests_total`: complete,
//! the client closed, the upstream failed mid-stream, the idle limit, the line cap. A
//! translated stream that fails ends its body cleanly with an error frame, so only lingo can
//! tell; a passed-through stream is cut. Both are told the same way.

mod support;

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::channel::Channel;
use hyper::{Method, Response};
use lingo::http::body::{Body, BoxError};
use support::*;

/// Everything lingo logs in this test binary (each test's lines found by request id).
fn log() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOG: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let writer = Arc::clone(&buf);
        let _ = tracing_subscriber::fmt()
            .with_env_filter("lingo::access=info")
            .with_ansi(false)
            .with_writer(move || Sink(Arc::clone(&writer)))
            .try_init();
        buf
    })
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The access line of the request `id`, once it has been written.
async fn access_line(id: &str) -> String {
    for _ in 0..500 {
        let text = String::from_utf8_lossy(&log().lock().unwrap()).into_owned();
        if let Some(line) = text
            .lines()
            .find(|l| l.contains(&format!("request_id={id} ")))
        {
            return line.to_owned();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no access line for {id}");
}

/// The `lingo_requests_total` samples with this outcome, summed.
fn requests(text: &str, outcome: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with("lingo_requests_total{"))
        .filter(|l| l.contains(&format!("outcome=\"{outcome}\"")))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Sends `body` to `path` as request `id`: the status and what the response gave before it
/// ended or broke off (a passed-through stream that fails is cut).
async fn call(lingo: &Lingo, path: &str, id: &str, body: &str) -> WholeResponse {
    let req = request(
        Method::POST,
        &lingo.url(path),
        &[("x-request-id", id)],
        body,
    );
    let response = client().request(req).await.unwrap();
    let status = response.status();
    let mut body = response.into_body();
    let mut text = Vec::new();
    while let Some(Ok(frame)) = body.frame().await {
        text.extend_from_slice(frame.data_ref().map_or(&[][..], |d| &d[..]));
    }
    WholeResponse {
        status,
        headers: Default::default(),
        body: String::from_utf8_lossy(&text).into_owned(),
    }
}

/// The access line of `id` says `outcome`, and the metrics count one request with it.
async fn assert_told(lingo: &Lingo, id: &str, outcome: &str, reason: &str) {
    let line = access_line(id).await;
    assert!(line.contains(&format!("outcome={outcome} ")), "{line}");
    assert!(line.contains(reason), "the reason `{reason}` is in: {line}");
    let text = metrics_when(lingo, |t| requests(t, outcome) >= 1.0).await;
    assert_eq!(requests(&text, outcome), 1.0, "{text}");
    // A series is made by a response that ends as it says, never one of none.
    let none = text
        .lines()
        .find(|l| l.starts_with("lingo_requests_total{") && l.ends_with(" 0"));
    assert_eq!(none, None, "{text}");
    if outcome != "complete" && outcome != "client_closed" {
        let mid = r#"lingo_upstream_errors_total{upstream="models",kind="mid_stream"}"#;
        assert_eq!(metric(&text, mid), Some(1.0), "{text}");
    }
}

fn mock_table(limits: &str) -> String {
    table(&format!(
        "{limits}upstreams:\n  models:\n    mock: {{ tokens: 4 }}\n    speaks: native\n\
         routes:\n  - {{ prefix: /v1, speaks: chat-completions, to: models }}\n  - {{ prefix: /api, to: models }}\n"
    ))
}

const CHAT: &str = "/v1/chat/completions";

fn chat_for(model: &str) -> String {
    format!(r#"{{"model":"{model}","stream":true,"messages":[{{"role":"user","content":"hi"}}]}}"#)
}

#[tokio::test]
async fn a_complete_stream_is_complete() {
    log();
    let lingo = Lingo::start(&mock_table("")).await;
    let response = call(&lingo, CHAT, "done-1", &chat_for("m")).await;
    assert!(response.body.ends_with("data: [DONE]\n\n"));
    assert_told(&lingo, "done-1", "complete", "error=\"\"").await;
}

#[tokio::test]
async fn an_error_line_mid_stream_is_an_upstream_failure() {
    log();
    let lingo = Lingo::start(&mock_table("")).await;
    for (id, path, body) in [
        ("err-chat", CHAT, chat_for("m@error_after=2")),
        ("err-native", "/api/chat", chat_for("m@error_after=2")),
    ] {
        let response = call(&lingo, path, id, &body).await;
        assert_eq!(response.status, 200);
        assert!(
            response.body.contains("mock error after 2 tokens"),
            "{}",
            response.body
        );
    }
    // Translated: the error frame ends the stream; passed through: the native error line
    // is the upstream's own response, ended cleanly, so only the translated one failed.
    assert_told(
        &lingo,
        "err-chat",
        "upstream_failed",
        "mock error after 2 tokens",
    )
    .await;
    assert!(
        access_line("err-native")
            .await
            .contains("outcome=complete ")
    );
}

#[tokio::test]
async fn a_cut_stream_is_an_upstream_failure_translated_or_not() {
    log();
    for (id, path) in [("cut-chat", CHAT), ("cut-native", "/api/chat")] {
        let lingo = Lingo::start(&mock_table("")).await;
        let response = call(&lingo, path, id, &chat_for("m@cut_after=2")).await;
        assert!(!response.body.contains("[DONE]"));
        // What came before the cut reached the client (it left before lingo gave up).
        assert!(response.body.contains("Lingo"), "{path}: {}", response.body);
        assert_told(&lingo, id, "upstream_failed", "error=").await;
        let line = access_line(id).await;
        assert!(!line.contains("error=\"\""), "the reason is given: {line}");
    }
}

#[tokio::test]
async fn a_line_over_the_cap_is_a_line_cap() {
    log();
    let lingo = Lingo::start(&mock_table("limits: { max_line: 64 }\n")).await;
    let response = call(&lingo, CHAT, "cap-1", &chat_for("m")).await;
    assert!(
        response.body.contains("longer than 64 bytes"),
        "{}",
        response.body
    );
    assert_told(&lingo, "cap-1", "line_cap", "longer than 64 bytes").await;
}

/// A backend that sends one NDJSON line and then nothing, holding the response open.
async fn stalling_backend() -> Backend {
    Backend::start(|_| async {
        let (mut tx, body) = Channel::<Bytes, BoxError>::new(1);
        tokio::spawn(async move {
            let line = r#"{"model":"m","message":{"role":"assistant","content":"a"},"done":false}"#;
            let _ = tx.send_data(Bytes::from(format!("{line}\n"))).await;
            tokio::time::sleep(Duration::from_secs(30)).await;
            drop(tx);
        });
        Response::builder()
            .header("content-type", "application/x-ndjson")
            .body(Body::new(body))
            .unwrap()
    })
    .await
}

fn backend_table(url: &str) -> String {
    table(&format!(
        "upstreams:\n  models:\n    url: {url}\n    speaks: native\n    timeouts: {{ idle: 300ms }}\n\
         routes:\n  - {{ prefix: /v1, speaks: chat-completions, to: models }}\n  - {{ prefix: /api, to: models }}\n"
    ))
}

#[tokio::test]
async fn a_stall_is_an_idle_timeout_translated_or_not() {
    log();
    let backend = stalling_backend().await;
    for (id, path) in [("idle-chat", CHAT), ("idle-native", "/api/chat")] {
        let lingo = Lingo::start(&backend_table(&backend.url())).await;
        let response = call(&lingo, path, id, &chat_for("m")).await;
        assert_eq!(response.status, 200);
        assert_told(
            &lingo,
            id,
            "idle_timeout",
            "upstream sent nothing for 300ms",
        )
        .await;
    }
}

#[tokio::test]
async fn a_client_that_leaves_is_client_closed() {
    log();
    let backend = stalling_backend().await;
    let lingo = Lingo::start(&backend_table(&backend.url())).await;
    let req = request(
        Method::POST,
        &lingo.url("/api/chat"),
        &[("x-request-id", "gone-1")],
        &chat_for("m"),
    );
    let mut response = client().request(req).await.unwrap().into_body();
    // The first line arrives; then the client goes away before the idle limit.
    let first = response.frame().await.unwrap().unwrap();
    assert!(first.is_data());
    drop(response);
    assert_told(&lingo, "gone-1", "client_closed", "error=\"\"").await;
}
