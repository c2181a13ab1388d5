//! What the connection reads while a response is being made, what it finishes before one (a
//! `100 Continue` half written), and how it ends one it refuses.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use http_body_util::BodyExt;
use tokio::io::ReadBuf;
use tokio::sync::oneshot;

use super::*;

/// A pipelined request that arrives while the response to the one before it is being made,
/// whole or the rest of what had come of it, is served next: the watch for a client that
/// leaves keeps what it reads, and reads nothing while bytes of the next request wait.
#[tokio::test]
async fn a_pipelined_request_arriving_during_a_response_is_served() {
    let second = "GET /b HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
    for split in [0, 20] {
        let (go_tx, go) = oneshot::channel::<()>();
        let mut go = Some(go);
        let (mut client, served) = start(move |req: Request<Body>| {
            let wait = go.take();
            async move {
                if let Some(wait) = wait {
                    let _ = wait.await; // the first response waits for the second request
                }
                echo(req).await
            }
        });
        let first = format!("GET /a HTTP/1.1\r\nhost: x\r\n\r\n{}", &second[..split]);
        client.write_all(first.as_bytes()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await; // /a is being answered
        client.write_all(&second.as_bytes()[split..]).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await; // the watch has read it
        go_tx.send(()).unwrap();
        let all = read_to_end(&mut client).await;
        assert_eq!(
            bodies(&all),
            ["GET /a ", "GET /b "],
            "split at {split}: {all}"
        );
        served.await.unwrap().unwrap();
    }
}

/// A socket that notes whether its write side was shut.
struct Noted {
    io: DuplexStream,
    shut: Arc<AtomicBool>,
}

impl AsyncRead for Noted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Noted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.shut.store(true, Ordering::Relaxed);
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// A head the connection refuses gets its response, then the write side is shut (over TLS,
/// the `close_notify` that tells the client the response is whole).
#[tokio::test]
async fn a_refused_head_is_answered_then_its_write_side_shut() {
    let (mut client, server) = tokio::io::duplex(64 * 1024);
    let shut = Arc::new(AtomicBool::new(false));
    let io = Noted {
        io: server,
        shut: Arc::clone(&shut),
    };
    let served = tokio::spawn(connection(io, echo, LIMITS));
    client
        .write_all(b"GET / HTTP/1.1\r\nbad header\r\n\r\n")
        .await
        .unwrap();
    let all = read_to_end(&mut client).await;
    assert!(all.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{all}");
    assert!(served.await.unwrap().is_err());
    assert!(shut.load(Ordering::Relaxed));
}

/// A head of a few KiB comes in with one read (on the stack, then kept), and a connection
/// waiting for its next request holds no read room.
#[tokio::test]
async fn a_head_of_a_few_kib_is_one_read_and_an_idle_connection_holds_no_room() {
    let (mut client, server) = tokio::io::duplex(64 * 1024);
    let head = format!("GET / HTTP/1.1\r\nx: {}\r\n\r\n", "a".repeat(3000));
    client.write_all(head.as_bytes()).await.unwrap();
    let mut conn = ConnState::new(server, Duration::from_secs(60));
    let read = std::future::poll_fn(|cx| conn.poll_fill(cx)).await.unwrap();
    assert_eq!(read, head.len());
    conn.buf.clear();
    conn.release_room();
    assert_eq!(conn.buf.capacity(), 0);
}

/// A `100 Continue` the socket took only part of, when the service responds without reading
/// the body, is finished before the response's head: the client reads both whole.
#[tokio::test]
async fn a_half_written_100_continue_is_finished_before_the_response() {
    // A socket with room for 8 bytes: the go-ahead's 25 cannot go in one write.
    let (mut client, server) = tokio::io::duplex(8);
    let service = |req: Request<Body>| async move {
        let mut body = req.into_body();
        // Asking for the body owes the go-ahead; it is left unread.
        let _ = tokio::time::timeout(Duration::from_millis(100), body.frame()).await;
        Response::new(Body::full("not read"))
    };
    let served = tokio::spawn(connection(server, service, LIMITS));
    let head = "POST /up HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\ncontent-length: 4\r\n\r\n";
    client.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await; // the service gave up on the body
    let all = read_to_end(&mut client).await;
    assert!(
        all.starts_with("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"),
        "{all}"
    );
    assert!(all.ends_with("\r\n\r\nnot read"), "{all}");
    let _ = served.await.unwrap();
}
