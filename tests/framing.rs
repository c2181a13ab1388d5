//! Every request lingo forwards is framed by the bytes it sends, not by what the client
//! declared. (Aliased native bodies: `tests/native_alias.rs`.) A WebSocket handshake goes up
//! without a body (one with a body is refused: `tests/websocket.rs`), so a `Content-Length`
//! the client sent, even `0`, does not go with it.

mod support;

use hyper::{Response, StatusCode};
use lingo::http::body::Body;
use support::*;
use tokio::net::TcpStream;

#[tokio::test]
async fn a_websocket_handshake_goes_up_without_the_clients_body_length() {
    let backend = Backend::start(|_| async {
        Response::builder()
            .status(StatusCode::SWITCHING_PROTOCOLS)
            .header("connection", "upgrade")
            .header("upgrade", "websocket")
            .body(Body::empty())
            .unwrap()
    })
    .await;
    let lingo = Lingo::start(&table(&format!(
        "upstreams:\n  webdata:\n    url: {}\n    speaks: web-data\n    timeouts: {{ first_byte: 3s }}\n\
         routes:\n  - {{ prefix: /v1, to: webdata }}\n",
        backend.url()
    )))
    .await;
    let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
    let request = "GET /v1/crawl/abc HTTP/1.1\r\nHost: lingo\r\nConnection: Upgrade\r\n\
                   Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
                   Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nContent-Length: 0\r\n\r\n";
    let head = head_of(&mut stream, request).await;
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    let seen = backend.last();
    assert!(
        seen.headers.get("content-length").is_none(),
        "{:?}",
        seen.headers
    );
    assert!(seen.body.is_empty());
}
