//! The same bytes, from a client, served by lingo's HTTP/1.1 server connection
//! (`lingo::server::h1_connection`) and by hyper's (`hyper::server::conn::http1`), each over
//! an in-memory socket with the same recording service: what each made of them.
//!
//! The client writes the bytes (in pieces, the run settled after each), the run settles, and
//! whether the server has closed is noted; then the client closes its side and the run
//! settles again. The service notes each request's head as it comes and reads its body to
//! the end, then responds with `200` with no body (`405` to a `CONNECT`: a `2xx` would make hyper's
//! connection a tunnel, and lingo tunnels no `CONNECT`). A response the service did not give
//! is the connection's own refusal of what came next.

use std::cell::{Cell, RefCell};
use std::convert::Infallible;
use std::rc::Rc;

use bytes::Bytes;
use http_body_util::Empty;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

use super::{BodyEnd, Counted, Fields, Progress, comparable, of_map, read_body, settle};

/// The head limits both servers are given: hyper's default field count, and a head size
/// no input reaches (so that a head is refused as too large for its field count only).
pub const MAX_FIELDS: usize = 100;
pub const MAX_HEAD: usize = 256 * 1024;

/// A request as the service saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub method: String,
    pub target: String,
    pub version: String,
    pub fields: Fields,
    pub body: BodyEnd,
}

/// What a server made of the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    /// The requests the service was called with, in order.
    pub requests: Vec<Seen>,
    /// The status of the connection's own response (a head it refused), if it gave one.
    pub refusal: Option<u16>,
    /// Whether the server had closed the connection before the client closed its side.
    pub closed_first: bool,
    /// Whether the server had closed once the client had closed its side.
    pub closed_at_end: bool,
}

type Log = Rc<RefCell<Vec<Seen>>>;

/// The service's response to a request: no body, `405` to a `CONNECT`.
fn status_for(method: &Method) -> StatusCode {
    match *method {
        Method::CONNECT => StatusCode::METHOD_NOT_ALLOWED,
        _ => StatusCode::OK,
    }
}

/// Notes a request's head; its body is noted as [`BodyEnd::Unfinished`] until read.
fn note(log: &Log, parts: &hyper::http::request::Parts, fields: Fields) -> usize {
    let mut log = log.borrow_mut();
    log.push(Seen {
        method: parts.method.to_string(),
        target: parts.uri.to_string(),
        version: format!("{:?}", parts.version),
        fields,
        body: BodyEnd::Unfinished,
    });
    log.len() - 1
}

/// `bytes` served by lingo's HTTP/1.1 server, written in `pieces` parts.
pub async fn lingo(bytes: &[u8], pieces: usize) -> Served {
    let progress = Progress::default();
    let log = Log::default();
    let (client, server) = tokio::io::duplex(1 << 20);
    let service = {
        let (log, progress) = (log.clone(), progress.clone());
        move |req: lingo::http::message::Request| {
            let (log, progress) = (log.clone(), progress.clone());
            async move {
                let fields = comparable(req.headers().iter());
                let (parts, body) = req.into_hyper().into_parts();
                let at = note(&log, &parts, fields);
                progress.bump();
                let end = read_body(body, &progress).await;
                log.borrow_mut()[at].body = end;
                let mut response =
                    lingo::http::message::Response::new(lingo::http::body::Body::empty());
                *response.status_mut() = status_for(&parts.method);
                response
            }
        }
    };
    let limits = lingo::server::H1Limits {
        max_fields: MAX_FIELDS,
        max_head: MAX_HEAD,
        // Longer than any run may take: a body waited for ends with the client's close, as
        // with hyper, which has no such limit.
        body_timeout: super::PATIENCE * 360,
    };
    let connection = lingo::server::h1_connection(Counted::new(server, &progress), service, limits);
    let serving = async {
        let _ = connection.await;
    };
    run(serving, client, bytes, pieces, &progress, log).await
}

/// `bytes` served by hyper's HTTP/1.1 server, written in `pieces` parts.
pub async fn hyper(bytes: &[u8], pieces: usize) -> Served {
    let progress = Progress::default();
    let log = Log::default();
    let (client, server) = tokio::io::duplex(1 << 20);
    let service = {
        let (log, progress) = (log.clone(), progress.clone());
        hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
            let (log, progress) = (log.clone(), progress.clone());
            async move {
                let (parts, body) = req.into_parts();
                let at = note(&log, &parts, of_map(&parts.headers));
                progress.bump();
                let end = read_body(body, &progress).await;
                log.borrow_mut()[at].body = end;
                let mut response = Response::new(Empty::<Bytes>::new());
                *response.status_mut() = status_for(&parts.method);
                Ok::<_, Infallible>(response)
            }
        })
    };
    let io = TokioIo::new(Counted::new(server, &progress));
    let connection = hyper::server::conn::http1::Builder::new()
        .max_headers(MAX_FIELDS)
        .max_buf_size(MAX_HEAD)
        .serve_connection(io, service);
    let serving = async {
        let _ = connection.await;
    };
    run(serving, client, bytes, pieces, &progress, log).await
}

/// The client's side of a run against `serving`: writes, settles, closes, settles.
async fn run(
    serving: impl Future<Output = ()>,
    client: DuplexStream,
    bytes: &[u8],
    pieces: usize,
    progress: &Progress,
    log: Log,
) -> Served {
    let closed = Cell::new(false);
    let out = RefCell::new(Vec::new());
    let (mut rd, mut wr) = tokio::io::split(client);
    let serving = async {
        serving.await;
        closed.set(true);
        progress.bump();
    };
    let reading = async {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = rd.read(&mut buf).await {
            out.borrow_mut().extend_from_slice(&buf[..n]);
            progress.bump();
        }
    };
    let writing = async {
        for piece in super::pieces(bytes, pieces) {
            let _ = wr.write_all(piece).await;
            settle(progress).await;
        }
        let closed_first = closed.get();
        let _ = wr.shutdown().await;
        settle(progress).await;
        (closed_first, closed.get())
    };
    let (closed_first, closed_at_end) = tokio::select! {
        biased;
        ends = writing => ends,
        _ = async { tokio::join!(serving, reading); std::future::pending::<()>().await } => {
            unreachable!()
        }
    };
    let requests = log.borrow().clone();
    Served {
        requests,
        refusal: refusal(&out.borrow()),
        closed_first,
        closed_at_end,
    }
}

/// The first final status in `out` (the responses the server wrote) that the service does not
/// give: the connection's own response to a head it refused.
fn refusal(out: &[u8]) -> Option<u16> {
    let mut at = 0;
    loop {
        let mut fields = [httparse::EMPTY_HEADER; 64];
        let mut response = httparse::Response::new(&mut fields);
        let Ok(httparse::Status::Complete(len)) = response.parse(&out[at..]) else {
            return None;
        };
        at += len;
        match response.code? {
            100..=199 | 200 | 405 => {}
            code => return Some(code),
        }
    }
}
