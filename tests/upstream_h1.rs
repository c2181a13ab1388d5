//! How lingo speaks HTTP/1.1 to a plain `http://` upstream, black-box, over real sockets: a
//! hand-written upstream reads each request off the wire (its head, then its body by
//! `Content-Length` or chunked framing), records it, and writes raw response bytes. These pin
//! request framing, every response framing a client must get byte-exact, interim responses,
//! connection reuse (counted on the upstream), and what malformed or early responses give the
//! client. Written against hyper's client and kept for lingo's own (`src/upstream/h1/`),
//! which passes them all (the early-response cases were split in two: one for an upstream that
//! reads on after refusing, whose 413 must be relayed; one for an upstream that resets).

mod support;

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::channel::Channel;
use hyper::{HeaderMap, Method, Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Guards a test against a hang; never a performance threshold.
const PATIENCE: Duration = Duration::from_secs(20);

// === the upstream ===

/// What the upstream does with a request, decided from its request line.
enum Reply {
    /// Reads the body, responds, and waits for the next request on the connection.
    Response(Vec<u8>),
    /// Reads the body, responds, and closes the connection.
    Close(Vec<u8>),
    /// Reads the body, responds (saying nothing about closing), and closes 50 ms later: its
    /// keep-alive timer.
    IdleClose(Vec<u8>),
    /// Responds after the request's head without reading its body, and closes.
    Early(Vec<u8>),
    /// Says `100 Continue` right after the request's head (as a server that honours a client's
    /// `Expect` does, or one that always does), then reads the body and responses.
    ContinueFirst(Vec<u8>),
    /// Responds after the request's head, then reads (and drops) whatever comes until the
    /// client closes: a server's lingering close, so that its response is not lost to a reset.
    EarlyLinger(Vec<u8>),
}

fn respond(raw: impl AsRef<[u8]>) -> Reply {
    Reply::Response(raw.as_ref().to_vec())
}

fn close(raw: impl AsRef<[u8]>) -> Reply {
    Reply::Close(raw.as_ref().to_vec())
}

/// A request as the upstream read it off the wire.
#[derive(Debug, Clone)]
struct Received {
    /// `METHOD target VERSION`.
    line: String,
    /// Names in lower case, in the order sent.
    headers: Vec<(String, String)>,
    /// Decoded from its framing.
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

type Script = Arc<dyn Fn(&str) -> Reply + Send + Sync>;

/// An upstream speaking raw HTTP/1.1 as its script says; it counts connections and records
/// every request.
struct Upstream {
    url: String,
    authority: String,
    connections: Arc<AtomicUsize>,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Upstream {
    async fn start(script: impl Fn(&str) -> Reply + Send + Sync + 'static) -> Upstream {
        let script: Script = Arc::new(script);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let authority = listener.local_addr().unwrap().to_string();
        let connections = Arc::new(AtomicUsize::new(0));
        let received = Arc::new(Mutex::new(Vec::new()));
        let (counted, record) = (Arc::clone(&connections), Arc::clone(&received));
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(serve(stream, Arc::clone(&script), Arc::clone(&record)));
            }
        });
        Upstream {
            url: format!("http://{authority}"),
            authority,
            connections,
            received,
        }
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

/// One upstream connection: requests one after another, until the script or the peer ends it.
async fn serve(mut stream: TcpStream, script: Script, record: Arc<Mutex<Vec<Received>>>) {
    let mut buf = Vec::new();
    loop {
        let Some(end) = read_head(&mut stream, &mut buf).await else {
            return;
        };
        let head = String::from_utf8_lossy(&buf[..end - 4]).into_owned();
        buf.drain(..end);
        let mut lines = head.split("\r\n");
        let line = lines.next().unwrap_or_default().to_owned();
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let mut request = Received {
            line,
            headers,
            body: Vec::new(),
        };
        let reply = script(&request.line);
        if let Reply::ContinueFirst(_) = reply
            && stream
                .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                .await
                .is_err()
        {
            return;
        }
        if !matches!(reply, Reply::Early(_) | Reply::EarlyLinger(_)) {
            let Some(body) = read_body(&mut stream, &mut buf, &request).await else {
                return;
            };
            request.body = body;
        }
        record.lock().unwrap().push(request);
        match reply {
            Reply::Response(raw) | Reply::ContinueFirst(raw) => {
                if stream.write_all(&raw).await.is_err() {
                    return;
                }
            }
            Reply::Close(raw) | Reply::Early(raw) => {
                let _ = stream.write_all(&raw).await;
                return;
            }
            Reply::IdleClose(raw) => {
                let _ = stream.write_all(&raw).await;
                tokio::time::sleep(Duration::from_millis(50)).await;
                return;
            }
            Reply::EarlyLinger(raw) => {
                let _ = stream.write_all(&raw).await;
                while more(&mut stream, &mut buf).await.is_some() {
                    buf.clear();
                }
                return;
            }
        }
    }
}

/// Reads more bytes into `buf`; `None` when the peer closed.
async fn more(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<()> {
    let mut chunk = [0u8; 64 * 1024];
    match stream.read(&mut chunk).await {
        Ok(0) | Err(_) => None,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            Some(())
        }
    }
}

/// Reads up to the end of a request head; its length with the blank line.
async fn read_head(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<usize> {
    loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            return Some(at + 4);
        }
        more(stream, buf).await?;
    }
}

/// Takes one CRLF-ended line off `buf`, without its CRLF.
async fn read_line(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<String> {
    loop {
        if let Some(at) = buf.windows(2).position(|w| w == b"\r\n") {
            let line = String::from_utf8_lossy(&buf[..at]).into_owned();
            buf.drain(..at + 2);
            return Some(line);
        }
        more(stream, buf).await?;
    }
}

/// Takes `n` bytes off `buf`.
async fn read_exact(stream: &mut TcpStream, buf: &mut Vec<u8>, n: usize) -> Option<Vec<u8>> {
    while buf.len() < n {
        more(stream, buf).await?;
    }
    Some(buf.drain(..n).collect())
}

/// A request's body, by its chunked framing or its `Content-Length` (none: empty).
async fn read_body(stream: &mut TcpStream, buf: &mut Vec<u8>, req: &Received) -> Option<Vec<u8>> {
    let chunked = req
        .header("transfer-encoding")
        .is_some_and(|te| te.eq_ignore_ascii_case("chunked"));
    if !chunked {
        let length = req
            .header("content-length")
            .map_or(0, |v| v.parse().unwrap());
        return read_exact(stream, buf, length).await;
    }
    let mut body = Vec::new();
    loop {
        let line = read_line(stream, buf).await?;
        let size = usize::from_str_radix(line.split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            // Trailers, up to the blank line.
            while !read_line(stream, buf).await?.is_empty() {}
            return Some(body);
        }
        body.extend(read_exact(stream, buf, size).await?);
        read_exact(stream, buf, 2).await?;
    }
}

// === the client's side ===

async fn through(url: &str) -> Lingo {
    Lingo::start(&table(&format!(
        "upstreams:\n  models:\n    url: {url}\n    speaks: native\n\
         routes:\n  - {{ prefix: /api, to: models }}\n"
    )))
    .await
}

/// What the client got: the head, and the body or the error that ended it.
struct Outcome {
    status: StatusCode,
    headers: HeaderMap,
    body: Result<Bytes, hyper::Error>,
}

impl Outcome {
    /// The whole body of a successful response.
    fn ok(self) -> Bytes {
        assert!(self.status.is_success(), "status {}", self.status);
        self.body.expect("the body was read to its end")
    }
}

/// Sends `req` to lingo and reads the whole response, within [`PATIENCE`].
async fn fetch(req: Request<http_body_util::Full<Bytes>>) -> Outcome {
    let exchange = async {
        let mut response = client().request(req).await.expect("lingo responded");
        let headers = std::mem::take(response.fields_mut());
        let (parts, body) = response.into_parts();
        Outcome {
            status: parts.status,
            headers,
            body: body.collect().await.map(|c| c.to_bytes()),
        }
    };
    tokio::time::timeout(PATIENCE, exchange)
        .await
        .expect("no hang")
}

async fn fetch_get(lingo: &Lingo, path: &str) -> Outcome {
    fetch(request(Method::GET, &lingo.url(path), &[], "")).await
}

/// A client that did not get a whole, successful response: a 502, or a body that failed.
fn refused(outcome: Outcome) {
    assert!(
        outcome.status == StatusCode::BAD_GATEWAY || outcome.body.is_err(),
        "a complete-looking response: {} {:?}",
        outcome.status,
        outcome.body
    );
}

/// A GET written by hand on its own connection to lingo, read to its end: the response's head
/// (names in lower case, values as their bytes) and its body. For what a hyper client would
/// refuse to hold, such as more than 100 header fields.
async fn raw_get(lingo: &Lingo, path: &str) -> (Vec<u8>, Vec<u8>) {
    let req = format!("GET {path} HTTP/1.1\r\nhost: lingo\r\nconnection: close\r\n\r\n");
    let (head, body) = by_hand(lingo, &req).await;
    (head.to_ascii_lowercase(), body)
}

/// `req` written by hand on its own connection to lingo, read to the close: the response's
/// head as lingo wrote it, and its body.
async fn by_hand(lingo: &Lingo, req: &str) -> (Vec<u8>, Vec<u8>) {
    let exchange = async {
        let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
        stream.write_all(req.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.unwrap();
        raw
    };
    let raw = tokio::time::timeout(PATIENCE, exchange)
        .await
        .expect("no hang");
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    (raw[..end].to_vec(), raw[end..].to_vec())
}

/// `body` as a chunked response in chunks of `size`.
fn chunked(body: &[u8], size: usize) -> Vec<u8> {
    let mut raw = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
    for chunk in body.chunks(size) {
        raw.extend(format!("{:x}\r\n", chunk.len()).bytes());
        raw.extend(chunk);
        raw.extend(b"\r\n");
    }
    raw.extend(b"0\r\n\r\n");
    raw
}

/// Bytes that are not all alike, so that a lost or repeated piece shows.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

const OK: &str = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";

// === request framing ===

/// The upstream must read exactly the client's body by its length, at the origin-form target,
/// addressed to itself: a wrong length or target breaks every upload.
#[tokio::test]
async fn a_post_goes_up_with_its_length_its_bytes_and_the_upstreams_host() {
    let upstream = Upstream::start(|_| respond(OK)).await;
    let lingo = through(&upstream.url).await;
    let body = r#"{"model":"m","prompt":"hi","options":{"seed":7}}"#;
    let url = lingo.url("/api/x?q=1");
    let json = [("content-type", "application/json")];
    assert_eq!(
        fetch(request(Method::POST, &url, &json, body)).await.ok(),
        "{}"
    );

    let seen = &upstream.received()[0];
    assert_eq!(seen.line, "POST /api/x?q=1 HTTP/1.1");
    assert_eq!(seen.header("host"), Some(upstream.authority.as_str()));
    assert_eq!(
        seen.header("content-length"),
        Some(&*body.len().to_string())
    );
    assert_eq!(seen.header("transfer-encoding"), None);
    assert_eq!(seen.body, body.as_bytes());
}

/// A client's `Expect: 100-continue` is handled by lingo on its own hop and not sent up;
/// an upstream that says `100 Continue` before it reads the body anyway still gets all of it
/// (the upload goes on past an interim response) and its final response comes back.
#[tokio::test]
async fn a_continue_before_the_body_does_not_stop_the_upload() {
    let upstream = Upstream::start(|_| Reply::ContinueFirst(OK.as_bytes().to_vec())).await;
    let lingo = through(&upstream.url).await;
    let body = "x".repeat(256 * 1024);
    let headers = [("expect", "100-continue")];
    let outcome = fetch(request(Method::POST, &lingo.url("/api/x"), &headers, &body)).await;
    assert_eq!(outcome.status, StatusCode::OK);
    let seen = &upstream.received()[0];
    assert_eq!(seen.body.len(), body.len());
    assert_eq!(seen.header("expect"), None);
}

/// An upstream named by a host name is looked up and dialled: `localhost` may name `::1`
/// first, where nothing listens here, and then `127.0.0.1`, where the upstream does.
#[tokio::test]
async fn an_upstream_named_by_host_name_is_dialled() {
    let upstream = Upstream::start(|_| respond(OK)).await;
    let port = upstream.url.rsplit(':').next().unwrap();
    let lingo = through(&format!("http://localhost:{port}")).await;
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), "{}");
    assert_eq!(
        upstream.received()[0].header("host"),
        Some(&*format!("localhost:{port}"))
    );
}

/// A GET without a body must go up without one: a stray `Transfer-Encoding` or length would
/// make the upstream wait for bytes that never come.
#[tokio::test]
async fn a_get_goes_up_without_a_body() {
    let upstream = Upstream::start(|_| respond(OK)).await;
    let lingo = through(&upstream.url).await;
    assert_eq!(fetch_get(&lingo, "/api/y").await.ok(), "{}");

    let seen = &upstream.received()[0];
    assert_eq!(seen.line, "GET /api/y HTTP/1.1");
    assert_eq!(seen.header("host"), Some(upstream.authority.as_str()));
    assert_eq!(seen.header("transfer-encoding"), None);
    assert_eq!(seen.header("content-length"), None);
    assert!(seen.body.is_empty());
}

/// An upload of unknown length (chunked from the client) must reach the upstream whole,
/// however lingo frames it.
#[tokio::test]
async fn a_chunked_upload_arrives_whole() {
    let upstream = Upstream::start(|_| respond(OK)).await;
    let lingo = through(&upstream.url).await;
    let (mut tx, body) = Channel::<Bytes, Infallible>::new(4);
    let pieces = ["{\"model\":", "\"m\",\"prompt\":", "\"a chunked hello\"}"];
    for piece in pieces {
        tx.send_data(Bytes::from_static(piece.as_bytes()))
            .await
            .unwrap();
    }
    drop(tx);
    let req = Request::post(lingo.url("/api/generate"))
        .body(body)
        .unwrap();
    let exchange = async {
        let response = Client::builder(TokioExecutor::new())
            .build_http()
            .request(req)
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response.into_body().collect().await.unwrap().to_bytes()
    };
    let got = tokio::time::timeout(PATIENCE, exchange).await.unwrap();
    assert_eq!(got, "{}");
    assert_eq!(upstream.received()[0].body, pieces.concat().as_bytes());
}

// === response fields ===

/// A response lingo passes through keeps its fields as read and writes them to an HTTP/1.x
/// client as they are (in the upstream's case), while an HTTP/2 one gets them from a map:
/// either way the client gets the same fields. Hop-by-hop ones (and what `Connection` names) stay behind,
/// as does a chunked response's `Content-Length`; the upstream's `Date` is the only one;
/// repeated fields all arrive; the request id is lingo's, not the upstream's.
#[tokio::test]
async fn a_responses_fields_pass_on_as_read_to_either_http_version() {
    let upstream = Upstream::start(|_| {
        respond(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
             Date: Mon, 02 Jan 2006 15:04:05 GMT\r\nConnection: keep-alive, X-Up-Hop\r\n\
             X-Up-Hop: 1\r\nKeep-Alive: timeout=5\r\nX-Request-Id: upstream-id\r\n\
             Set-Cookie: a=1\r\nset-cookie: b=2\r\nX-Kept:  as written  \r\n\
             Transfer-Encoding: chunked\r\nContent-Length: 99\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        )
    })
    .await;
    let lingo = through(&upstream.url).await;
    // As the upstream wrote them (names in its case: written as read), to HTTP/1.1 and 1.0.
    for version in ["1.1", "1.0"] {
        let req = format!("GET /api/x HTTP/{version}\r\nhost: lingo\r\nconnection: close\r\n\r\n");
        let (head, body) = by_hand(&lingo, &req).await;
        let head = String::from_utf8(head).unwrap();
        assert!(
            head.starts_with(&format!("HTTP/{version} 200 OK\r\n")),
            "{head}"
        );
        for line in ["X-Kept: as written", "Set-Cookie: a=1", "set-cookie: b=2"] {
            assert!(head.contains(&format!("\r\n{line}\r\n")), "{line}: {head}");
        }
        assert_eq!(body, b"{}");
    }
    let (head, body) = raw_get(&lingo, "/api/x").await;
    assert_eq!(body, b"{}", "re-framed: the body was all there");
    let head = String::from_utf8(head).unwrap();
    let lines: Vec<&str> = head
        .split("\r\n")
        .skip(1)
        .filter(|l| !l.is_empty())
        .collect();
    let named = |name: &str| -> Vec<String> {
        let prefix = format!("{name}: ");
        let values = lines.iter().filter_map(|l| l.strip_prefix(prefix.as_str()));
        values.map(str::to_owned).collect()
    };
    let h2 = http2_get(&lingo, "/api/x").await;
    let both = |name: &str| -> Vec<String> {
        let from_h2: Vec<String> = h2
            .get_all(name)
            .iter()
            .map(|v| v.to_str().unwrap().to_ascii_lowercase())
            .collect();
        let from_h1 = named(name);
        assert_eq!(from_h1, from_h2, "{name}: HTTP/1.1 {head:?}, HTTP/2 {h2:?}");
        from_h1
    };
    assert_eq!(both("content-type"), ["application/json"]);
    assert_eq!(
        both("date"),
        ["mon, 02 jan 2006 15:04:05 gmt"],
        "(`raw_get` lowers case)"
    );
    assert_eq!(both("set-cookie"), ["a=1", "b=2"]);
    assert_eq!(both("x-kept"), ["as written"]);
    for gone in ["x-up-hop", "keep-alive", "transfer-encoding"] {
        assert_eq!(both(gone), Vec::<String>::new(), "{gone}");
    }
    // The framing is lingo's own: the upstream's length (of a chunked body) is not passed on.
    assert_eq!(named("content-length"), ["2"]);
    assert!(
        h2.get_all("content-length").iter().all(|v| v == "2"),
        "{h2:?}"
    );
    assert_eq!(named("connection"), ["close"], "the client's own `close`");
    let (id1, id2) = (named("x-request-id"), both_ids(&h2));
    for ids in [&id1, &id2] {
        assert_eq!(ids.len(), 1, "{ids:?}");
        assert_eq!(ids[0].len(), 32, "lingo's id: {ids:?}");
    }
}

fn both_ids(headers: &HeaderMap) -> Vec<String> {
    let ids = headers.get_all("x-request-id").iter();
    ids.map(|v| v.to_str().unwrap().to_owned()).collect()
}

/// A GET from an HTTP/2 client (prior knowledge, on lingo's plain listener): the response's
/// fields, its body read to the end.
async fn http2_get(lingo: &Lingo, path: &str) -> HeaderMap {
    let exchange = async {
        let tcp = TcpStream::connect(lingo.addr).await.unwrap();
        let io = hyper_util::rt::TokioIo::new(tcp);
        let (mut sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
            .await
            .unwrap();
        tokio::spawn(conn);
        let req = Request::get(lingo.url(path))
            .body(http_body_util::Empty::<Bytes>::new())
            .unwrap();
        let mut response = sender.send_request(req).await.unwrap();
        assert_eq!(response.version(), hyper::Version::HTTP_2);
        let headers = std::mem::take(response.fields_mut());
        assert_eq!(
            response.into_body().collect().await.unwrap().to_bytes(),
            "{}"
        );
        headers
    };
    tokio::time::timeout(PATIENCE, exchange)
        .await
        .expect("no hang")
}

// === response framings ===

/// The plainest response: its body by its length, byte for byte.
#[tokio::test]
async fn a_content_length_response_arrives_byte_exact() {
    let upstream =
        Upstream::start(|_| respond("HTTP/1.1 200 OK\r\ncontent-length: 13\r\n\r\nhello, world!"))
            .await;
    let lingo = through(&upstream.url).await;
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), "hello, world!");
}

/// Chunk extensions are legal and must be skipped, not taken for data or refused.
#[tokio::test]
async fn chunks_with_extensions_arrive_byte_exact() {
    let upstream = Upstream::start(|_| {
        respond(
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n\
             5;ext=1\r\nhello\r\n1;a=b;c=\"d\"\r\n \r\n6\r\nworld!\r\n0\r\n\r\n",
        )
    })
    .await;
    let lingo = through(&upstream.url).await;
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), "hello world!");
}

/// Trailers after the last chunk belong to the response: the body is whole, and they are read
/// off the connection so that it can carry the next request.
#[tokio::test]
async fn a_chunked_response_with_trailers_is_whole_and_its_connection_reused() {
    let upstream = Upstream::start(|_| {
        respond(
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ntrailer: x-checksum\r\n\r\n\
             4\r\nwith\r\n9\r\n trailers\r\n0\r\nx-checksum: abc\r\nx-more: 1\r\n\r\n",
        )
    })
    .await;
    let lingo = through(&upstream.url).await;
    for _ in 0..2 {
        assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), "with trailers");
    }
    assert_eq!(upstream.connections(), 1, "two responses, one connection");
}

/// A response with neither length nor chunks ends where the upstream closes: all of it must
/// reach the client, not be cut or refused.
#[tokio::test]
async fn a_close_delimited_response_arrives_whole() {
    let upstream = Upstream::start(|_| {
        close(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nuntil the end",
        )
    })
    .await;
    let lingo = through(&upstream.url).await;
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), "until the end");
}

/// Old servers still respond in HTTP/1.0 (close-delimited): it must be read as such.
#[tokio::test]
async fn an_http_1_0_response_arrives_whole() {
    let upstream =
        Upstream::start(|_| close("HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\n\r\nfrom 1.0"))
            .await;
    let lingo = through(&upstream.url).await;
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), "from 1.0");
}

// === interim responses ===

/// `100 Continue` and `103 Early Hints` come before the real response: the client must get the
/// final one and its body, not the interim one (nor a hang or a 502).
#[tokio::test]
async fn interim_responses_are_passed_over_for_the_final_one() {
    const CONTINUE: &str = "HTTP/1.1 100 Continue\r\n\r\n";
    const HINTS: &str = "HTTP/1.1 103 Early Hints\r\nlink: </x>; rel=preload\r\n\r\n";
    const FINAL: &str = "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nfinal";
    let upstream = Upstream::start(|line| {
        let interim = match line.split(' ').nth(1) {
            Some("/api/continue") => CONTINUE.to_owned(),
            Some("/api/hints") => HINTS.to_owned(),
            _ => format!("{CONTINUE}{HINTS}"),
        };
        respond(format!("{interim}{FINAL}"))
    })
    .await;
    let lingo = through(&upstream.url).await;
    for path in ["/api/continue", "/api/hints", "/api/both"] {
        let body = "{\"model\":\"m\"}";
        let outcome = fetch(request(Method::POST, &lingo.url(path), &[], body)).await;
        assert_eq!(outcome.status, StatusCode::OK, "{path}");
        assert_eq!(outcome.body.unwrap(), "final", "{path}");
    }
}

// === responses without a body, and reuse ===

/// A HEAD response's length describes a body that is never sent: reading it as one would hang
/// or eat the next response.
#[tokio::test]
async fn a_head_response_has_no_body_and_its_connection_is_reused() {
    let upstream = Upstream::start(|line| {
        if line.starts_with("HEAD ") {
            respond(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 10\r\n\r\n",
            )
        } else {
            respond(OK)
        }
    })
    .await;
    let lingo = through(&upstream.url).await;
    let head = fetch(request(Method::HEAD, &lingo.url("/api/x"), &[], "")).await;
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(head.headers["content-length"], "10");
    assert_eq!(head.body.unwrap(), "");
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), "{}");
    assert_eq!(upstream.connections(), 1, "two responses, one connection");
}

/// 204 and 304 never have a body: their connection is ready for the next request at once.
#[tokio::test]
async fn no_content_and_not_modified_responses_leave_their_connection_reusable() {
    let upstream = Upstream::start(|line| match line.split(' ').nth(1) {
        Some("/api/204") => respond("HTTP/1.1 204 No Content\r\nx-kind: none\r\n\r\n"),
        Some("/api/304") => respond("HTTP/1.1 304 Not Modified\r\netag: \"v1\"\r\n\r\n"),
        _ => respond(OK),
    })
    .await;
    let lingo = through(&upstream.url).await;
    let none = fetch_get(&lingo, "/api/204").await;
    assert_eq!(none.status, StatusCode::NO_CONTENT);
    assert_eq!(none.body.unwrap(), "");
    let same = fetch_get(&lingo, "/api/304").await;
    assert_eq!(same.status, StatusCode::NOT_MODIFIED);
    assert_eq!(same.headers["etag"], "\"v1\"");
    assert_eq!(same.body.unwrap(), "");
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), "{}");
    assert_eq!(upstream.connections(), 1, "three responses, one connection");
}

/// A response without a body (to a `HEAD`, a 304) says the length its body would have: a
/// length the upstream wrote as a list of equal values reaches the client as one number,
/// and one that is no number, or values that disagree, not at all (a client that frames
/// by it must not be handed the upstream's words as they came).
#[tokio::test]
async fn a_bodyless_responses_length_reaches_the_client_as_one_number_or_not_at_all() {
    let upstream = Upstream::start(|line| {
        let length = match line.split(' ').nth(1) {
            Some("/api/list") => "content-length: 7, 7\r\n",
            Some("/api/twice") => "content-length: 7\r\ncontent-length: 7\r\n",
            Some("/api/disagree") => "content-length: 7\r\ncontent-length: 8\r\n",
            Some("/api/word") => "content-length: seven\r\n",
            _ => "content-length: 7\r\n",
        };
        let status = match line.starts_with("HEAD ") {
            true => "200 OK",
            false => "304 Not Modified",
        };
        respond(format!(
            "HTTP/1.1 {status}\r\nx-kind: bodyless\r\n{length}\r\n"
        ))
    })
    .await;
    let lingo = through(&upstream.url).await;
    for method in ["HEAD", "GET"] {
        for (path, want) in [
            ("/api/one", Some("7")),
            ("/api/list", Some("7")),
            ("/api/twice", Some("7")),
            ("/api/disagree", None),
            ("/api/word", None),
        ] {
            let ask =
                format!("{method} {path} HTTP/1.1\r\nhost: lingo\r\nconnection: close\r\n\r\n");
            let (head, body) = by_hand(&lingo, &ask).await;
            let head = String::from_utf8(head).unwrap().to_ascii_lowercase();
            assert!(
                head.contains("x-kind: bodyless\r\n"),
                "{method} {path}: {head}"
            );
            let lengths: Vec<&str> = head
                .split("\r\n")
                .filter_map(|l| l.strip_prefix("content-length: "))
                .collect();
            assert_eq!(lengths, Vec::from_iter(want), "{method} {path}: {head}");
            assert!(body.is_empty(), "{method} {path}");
        }
    }
}

/// An upstream that says `Connection: close` will not read another request on that
/// connection (this one even keeps it open): the next request must go on a new one.
#[tokio::test]
async fn a_response_saying_close_is_the_last_on_its_connection() {
    let upstream = Upstream::start(|_| {
        respond("HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{}")
    })
    .await;
    let lingo = through(&upstream.url).await;
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), "{}");
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), "{}");
    assert_eq!(upstream.connections(), 2);
}

/// A response's `Connection` value with a byte outside visible ASCII is no list of tokens:
/// an HTTP/1.0 `keep-alive` in one is not read (hyper's client reads none there either), and
/// an HTTP/1.1 response with one is the last on its connection (a `close` may be in it). From
/// plain values, the connection is reused.
#[tokio::test]
async fn an_unreadable_connection_value_ends_the_upstream_connection() {
    let upstream = Upstream::start(|line| match line.split(' ').nth(1) {
        Some("/api/opaque10") => respond(
            b"HTTP/1.0 200 OK\r\nconnection: \xff, keep-alive\r\ncontent-length: 2\r\n\r\n{}",
        ),
        Some("/api/opaque11") => {
            respond(b"HTTP/1.1 200 OK\r\nconnection: \xffclose\r\ncontent-length: 2\r\n\r\n{}")
        }
        _ => respond(b"HTTP/1.0 200 OK\r\nconnection: keep-alive\r\ncontent-length: 2\r\n\r\n{}"),
    })
    .await;
    let lingo = through(&upstream.url).await;
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), "{}");
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), "{}");
    assert_eq!(upstream.connections(), 1, "a plain keep-alive keeps it");
    assert_eq!(fetch_get(&lingo, "/api/opaque10").await.ok(), "{}");
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), "{}");
    assert_eq!(upstream.connections(), 2, "a new one after HTTP/1.0");
    assert_eq!(fetch_get(&lingo, "/api/opaque11").await.ok(), "{}");
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), "{}");
    assert_eq!(upstream.connections(), 3, "a new one after HTTP/1.1");
}

/// An upstream's keep-alive timer closes idle connections without warning: a request after
/// that must not fail on the dead connection (nothing was sent on it, so it may go again).
#[tokio::test]
async fn a_connection_the_upstream_idle_closed_is_not_handed_out() {
    let upstream = Upstream::start(|_| Reply::IdleClose(OK.as_bytes().to_vec())).await;
    let lingo = through(&upstream.url).await;
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), "{}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), "{}");
    assert_eq!(upstream.connections(), 2);
}

// === malformed responses ===

/// Garbage where a status line belongs is no response: 502, even with the connection left open.
#[tokio::test]
async fn garbage_instead_of_a_status_line_is_502() {
    let upstream = Upstream::start(|_| respond("SSH-2.0-OpenSSH_9.6 hello there\r\n\r\n")).await;
    let lingo = through(&upstream.url).await;
    assert_eq!(
        fetch_get(&lingo, "/api/x").await.status,
        StatusCode::BAD_GATEWAY
    );
}

/// A head cut off before its blank line is no response: 502.
#[tokio::test]
async fn a_head_cut_short_is_502() {
    let upstream =
        Upstream::start(|_| close("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n")).await;
    let lingo = through(&upstream.url).await;
    assert_eq!(
        fetch_get(&lingo, "/api/x").await.status,
        StatusCode::BAD_GATEWAY
    );
}

/// A body shorter than its length is a failed response: the client must not be handed a
/// complete-looking one.
#[tokio::test]
async fn a_body_cut_short_of_its_length_does_not_look_complete() {
    let upstream =
        Upstream::start(|_| close("HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly part")).await;
    let lingo = through(&upstream.url).await;
    refused(fetch_get(&lingo, "/api/x").await);
}

/// Two different lengths make the framing ambiguous (a smuggling vector): refused with 502.
#[tokio::test]
async fn two_different_lengths_are_502() {
    let upstream = Upstream::start(|_| {
        respond("HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\nhello!")
    })
    .await;
    let lingo = through(&upstream.url).await;
    assert_eq!(
        fetch_get(&lingo, "/api/x").await.status,
        StatusCode::BAD_GATEWAY
    );
}

/// A `Transfer-Encoding` with a byte outside visible ASCII is no list of codings (a coding is
/// a token): read as chunked, or as not (hyper's reading: close-delimited), its body would
/// end where another reader's does not. Faulty framing: 502, and the connection, which the
/// upstream keeps open, is not given another request.
#[tokio::test]
async fn a_transfer_encoding_that_is_no_list_of_codings_is_502_and_its_connection_dropped() {
    let upstream = Upstream::start(|line| match line.split(' ').nth(1) {
        Some("/api/opaque") => respond(
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: \xff, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        ),
        _ => respond(OK),
    })
    .await;
    let lingo = through(&upstream.url).await;
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), "{}");
    assert_eq!(
        fetch_get(&lingo, "/api/opaque").await.status,
        StatusCode::BAD_GATEWAY
    );
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), "{}");
    assert_eq!(
        upstream.connections(),
        2,
        "a new one after the opaque coding"
    );
}

/// A length no body can have (2^64-2 and above, which hyper's client refuses too) is no
/// length: 502, as for one that is no number.
#[tokio::test]
async fn a_length_no_body_can_have_is_502() {
    let upstream = Upstream::start(|_| {
        respond("HTTP/1.1 200 OK\r\ncontent-length: 18446744073709551614\r\n\r\n{}")
    })
    .await;
    let lingo = through(&upstream.url).await;
    assert_eq!(
        fetch_get(&lingo, "/api/x").await.status,
        StatusCode::BAD_GATEWAY
    );
}

/// A chunk size that is not hex breaks the stream mid-body: the client's read must fail
/// rather than the response end as if whole (the connection is left open: no hang either).
#[tokio::test]
async fn an_invalid_chunk_size_fails_the_clients_read() {
    let upstream = Upstream::start(|_| {
        respond("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\nmore\r\n")
    })
    .await;
    let lingo = through(&upstream.url).await;
    let outcome = fetch_get(&lingo, "/api/x").await;
    assert_eq!(outcome.status, StatusCode::OK);
    assert!(outcome.body.is_err(), "{:?}", outcome.body);
}

/// A connection is never given another request after a response that failed or was framed
/// two ways, even one the upstream keeps open: not after a chunk size that is no number, nor
/// two lengths that disagree (both 502 or a failed body), nor a chunked response that also
/// says a length (read as chunked, RFC 9112 §6.3, and whole, but its connection closed).
#[tokio::test]
async fn a_connection_whose_response_failed_or_was_framed_two_ways_is_not_used_again() {
    let upstream = Upstream::start(|line| match line.split(' ').nth(1) {
        Some("/api/bad-chunk") => {
            respond("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nhi\r\nzz\r\n")
        }
        Some("/api/two-lengths") => {
            respond("HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nhi!")
        }
        Some("/api/both") => respond(
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-length: 3\r\n\r\n\
             5\r\nhello\r\n0\r\n\r\n",
        ),
        _ => respond(OK),
    })
    .await;
    let lingo = through(&upstream.url).await;
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), "{}");
    refused(fetch_get(&lingo, "/api/bad-chunk").await);
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), "{}");
    assert_eq!(upstream.connections(), 2, "a new one after the bad chunk");
    refused(fetch_get(&lingo, "/api/two-lengths").await);
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), "{}");
    assert_eq!(upstream.connections(), 3, "a new one after the two lengths");
    assert_eq!(fetch_get(&lingo, "/api/both").await.ok(), "hello");
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), "{}");
    assert_eq!(
        upstream.connections(),
        4,
        "a new one after the doubly framed response"
    );
}

// === an early response ===

const TOO_LARGE: &[u8] =
    b"HTTP/1.1 413 Payload Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";

/// An upstream may refuse a big upload from its head alone. One that then reads what still
/// comes (a lingering close) must have its 413 relayed: lingo watches for a response while it
/// uploads, rather than only after the upload's end.
#[tokio::test]
async fn an_early_response_to_a_big_upload_is_relayed() {
    let upstream = Upstream::start(|_| Reply::EarlyLinger(TOO_LARGE.to_vec())).await;
    let lingo = through(&upstream.url).await;
    let big = "a".repeat(1024 * 1024);
    let outcome = fetch(request(Method::POST, &lingo.url("/api/x"), &[], &big)).await;
    assert_eq!(outcome.status, StatusCode::PAYLOAD_TOO_LARGE);
}

/// One that closes at once, the upload unread, has its socket reset by its own kernel, and
/// the reset may overtake the 413 (the kernel then drops the response lingo has not read yet):
/// the client gets the 413 or a 502, never a hang.
#[tokio::test]
async fn an_early_response_then_a_reset_is_413_or_502() {
    let upstream = Upstream::start(|_| Reply::Early(TOO_LARGE.to_vec())).await;
    let lingo = through(&upstream.url).await;
    let big = "a".repeat(1024 * 1024);
    let outcome = fetch(request(Method::POST, &lingo.url("/api/x"), &[], &big)).await;
    let status = outcome.status;
    assert!(
        status == StatusCode::PAYLOAD_TOO_LARGE || status == StatusCode::BAD_GATEWAY,
        "{status}"
    );
}

// === large responses ===

/// A 2 MiB response by its length spans many reads and writes: every byte must arrive in order.
#[tokio::test]
async fn a_large_content_length_response_arrives_byte_exact() {
    let body = pattern(2 * 1024 * 1024);
    let mut raw = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len()).into_bytes();
    raw.extend(&body);
    let upstream = Upstream::start(move |_| respond(&raw)).await;
    let lingo = through(&upstream.url).await;
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), body);
}

/// 2 MiB in 16 KiB chunks: 128 chunk boundaries, none of which may lose or repeat a byte.
#[tokio::test]
async fn a_large_chunked_response_arrives_byte_exact() {
    let body = pattern(2 * 1024 * 1024);
    let raw = chunked(&body, 16 * 1024);
    let upstream = Upstream::start(move |_| respond(&raw)).await;
    let lingo = through(&upstream.url).await;
    assert_eq!(fetch_get(&lingo, "/api/x").await.ok(), body);
}

// === header values and counts ===

/// obs-text (bytes 0x80 to 0xFF) is legal in a field value and real servers send it (Latin-1
/// file names): it must pass on unchanged, not be refused or mangled.
#[tokio::test]
async fn obs_text_in_a_header_value_passes_on() {
    let upstream = Upstream::start(|_| {
        respond(b"HTTP/1.1 200 OK\r\nx-name: caf\xe9 \xff\xfe\r\ncontent-length: 2\r\n\r\n{}")
    })
    .await;
    let lingo = through(&upstream.url).await;
    let (head, body) = raw_get(&lingo, "/api/x").await;
    assert!(head.starts_with(b"http/1.1 200 "));
    let field: &[u8] = b"\r\nx-name: caf\xe9 \xff\xfe\r\n";
    assert!(
        head.windows(field.len()).any(|w| w == field),
        "{}",
        String::from_utf8_lossy(&head)
    );
    assert_eq!(body, b"{}");
}

/// A response with 100 header fields (99 of its own and its length) passes on whole.
#[tokio::test]
async fn a_response_with_a_hundred_header_fields_passes_on() {
    let upstream = Upstream::start(|_| {
        let fields: String = (0..99).map(|i| format!("x-h-{i}: v{i}\r\n")).collect();
        respond(format!(
            "HTTP/1.1 200 OK\r\n{fields}content-length: 2\r\n\r\n{{}}"
        ))
    })
    .await;
    let lingo = through(&upstream.url).await;
    let (head, body) = raw_get(&lingo, "/api/x").await;
    assert!(head.starts_with(b"http/1.1 200 "));
    let head = String::from_utf8(head).unwrap();
    for i in 0..99 {
        assert!(
            head.contains(&format!("\r\nx-h-{i}: v{i}\r\n")),
            "x-h-{i}: {head}"
        );
    }
    assert_eq!(body, b"{}");
}
