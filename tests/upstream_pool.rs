//! lingo's own pool of HTTP/1.1 connections to a plain `http://` upstream, over real sockets
//! against a hand-written upstream that counts its connections: a connection is reused once
//! its response has been read to the end (a whole response, a chunked stream, an empty response),
//! never while a response is unread (a client that left mid-stream), and never after the
//! upstream closed it.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http_body_util::BodyExt;
use hyper::Method;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// Guards a test against a hang; never a performance threshold.
const PATIENCE: Duration = Duration::from_secs(20);

/// What the upstream does with a request.
#[derive(Clone, Copy)]
enum Then {
    /// Responds and waits for the next request on the connection.
    KeepAlive(&'static str),
    /// Responds (without saying `Connection: close`) and closes the connection.
    Close(&'static str),
    /// Responds with the head and a first chunk of a stream, then waits until the client
    /// closes the connection, and reports that it did.
    Hold,
}

/// An upstream speaking raw HTTP/1.1: `script` says what to do with each request (by its
/// path); it counts connections and reports the ones closed under a held stream.
struct Upstream {
    url: String,
    connections: Arc<AtomicUsize>,
    closed_under_hold: mpsc::UnboundedReceiver<()>,
}

impl Upstream {
    async fn start(script: fn(&str) -> Then) -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let connections = Arc::new(AtomicUsize::new(0));
        let (closed_tx, closed_under_hold) = mpsc::unbounded_channel();
        let counted = Arc::clone(&connections);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(serve(stream, script, closed_tx.clone()));
            }
        });
        Upstream {
            url,
            connections,
            closed_under_hold,
        }
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// One upstream connection: requests without bodies (GET), one after another.
async fn serve(mut stream: TcpStream, script: fn(&str) -> Then, closed: mpsc::UnboundedSender<()>) {
    let mut buf = Vec::new();
    loop {
        let Some(end) = read_head(&mut stream, &mut buf).await else {
            return;
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        buf.drain(..end);
        let path = head.split(' ').nth(1).unwrap_or("").to_owned();
        match script(&path) {
            Then::KeepAlive(response) => stream.write_all(response.as_bytes()).await.unwrap(),
            Then::Close(response) => {
                stream.write_all(response.as_bytes()).await.unwrap();
                return;
            }
            Then::Hold => {
                let head = "HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\n\
                            transfer-encoding: chunked\r\n\r\n";
                let chunk = "{\"message\":\"first\"}\n";
                let first = format!("{head}{:x}\r\n{chunk}\r\n", chunk.len());
                stream.write_all(first.as_bytes()).await.unwrap();
                let mut rest = Vec::new();
                let _ = stream.read_to_end(&mut rest).await;
                let _ = closed.send(());
                return;
            }
        }
    }
}

/// Reads up to the end of a request head; its length, or `None` when the peer closed.
async fn read_head(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<usize> {
    loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            return Some(at + 4);
        }
        let mut chunk = [0u8; 4096];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

const WHOLE: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
const EMPTY: &str = "HTTP/1.1 204 No Content\r\n\r\n";
const STREAM: &str = "HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\n\
                      transfer-encoding: chunked\r\n\r\n6\r\n{\"a\":1\r\n2\r\n}\n\r\n0\r\n\r\n";

fn script(path: &str) -> Then {
    match path {
        "/api/whole" => Then::KeepAlive(WHOLE),
        "/api/empty" => Then::KeepAlive(EMPTY),
        "/api/stream" => Then::KeepAlive(STREAM),
        "/api/close" => Then::Close(WHOLE),
        _ => Then::Hold,
    }
}

async fn through(url: &str) -> Lingo {
    Lingo::start(&table(&format!(
        "upstreams:\n  models:\n    url: {url}\n    speaks: native\n\
         routes:\n  - {{ prefix: /api, to: models }}\n"
    )))
    .await
}

async fn get_ok(lingo: &Lingo, path: &str) -> String {
    let response = tokio::time::timeout(PATIENCE, get(&lingo.url(path)))
        .await
        .expect("lingo responded");
    assert!(
        response.status.as_u16() < 300,
        "{path}: {} {}",
        response.status,
        response.body
    );
    response.body
}

#[tokio::test]
async fn a_response_read_to_its_end_gives_its_connection_to_the_next_request() {
    let upstream = Upstream::start(script).await;
    let lingo = through(&upstream.url).await;
    for _ in 0..3 {
        assert_eq!(get_ok(&lingo, "/api/whole").await, "{}");
        assert_eq!(get_ok(&lingo, "/api/stream").await, "{\"a\":1}\n");
        assert_eq!(get_ok(&lingo, "/api/empty").await, "");
    }
    assert_eq!(upstream.connections(), 1, "nine responses, one connection");
}

#[tokio::test]
async fn a_connection_the_upstream_closed_is_not_used_again() {
    let upstream = Upstream::start(script).await;
    let lingo = through(&upstream.url).await;
    for round in 1..=3 {
        assert_eq!(get_ok(&lingo, "/api/close").await, "{}");
        // The close reaches lingo's side of the connection.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(upstream.connections(), round);
    }
    // A kept-alive one is then reused as usual.
    get_ok(&lingo, "/api/whole").await;
    get_ok(&lingo, "/api/whole").await;
    assert_eq!(upstream.connections(), 4);
}

#[tokio::test]
async fn a_stream_its_client_left_takes_its_connection_with_it() {
    let mut upstream = Upstream::start(script).await;
    let lingo = through(&upstream.url).await;
    let response = support::client()
        .request(request(Method::GET, &lingo.url("/api/hold"), &[], ""))
        .await
        .unwrap();
    let mut body = response.into_body();
    let first = tokio::time::timeout(PATIENCE, body.frame()).await.unwrap();
    let first = first.unwrap().unwrap().into_data().unwrap();
    assert_eq!(&first[..], b"{\"message\":\"first\"}\n");
    // The client leaves mid-stream: lingo closes the upstream connection (the upstream sees
    // it end) rather than pool one with a response still arriving on it.
    drop(body);
    let closed = tokio::time::timeout(PATIENCE, upstream.closed_under_hold.recv()).await;
    assert!(closed.is_ok(), "the upstream connection was left open");
    assert_eq!(get_ok(&lingo, "/api/whole").await, "{}");
    assert_eq!(upstream.connections(), 2);
}

/// lingo's table for one upstream at `url`, with `more` (its timeouts, say) and a second
/// route when `second_route` says so.
fn one_upstream(url: &str, more: &str, second_route: bool) -> String {
    let second = if second_route {
        "  - { prefix: /v1/models, speaks: chat-completions, to: models }\n"
    } else {
        ""
    };
    table(&format!(
        "upstreams:\n  models:\n    url: {url}\n    speaks: native\n{more}\
         routes:\n  - {{ prefix: /api, to: models }}\n{second}"
    ))
}

/// Writes the table and reloads it, as a file event does (not forced; `SIGHUP` forces).
fn reload_with(lingo: &Lingo, yaml: &str) {
    std::fs::write(lingo.config_path(), yaml).unwrap();
    lingo.reloader.reload(false).expect("the table loads");
}

#[tokio::test]
async fn a_reload_keeps_the_connections_of_an_upstream_reached_the_same_way() {
    let upstream = Upstream::start(script).await;
    let lingo = Lingo::start(&one_upstream(&upstream.url, "", false)).await;
    assert_eq!(get_ok(&lingo, "/api/whole").await, "{}");
    // Another route, and other limits of the same upstream: its pool, and its connection,
    // carry over.
    let other_limits = "    timeouts: { first_byte: 30s, idle: 30s }\n";
    reload_with(&lingo, &one_upstream(&upstream.url, other_limits, true));
    assert_eq!(get_ok(&lingo, "/api/whole").await, "{}");
    assert_eq!(upstream.connections(), 1, "the reload kept the connection");
    // Another connect limit: a new pool, which opens a connection of its own.
    let other_connect = "    timeouts: { connect: 2s }\n";
    reload_with(&lingo, &one_upstream(&upstream.url, other_connect, true));
    assert_eq!(get_ok(&lingo, "/api/whole").await, "{}");
    assert_eq!(
        upstream.connections(),
        2,
        "a new pool for a new connect limit"
    );
    assert_eq!(get_ok(&lingo, "/api/whole").await, "{}");
    assert_eq!(upstream.connections(), 2);
    // SIGHUP (a forced reload, the table unchanged) makes every client again.
    lingo.reloader.reload(true).expect("the table loads");
    assert_eq!(get_ok(&lingo, "/api/whole").await, "{}");
    assert_eq!(upstream.connections(), 3, "SIGHUP opens connections again");
}
