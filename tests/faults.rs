//! Upstream faults on translated chat completions, over real sockets: garbage instead of
//! NDJSON, error statuses (with `Retry-After`), a connection reset mid-stream; and hot
//! reloads under load. (Unreachable, slow, cut, stalled, client-disconnect and drain are in
//! `errors.rs`, `translate_chat.rs` and `process.rs`.)

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use http_body_util::BodyExt;
use hyper::Method;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use support::*;

/// lingo translating `/v1/chat/completions` to the native upstream at `url`.
async fn chat_lingo(url: &str) -> Lingo {
    Lingo::start(&table(&format!(
        "upstreams:\n  models:\n    url: {url}\n    speaks: native\n\
         routes:\n  - {{ path: /v1/chat/completions, speaks: chat-completions, to: models }}\n"
    )))
    .await
}

const TOKEN: &str = "{\"message\":{\"role\":\"assistant\",\"content\":\"Hello\"},\"done\":false}\n";

// === garbage ===

#[tokio::test]
async fn garbage_instead_of_ndjson_ends_the_stream_with_an_error_frame() {
    for garbage in [
        "<html><body>502 Bad Gateway</body></html>\n",
        "not json at all",
        "{\"message\":{\"role\":\"assistant\",\"content\":\"Hello\"},\"done\":false}\n{\"message\": tru",
        "\u{0}\u{1}\u{2}\n",
        "[1,2,3]\n",
        "{\"message\":{\"content\":17},\"done\":false}\n",
    ] {
        let backend = Backend::start(move |_| async move { ndjson_response(garbage) }).await;
        let lingo = chat_lingo(&backend.url()).await;
        let response = chat(&lingo, true).await;
        assert_eq!(response.status, 200, "{garbage:?}: {}", response.body);
        assert_eq!(response.headers["content-type"], "text/event-stream");
        assert_failed_stream(&response.body, "not a native chat event");
        assert_eq!(backend.requests().len(), 1);
    }
}

#[tokio::test]
async fn garbage_after_valid_tokens_keeps_the_tokens_then_errors() {
    let backend = Backend::start(|_| async {
        ndjson_response(
            "{\"message\":{\"role\":\"assistant\",\"content\":\"Hello\"},\"done\":false}\n\
             {\"message\":{\"role\":\"assistant\",\"content\":\" world\"},\"done\":false}\n\
             Internal Server Error\n\
             {\"message\":{\"role\":\"assistant\",\"content\":\"!\"},\"done\":true}\n",
        )
    })
    .await;
    let lingo = chat_lingo(&backend.url()).await;
    let response = chat(&lingo, true).await;
    assert_failed_stream(&response.body, "not a native chat event");
    let content: String = events(&response.body)
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(content, "Hello world", "nothing after the garbage is sent");
}

#[tokio::test]
async fn garbage_as_a_whole_response_is_502() {
    let backend = Backend::start(|_| async { json_response(200, "<html>oops</html>") }).await;
    let lingo = chat_lingo(&backend.url()).await;
    let response = chat(&lingo, false).await;
    assert_shape(&response, "chat", 502, None, "not a native chat event");
}

// === error statuses ===

#[tokio::test]
async fn upstream_error_statuses_are_mapped_with_the_cause_and_retry_after() {
    for (status, body, retry_after, needle) in [
        (
            500,
            r#"{"error":"CUDA out of memory"}"#,
            None,
            "CUDA out of memory",
        ),
        (
            500,
            "segfault in the runner",
            None,
            "segfault in the runner",
        ),
        (
            503,
            r#"{"error":"server busy, please try again"}"#,
            Some("7"),
            "server busy",
        ),
        (
            429,
            r#"{"error":"too many requests"}"#,
            Some("30"),
            "too many requests",
        ),
        (429, "", Some("1"), "429"),
    ] {
        let backend = Backend::start(move |_| async move {
            let mut response = json_response(status, body);
            if let Some(secs) = retry_after {
                response
                    .fields_mut()
                    .insert("retry-after", secs.parse().unwrap());
            }
            response
        })
        .await;
        let lingo = chat_lingo(&backend.url()).await;
        for stream in [false, true] {
            let whole = chat(&lingo, stream).await;
            assert_shape(&whole, "chat", status, None, needle);
            assert_eq!(
                whole
                    .headers
                    .get("retry-after")
                    .map(|v| v.to_str().unwrap()),
                retry_after,
                "{status} stream={stream}"
            );
        }
    }
}

/// `Retry-After` may also be an HTTP date (RFC 9110 §10.2.3); a client backing off needs it
/// just the same.
#[tokio::test]
async fn retry_after_as_a_date_is_kept() {
    const DATE: &str = "Wed, 21 Oct 2037 07:28:00 GMT";
    let backend = Backend::start(|_| async {
        let mut response = json_response(503, r#"{"error":"maintenance"}"#);
        response
            .fields_mut()
            .insert("retry-after", DATE.parse().unwrap());
        response
    })
    .await;
    let lingo = chat_lingo(&backend.url()).await;
    let whole = chat(&lingo, false).await;
    assert_shape(&whole, "chat", 503, None, "maintenance");
    assert_eq!(
        whole
            .headers
            .get("retry-after")
            .map(|v| v.to_str().unwrap()),
        Some(DATE)
    );
}

// === connection reset ===

/// A native upstream on a raw socket: reads one request, sends the head and `first`, waits
/// for `reset`, then resets the connection (SO_LINGER 0 then close sends RST, not FIN).
async fn resetting_upstream(first: &'static str) -> (String, oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (reset_tx, reset_rx) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        read_request(&mut stream).await;
        if !first.is_empty() {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\ntransfer-encoding: chunked\r\n\r\n";
            let chunk = format!("{head}{:x}\r\n{first}\r\n", first.len());
            stream.write_all(chunk.as_bytes()).await.unwrap();
            stream.flush().await.unwrap();
        }
        let _ = reset_rx.await;
        stream.set_zero_linger().unwrap();
        drop(stream);
    });
    (url, reset_tx)
}

/// Reads a request head and its `Content-Length` body.
async fn read_request(stream: &mut TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "lingo closed before sending its request");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if buf.len() >= end + 4 + len {
                return;
            }
        }
    }
}

#[tokio::test]
async fn a_reset_mid_stream_ends_with_an_error_frame() {
    let (url, reset) = resetting_upstream(TOKEN).await;
    let lingo = chat_lingo(&url).await;
    let req = request(
        Method::POST,
        &lingo.url("/v1/chat/completions"),
        &[],
        &chat_body(true),
    );
    let response = client().request(req).await.unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    // The token the upstream sent before the reset reaches the client first...
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("Hello"));
    // ...then the upstream resets the connection.
    reset.send(()).unwrap();
    let rest = body.collect().await.expect("lingo ends the stream cleanly");
    let rest = String::from_utf8(rest.to_bytes().to_vec()).unwrap();
    assert_failed_stream(&rest, "upstream stream failed");
}

#[tokio::test]
async fn a_reset_before_the_response_is_502() {
    let (url, reset) = resetting_upstream("").await;
    reset.send(()).unwrap();
    let lingo = chat_lingo(&url).await;
    let response = chat(&lingo, true).await;
    assert_shape(
        &response,
        "chat",
        502,
        Some("upstream_unreachable"),
        "unreachable",
    );
}

// === bugs found ===

/// Token counts near `u64::MAX` from an upstream: the stream should still complete (with
/// saturated or absurd usage), not kill the connection. In a debug build the addition in
/// `Usage::of` panics inside the body, so the client's read fails mid-stream.
#[tokio::test]
async fn huge_token_counts_do_not_break_the_stream() {
    let backend = Backend::start(|_| async {
        ndjson_response(
            "{\"message\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"done\":false}\n\
             {\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\
              \"prompt_eval_count\":18446744073709551615,\"eval_count\":1}\n",
        )
    })
    .await;
    let lingo = chat_lingo(&backend.url()).await;
    let req = request(
        Method::POST,
        &lingo.url("/v1/chat/completions"),
        &[],
        &chat_body(true),
    );
    let response = client()
        .request(req)
        .await
        .expect("lingo responds instead of dropping the connection");
    let body = response
        .into_body()
        .collect()
        .await
        .expect("the stream is not cut");
    let body = String::from_utf8(body.to_bytes().to_vec()).unwrap();
    assert!(body.ends_with("data: [DONE]\n\n"), "{body}");
}

/// An `/api/embed` response with fewer (or more) vectors than inputs cannot be matched to
/// the inputs: the client must not get a list whose `index`es name the wrong inputs.
#[tokio::test]
async fn an_embed_response_with_the_wrong_vector_count_is_502() {
    let backend = Backend::start(|_| async {
        json_response(200, r#"{"embeddings":[[0.5,0.25]],"prompt_eval_count":2}"#)
    })
    .await;
    let lingo = Lingo::start(&table(&format!(
        "upstreams:\n  models:\n    url: {}\n    speaks: native\n\
         routes:\n  - {{ path: /v1/embeddings, speaks: chat-completions, to: models }}\n",
        backend.url()
    )))
    .await;
    let body = json!({"model": "m", "input": ["first", "second"]}).to_string();
    let response = send(request(
        Method::POST,
        &lingo.url("/v1/embeddings"),
        &[],
        &body,
    ))
    .await;
    assert_eq!(backend.requests().len(), 1);
    assert_shape(&response, "chat", 502, None, "2");
}

// === hot reload under load ===

/// Two valid tables that send `/api` to different backends; both translate chat
/// completions to the built-in mock. (The pass-through probe is `/api/version`: with an alias
/// in the table, `/api/tags` is served from the upstream's list plus the alias.)
fn reload_table(api: &Backend, tokens: u32) -> String {
    table(&format!(
        "upstreams:\n  \
           native:\n    url: {}\n    speaks: native\n  \
           mock:\n    mock: {{ tokens: {tokens}, token_delay: 1ms }}\n    speaks: native\n\
         models:\n  gpt-4o-mini: {{ upstream: mock, model: \"llama3.2:3b\" }}\n\
         routes:\n  \
           - {{ path: /v1/chat/completions, speaks: chat-completions, to: mock }}\n  \
           - {{ prefix: /api, to: native }}\n",
        api.url()
    ))
}

/// One client's loop: requests until `stop`, each checked; returns (done, failures).
async fn client_loop(
    lingo_url: String,
    kind: usize,
    stop: Arc<AtomicBool>,
) -> (usize, Vec<String>) {
    let mut done = 0;
    let mut failures = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        let failure = match kind % 3 {
            0 => {
                let response = get(&format!("{lingo_url}/api/version")).await;
                (response.status != 200 || !matches!(response.body.as_str(), "\"one\"" | "\"two\""))
                    .then(|| format!("pass-through: {} {}", response.status, response.body))
            }
            1 => {
                let body = json!({"model": "gpt-4o-mini", "stream": true,
                    "messages": [{"role": "user", "content": "hi"}]});
                let response = send(request(
                    Method::POST,
                    &format!("{lingo_url}/v1/chat/completions"),
                    &[],
                    &body.to_string(),
                ))
                .await;
                (response.status != 200 || !response.body.ends_with("data: [DONE]\n\n"))
                    .then(|| format!("stream: {} {}", response.status, response.body))
            }
            _ => {
                let body = json!({"model": "gpt-4o-mini",
                    "messages": [{"role": "user", "content": "hi"}]});
                let response = send(request(
                    Method::POST,
                    &format!("{lingo_url}/v1/chat/completions"),
                    &[],
                    &body.to_string(),
                ))
                .await;
                let content = serde_json::from_str::<Value>(&response.body)
                    .ok()
                    .and_then(|v| {
                        v["choices"][0]["message"]["content"]
                            .as_str()
                            .map(str::to_owned)
                    });
                (response.status != 200 || content.is_none())
                    .then(|| format!("whole: {} {}", response.status, response.body))
            }
        };
        done += 1;
        failures.extend(failure);
    }
    (done, failures)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundreds_of_reloads_under_load_fail_no_request() {
    const RELOADS: usize = 300;
    const CLIENTS: usize = 6;
    let one = Backend::json(200, "\"one\"").await;
    let two = Backend::json(200, "\"two\"").await;
    let tables = [reload_table(&one, 6), reload_table(&two, 3)];
    let lingo = Lingo::start(&tables[0]).await;
    let url = format!("http://{}", lingo.addr);
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|kind| tokio::spawn(client_loop(url.clone(), kind, Arc::clone(&stop))))
        .collect();
    let first_generation = lingo.reloader.snapshot().generation;
    for i in 1..=RELOADS {
        let text = &tables[i % 2];
        let path = lingo.config_path();
        let tmp = path.with_extension("next");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        let generation = lingo
            .reloader
            .reload(true)
            .unwrap_or_else(|e| panic!("reload {i} refused: {e}"));
        assert!(generation > first_generation);
        // The swap is done when `reload` returns: the next request sees the new table.
        let want = if i % 2 == 0 { "\"one\"" } else { "\"two\"" };
        let response = get(&lingo.url("/api/version")).await;
        assert_eq!(response.body, want, "after reload {i}");
    }
    stop.store(true, Ordering::SeqCst);
    let mut total = 0;
    for (kind, client) in clients.into_iter().enumerate() {
        let (done, failures) = client.await.unwrap();
        assert!(
            failures.is_empty(),
            "client {kind}: {} of {done} requests failed, first: {}",
            failures.len(),
            failures[0]
        );
        assert!(done > 0, "client {kind} made no request");
        total += done;
    }
    assert!(lingo.reloader.snapshot().generation >= first_generation + RELOADS as u64);
    assert!(total >= CLIENTS);
}
