//! A web-data v1 crawl watcher (WebSocket) over a v2-only upstream: the upgrade goes to the
//! v2 path without a compression offer, and the upstream's document frames come down with
//! json results under `extract` for a crawl the client started with `extract`.

mod support;

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use lingo::http::body::Body;
use lingo::translate::webdata::encode;
use serde_json::{Value, json};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the fake v2 upstream saw: (method, path, offered extensions).
type Seen = Arc<Mutex<Vec<(Method, String, Option<String>)>>>;

/// A v2-only upstream: crawl starts get an id; a watcher upgrade gets a document frame
/// with a json result, then a close frame.
async fn v2_upstream() -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen: Seen = Arc::default();
    let record = Arc::clone(&seen);
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let record = Arc::clone(&record);
            let service = service_fn(move |req: Request<Incoming>| {
                let extensions = req.fields().get("sec-websocket-extensions");
                let extensions = extensions.map(|v| v.to_str().unwrap().to_owned());
                let entry = (
                    req.method().clone(),
                    req.uri().path().to_owned(),
                    extensions,
                );
                record.lock().unwrap().push(entry);
                async move { Ok::<_, Infallible>(respond(req).await) }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .with_upgrades(),
            );
        }
    });
    (url, seen)
}

async fn respond(mut req: Request<Incoming>) -> Response<Body> {
    if req.method() == Method::POST {
        let body = req.body_mut().collect().await.unwrap().to_bytes();
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert!(body["scrapeOptions"]["formats"][0].is_object(), "{body}");
        let start = json!({"success": true, "id": "job1", "url": "http://up/v2/crawl/job1"});
        return json_response(200, &start.to_string());
    }
    let upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let mut io = TokioIo::new(upgrade.await.unwrap());
        let doc = json!({"type": "document", "data": {"json": {"title": "T"}, "markdown": "m"}});
        io.write_all(&encode(0x81, doc.to_string().as_bytes()))
            .await
            .unwrap();
        io.write_all(&[0x88, 0x02, 0x03, 0xe8]).await.unwrap();
    });
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header("connection", "upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-accept", "dummy")
        .body(Body::empty())
        .unwrap()
}

#[tokio::test]
async fn watcher_frames_say_extract() {
    let (upstream_url, seen) = v2_upstream().await;
    let yaml = table(&format!(
        "upstreams:\n  fc:\n    url: {upstream_url}\n    speaks: web-data-v2\n\
         routes:\n  - {{ prefix: /v1, to: fc }}\n"
    ));
    let lingo = Lingo::start(&yaml).await;
    let body = json!({"url": "https://example.com",
        "scrapeOptions": {"formats": ["extract"], "extract": {"prompt": "title"}}});
    let started = send(request(
        Method::POST,
        &lingo.url("/v1/crawl"),
        &[],
        &body.to_string(),
    ))
    .await;
    assert_eq!(
        started.json()["url"],
        format!("http://{}/v1/crawl/job1", lingo.addr)
    );

    let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
    let handshake = format!(
        "GET /v1/crawl/job1 HTTP/1.1\r\nHost: {}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
        lingo.addr
    );
    stream.write_all(handshake.as_bytes()).await.unwrap();
    let mut received = Vec::new();
    stream.read_to_end(&mut received).await.unwrap();
    let head_end = received.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&received[..head_end]);
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    let want = json!({"type": "document", "data": {"extract": {"title": "T"}, "markdown": "m"}});
    let mut frames = encode(0x81, want.to_string().as_bytes()).to_vec();
    frames.extend_from_slice(&[0x88, 0x02, 0x03, 0xe8]);
    assert_eq!(&received[head_end..], &frames[..]);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen[1], (Method::GET, "/v2/crawl/job1".to_owned(), None));
}
