//! lingo's own HTTP/1.1 client, for plain `http://` upstreams (the sidecar's case).
//!
//! A request's own task writes the request and reads the response: the response's body
//! ([`ResponseBody`]) holds the connection and reads it as it is polled, and a connection between
//! requests is just a socket and an empty buffer, handed back by the body at its end. (hyper's
//! client drives each connection from a task of its own, with fixed buffers, and hands
//! requests and frames to it over channels.) A response passed on unchanged keeps its
//! fields as read (`http::message::Response`).
//!
//! - [`head`]: the request head lingo writes and the response head it reads, and how that
//!   response's body is framed (pure; the fields and the body's decoding are `http::h1`'s);
//! - [`upload`]: writing the request's body, watching for a response that comes before its end;
//! - [`dial`]: a host's addresses tried with happy eyeballs;
//! - [`deadline`]: the first-byte deadline, then the idle limit between the response's frames,
//!   on a timer each connection keeps.
//!
//! What is not here: upgrades (a WebSocket goes through hyper's client), HTTP/2, TLS.

mod deadline;
mod dial;
mod head;
mod upload;

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body::{Frame, SizeHint};
use hyper::{HeaderMap, Method};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::base::clock;
use crate::http::body::{Body, BoxError};
use crate::http::h1::decode::{Decoded, Decoder};
use crate::http::h1::read::{MIN_READ, Reads, release_room};
use crate::http::idle::IdleTimeout;
use crate::http::message::{Request, Response};
use crate::upstream::headers::Forwarding;
use deadline::Deadline;
pub use head::HeadError;
use head::Parsed;

/// A request with its head written, before it has a connection: what [`Conn::send`] needs
/// of it. Made apart from the sending so that the request's fields are freed before the
/// wait, and the sending's state holds these few fields, not the whole request.
pub struct Outgoing {
    out: BytesMut,
    body: Body,
    framing: head::Framing,
    head_request: bool,
    /// Whether the response's fields may be kept raw (`http::h1::raw`).
    as_read: bool,
}

impl Outgoing {
    /// Writes `req`'s head (its URI's path and query in origin form). `host` is the `Host`
    /// of a request without one; `rules`, the header rules its fields and the client's are
    /// forwarded by (see `head::write_request`), and whether the response's fields may be
    /// kept raw.
    pub fn new(req: Request, host: &str, rules: Option<&Forwarding<'_>>) -> Outgoing {
        let (head, body) = req.into_parts();
        let framing = upload::framing(&body);
        let mut out = BytesMut::with_capacity(512);
        let path = head.uri().path_and_query().map_or("/", |p| p.as_str());
        let (method, headers) = (head.method(), head.headers());
        head::write_request(&mut out, method, path, headers, framing, host, rules);
        Outgoing {
            out,
            body,
            framing,
            head_request: method == Method::HEAD,
            as_read: rules.is_some_and(|rules| rules.raw_response),
        }
    }
}

/// An open connection to an upstream, with no request on it.
pub struct Conn {
    io: TcpStream,
    /// Bytes read and not yet decoded.
    buf: BytesMut,
    /// How much room the next read gets.
    reads: Reads,
    /// The first-byte and idle timer, kept from one request to the next.
    deadline: Deadline,
}

/// Why a request got no response.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("upstream connection failed: {0}")]
    Io(#[from] io::Error),
    #[error(transparent)]
    Head(#[from] HeadError),
    #[error("the upstream closed the connection before responding")]
    Closed,
    /// The client's body failed on its way up (its fault, not the upstream's).
    #[error("the request body failed: {0}")]
    Upload(#[source] BoxError),
    /// No response head before the first-byte deadline.
    #[error("no response head before the first-byte deadline")]
    FirstByte,
}

/// Where a connection goes when its response has been read to the end.
pub trait Home: Send + Unpin + 'static {
    fn put_back(self, conn: Conn);
}

// === impl Conn ===

impl Conn {
    /// Connects to `address` (`host:port`; the name is looked up, see [`dial`]) within
    /// `limit`; past it, an `io::ErrorKind::TimedOut` error, which `upstream::classify`
    /// reports as the connect timeout.
    pub async fn open(address: &str, limit: Duration) -> io::Result<Conn> {
        let io = match tokio::time::timeout(limit, dial::dial(address)).await {
            Ok(io) => io?,
            Err(_) => {
                let msg = "connect (name lookup and TCP) timed out";
                return Err(io::Error::new(io::ErrorKind::TimedOut, msg));
            }
        };
        io.set_nodelay(true)?;
        Ok(Conn {
            io,
            buf: BytesMut::new(),
            reads: Reads::default(),
            deadline: Deadline::default(),
        })
    }

    /// Whether an idle connection can take a request: the upstream has neither closed it
    /// nor sent anything unasked. Costs no system call unless the socket became readable.
    pub fn is_fresh(&self) -> bool {
        let mut probe = [0u8; 1];
        matches!(self.io.try_read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }

    /// Sends a request whose head is written ([`Outgoing`]) and reads the response's head by
    /// `deadline` (else [`SendError::FirstByte`]); the response's body reads the rest from this
    /// connection, failing with [`IdleTimeout`] when nothing comes for `idle` (between two
    /// frames, or from the head to the first), and gives the connection to `home` if it can
    /// carry another request.
    pub async fn send<H: Home>(
        mut self,
        req: Outgoing,
        home: H,
        deadline: Instant,
        idle: Duration,
    ) -> Result<Response, SendError> {
        let Outgoing {
            out,
            body,
            framing,
            head_request,
            as_read,
        } = req;
        // Every wait until the response's head is timed by it (`poll_fill_by_deadline`).
        self.deadline.set(deadline);
        let sent = upload::send(&mut self, out, body, framing).await?;
        let head = self.read_head(head_request, as_read).await?;
        // A response that came before the request's end leaves the request's rest unsent: the
        // connection cannot carry another.
        let keep_alive = head.keep_alive && sent == upload::Sent::All;
        // From here the timer times the silences of the response's body (no `Idle` wrapper:
        // a box, a timer and a layer more for every frame).
        self.deadline.renew(clock::after(idle));
        let body = ResponseBody {
            conn: Some(self),
            decoder: head.body,
            keep_alive,
            home: Some(home),
            trailers: None,
            idle,
        };
        let (mut parts, ()) = hyper::Response::new(()).into_parts();
        (parts.status, parts.version) = (head.status, head.version);
        Ok(Response::from_head(parts, head.headers, Body::boxed(body)))
    }

    async fn read_head(
        &mut self,
        head_request: bool,
        as_read: bool,
    ) -> Result<head::Head, SendError> {
        loop {
            // A pooled connection's buffer is empty when its request is sent: nothing to parse.
            if !self.buf.is_empty() {
                match head::parse_response(&mut self.buf, head_request, as_read)? {
                    Parsed::Head(head) => return Ok(head),
                    Parsed::Interim => continue,
                    Parsed::Partial => {}
                }
            }
            if poll_fn(|cx| self.poll_fill_by_deadline(cx)).await? == 0 {
                return Err(match self.buf.is_empty() {
                    true => SendError::Closed,
                    false => HeadError::Malformed("cut short".into()).into(),
                });
            }
        }
    }

    /// Gives back the buffer's room while nothing is in it: a stream waiting for its next
    /// token then holds no read buffer (the next read takes new room once the socket is
    /// readable; what was read before is freed once its frames are written).
    fn release_room(&mut self) {
        release_room(&mut self.buf);
    }

    /// [`Conn::poll_fill`] before the response's head: while nothing comes, the first-byte
    /// deadline may pass ([`SendError::FirstByte`]).
    fn poll_fill_by_deadline(&mut self, cx: &mut Context<'_>) -> Poll<Result<usize, SendError>> {
        match self.poll_fill(cx) {
            Poll::Ready(filled) => Poll::Ready(filled.map_err(SendError::from)),
            Poll::Pending => self.poll_deadline(cx),
        }
    }

    /// Pending until the first-byte deadline passes, then [`SendError::FirstByte`].
    fn poll_deadline<T>(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, SendError>> {
        ready!(self.deadline.poll_passed(cx));
        Poll::Ready(Err(SendError::FirstByte))
    }

    /// Reads what the socket has into the buffer: how many bytes (0: the upstream closed).
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.buf.capacity() == 0 {
            // Room given back: none is taken until there is something to read.
            ready!(self.io.poll_read_ready(cx))?;
        }
        self.reads.poll_into(&mut self.io, &mut self.buf, cx)
    }
}

/// A response's body: read from its connection as it is polled.
struct ResponseBody<H: Home> {
    /// `None` once the body has ended or failed.
    conn: Option<Conn>,
    decoder: Decoder,
    /// Whether the connection can carry another request once this body is read.
    keep_alive: bool,
    home: Option<H>,
    /// Trailers decoded while joining the chunks before them, for the next poll.
    trailers: Option<Box<HeaderMap>>,
    /// The longest silence allowed between two frames (the connection's timer times it).
    idle: Duration,
}

impl<H: Home> ResponseBody<H> {
    /// The body is read: its connection goes home if it can carry another request (the
    /// upstream sent nothing past this response), else it is closed.
    fn finish(&mut self) {
        if let (Some(mut conn), Some(home)) = (self.conn.take(), self.home.take())
            && self.keep_alive
            && conn.buf.is_empty()
        {
            // A buffer grown for a long response is given back; a small one is kept for the
            // next response, which then takes no new room.
            if conn.buf.capacity() > MIN_READ {
                conn.release_room();
            }
            home.put_back(conn);
        }
    }

    /// `first`, joined by the body's next pieces already read: the chunks one read brought
    /// leave as one frame, so that every wrapper and the client's encoder handle a burst of
    /// tokens once (a copy of a few small chunks costs less than a frame each). Only what is
    /// in the buffer is joined: nothing waits for more.
    fn join(&mut self, first: Bytes) -> Bytes {
        let Some(conn) = self.conn.as_mut() else {
            return first;
        };
        let second = match self.decoder.decode(&mut conn.buf) {
            Ok(Decoded::Data(second)) => second,
            Ok(Decoded::Trailers(fields)) => {
                self.trailers = Some(fields);
                return first;
            }
            // The end, a need for more, or an error: the next poll finds it again.
            Ok(Decoded::End | Decoded::More) | Err(_) => return first,
        };
        // Room for all the buffer still holds, made once rather than grown a chunk at a
        // time (a streamed response's burst would be reallocated at each doubling). The
        // pieces after the second are copied there straight from the buffer.
        let mut joined = BytesMut::with_capacity(first.len() + second.len() + conn.buf.len());
        joined.extend_from_slice(&first);
        joined.extend_from_slice(&second);
        loop {
            match self.decoder.decode_onto(&mut conn.buf, &mut joined) {
                Ok(None) => {}
                Ok(Some(Decoded::Trailers(fields))) => {
                    self.trailers = Some(fields);
                    break;
                }
                Ok(Some(_)) | Err(_) => break,
            }
        }
        joined.freeze()
    }

    /// The next frame, read from the connection as far as it has one; while nothing comes,
    /// the idle limit may pass ([`IdleTimeout`], the connection closed).
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Some(fields) = self.trailers.take() {
            return Poll::Ready(Some(Ok(Frame::trailers(*fields))));
        }
        loop {
            let Some(conn) = self.conn.as_mut() else {
                return Poll::Ready(None);
            };
            match self.decoder.decode(&mut conn.buf) {
                Ok(Decoded::Data(data)) => {
                    return Poll::Ready(Some(Ok(Frame::data(self.join(data)))));
                }
                Ok(Decoded::Trailers(fields)) => {
                    return Poll::Ready(Some(Ok(Frame::trailers(*fields))));
                }
                Ok(Decoded::End) => {
                    self.finish();
                    return Poll::Ready(None);
                }
                Ok(Decoded::More) => {}
                Err(err) => return self.fail(err),
            }
            let filled = match conn.poll_fill(cx) {
                Poll::Ready(filled) => filled,
                Poll::Pending => {
                    conn.release_room();
                    ready!(conn.deadline.poll_passed(cx));
                    return self.fail(IdleTimeout(self.idle));
                }
            };
            match filled {
                Ok(0) => match self.decoder.closed() {
                    Ok(()) => self.keep_alive = false,
                    Err(err) => return self.fail(err),
                },
                Ok(_) => {}
                Err(err) => return self.fail(err),
            }
        }
    }

    fn fail(&mut self, err: impl Into<BoxError>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.conn = None;
        Poll::Ready(Some(Err(err.into())))
    }
}

impl<H: Home> Drop for ResponseBody<H> {
    /// A body dropped at its end gives its connection back: its readers do not poll it for
    /// an end it has told them (`is_end_stream`), and one that was empty from the start is
    /// never polled. One dropped before its end takes its connection with it.
    fn drop(&mut self) {
        if self.decoder == Decoder::Done {
            self.finish();
        }
    }
}

impl<H: Home> http_body::Body for ResponseBody<H> {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        let polled = this.poll_next(cx);
        if let (Poll::Ready(Some(Ok(_))), Some(conn)) = (&polled, this.conn.as_mut()) {
            // Only a frame ends a silence (after the end or an error, nothing is awaited).
            conn.deadline.renew(clock::after(this.idle));
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.trailers.is_none() && (self.conn.is_none() || self.decoder == Decoder::Done)
    }

    fn size_hint(&self) -> SizeHint {
        match self.decoder.exact() {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests;
