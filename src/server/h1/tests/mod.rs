//! The HTTP/1.1 connection over an in-memory socket: framing both ways, pipelining, the
//! `100 Continue`, streamed responses written as they come, a client that leaves, graceful closes,
//! refused heads and upgrades.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::channel::{Channel, Sender};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc;

use hyper::StatusCode;
use hyper::header::HeaderValue;

use super::*;
use crate::http::body::read_all;

const LIMITS: Limits = Limits {
    max_fields: 100,
    max_head: 8192,
    body_timeout: Duration::from_secs(60),
};

/// Not a threshold: a guard so that a hung exchange fails with a message.
const GUARD: Duration = Duration::from_secs(10);

/// Echoes the request: method, path and body, as a whole response.
async fn echo(req: Request<Body>) -> Response<Body> {
    let line = format!("{} {} ", req.method(), req.uri());
    let body = read_all(req.into_body(), 1 << 20).await;
    let body = match body {
        Ok(body) => format!("{line}{}", String::from_utf8_lossy(&body)),
        Err(err) => format!("{line}error: {err}"),
    };
    Response::new(Body::full(body))
}

/// A connection served by `service` on a task, and the client's end.
fn start<S, F>(service: S) -> (DuplexStream, tokio::task::JoinHandle<Result<(), BoxError>>)
where
    S: FnMut(Request<Body>) -> F + Send + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    start_with(service, LIMITS)
}

/// [`start`], under `limits`.
fn start_with<S, F>(
    service: S,
    limits: Limits,
) -> (DuplexStream, tokio::task::JoinHandle<Result<(), BoxError>>)
where
    S: FnMut(Request<Body>) -> F + Send + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    let (client, server) = tokio::io::duplex(64 * 1024);
    let served = tokio::spawn(connection(server, service, limits));
    (client, served)
}

/// Reads until `want` has been seen (or the connection ends); all that was read.
async fn read_until(client: &mut DuplexStream, want: &str) -> String {
    let mut seen = Vec::new();
    tokio::time::timeout(GUARD, async {
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&seen).contains(want) {
            match client.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{want:?} never came: {:?}", String::from_utf8_lossy(&seen)));
    String::from_utf8(seen).unwrap()
}

/// The bodies of the `200 OK` responses in `all`, in order.
fn bodies(all: &str) -> Vec<&str> {
    all.split("HTTP/1.1 200 OK\r\n")
        .skip(1)
        .map(|response| response.split_once("\r\n\r\n").unwrap().1)
        .collect()
}

async fn read_to_end(client: &mut DuplexStream) -> String {
    let mut all = String::new();
    tokio::time::timeout(GUARD, client.read_to_string(&mut all))
        .await
        .expect("the connection never closed")
        .unwrap();
    all
}

#[tokio::test]
async fn pipelined_requests_get_responses_in_order_with_their_bodies() {
    let (mut client, served) = start(echo);
    let two = "POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\n\r\nabc\
               POST /b HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n\
               2\r\nde\r\n1;ext=1\r\nf\r\n0\r\ntrailer: t\r\n\r\n\
               GET /c HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
    client.write_all(two.as_bytes()).await.unwrap();
    let all = read_to_end(&mut client).await;
    assert_eq!(
        bodies(&all),
        ["POST /a abc", "POST /b def", "GET /c "],
        "{all}"
    );
    assert!(all.contains("content-length: 11\r\n"), "{all}");
    assert!(all.ends_with("connection: close\r\n\r\nGET /c ") || all.contains("connection: close"));
    served.await.unwrap().unwrap();
}

/// The service reads every field of a request through its one door, whether the connection
/// kept them as read (up to `MAX_RAW`) or made a map: each field's values come back in the
/// response, in the order sent.
#[tokio::test]
async fn the_service_reads_every_field_of_a_request() {
    use crate::http::h1::raw::MAX_RAW;
    let listed = |req: Request<Body>| {
        let fields = req.headers();
        let kept = matches!(fields, HeaderView::Raw(_));
        let mut seen = format!("{} fields, kept raw: {kept}\n", fields.len());
        for i in 1..fields.len() {
            let name = hyper::header::HeaderName::from_bytes(format!("x-{i}").as_bytes());
            for value in fields.get_all(&name.unwrap()) {
                seen.push_str(&format!("x-{i}: {}\n", String::from_utf8_lossy(value)));
            }
        }
        std::future::ready(Response::new(Body::full(seen)))
    };
    for n in [1, 8, MAX_RAW, MAX_RAW + 8] {
        let (mut client, served) = start(listed);
        let fields: String = (1..n).map(|i| format!("X-{i}: v{i}\r\n")).collect();
        let head = format!("GET / HTTP/1.1\r\n{fields}connection: close\r\n\r\n");
        client.write_all(head.as_bytes()).await.unwrap();
        let all = read_to_end(&mut client).await;
        let want: String = (1..n).map(|i| format!("x-{i}: v{i}\n")).collect();
        let body = all.split_once("\r\n\r\n").unwrap().1;
        let kept = n <= MAX_RAW;
        assert_eq!(body, format!("{n} fields, kept raw: {kept}\n{want}"), "{n}");
        served.await.unwrap().unwrap();
    }
}

#[tokio::test]
async fn a_client_that_expects_100_continue_gets_it_once_the_body_is_read() {
    let (mut client, served) = start(echo);
    let head = "POST /up HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\ncontent-length: 4\r\n\r\n";
    client.write_all(head.as_bytes()).await.unwrap();
    let go = read_until(&mut client, "\r\n\r\n").await;
    assert_eq!(go, "HTTP/1.1 100 Continue\r\n\r\n");
    client.write_all(b"body").await.unwrap();
    let response = read_until(&mut client, "POST /up body").await;
    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    drop(client);
    served.await.unwrap().unwrap();
}

/// A body that brings nothing for `body_timeout` while it is read fails, saying which limit
/// fired, and its response closes the connection (the rest of the body will not be read);
/// one that keeps bringing bytes, each within the limit, is read whole however long it
/// takes in all. The clock is paused: the limit fires when nothing else can happen.
#[tokio::test(start_paused = true)]
async fn a_body_silent_for_the_body_timeout_fails_and_its_connection_closes() {
    let limits = Limits {
        body_timeout: Duration::from_secs(2),
        ..LIMITS
    };
    let (mut client, served) = start_with(echo, limits);
    let head = "POST /up HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\nabc";
    client.write_all(head.as_bytes()).await.unwrap();
    let all = read_to_end(&mut client).await;
    assert!(all.starts_with("HTTP/1.1 200 OK\r\n"), "{all}");
    assert!(all.contains("connection: close\r\n"), "{all}");
    let said = "POST /up error: the client sent nothing of the request body for 2s";
    assert!(all.ends_with(said), "{all}");
    served.await.unwrap().unwrap();

    let (mut client, served) = start_with(echo, limits);
    let head = "POST /up HTTP/1.1\r\nhost: x\r\ncontent-length: 4\r\n\r\n";
    client.write_all(head.as_bytes()).await.unwrap();
    let (mut reading, mut writing) = tokio::io::split(client);
    let trickle = tokio::spawn(async move {
        for byte in [b"a", b"b", b"c", b"d"] {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            writing.write_all(byte).await.unwrap();
        }
        writing
    });
    let mut all = String::new();
    let mut buf = [0u8; 1024];
    while !all.ends_with("POST /up abcd") {
        let n = tokio::time::timeout(GUARD, reading.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0, "closed: {all}");
        all.push_str(std::str::from_utf8(&buf[..n]).unwrap());
    }
    assert!(!all.contains("connection: close"), "{all}");
    drop((trickle.await.unwrap(), reading));
    served.await.unwrap().unwrap();
}

/// A response given without reading the body owes no `100 Continue`, and a body that never came
/// cannot be skipped: the connection is closed after the response.
#[tokio::test]
async fn a_response_without_reading_the_body_skips_the_100_continue_and_closes() {
    let (mut client, served) = start(|_req| async { Response::new(Body::full("no")) });
    let head = "POST /up HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\ncontent-length: 4\r\n\r\n";
    client.write_all(head.as_bytes()).await.unwrap();
    let response = read_to_end(&mut client).await;
    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    assert!(response.ends_with("\r\n\r\nno"), "{response}");
    served.await.unwrap().unwrap();
    // A body that was all there is read past, and the connection kept.
    let (mut client, served) = start(|_req| async { Response::new(Body::full("no")) });
    let two = "POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\nab\
               GET /b HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
    client.write_all(two.as_bytes()).await.unwrap();
    let responses = read_to_end(&mut client).await;
    assert_eq!(
        responses.matches("HTTP/1.1 200 OK").count(),
        2,
        "{responses}"
    );
    served.await.unwrap().unwrap();
}

type Tokens = Sender<Bytes, BoxError>;

/// A service whose responses are streamed: each response's sender goes to the test.
fn streaming() -> (
    impl FnMut(Request<Body>) -> std::future::Ready<Response<Body>> + Send + 'static,
    mpsc::UnboundedReceiver<Tokens>,
) {
    let (senders, rx) = mpsc::unbounded_channel();
    let service = move |_req| {
        let (tokens, body) = Channel::<Bytes, BoxError>::new(8);
        let _ = senders.send(tokens);
        std::future::ready(Response::new(Body::new(body)))
    };
    (service, rx)
}

async fn send(tokens: &mut Tokens, token: &'static str) {
    tokens
        .send_data(Bytes::from_static(token.as_bytes()))
        .await
        .unwrap();
}

/// A streamed response's frames go out as they come, chunked, and its end ends the chunks.
#[tokio::test]
async fn a_streamed_response_is_written_token_by_token_and_chunked() {
    let (service, mut responses) = streaming();
    let (mut client, served) = start(service);
    client
        .write_all(b"GET /s HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut tokens = responses.recv().await.unwrap();
    let head = read_until(&mut client, "\r\n\r\n").await;
    assert!(head.contains("transfer-encoding: chunked\r\n"), "{head}");
    for token in ["one", "two", "three"] {
        send(&mut tokens, token).await;
        let chunk = read_until(&mut client, &format!("{token}\r\n")).await;
        assert_eq!(chunk, format!("{:x}\r\n{token}\r\n", token.len()));
    }
    let big = "x".repeat(40 * 1024);
    tokens.send_data(Bytes::from(big.clone())).await.unwrap();
    drop(tokens);
    let rest = read_until(&mut client, "\r\n0\r\n\r\n").await;
    assert_eq!(rest, format!("a000\r\n{big}\r\n0\r\n\r\n"));
    drop(client);
    served.await.unwrap().unwrap();
}

/// To an HTTP/1.0 client a stream of unknown length is sent as it is, close-delimited.
#[tokio::test]
async fn an_http10_client_gets_a_stream_up_to_the_close() {
    let (service, mut responses) = streaming();
    let (mut client, served) = start(service);
    client.write_all(b"GET /s HTTP/1.0\r\n\r\n").await.unwrap();
    let mut tokens = responses.recv().await.unwrap();
    send(&mut tokens, "one").await;
    send(&mut tokens, "two").await;
    drop(tokens);
    let all = read_to_end(&mut client).await;
    assert!(all.starts_with("HTTP/1.0 200 OK\r\n"), "{all}");
    assert!(!all.contains("transfer-encoding") && all.contains("connection: close\r\n"));
    assert!(all.ends_with("\r\n\r\nonetwo"), "{all}");
    served.await.unwrap().unwrap();
}

/// A client that closes during a stream ends it: the response's body is dropped (and with it
/// the upstream request behind it).
#[tokio::test]
async fn a_client_that_leaves_ends_its_stream() {
    let (service, mut responses) = streaming();
    let (mut client, served) = start(service);
    client
        .write_all(b"GET /s HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut tokens = responses.recv().await.unwrap();
    send(&mut tokens, "one").await;
    read_until(&mut client, "one\r\n").await;
    drop(client);
    let ended = tokio::time::timeout(GUARD, served)
        .await
        .expect("the connection hung");
    assert!(
        ended.unwrap().is_err(),
        "a stream cut short is an error of the connection"
    );
    let sent = tokens.send_data(Bytes::from_static(b"two")).await;
    assert!(sent.is_err(), "the body was not dropped");
}

/// Graceful close: an idle connection closes at once; one with a response in progress closes
/// after it.
#[tokio::test]
async fn a_graceful_close_waits_for_the_response_in_progress() {
    let (service, mut responses) = streaming();
    let (mut client, server) = tokio::io::duplex(64 * 1024);
    let (close, closed) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(async move {
        let mut conn = pin!(connection(server, service, LIMITS));
        tokio::select! {
            ended = conn.as_mut() => return ended,
            _ = closed => {}
        }
        conn.as_mut().close_gracefully();
        conn.await
    });
    client
        .write_all(b"GET /s HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut tokens = responses.recv().await.unwrap();
    read_until(&mut client, "\r\n\r\n").await;
    close.send(()).unwrap();
    send(&mut tokens, "last").await;
    drop(tokens);
    let rest = read_to_end(&mut client).await;
    assert_eq!(rest, "4\r\nlast\r\n0\r\n\r\n");
    served.await.unwrap().unwrap();

    let (mut client, server) = tokio::io::duplex(1024);
    let mut conn = Box::pin(connection(server, echo, LIMITS));
    conn.as_mut().close_gracefully();
    tokio::time::timeout(GUARD, conn).await.unwrap().unwrap();
    assert_eq!(read_to_end(&mut client).await, "");
}

#[tokio::test]
async fn unreadable_heads_get_a_response_and_the_connection_closed() {
    let long = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(9000));
    let large = format!("GET / HTTP/1.1\r\nx: {}\r\n\r\n", "a".repeat(9000));
    let cases = [
        (
            "GET / HTTP/1.1\r\nbad header\r\n\r\n",
            "HTTP/1.1 400 Bad Request\r\n",
        ),
        (
            "GET / HTTP/1.1\r\nhost: x\r\ncontent-length: x\r\n\r\n",
            "HTTP/1.1 400 ",
        ),
        (long.as_str(), "HTTP/1.1 414 URI Too Long\r\n"),
        (
            large.as_str(),
            "HTTP/1.1 431 Request Header Fields Too Large\r\n",
        ),
        (
            "GET / HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\ncontent-length: 2\r\n\r\nab",
            "HTTP/1.1 400 ",
        ),
    ];
    for (raw, want) in cases {
        let (mut client, served) = start(echo);
        client.write_all(raw.as_bytes()).await.unwrap();
        let all = read_to_end(&mut client).await;
        assert!(all.starts_with(want), "{raw:.40}: {all}");
        assert!(all.contains("connection: close\r\n") && all.ends_with("\r\n\r\n"));
        assert!(served.await.unwrap().is_err());
    }
}

/// After a 101, the upgrade gets the socket, with the bytes the client sent right after its
/// head.
#[tokio::test]
async fn an_upgrade_gets_the_socket_and_what_came_after_the_head() {
    let service = |mut req: Request<Body>| {
        let upgraded = upgrade::on(&mut req);
        tokio::spawn(async move {
            let mut io = upgraded.await.unwrap();
            let mut buf = [0u8; 64];
            loop {
                let n = io.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                io.write_all(&buf[..n]).await.unwrap();
            }
        });
        let mut switching = Response::new(Body::empty());
        *switching.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        let headers = switching.headers_mut();
        headers.insert("connection", HeaderValue::from_static("upgrade"));
        headers.insert("upgrade", HeaderValue::from_static("echo"));
        std::future::ready(switching)
    };
    let (mut client, served) = start(service);
    let head = "GET /ws HTTP/1.1\r\nhost: x\r\nconnection: upgrade\r\nupgrade: echo\r\n\r\nearly";
    client.write_all(head.as_bytes()).await.unwrap();
    let switched = read_until(&mut client, "early").await;
    assert!(
        switched.starts_with("HTTP/1.1 101 Switching Protocols\r\n"),
        "{switched}"
    );
    assert!(switched.contains("connection: upgrade\r\n"), "{switched}");
    assert!(switched.ends_with("\r\n\r\nearly"), "{switched}");
    client.write_all(b"later").await.unwrap();
    assert_eq!(read_until(&mut client, "later").await, "later");
    served.await.unwrap().unwrap();
}

/// A request that asks to upgrade but carries a body is no upgrade: it has no upgraded
/// connection to wait for, a 101 sent in response to it ends the connection, and its body never
/// becomes the new protocol's first bytes.
#[tokio::test]
async fn an_upgrade_with_a_body_never_gets_the_socket() {
    let (tell, mut heard) = mpsc::unbounded_channel();
    let service = move |mut req: Request<Body>| {
        let upgraded = upgrade::on(&mut req);
        let tell = tell.clone();
        tokio::spawn(async move {
            let _ = tell.send(upgraded.await.is_ok());
        });
        let mut switching = Response::new(Body::empty());
        *switching.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        std::future::ready(switching)
    };
    for framing in [
        "content-length: 6\r\n\r\nhidden",
        "transfer-encoding: chunked\r\n\r\n6\r\nhidden\r\n0\r\n\r\n",
    ] {
        let (mut client, served) = start(service.clone());
        let head = format!(
            "GET /ws HTTP/1.1\r\nhost: x\r\nconnection: upgrade\r\nupgrade: echo\r\n{framing}"
        );
        client.write_all(head.as_bytes()).await.unwrap();
        let all = read_to_end(&mut client).await;
        assert!(all.starts_with("HTTP/1.1 101 "), "{all}");
        assert!(
            all.ends_with("\r\n\r\n") && !all.contains("hidden"),
            "{all}"
        );
        served.await.unwrap().unwrap();
        assert_eq!(heard.recv().await, Some(false), "{framing}");
    }
}

/// A request's body reads the connection itself; once the connection has moved on to the
/// next request, a body left behind reads nothing of it.
#[tokio::test]
async fn a_body_left_behind_reads_nothing_of_the_next_request() {
    let (kept, mut bodies) = mpsc::unbounded_channel();
    let service = move |req: Request<Body>| {
        let _ = kept.send(req.into_body());
        std::future::ready(Response::new(Body::full("ok")))
    };
    let (mut client, served) = start(service);
    let two = "POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 1\r\n\r\na\
               POST /b HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\n\r\nbcd";
    client.write_all(two.as_bytes()).await.unwrap();
    let first = bodies.recv().await.unwrap();
    // The second request is read only once the first one's response is written.
    let second = bodies.recv().await.unwrap();
    let err = read_all(first, 100).await.unwrap_err();
    assert!(err.to_string().contains("another request"), "{err}");
    drop(client);
    // The second body was read past (it had all come) once its response was written.
    assert_eq!(read_all(second, 100).await.unwrap(), "");
    served.await.unwrap().unwrap();
}

/// A body that has all its frames ready at once, the last maybe a failure.
struct Ready(std::collections::VecDeque<Result<Bytes, &'static str>>);

impl http_body::Body for Ready {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
        let next = self.0.pop_front();
        Poll::Ready(next.map(|r| r.map(http_body::Frame::data).map_err(Into::into)))
    }
}

/// Tokens gathered for one write are still written when the body fails after them; the
/// chunked body is then left without its end, so that the client sees it cut short.
#[tokio::test]
async fn tokens_before_a_failure_reach_the_client_and_the_response_stays_unfinished() {
    let (mut client, served) = start(|_req| {
        let frames = [
            Ok(Bytes::from_static(b"one")),
            Ok(Bytes::from_static(b"two")),
            Err("x"),
        ];
        std::future::ready(Response::new(Body::boxed(Ready(frames.into()))))
    });
    client
        .write_all(b"GET /s HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let all = read_to_end(&mut client).await;
    assert!(all.ends_with("\r\n\r\n3\r\none\r\n3\r\ntwo\r\n"), "{all}");
    let failed = served.await.unwrap().unwrap_err();
    assert!(failed.to_string().contains("body failed"), "{failed}");
}

/// A `HEAD` request's response has no body, but says the length of the one lingo made.
#[tokio::test]
async fn a_head_response_says_its_length_and_sends_no_body() {
    let (mut client, served) = start(echo);
    let two = "HEAD /h HTTP/1.1\r\nhost: x\r\n\r\nGET /g HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
    client.write_all(two.as_bytes()).await.unwrap();
    let all = read_to_end(&mut client).await;
    let (head, get) = all.split_once("\r\n\r\n").unwrap();
    assert!(head.contains("content-length: 8\r\n"), "{all}"); // "HEAD /h "
    assert!(
        get.starts_with("HTTP/1.1 200 OK\r\n") && get.ends_with("GET /g "),
        "{all}"
    );
    served.await.unwrap().unwrap();
}

/// A client that closes while its response is still being made ends the request: the
/// service's future is dropped (and with it the upstream request it waits on).
#[tokio::test]
async fn a_client_that_leaves_before_its_response_ends_the_request() {
    let (dropped_tx, dropped_rx) = tokio::sync::oneshot::channel::<()>();
    let guard = std::sync::Mutex::new(Some(dropped_tx));
    let (mut client, served) = start(move |_req| {
        // Sends on the channel when dropped: the future never finishes on its own.
        let tell = guard.lock().unwrap().take();
        async move {
            let _tell = tell;
            std::future::pending::<()>().await;
            Response::new(Body::empty())
        }
    });
    client
        .write_all(b"GET /slow HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    tokio::task::yield_now().await;
    drop(client);
    let ended = tokio::time::timeout(GUARD, served)
        .await
        .expect("the connection hung");
    assert!(ended.unwrap().is_ok());
    let dropped = tokio::time::timeout(GUARD, dropped_rx)
        .await
        .expect("never dropped");
    assert!(
        dropped.is_err(),
        "the request's future was dropped, not finished"
    );
}

/// A response with no `Date` gets lingo's: now, as an IMF-fixdate (the cached value is
/// remade when the second changes).
#[tokio::test]
async fn a_response_without_a_date_gets_the_current_one() {
    let (mut client, served) = start(echo);
    client
        .write_all(b"GET /d HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let all = read_to_end(&mut client).await;
    let dates: Vec<&str> = all
        .lines()
        .filter_map(|l| l.strip_prefix("date: "))
        .collect();
    assert_eq!(dates.len(), 1, "{all:?}");
    let said = httpdate::parse_http_date(dates[0]).expect("an IMF-fixdate");
    let now = std::time::SystemTime::now();
    let apart = now.duration_since(said).unwrap_or_else(|e| e.duration());
    assert!(apart < Duration::from_secs(5), "{said:?} vs {now:?}");
    served.await.unwrap().unwrap();
}

/// A body that has nothing ready at its first poll (it wakes its task at once), then is
/// `inner`.
struct Late<B> {
    inner: B,
    waited: bool,
}

impl<B: http_body::Body + Unpin> http_body::Body for Late<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<B::Data>, B::Error>>> {
        if !std::mem::replace(&mut self.waited, true) {
            cx.waker().wake_by_ref();
            return std::task::Poll::Pending;
        }
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// A response whose body says it has ended once its last frame is taken is written whole
/// without a poll for its end (the end's work, a response's record and its upstream
/// connection put back, is left to the body's drop, after the write), framed by length
/// (its size told, or all of it ready with the head) or chunked (its size untold and
/// nothing ready with the head), and the connection goes on to the next request.
#[tokio::test]
async fn a_response_that_signalled_its_end_is_written_whole_and_not_polled_again() {
    use crate::http::body::SingleFrameBody;
    use std::sync::atomic::Ordering::SeqCst;
    let drops = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = std::sync::Arc::clone(&drops);
    let (mut client, served) = start(move |req| {
        let (single, dropped) = SingleFrameBody::new("whole");
        kept.lock().unwrap().push(dropped);
        let body = match req.uri().path() {
            "/b" => Body::boxed(Late {
                inner: single.of_unknown_size(),
                waited: false,
            }),
            "/c" => Body::boxed(single.of_unknown_size()),
            _ => Body::boxed(single),
        };
        async move { Response::new(body) }
    });
    let three = "GET /a HTTP/1.1\r\nhost: x\r\n\r\nGET /c HTTP/1.1\r\nhost: x\r\n\r\n\
                 GET /b HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
    client.write_all(three.as_bytes()).await.unwrap();
    let all = read_to_end(&mut client).await;
    let responses: Vec<&str> = all.split("HTTP/1.1 200 OK\r\n").skip(1).collect();
    assert_eq!(responses.len(), 3, "{all:?}");
    for by_length in &responses[..2] {
        assert!(by_length.contains("content-length: 5\r\n"), "{by_length}");
        assert!(by_length.ends_with("\r\n\r\nwhole"), "{by_length}");
    }
    let chunked = responses[2];
    assert!(
        chunked.contains("transfer-encoding: chunked\r\n"),
        "{chunked}"
    );
    assert!(
        chunked.ends_with("\r\n\r\n5\r\nwhole\r\n0\r\n\r\n"),
        "{chunked}"
    );
    served.await.unwrap().unwrap();
    let drops = drops.lock().unwrap();
    assert_eq!(drops.len(), 3);
    assert!(drops.iter().all(|dropped| dropped.load(SeqCst)));
}

/// A client that does not take a response's last bytes at once (it is not reading) gets them
/// after the body is dropped: it keeps neither the response's record waiting nor an upstream
/// connection out of its pool until it reads.
#[tokio::test]
async fn a_client_that_does_not_read_keeps_no_finished_body() {
    use crate::http::body::SingleFrameBody;
    use std::sync::atomic::Ordering::SeqCst;
    let (single, dropped) = SingleFrameBody::new("a response longer than the socket's room");
    let mut single = Some(single);
    let (mut client, server) = tokio::io::duplex(16);
    let service = move |_req| {
        let single = single.take().expect("one request");
        async move { Response::new(Body::boxed(single)) }
    };
    let served = tokio::spawn(connection(server, service, LIMITS));
    let ask = "GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
    client.write_all(ask.as_bytes()).await.unwrap();
    tokio::time::timeout(GUARD, async {
        while !dropped.load(SeqCst) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("the body is dropped while its client has not read its response");
    let all = read_to_end(&mut client).await;
    assert!(
        all.ends_with("\r\n\r\na response longer than the socket's room"),
        "{all}"
    );
    served.await.unwrap().unwrap();
}

mod body;
mod framing;
mod watch;
