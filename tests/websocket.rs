//! WebSocket upgrades through lingo: key injection in `Authorization` and the subprotocol,
//! the upstream key kept out of the 101, and bytes tunnelled both ways.

mod support;

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{HeaderMap, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use lingo::http::body::Body;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// An upstream that accepts any upgrade, echoes the offered subprotocol (as the `ws` library
/// does by default) and then echoes bytes.
async fn echo_upstream() -> (String, Arc<Mutex<Option<HeaderMap>>>) {
    slow_echo_upstream(Duration::ZERO).await
}

/// [`echo_upstream`], answering the handshake after `delay`.
async fn slow_echo_upstream(delay: Duration) -> (String, Arc<Mutex<Option<HeaderMap>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(None));
    let record = Arc::clone(&seen);
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let service = service_fn(move |mut req: Request<Incoming>| {
            *record.lock().unwrap() = Some(req.headers().clone());
            let protocol = req.headers().get("sec-websocket-protocol").cloned();
            let upgrade = hyper::upgrade::on(&mut req);
            tokio::spawn(async move {
                let mut io = TokioIo::new(upgrade.await.unwrap());
                let mut buf = [0u8; 64];
                while let Ok(n) = io.read(&mut buf).await {
                    if n == 0 || io.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
            let mut response = Response::builder()
                .status(StatusCode::SWITCHING_PROTOCOLS)
                .header("connection", "upgrade")
                .header("upgrade", "websocket")
                .header("sec-websocket-accept", "dummy");
            if let Some(p) = protocol {
                response = response.header("sec-websocket-protocol", p);
            }
            async move {
                tokio::time::sleep(delay).await;
                Ok::<_, Infallible>(response.body(Body::empty()).unwrap())
            }
        });
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(TokioIo::new(stream), service)
            .with_upgrades()
            .await;
    });
    (url, seen)
}

/// Reads an HTTP response head from a raw stream.
async fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).await.unwrap();
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap()
}

#[tokio::test]
async fn crawl_watcher_upgrade_is_tunnelled_with_the_key_swapped() {
    let (upstream_url, seen) = echo_upstream().await;
    let yaml = table(&format!(
        "clients:\n  - {{ name: js-sdk, key: {{ value: lingo-client-key }} }}\n\
         upstreams:\n  webdata:\n    url: {upstream_url}\n    speaks: web-data\n    auth: {{ bearer: {{ value: fc-upstream-key }} }}\n\
         routes:\n  - {{ prefix: /v1, to: webdata }}\n"
    ));
    let lingo = Lingo::start(&yaml).await;

    let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
    let handshake = format!(
        "GET /v1/crawl/3f1c HTTP/1.1\r\nHost: {}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Protocol: lingo-client-key\r\n\r\n",
        lingo.addr
    );
    stream.write_all(handshake.as_bytes()).await.unwrap();
    let head = read_head(&mut stream).await;
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    let lower = head.to_ascii_lowercase();
    assert!(
        lower.contains("sec-websocket-protocol: lingo-client-key"),
        "{head}"
    );
    assert!(
        !head.contains("fc-upstream-key"),
        "the upstream key leaked: {head}"
    );

    let upstream_saw = seen.lock().unwrap().clone().unwrap();
    assert_eq!(upstream_saw["authorization"], "Bearer fc-upstream-key");
    assert_eq!(upstream_saw["sec-websocket-protocol"], "fc-upstream-key");
    assert!(!format!("{upstream_saw:?}").contains("lingo-client-key"));

    stream.write_all(b"\x81\x04ping").await.unwrap();
    let mut echo = [0u8; 6];
    stream.read_exact(&mut echo).await.unwrap();
    assert_eq!(&echo, b"\x81\x04ping");
}

/// The upstream's time to answer the handshake is not lingo's overhead.
#[tokio::test]
async fn a_slow_handshake_is_the_upstreams_time() {
    let (upstream_url, _) = slow_echo_upstream(Duration::from_millis(800)).await;
    let yaml = table(&format!(
        "upstreams:\n  webdata:\n    url: {upstream_url}\n    speaks: web-data\n\
         routes:\n  - {{ prefix: /v1, to: webdata }}\n"
    ));
    let lingo = Lingo::start(&yaml).await;
    let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
    let handshake = format!(
        "GET /v1/crawl/3f1c HTTP/1.1\r\nHost: {}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
        lingo.addr
    );
    stream.write_all(handshake.as_bytes()).await.unwrap();
    let head = read_head(&mut stream).await;
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    let route = r#"route="prefix /v1",upstream="webdata""#;
    let (total, overhead) = one_request_times(&lingo, route).await;
    assert!(total >= 0.8, "the upstream answered after 800ms: {total}");
    assert!(
        overhead < 0.4,
        "the wait is not lingo's: {overhead} of {total}"
    );
}

/// Reads the head and the `Content-Length` body that follows it.
async fn read_answer(stream: &mut TcpStream) -> (String, serde_json::Value) {
    let head = read_head(stream).await;
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().unwrap())
        })
        .unwrap_or_else(|| panic!("no content-length: {head}"));
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).await.unwrap();
    (head, serde_json::from_slice(&body).unwrap())
}

/// An upgrade with no key at all (neither `Authorization` nor a `Sec-WebSocket-Protocol`
/// offer) and one with a wrong key are each refused with 401 in the web-data shape, with the
/// code that tells them apart, and never reach the upstream.
#[tokio::test]
async fn upgrade_without_a_client_key_is_401() {
    let (upstream_url, seen) = echo_upstream().await;
    let yaml = table(&format!(
        "clients:\n  - {{ name: js-sdk, key: {{ value: lingo-client-key }} }}\n\
         upstreams:\n  webdata:\n    url: {upstream_url}\n    speaks: web-data\n\
         routes:\n  - {{ prefix: /v2, to: webdata }}\n"
    ));
    let lingo = Lingo::start(&yaml).await;
    for (key, code) in [
        ("", "MISSING_API_KEY"),
        ("Sec-WebSocket-Protocol: wrong\r\n", "INVALID_API_KEY"),
        ("Authorization: Bearer wrong\r\n", "INVALID_API_KEY"),
    ] {
        let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
        let handshake = format!(
            "GET /v2/crawl/1 HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
             Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n{key}\r\n"
        );
        stream.write_all(handshake.as_bytes()).await.unwrap();
        let (head, body) = read_answer(&mut stream).await;
        assert!(head.starts_with("HTTP/1.1 401"), "{key:?}: {head}");
        assert_eq!(body["success"], false, "{body}");
        assert_eq!(body["code"], code, "{key:?}: {body}");
    }
    assert!(seen.lock().unwrap().is_none());
}
