//! The client against a hand-written upstream on a real socket: what goes up, what comes
//! back, and when a connection goes home.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::channel::Channel;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::*;
use deadline::tests::OnWorker;

/// Guards a test against a hang; never a performance threshold.
const PATIENCE: Duration = Duration::from_secs(10);

/// Collects the connections that went home.
#[derive(Clone, Default)]
struct Shelf(Arc<Mutex<Vec<Conn>>>);

impl Home for Shelf {
    fn put_back(self, conn: Conn) {
        self.0.lock().unwrap().push(conn);
    }
}

impl Shelf {
    fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

/// An upstream that reads until `until` has arrived, keeps what it read, then writes
/// `response` and keeps the connection open until the client closes it.
async fn upstream(
    until: &'static [u8],
    raw: &'static [u8],
) -> (String, tokio::task::JoinHandle<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let task = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut seen = Vec::new();
        while !contains(&seen, until) {
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await.unwrap();
            assert!(n > 0, "closed before {until:?}: {seen:?}");
            seen.extend_from_slice(&chunk[..n]);
        }
        stream.write_all(raw).await.unwrap();
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest).await;
        seen
    });
    (address, task)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

async fn send(
    address: &str,
    req: Request<Body>,
    shelf: &Shelf,
) -> Result<Response<Body>, SendError> {
    let conn = Conn::open(address, PATIENCE).await.unwrap();
    tokio::time::timeout(
        PATIENCE,
        conn.send(
            Outgoing::new(req, "up", None),
            shelf.clone(),
            Instant::now() + PATIENCE,
            PATIENCE,
        ),
    )
    .await
    .expect("a response")
}

async fn read(response: Response<Body>) -> Result<Bytes, BoxError> {
    let collected = tokio::time::timeout(PATIENCE, response.into_body().collect()).await;
    collected.expect("the body's end").map(|c| c.to_bytes())
}

fn get() -> Request {
    Request::from(hyper::Request::get("/").body(Body::empty()).unwrap())
}

fn post(body: Body) -> Request {
    Request::from(hyper::Request::post("/api/chat").body(body).unwrap())
}

#[tokio::test]
async fn a_whole_request_goes_up_and_its_connection_goes_home() {
    let raw = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello";
    let (address, upstream) = upstream(b"{}", raw).await;
    let shelf = Shelf::default();
    let response = send(&address, post(Body::full("{}")), &shelf)
        .await
        .unwrap();
    assert_eq!(http_body::Body::size_hint(response.body()).exact(), Some(5));
    assert_eq!(read(response).await.unwrap(), "hello");
    assert_eq!(shelf.len(), 1);
    drop(shelf);
    let seen = upstream.await.unwrap();
    let want = "POST /api/chat HTTP/1.1\r\nhost: up\r\ncontent-length: 2\r\n\r\n{}";
    assert_eq!(String::from_utf8_lossy(&seen), want);
}

/// A request body that says it has ended once its last frame is taken goes up whole and is
/// not polled for its end.
#[tokio::test]
async fn a_body_that_signalled_its_end_goes_up_without_a_poll_for_it() {
    let raw = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
    let (address, upstream) = upstream(b"whole", raw).await;
    let shelf = Shelf::default();
    let (single, _) = crate::http::body::SingleFrameBody::new("whole");
    let response = send(&address, post(Body::boxed(single)), &shelf).await;
    assert_eq!(read(response.unwrap()).await.unwrap(), "ok");
    drop(shelf);
    let seen = upstream.await.unwrap();
    let want = "POST /api/chat HTTP/1.1\r\nhost: up\r\ncontent-length: 5\r\n\r\nwhole";
    assert_eq!(String::from_utf8_lossy(&seen), want);
}

/// A body of unknown length goes up chunked. Its trailers stay behind: they could carry
/// what the header rules keep from the upstream (a client's credentials).
#[tokio::test]
async fn a_streamed_request_goes_up_chunked_without_its_trailers() {
    let raw = b"HTTP/1.1 204 No Content\r\n\r\n";
    let (address, upstream) = upstream(b"0\r\n\r\n", raw).await;
    let (mut tx, rx) = Channel::<Bytes, BoxError>::new(1);
    tokio::spawn(async move {
        for part in ["ab", "cde"] {
            tokio::task::yield_now().await;
            tx.send_data(Bytes::from(part)).await.unwrap();
        }
        let mut trailers = hyper::HeaderMap::new();
        trailers.insert("authorization", "Bearer client-key".parse().unwrap());
        tx.send_trailers(trailers).await.unwrap();
    });
    let shelf = Shelf::default();
    let response = send(&address, post(Body::new(rx)), &shelf).await.unwrap();
    assert_eq!(response.status(), 204);
    assert!(http_body::Body::is_end_stream(response.body()));
    drop(response);
    assert_eq!(shelf.len(), 1, "an empty response read to its end");
    drop(shelf);
    let seen = String::from_utf8(upstream.await.unwrap()).unwrap();
    let body = "transfer-encoding: chunked\r\n\r\n2\r\nab\r\n3\r\ncde\r\n0\r\n\r\n";
    assert!(seen.ends_with(body), "{seen}");
}

/// An upstream that says `100 Continue` (or `103 Early Hints`) before it reads the body
/// still gets the whole body, and the final response comes back.
#[tokio::test]
async fn interim_responses_during_the_upload_do_not_stop_it() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let upstream = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut seen = Vec::new();
        read_until(&mut stream, &mut seen, b"\r\n\r\n").await;
        let interim =
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n";
        stream.write_all(interim).await.unwrap();
        read_until(&mut stream, &mut seen, b"0\r\n\r\n").await;
        let raw = b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\ndone";
        stream.write_all(raw).await.unwrap();
        seen
    });
    let (mut tx, rx) = Channel::<Bytes, BoxError>::new(1);
    tokio::spawn(async move {
        tx.send_data(Bytes::from("first")).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await; // the interim responses come
        tx.send_data(Bytes::from("second")).await.unwrap();
    });
    let shelf = Shelf::default();
    let response = send(&address, post(Body::new(rx)), &shelf).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(read(response).await.unwrap(), "done");
    let seen = String::from_utf8(upstream.await.unwrap()).unwrap();
    assert!(
        seen.ends_with("5\r\nfirst\r\n6\r\nsecond\r\n0\r\n\r\n"),
        "{seen}"
    );
}

/// An upstream that begins a successful response before it has the whole request (it streams
/// while it reads) gets the rest of the request: only a refusal stops an upload.
#[tokio::test]
async fn a_success_before_the_uploads_end_still_gets_the_rest() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut seen = Vec::new();
        read_until(&mut stream, &mut seen, b"\r\n\r\n").await;
        let head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nearly\r\n";
        stream.write_all(head).await.unwrap();
        read_until(&mut stream, &mut seen, b"0\r\n\r\n").await;
        stream.write_all(b"4\r\nlate\r\n0\r\n\r\n").await.unwrap();
    });
    let (mut tx, rx) = Channel::<Bytes, BoxError>::new(1);
    tokio::spawn(async move {
        tx.send_data(Bytes::from("first")).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await; // the response begins
        tx.send_data(Bytes::from("second")).await.unwrap();
    });
    let shelf = Shelf::default();
    let response = send(&address, post(Body::new(rx)), &shelf).await.unwrap();
    assert_eq!(read(response).await.unwrap(), "earlylate");
    assert_eq!(
        shelf.len(),
        1,
        "the whole request went up: the connection is reusable"
    );
}

/// A body that sends 64 KiB frames until its reader is gone, and the task that sends them.
fn endless_upload() -> (Channel<Bytes, BoxError>, tokio::task::JoinHandle<()>) {
    let (mut tx, rx) = Channel::<Bytes, BoxError>::new(1);
    let sending = tokio::spawn(async move {
        let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
        while tx.send_data(chunk.clone()).await.is_ok() {}
    });
    (rx, sending)
}

async fn read_until(stream: &mut TcpStream, seen: &mut Vec<u8>, until: &[u8]) {
    let from = seen.len();
    while !contains(&seen[from..], until) {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "closed before {until:?}");
        seen.extend_from_slice(&chunk[..n]);
    }
}

/// An upstream that responds before the upload's end (here after its head) is heard: its
/// response comes back, not a reset, and the connection is not used again.
#[tokio::test]
async fn a_response_before_the_uploads_end_is_read() {
    let raw = b"HTTP/1.1 413 Payload Too Large\r\ncontent-length: 0\r\n\r\n";
    let (address, upstream) = upstream(b"\r\n\r\n", raw).await;
    let (rx, sending) = endless_upload();
    let shelf = Shelf::default();
    let response = send(&address, post(Body::new(rx)), &shelf).await.unwrap();
    assert_eq!(response.status(), 413);
    drop(response);
    assert_eq!(shelf.len(), 0, "the upload's rest was never sent");
    sending.await.unwrap();
    drop(upstream);
}

/// Bytes after a response's end (nothing was asked for them) make its connection unusable.
#[tokio::test]
async fn bytes_past_a_response_keep_its_connection_from_going_home() {
    let raw = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n";
    let (address, _upstream) = upstream(b"\r\n\r\n", raw).await;
    let shelf = Shelf::default();
    let response = send(&address, get(), &shelf).await;
    let body = read(response.unwrap()).await.unwrap();
    assert_eq!((&body[..], shelf.len()), (&b"ok"[..], 0));
}

/// A body cut short is an error for whoever reads it, never a short body that looks whole.
#[tokio::test]
async fn a_body_cut_short_fails_its_reader() {
    let raw = b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc";
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        let (mut stream, _): (TcpStream, _) = listener.accept().await.unwrap();
        let mut head = [0u8; 1024];
        let _ = stream.read(&mut head).await;
        stream.write_all(raw).await.unwrap();
    });
    let shelf = Shelf::default();
    let response = send(&address, get(), &shelf).await;
    let err = read(response.unwrap()).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("closed the connection before the end"),
        "{err}"
    );
}

/// The chunks one read brought leave as one frame; trailers after them come as their own,
/// and the connection goes home at the end.
#[tokio::test]
async fn chunks_already_read_leave_as_one_frame() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let mut conn = Conn::open(&address, PATIENCE).await.unwrap();
    conn.buf = BytesMut::from(&b"2\r\nab\r\n3\r\ncde\r\n1\r\nf\r\n0\r\nx-t: 1\r\n\r\n"[..]);
    let shelf = Shelf::default();
    let mut body = ResponseBody {
        conn: Some(conn),
        decoder: Decoder::Chunked(crate::http::h1::decode::Chunk::Size),
        keep_alive: true,
        home: Some(shelf.clone()),
        trailers: None,
        idle: PATIENCE,
    };
    let first = body.frame().await.unwrap().unwrap();
    assert_eq!(first.into_data().unwrap(), "abcdef");
    assert!(!http_body::Body::is_end_stream(&body));
    let trailers = body
        .frame()
        .await
        .unwrap()
        .unwrap()
        .into_trailers()
        .unwrap();
    assert_eq!(trailers["x-t"], "1");
    assert!(body.frame().await.is_none());
    assert_eq!(shelf.len(), 1);
}

/// A success that says it closes its connection, before the upload's end, ends the upload:
/// the upstream will not read the rest (RFC 9112 §9.6), and its response comes back.
#[tokio::test]
async fn a_success_that_closes_before_the_uploads_end_stops_it() {
    let raw = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok";
    let (address, _upstream) = upstream(b"\r\n\r\n", raw).await;
    let (rx, sending) = endless_upload();
    let shelf = Shelf::default();
    let response = send(&address, post(Body::new(rx)), &shelf).await.unwrap();
    assert_eq!(read(response).await.unwrap(), "ok");
    assert_eq!(shelf.len(), 0, "the connection closes");
    sending.await.unwrap();
}

/// One connection, three requests, each timed by its own deadline on the timer the
/// connection keeps: the first got its response at once; the second got its response after the first's
/// deadline has passed (the kept timer fired for it meanwhile) but before its own; the
/// third never got one, and failed at its deadline, not before. (Those that got one have a
/// second each: room on a loaded machine.)
#[tokio::test]
async fn each_request_on_a_kept_connection_has_its_own_deadline() {
    let _worker = OnWorker::enter(1);
    const LONG: Duration = Duration::from_secs(1);
    const SHORT: Duration = Duration::from_millis(200);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        for delay in [Some(Duration::ZERO), Some(SHORT / 2), None] {
            let mut seen = Vec::new();
            read_until(&mut stream, &mut seen, b"\r\n\r\n").await;
            let Some(delay) = delay else {
                let _ = stream.read_to_end(&mut seen).await; // never responds
                return;
            };
            tokio::time::sleep(delay).await;
            stream.write_all(ok).await.unwrap();
        }
    });
    let shelf = Shelf::default();
    let get = || Outgoing::new(get(), "up", None);
    let conn = Conn::open(&address, PATIENCE).await.unwrap();
    let first_deadline = Instant::now() + LONG;
    let first = conn.send(get(), shelf.clone(), first_deadline, LONG);
    assert_eq!(read(first.await.unwrap()).await.unwrap(), "ok");
    tokio::time::sleep_until(first_deadline + SHORT).await; // the kept timer fires
    let conn = shelf.0.lock().unwrap().pop().expect("went home");
    let second = conn.send(get(), shelf.clone(), Instant::now() + LONG, LONG);
    assert_eq!(read(second.await.unwrap()).await.unwrap(), "ok");
    let conn = shelf.0.lock().unwrap().pop().expect("went home");
    let deadline = Instant::now() + SHORT;
    fails_at_the_first_byte(conn.send(get(), shelf.clone(), deadline, LONG)).await;
    assert!(Instant::now() >= deadline, "not before its deadline");
}

/// Waits (within [`PATIENCE`]) for `sending` to fail with the first-byte error.
async fn fails_at_the_first_byte(sending: impl Future<Output = Result<Response<Body>, SendError>>) {
    let Err(err) = tokio::time::timeout(PATIENCE, sending)
        .await
        .expect("an end within patience")
    else {
        panic!("a response that never came");
    };
    assert!(matches!(err, SendError::FirstByte), "{err}");
}

/// An upstream that sends interim responses without end fails at the deadline, long before
/// it stops. (When such a socket never makes the read wait, tokio's budget for the task runs
/// out first: `deadline`'s own test pins that the deadline is seen then too.)
#[tokio::test]
async fn endless_interim_responses_fail_at_the_deadline() {
    const FLOOD: Duration = Duration::from_secs(6);
    // On a thread of its own, so that it writes while lingo's task reads.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        let (mut stream, _) = listener.accept().unwrap();
        let mut head = [0u8; 1024];
        let _ = stream.read(&mut head); // the request's head, in one segment
        let interim = b"HTTP/1.1 100 Continue\r\n\r\n".repeat(4096);
        let until = std::time::Instant::now() + FLOOD;
        while std::time::Instant::now() < until && stream.write_all(&interim).is_ok() {}
    });
    let started = Instant::now();
    let conn = Conn::open(&address, PATIENCE).await.unwrap();
    let req = Outgoing::new(get(), "up", None);
    let sending = conn.send(
        req,
        Shelf::default(),
        started + Duration::from_millis(200),
        PATIENCE,
    );
    fails_at_the_first_byte(sending).await;
    assert!(
        started.elapsed() < FLOOD,
        "failed only when the flood stopped"
    );
}

/// A success that keeps its connection, begun before the upload's end, lets the upload go
/// on; a body that then stalls still fails at the first-byte deadline.
#[tokio::test]
async fn a_stall_after_an_early_success_fails_at_the_deadline() {
    let raw = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
    let (address, _upstream) = upstream(b"{", raw).await;
    // A second: room for the early response to come first on a loaded machine.
    stall_until_the_deadline(&address, Duration::from_secs(1)).await;
}

/// A request whose body stalls, to an upstream that waits for it, fails at its first-byte
/// deadline: the upload's waits are timed too.
#[tokio::test]
async fn a_stalled_upload_fails_at_the_first_byte_deadline() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut seen = Vec::new();
        let _ = stream.read_to_end(&mut seen).await; // never responds
    });
    stall_until_the_deadline(&address, Duration::from_millis(200)).await;
}

/// Sends a request whose body stalls after its first bytes, with a deadline `limit` away:
/// it fails with the first-byte error, at the deadline and not before.
async fn stall_until_the_deadline(address: &str, limit: Duration) {
    let (mut tx, rx) = Channel::<Bytes, BoxError>::new(1);
    tx.send_data(Bytes::from_static(b"{\"a\":")).await.unwrap();
    let conn = Conn::open(address, PATIENCE).await.unwrap();
    let deadline = Instant::now() + limit;
    let req = Outgoing::new(post(Body::new(rx)), "up", None);
    fails_at_the_first_byte(conn.send(req, Shelf::default(), deadline, PATIENCE)).await;
    assert!(Instant::now() >= deadline, "not before its deadline");
    drop(tx);
}

/// A response's body fails with the idle error when the upstream goes silent for the idle
/// limit, and its connection is closed then, not sent home. The limit runs from the last frame,
/// not from the head: frames that come within it keep the body going past it. On a worker
/// (the connection's timer kept) and off one (a timer of its own).
#[tokio::test]
async fn a_silence_of_the_idle_limit_fails_the_response() {
    const IDLE: Duration = Duration::from_millis(800);
    const GAP: Duration = Duration::from_millis(300);
    for slot in [1, 0] {
        let _worker = OnWorker::enter(slot);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let upstream = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            read_until(&mut stream, &mut Vec::new(), b"\r\n\r\n").await;
            let head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
            stream.write_all(head).await.unwrap();
            for _ in 0..4 {
                tokio::time::sleep(GAP).await;
                stream.write_all(b"2\r\nok\r\n").await.unwrap();
            }
            // Then silence, until lingo closes the connection.
            let mut rest = Vec::new();
            let _ = stream.read_to_end(&mut rest).await;
            rest
        });
        let shelf = Shelf::default();
        let conn = Conn::open(&address, PATIENCE).await.unwrap();
        let get = Outgoing::new(get(), "up", None);
        let sending = conn.send(get, shelf.clone(), Instant::now() + PATIENCE, IDLE);
        let mut body = sending.await.unwrap().into_body();
        for _ in 0..4 {
            let frame = tokio::time::timeout(PATIENCE, body.frame()).await.unwrap();
            assert_eq!(
                frame.unwrap().unwrap().into_data().unwrap(),
                "ok",
                "slot {slot}"
            );
        }
        let last = Instant::now();
        let end = tokio::time::timeout(PATIENCE, body.frame()).await.unwrap();
        let err = end
            .expect("an error, not the end")
            .expect_err("no more data");
        let idle = err.downcast_ref::<IdleTimeout>().expect("the idle error");
        assert_eq!(idle.0, IDLE);
        assert!(
            last.elapsed() >= IDLE / 2,
            "slot {slot}: not at the silence's start"
        );
        // Closed at the timeout, not when the body is dropped (it is held until the end).
        let closed = tokio::time::timeout(PATIENCE, upstream).await;
        let rest = closed.expect("the connection closed").unwrap();
        assert!(
            rest.is_empty(),
            "slot {slot}: {rest:?} sent on a timed-out connection"
        );
        drop(body);
        assert_eq!(
            shelf.len(),
            0,
            "slot {slot}: a timed-out connection went home"
        );
    }
}

mod room;
mod upload;
