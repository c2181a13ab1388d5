//! lingo's own HTTP/1.1 server connection.
//!
//! One task reads a head, calls the service, and writes the response; the request's body
//! reads the socket itself as it is polled ([`incoming`]); and a connection between requests
//! or between two tokens of a response holds no buffer at all. (hyper's server keeps two
//! fixed buffers for every connection's whole life, and hands each request body over a
//! channel from the connection's task.)
//!
//! - [`head`]: the request head read (its raw header fields when they fit: see
//!   `http::message`) and the response head written (pure);
//! - [`conn`]: the socket and the bytes read, shared with the body being read;
//! - [`incoming`]: the request's body;
//! - [`response`]: writing the response, gathered into as few writes as it allows.
//!
//! The request's framing is read as hyper reads it (its parser, its rules); a head that cannot
//! be read gets a 400 (431 when too large) and the connection closed. An upgrade (a
//! WebSocket) gets the socket once its 101 is written (`crate::http::upgrade`).

mod conn;
mod head;
mod incoming;
mod response;

use std::future::poll_fn;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};

use bytes::BytesMut;

use hyper::Method;
use pin_project_lite::pin_project;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::http::body::{Body, BoxError};
use crate::http::h1::decode::Decoder;
use crate::http::message::{HeaderView, Request, Response};
use crate::http::upgrade::{self, Upgraded};
use conn::{ConnState, Shared, lock};
use head::{BadHead, Head, Parsed};
use incoming::IncomingBody;
use response::RequestContext;

/// The head limits: at most this many fields and bytes (hyper's own limits were these);
/// and the longest silence while a request's body is read (`limits.body_timeout`).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_fields: usize,
    pub max_head: usize,
    pub body_timeout: std::time::Duration,
}

pin_project! {
    /// A connection served to its end; [`Connection::close_gracefully`] asks it to close once
    /// the response in progress is written (at once, between requests).
    pub struct Connection<F> {
        closing: Arc<AtomicBool>,
        #[pin]
        serving: F,
    }
}

impl<F: Future<Output = Result<(), BoxError>>> Future for Connection<F> {
    type Output = Result<(), BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().serving.poll(cx)
    }
}

impl<F> Connection<F> {
    /// The connection is polled again right after (see `server::connection::drive`), and
    /// a connection waiting for a head looks at the flag each time it is polled.
    pub fn close_gracefully(self: Pin<&mut Self>) {
        self.closing.store(true, Ordering::Relaxed);
    }
}

/// Serves `io` with `service` until the client closes, a request or its response fails, or a
/// graceful close is asked for.
pub fn connection<I, S, F>(
    io: I,
    service: S,
    limits: Limits,
) -> Connection<impl Future<Output = Result<(), BoxError>>>
where
    I: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    S: FnMut(Request) -> F,
    F: Future<Output = Response>,
{
    let closing = Arc::new(AtomicBool::new(false));
    let conn: Shared<I> = Arc::new(std::sync::Mutex::new(ConnState::new(
        io,
        limits.body_timeout,
    )));
    let serving = serve(conn, service, limits, Arc::clone(&closing));
    Connection { closing, serving }
}

async fn serve<I, S, F>(
    conn: Shared<I>,
    mut service: S,
    limits: Limits,
    closing: Arc<AtomicBool>,
) -> Result<(), BoxError>
where
    I: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    S: FnMut(Request) -> F,
    F: Future<Output = Response>,
{
    // Each step consumes what the one before made, so that nothing of a request (its head,
    // its response's fields) stays in the connection's state while its response streams.
    loop {
        // Polled here, not in a function of its own: each `async` layer a head came out of,
        // and each `?`, would copy it once more.
        let head = match poll_fn(|cx| next_head(&conn, limits, &closing, cx)).await {
            Ok(Some(head)) => head,
            Ok(None) => return Ok(()),
            Err(failed) => return Err(fail(&conn, failed).await),
        };
        let (response, context, handover) = begin(&conn, head, &mut service, &closing);
        let Some(response) = watching(&conn, response).await else {
            return Ok(()); // the client left before its response
        };
        let prepared = response::prepare(&conn, response, context);
        let (keep_alive, switched) = (prepared.keep_alive, prepared.switched);
        response::send(&conn, prepared).await?;
        if switched {
            // The connection is the new protocol's now; a 101 no upgrade asked for ends it.
            match handover {
                Some(handover) => hand_over(&conn, handover),
                None => shut(&conn).await,
            }
            return Ok(());
        }
        if !keep_alive || !lock(&conn).drained() {
            shut(&conn).await;
            return Ok(());
        }
    }
}

/// Why no request came, as the connection's error: a head that cannot be read gets a response
/// first, and the connection ends.
async fn fail<I>(conn: &Shared<I>, failed: Failed) -> BoxError
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    match failed {
        Failed::Refused(refusal) => {
            refuse(conn, &refusal).await;
            refusal.into()
        }
        Failed::Io(err) => err.into(),
    }
}

/// Starts a request: what its response will be, what it asked of it, and where an upgrade's
/// connection goes.
fn begin<I, S, F>(
    conn: &Shared<I>,
    head: Head,
    service: &mut S,
    closing: &AtomicBool,
) -> (F, RequestContext, Option<upgrade::Handover>)
where
    I: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    S: FnMut(Request) -> F,
{
    let context = RequestContext {
        head_request: head.request.method() == Method::HEAD,
        version: head.request.version(),
        keep_alive: head.keep_alive && !closing.load(Ordering::Relaxed),
    };
    let (request, handover) = request(conn, head);
    (service(request), context, handover)
}

/// Why no request came.
enum Failed {
    Refused(BadHead),
    Io(std::io::Error),
}

/// The next request head: `None` when the client closed between requests, or a graceful
/// close was asked for while no request had begun.
fn next_head<I>(
    conn: &Shared<I>,
    limits: Limits,
    closing: &AtomicBool,
    cx: &mut Context<'_>,
) -> Poll<Result<Option<Head>, Failed>>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    let mut conn = lock(conn);
    loop {
        if !conn.buf.is_empty() {
            match head::parse(&mut conn.buf, limits.max_fields, limits.max_head) {
                Ok(Parsed::Head(head)) => {
                    conn.release_room();
                    return Poll::Ready(Ok(Some(head)));
                }
                Ok(Parsed::Partial) => {}
                Err(refusal) => return Poll::Ready(Err(Failed::Refused(refusal))),
            }
        } else if closing.load(Ordering::Relaxed) {
            return Poll::Ready(Ok(None));
        }
        match ready!(conn.poll_fill(cx)) {
            Ok(0) => return Poll::Ready(Ok(None)),
            Ok(_) => {}
            Err(err) => return Poll::Ready(Err(Failed::Io(err))),
        }
    }
}

/// The request a head begins: its body reads from the connection, and an upgrade request
/// carries where its upgraded connection will come from.
fn request<I>(conn: &Shared<I>, head: Head) -> (Request, Option<upgrade::Handover>)
where
    I: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let number = {
        let mut w = lock(conn);
        w.request += 1;
        w.body = head.body;
        w.continue_written = head.expects_continue.then_some(0);
        (w.broken, w.body_due) = (false, None);
        w.request
    };
    let body = match head.body {
        Decoder::Done => Body::empty(),
        _ => Body::boxed(IncomingBody::new(Arc::clone(conn), number)),
    };
    let mut request = Request::from_parts(head.request, body);
    let handover = head.upgrade.then(|| {
        let (handover, on) = upgrade::pair();
        request.extensions_mut().insert(on);
        handover
    });
    (request, handover)
}

/// `response` to its end, or `None` when the client closes first (its request body read).
async fn watching<I, F: Future>(conn: &Shared<I>, response: F) -> Option<F::Output>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    let mut response = pin!(response);
    poll_fn(|cx| {
        if let Poll::Ready(out) = response.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        match lock(conn).poll_client_gone(cx) {
            Poll::Ready(true) => Poll::Ready(None),
            _ => Poll::Pending,
        }
    })
    .await
}

/// Gives the socket, and what was read past the head, to the upgrade.
fn hand_over<I>(conn: &Shared<I>, handover: upgrade::Handover)
where
    I: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let mut conn = lock(conn);
    if let Some(io) = conn.io.take() {
        let read = std::mem::take(&mut conn.buf).freeze();
        let _ = handover.send(Upgraded::new(Box::new(io), read));
    }
}

/// A head lingo does not read: refused with its status (no body), and the connection closed.
async fn refuse<I>(conn: &Shared<I>, refusal: &BadHead)
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    let mut out = BytesMut::with_capacity(128);
    let response = head::ResponseHead {
        status: refusal.status(),
        version: hyper::Version::HTTP_11,
        headers: HeaderView::Map(&hyper::HeaderMap::new()),
        framing: head::Framing::Length(0),
        keep_alive: false,
        date: response::date,
    };
    head::write(&mut out, &response);
    let _ = response::write_head(conn, out).await;
    shut(conn).await;
}

/// Closes the write side (a TLS connection says `close_notify`).
async fn shut<I>(conn: &Shared<I>)
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    let _ = poll_fn(|cx| match lock(conn).io.as_mut() {
        Some(io) => Pin::new(io).poll_shutdown(cx),
        None => Poll::Ready(Ok(())),
    })
    .await;
}

#[cfg(test)]
mod tests;
