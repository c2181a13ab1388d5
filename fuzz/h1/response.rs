//! The same bytes, from an upstream, as the response to a fixed `GET` (or `HEAD`) request read
//! by lingo's HTTP/1.1 client (`lingo::upstream::H1Conn`, over loopback TCP: it speaks
//! only TCP) and by hyper's (`hyper::client::conn::http1`, in memory): what each made of them.
//!
//! The upstream reads the request head, writes the bytes (in pieces, the run settled after
//! each), and the run settles: whether the connection would carry another request is noted
//! then (lingo: it went home and nothing more came on it, as its pool checks before reuse;
//! hyper: its sender is ready). Then the upstream closes its side (the end of a body framed
//! by the close) and the run settles again.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Empty;
use hyper::header::HeaderValue;
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use lingo::http::body::Body;
use lingo::upstream::headers::Forwarding;
use lingo::upstream::{H1Conn as Conn, H1Home as Home, H1Outgoing as Outgoing};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

use super::{BodyEnd, Counted, Fields, PATIENCE, Progress, comparable, of_map, read_body, settle};

/// The request the response is to.
#[derive(Debug, Clone, Copy)]
pub struct RequestKind {
    /// `HEAD` (else `GET`): the response has no body, whatever its fields say.
    pub head: bool,
    /// lingo's client keeps the response's fields as read (`RawHeaders`, a pass-through's way), else
    /// in a map.
    pub raw: bool,
}

/// A response's head and body as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    pub status: u16,
    pub version: String,
    pub fields: Fields,
    pub body: BodyEnd,
}

/// What a client made of the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Responded {
    /// The response, or `None` when the client refused its head (or got none).
    pub response: Option<Read>,
    /// Whether the connection would carry another request after it.
    pub reused: bool,
}

thread_local! {
    /// The upstream's listener, made once on this thread's runtime.
    static LISTENER: RefCell<Option<Rc<TcpListener>>> = const { RefCell::new(None) };
}

async fn listener() -> Rc<TcpListener> {
    if let Some(listener) = LISTENER.with_borrow(Option::clone) {
        return listener;
    }
    let listener = Rc::new(
        TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port"),
    );
    LISTENER.set(Some(listener.clone()));
    listener
}

/// Where lingo's client puts a connection that can carry another request.
#[derive(Clone, Default)]
struct Shelf(Arc<Mutex<Option<Conn>>>);

impl Home for Shelf {
    fn put_back(self, conn: Conn) {
        *self.0.lock().unwrap() = Some(conn);
    }
}

/// The upstream's side: reads the request head, writes `bytes` in `pieces`, settles, asks
/// `reused`, closes its side, settles.
async fn upstream<I: AsyncRead + AsyncWrite + Unpin>(
    io: &mut I,
    bytes: &[u8],
    pieces: usize,
    progress: &Progress,
    reused: impl FnOnce() -> bool,
) -> bool {
    let mut head = Vec::new();
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let mut buf = [0u8; 1024];
        match io.read(&mut buf).await {
            Ok(n @ 1..) => head.extend_from_slice(&buf[..n]),
            _ => panic!("the client closed before its request head"),
        }
    }
    for piece in super::pieces(bytes, pieces) {
        let _ = io.write_all(piece).await;
        settle(progress).await;
    }
    let reused = reused();
    let _ = io.shutdown().await;
    settle(progress).await;
    reused
}

/// Reads a response's head and body into `seen`, as they come.
fn read_into(seen: &RefCell<Option<Read>>, status: u16, version: String, fields: Fields) {
    *seen.borrow_mut() = Some(Read {
        status,
        version,
        fields,
        body: BodyEnd::Unfinished,
    });
}

/// `bytes` read by lingo's HTTP/1.1 client as the response to `request_kind`.
pub async fn lingo(bytes: &[u8], pieces: usize, request_kind: RequestKind) -> Responded {
    let listener = listener().await;
    let address = listener.local_addr().expect("bound").to_string();
    let (progress, shelf, seen) = (Progress::default(), Shelf::default(), RefCell::new(None));
    let (host, ip, id) = (
        HeaderValue::from_static("upstream"),
        HeaderValue::from_static("127.0.0.1"),
        HeaderValue::from_static("fuzz"),
    );
    let rules = Forwarding {
        host: &host,
        client_ip: &ip,
        proto: "http",
        client_host: None,
        request_id: &id,
        auth: None,
        upgrade: false,
        identity: false,
        json: false,
        raw_response: true,
        client: None,
    };
    let client = async {
        let conn = Conn::open(&address, PATIENCE)
            .await
            .expect("a loopback connection");
        let method = if request_kind.head {
            Method::HEAD
        } else {
            Method::GET
        };
        let req = Request::builder()
            .method(method)
            .uri("/fuzz")
            .body(Body::empty());
        let req = req.expect("a request");
        let outgoing = Outgoing::new(req.into(), "upstream", request_kind.raw.then_some(&rules));
        let deadline = tokio::time::Instant::now() + 2 * PATIENCE;
        let sent = conn
            .send(outgoing, shelf.clone(), deadline, 2 * PATIENCE)
            .await;
        progress.bump();
        let Ok(response) = sent else {
            return;
        };
        let fields = comparable(response.headers().iter());
        let version = format!("{:?}", response.version());
        read_into(&seen, response.status().as_u16(), version, fields);
        let end = read_body(response.into_body(), &progress).await;
        seen.borrow_mut().as_mut().expect("noted").body = end;
    };
    let serving = async {
        let (mut io, _) = listener.accept().await.expect("the client's connection");
        let fresh = || (shelf.0.lock().unwrap().as_ref()).is_some_and(Conn::is_fresh);
        let reused = upstream(&mut io, bytes, pieces, &progress, fresh).await;
        // Reset at once, not left in TIME_WAIT: runs come thousands a second. (A zero
        // linger does not block the thread, which is what the deprecation is about.)
        #[allow(deprecated)]
        let _ = io.set_linger(Some(Duration::ZERO));
        reused
    };
    let reused = until_first(serving, client).await;
    shelf.0.lock().unwrap().take();
    let response = seen.borrow().clone();
    Responded { response, reused }
}

/// `bytes` read by hyper's HTTP/1.1 client as the response to `request_kind` (`raw` means nothing
/// to it).
pub async fn hyper(bytes: &[u8], pieces: usize, request_kind: RequestKind) -> Responded {
    let (progress, seen) = (Progress::default(), RefCell::new(None));
    let (client_io, mut upstream_io) = tokio::io::duplex(1 << 20);
    let io = TokioIo::new(Counted::new(client_io, &progress));
    let (mut sender, connection) = hyper::client::conn::http1::Builder::new()
        .handshake::<_, Empty<Bytes>>(io)
        .await
        .expect("an HTTP/1.1 handshake needs no bytes");
    let method = if request_kind.head {
        Method::HEAD
    } else {
        Method::GET
    };
    let req = Request::builder().method(method).uri("/fuzz");
    let req = req
        .header("host", "upstream")
        .body(Empty::new())
        .expect("a request");
    let sending = sender.send_request(req);
    let client = async {
        let sent = sending.await;
        progress.bump();
        let Ok(response) = sent else {
            return;
        };
        let fields = of_map(response.headers());
        let version = format!("{:?}", response.version());
        read_into(&seen, response.status().as_u16(), version, fields);
        let end = read_body(response.into_body(), &progress).await;
        seen.borrow_mut().as_mut().expect("noted").body = end;
    };
    let connection = async {
        let _ = connection.await;
        progress.bump();
    };
    let ready = || sender.is_ready() && !sender.is_closed();
    let serving = upstream(&mut upstream_io, bytes, pieces, &progress, ready);
    let reused = until_first(serving, async {
        tokio::join!(client, connection);
    })
    .await;
    let response = seen.borrow().clone();
    Responded { response, reused }
}

/// `first`'s output, `rest` polled beside it until then (and dropped after).
async fn until_first<T>(first: impl Future<Output = T>, rest: impl Future<Output = ()>) -> T {
    tokio::select! {
        biased;
        out = first => out,
        _ = async { rest.await; std::future::pending::<()>().await } => unreachable!(),
    }
}
