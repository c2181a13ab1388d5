//! Which HTTP a client speaks is told from its first bytes before hyper reads them
//! (`server::sniff`): over real sockets, first bytes that arrive in pieces, including ones
//! that could start either version, and a connection that sends nothing.

mod support;

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use support::*;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

/// Guards a test against a hang; never a performance threshold.
const PATIENCE: Duration = Duration::from_secs(20);

async fn lingo(limits: &str) -> (Lingo, Backend) {
    let backend = Backend::json(200, "{\"models\":[]}").await;
    let yaml = table(&format!(
        "limits: {{ {limits} }}\n\
         upstreams:\n  models:\n    url: {}\n    speaks: native\n\
         routes:\n  - {{ prefix: /api, to: models }}\n",
        backend.url()
    ));
    (Lingo::start(&yaml).await, backend)
}

/// Writes `first`, pauses, writes `rest`, then reads the response to the close.
async fn in_two_pieces(lingo: &Lingo, first: &[u8], rest: &[u8]) -> String {
    let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
    stream.write_all(first).await.unwrap();
    tokio::time::sleep(Duration::from_millis(30)).await;
    stream.write_all(rest).await.unwrap();
    let mut said = Vec::new();
    let read = tokio::time::timeout(PATIENCE, stream.read_to_end(&mut said)).await;
    assert!(read.is_ok(), "no response");
    String::from_utf8_lossy(&said).into_owned()
}

#[tokio::test]
async fn http1_requests_whose_first_bytes_could_start_http2_are_served() {
    let (lingo, _backend) = lingo("idle_timeout: 60s").await;
    let request =
        b"POST /api/tags HTTP/1.1\r\nhost: lingo\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
    for split in [1, 2, 4, 10] {
        let said = in_two_pieces(&lingo, &request[..split], &request[split..]).await;
        assert!(said.starts_with("HTTP/1.1 200"), "split at {split}: {said}");
    }
    // `PRI` that is not the preface is HTTP/1.1 (hyper then refuses the method).
    let said = in_two_pieces(
        &lingo,
        b"PRI * HTTP/1.1",
        b"\r\nhost: lingo\r\nconnection: close\r\n\r\n",
    )
    .await;
    assert!(said.starts_with("HTTP/1.1 "), "{said}");
}

#[tokio::test]
async fn http2_whose_preface_arrives_in_pieces_is_served() {
    let (lingo, _backend) = lingo("idle_timeout: 60s").await;
    let tcp = TcpStream::connect(lingo.addr).await.unwrap();
    let io = TokioIo::new(Trickle::new(tcp, 7));
    let (mut sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = hyper::Request::get(lingo.url("/api/tags"))
        .body(Empty::<Bytes>::new())
        .unwrap();
    let response = tokio::time::timeout(PATIENCE, sender.send_request(req))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(response.version(), hyper::Version::HTTP_2);
    assert_eq!(response.status(), 200);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"{\"models\":[]}");
}

#[tokio::test]
async fn a_connection_that_sends_nothing_is_closed_at_the_header_timeout() {
    // A new connection is waiting for its first request head (nginx's client_header_timeout).
    let (lingo, _backend) = lingo("header_timeout: 300ms, idle_timeout: 60s").await;
    let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
    let mut said = Vec::new();
    let read = tokio::time::timeout(PATIENCE, stream.read_to_end(&mut said)).await;
    assert!(read.is_ok(), "lingo kept a silent connection open");
    assert!(said.is_empty());
}

/// A stream whose first write sends only `first` bytes and then pauses, so that the server
/// sees a strict prefix of what the client means to send.
struct Trickle {
    inner: TcpStream,
    first: usize,
    pause: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Trickle {
    fn new(inner: TcpStream, first: usize) -> Self {
        Trickle {
            inner,
            first,
            pause: None,
        }
    }
}

impl AsyncRead for Trickle {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Trickle {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if self.first > 0 {
            let n = buf.len().min(self.first);
            self.first = 0;
            self.pause = Some(Box::pin(tokio::time::sleep(Duration::from_millis(30))));
            return Pin::new(&mut self.inner).poll_write(cx, &buf[..n]);
        }
        if let Some(pause) = self.pause.as_mut() {
            std::task::ready!(pause.as_mut().poll(cx));
            self.pause = None;
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
