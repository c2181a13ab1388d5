//! Listener limits over real sockets: header size and count (431), slow headers, idle
//! connections, connection and in-flight caps (503 with `Retry-After`, never a queue).

mod support;

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::Method;
use hyper_util::rt::{TokioExecutor, TokioIo};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Guards the test against a hang; never a performance threshold.
const PATIENCE: Duration = Duration::from_secs(20);

fn limited(url: &str, limits: &str) -> String {
    table(&format!(
        "limits: {{ {limits} }}\n\
         upstreams:\n  models:\n    url: {url}\n    speaks: native\n\
         routes:\n  - {{ path: /v1/chat/completions, speaks: chat-completions, to: models }}\n  \
         - {{ prefix: /api, to: models }}\n"
    ))
}

/// Reads until the peer closes; what it sent on the way.
async fn read_to_close(stream: &mut TcpStream) -> String {
    let mut seen = Vec::new();
    let read = tokio::time::timeout(PATIENCE, stream.read_to_end(&mut seen)).await;
    assert!(read.is_ok(), "lingo kept the connection open");
    String::from_utf8_lossy(&seen).into_owned()
}

#[tokio::test]
async fn too_many_or_too_large_headers_are_431_in_the_dialect() {
    let backend = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&limited(
        &backend.url(),
        "max_headers: 10, max_header_bytes: 1KiB",
    ))
    .await;
    let many: Vec<(String, String)> = (0..12).map(|i| (format!("x-h{i}"), "v".into())).collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let response = send(request(
        Method::POST,
        &lingo.url("/v1/chat/completions"),
        &many,
        "{}",
    ))
    .await;
    assert_eq!(response.status, 431, "{}", response.body);
    let error = &response.json()["error"];
    assert_eq!(error["code"], "headers_too_large");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("the limit is 10"),
        "{error}"
    );

    let big = "b".repeat(1500);
    let response = send(request(
        Method::GET,
        &lingo.url("/api/tags"),
        &[("x-big", &big)],
        "",
    ))
    .await;
    assert_eq!(response.status, 431, "{}", response.body);
    let message = response.json()["error"].as_str().unwrap().to_owned();
    assert!(message.contains("the limit is 1024"), "{message}");

    // Far over the limit, hyper itself refuses before lingo sees the request.
    let huge = "h".repeat(8 * 1024);
    let response = send(request(
        Method::GET,
        &lingo.url("/api/tags"),
        &[("x-huge", &huge)],
        "",
    ))
    .await;
    assert_eq!(response.status, 431);
    assert!(
        backend.requests().is_empty(),
        "nothing may reach the backend"
    );

    // Within the limits, the request goes through.
    assert_eq!(get(&lingo.url("/api/tags")).await.status, 200);

    // The header limits come before the key check: a keyless flood is a 431, not a 401.
    let keyed = format!(
        "clients: [{{ name: app, key: {{ value: k }} }}]\n{}",
        limited(&backend.url(), "max_headers: 10")
    );
    let keyed = Lingo::start(&keyed).await;
    let response = send(request(
        Method::POST,
        &keyed.url("/v1/chat/completions"),
        &many,
        "{}",
    ))
    .await;
    assert_eq!(response.status, 431, "{}", response.body);
    assert!(
        backend.requests().len() == 1,
        "only the request within the limits got through"
    );
}

#[tokio::test]
async fn a_client_slow_to_send_its_headers_is_dropped() {
    let backend = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&limited(&backend.url(), "header_timeout: 300ms")).await;
    let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
    // Half a request head, then silence.
    stream
        .write_all(b"GET /api/tags HTTP/1.1\r\nhost: lingo\r\nx-slow: ")
        .await
        .unwrap();
    let said = read_to_close(&mut stream).await;
    assert!(!said.contains("200 OK"), "{said}");
    assert!(backend.requests().is_empty());
}

/// Between requests a kept-alive HTTP/1.1 connection may be silent for `idle_timeout`;
/// `header_timeout` starts at the next head's first byte (it once started as soon as hyper
/// waited for a head, which closed kept-alive connections after `header_timeout`).
#[tokio::test]
async fn a_kept_alive_connection_has_idle_timeout_and_its_next_head_header_timeout() {
    let backend = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&limited(
        &backend.url(),
        "header_timeout: 300ms, idle_timeout: 60s",
    ))
    .await;
    let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
    let ask = b"GET /api/tags HTTP/1.1\r\nhost: lingo\r\n\r\n";
    for round in 0..2 {
        stream.write_all(ask).await.unwrap();
        let mut buf = [0u8; 1024];
        let n = tokio::time::timeout(PATIENCE, stream.read(&mut buf))
            .await
            .expect("a response")
            .unwrap();
        let said = String::from_utf8_lossy(&buf[..n]);
        assert!(said.starts_with("HTTP/1.1 200"), "round {round}: {said}");
        // Silent for more than three header timeouts: the connection stays open.
        tokio::time::sleep(Duration::from_millis(1000)).await;
    }
    // Half a head, then silence: closed about 300 ms later, long before the idle timeout.
    stream
        .write_all(b"GET /api/tags HTTP/1.1\r\nhost: lingo\r\nx-slow: ")
        .await
        .unwrap();
    let said = read_to_close(&mut stream).await;
    assert!(said.is_empty(), "{said}");
    assert_eq!(backend.requests().len(), 2);
}

#[tokio::test]
async fn idle_connections_are_closed_on_http1_and_http2() {
    let backend = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&limited(
        &backend.url(),
        "idle_timeout: 300ms, header_timeout: 60s",
    ))
    .await;

    // HTTP/1.1: one request, then the kept-alive connection is closed by lingo.
    let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
    stream
        .write_all(b"GET /api/tags HTTP/1.1\r\nhost: lingo\r\n\r\n")
        .await
        .unwrap();
    let said = read_to_close(&mut stream).await;
    assert!(said.starts_with("HTTP/1.1 200"), "{said}");

    // HTTP/2 (prior knowledge): the connection ends with a GOAWAY after one request.
    let tcp = TcpStream::connect(lingo.addr).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .unwrap();
    let conn = tokio::spawn(conn);
    let req = hyper::Request::get(lingo.url("/api/tags"))
        .body(Empty::<Bytes>::new())
        .unwrap();
    let response = sender.send_request(req).await.unwrap();
    assert_eq!(response.status(), 200);
    response.into_body().collect().await.unwrap();
    let ended = tokio::time::timeout(PATIENCE, conn).await;
    assert!(ended.is_ok(), "the idle HTTP/2 connection was not closed");
}

#[tokio::test]
async fn a_connection_over_the_cap_is_told_503_and_closed() {
    let backend = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&limited(&backend.url(), "max_connections: 2")).await;
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
        stream
            .write_all(b"GET /api/tags HTTP/1.1\r\nhost: lingo\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 512];
        let n = stream.read(&mut buf).await.unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
        held.push(stream);
    }
    let mut third = TcpStream::connect(lingo.addr).await.unwrap();
    third
        .write_all(b"GET /api/tags HTTP/1.1\r\nhost: lingo\r\n\r\n")
        .await
        .unwrap();
    let said = read_to_close(&mut third).await;
    assert!(said.starts_with("HTTP/1.1 503"), "{said}");
    assert!(
        said.to_ascii_lowercase().contains("retry-after: 1"),
        "{said}"
    );
    assert!(
        said.contains(r#"{"error":"lingo is at its limit of 2 connections"#),
        "{said}"
    );
    assert_eq!(backend.requests().len(), 2);

    // A slot freed is a slot usable again.
    drop(held.pop());
    let response = tokio::time::timeout(PATIENCE, async {
        loop {
            let response = get(&lingo.url("/api/tags")).await;
            if response.status == 200 {
                return response;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(response.is_ok(), "the freed connection slot was not reused");
}

#[tokio::test]
async fn requests_over_the_in_flight_cap_get_503_with_retry_after() {
    let (backend, lines) = scripted_backend().await;
    let lingo = Lingo::start(&limited(&backend.url(), "max_in_flight: 1")).await;
    let chat = |stream: bool| {
        request(
            Method::POST,
            &lingo.url("/v1/chat/completions"),
            &[],
            &serde_json::json!({"model": "m", "stream": stream,
                "messages": [{"role": "user", "content": "hi"}]})
            .to_string(),
        )
    };
    // One stream in flight holds the only slot until its response ends.
    let first = client().request(chat(true)).await.unwrap();
    assert_eq!(first.status(), 200);

    let refused = send(chat(false)).await;
    assert_shape(
        &refused,
        "chat",
        503,
        Some("overloaded"),
        "limit of 1 requests",
    );
    assert_eq!(refused.headers["retry-after"], "1");
    let native = get(&lingo.url("/api/tags")).await;
    assert_shape(&native, "native", 503, None, "limit of 1 requests");
    // Probes are still served, all three.
    assert_eq!(get(&lingo.url("/healthz")).await.status, 200);
    let ready = get(&lingo.url("/readyz")).await;
    assert_eq!(ready.status, 200, "{}", ready.body);
    assert_eq!(ready.json()["status"], "ready");
    let metrics = get(&lingo.url("/metrics")).await;
    assert_eq!(metrics.status, 200);
    assert!(
        metrics.body.contains("lingo_open_streams"),
        "{}",
        metrics.body
    );

    lines
        .send(Bytes::from_static(
            b"{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"ok\"},\"done\":true}\n",
        ))
        .unwrap();
    drop(lines);
    let text = first.into_body().collect().await.unwrap().to_bytes();
    assert!(String::from_utf8_lossy(&text).contains("[DONE]"));
    // The slot is free again once the response ended.
    let native = tokio::time::timeout(PATIENCE, async {
        loop {
            let response = get(&lingo.url("/api/tags")).await;
            if response.status != 503 {
                return response;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(native.is_ok(), "the in-flight slot was never released");
}

/// Past `max_connections`, at most 64 connections at a time are being told 503; one more is
/// closed without a response. The 64 are held by clients that send nothing (each refusal waits up to
/// 5 s for a request); should a slow machine let that wait run out before the 65th is
/// accepted (a slot frees and it is told 503), the attempt is made again from scratch: a
/// wrong cap fails every attempt.
#[tokio::test]
async fn at_most_64_over_the_cap_are_refused_at_once_the_rest_are_closed() {
    let backend = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&limited(&backend.url(), "max_connections: 1")).await;
    let mut held = TcpStream::connect(lingo.addr).await.unwrap();
    held.write_all(b"GET /api/tags HTTP/1.1\r\nhost: lingo\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 512];
    let n = held.read(&mut buf).await.unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));

    let mut attempts = Vec::new();
    for _ in 0..3 {
        let mut silent = Vec::new();
        for _ in 0..64 {
            silent.push(TcpStream::connect(lingo.addr).await.unwrap());
        }
        let mut probe = TcpStream::connect(lingo.addr).await.unwrap();
        // lingo may close before reading it: a failed write is a response too.
        let _ = probe
            .write_all(b"GET /api/tags HTTP/1.1\r\nhost: lingo\r\n\r\n")
            .await;
        let said = read_to_close(&mut probe).await;
        if said.is_empty() {
            // The 64th, still being refused, gets a 503 when it asks (a cap below 64
            // would have closed it).
            let mut last = silent.pop().unwrap();
            last.write_all(b"GET /v1/chat/completions HTTP/1.1\r\nhost: lingo\r\n\r\n")
                .await
                .unwrap();
            let refused = read_to_close(&mut last).await;
            if refused.starts_with("HTTP/1.1 503") {
                assert!(refused.contains(r#""code":"overloaded""#), "{refused}");
                return;
            }
            attempts.push(format!("the 64th got {refused:?}"));
        } else {
            attempts.push(format!("the 65th got {said:?}"));
        }
        drop(silent);
    }
    panic!("no attempt saw 64 refusals and a 65th closed: {attempts:#?}");
}

/// A request whose body stops coming is not held until the upstream's first-byte timeout
/// (300 s here, the default): past `limits.body_timeout` of silence it gets a 408 in its
/// route's dialect (`request_timeout`), the connection closed (the rest of the body will
/// not be read), and the upstream request ended: lingo's own client closes its connection
/// mid-body (the upstream, which records every byte, saw the head and the bytes that came,
/// then the close); hyper's client (an HTTP/2 upstream) resets its stream, ending the
/// upstream's read; a translation, which reads the body whole first, sends nothing.
#[tokio::test]
async fn a_stalled_request_body_is_408_and_its_upstream_request_ended() {
    let recording = recording::Recording::start().await;
    let h2 = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&table(&format!(
        "limits: {{ body_timeout: 300ms }}\n\
         upstreams:\n  up: {{ url: {}, speaks: native }}\n  \
           h2: {{ url: {}, speaks: native, http2: true }}\n  mock: {{ mock: {{}}, speaks: native }}\n\
         routes:\n  - {{ prefix: /api, to: up }}\n  - {{ prefix: /h2, to: h2 }}\n  \
           - {{ path: /v1/chat/completions, speaks: chat-completions, to: mock }}\n",
        recording.url(),
        h2.url()
    )))
    .await;
    for (path, dialect) in [
        ("/api/chat", "native"),
        ("/h2/api/chat", "native"),
        ("/v1/chat/completions", "chat"),
    ] {
        let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
        let head = format!("POST {path} HTTP/1.1\r\nhost: lingo\r\ncontent-length: 100\r\n\r\n");
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(b"{\"model\":").await.unwrap();
        let said = read_to_close(&mut stream).await;
        let (head, body) = said.split_once("\r\n\r\n").expect("a response");
        assert!(
            head.starts_with("HTTP/1.1 408 Request Timeout\r\n"),
            "{path}: {said}"
        );
        assert!(head.ends_with("\r\nconnection: close"), "{path}: {head}");
        let response = WholeResponse {
            status: hyper::StatusCode::REQUEST_TIMEOUT,
            headers: [("content-type", "application/json")]
                .into_iter()
                .map(|(k, v)| (k.parse().unwrap(), v.parse().unwrap()))
                .collect(),
            body: body.to_owned(),
        };
        let code = (dialect == "chat").then_some("request_timeout");
        assert_shape(
            &response,
            dialect,
            408,
            code,
            "nothing of it came for 300ms",
        );
    }
    let received = recording.received_when(|r| r.contains("{\"model\":")).await;
    assert!(
        received.starts_with("POST /api/chat HTTP/1.1\r\n"),
        "{received}"
    );
    recording.closed_when(1).await;
    let ended = tokio::time::timeout(PATIENCE, async {
        while h2.requests().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    assert!(
        ended.await.is_ok(),
        "the HTTP/2 upstream's read of the body never ended"
    );
}
