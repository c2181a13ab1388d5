//! Writing a request: its head, then its body as the body has it, framed by length or
//! chunked.
//!
//! The body's frames are joined into writes in a [`WriteBuf`], as a response's are (see
//! `http::write_buf`): a whole body (every translated request, most uploads) goes out with
//! its head in one write, a streamed one a write per burst. While the request waits (for the
//! client's next bytes, or for the upstream to take more) the connection is watched: an
//! upstream that responds before the request's end (a 413 to an upload too big for it) is
//! read, not left to reset a write.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Buf, Bytes, BytesMut};
use http_body::{Body as _, Frame};
use tokio::io::AsyncWrite;

use super::head::{self, Early, Framing};
use super::{Conn, SendError};
use crate::http::body::Body;
use crate::http::write_buf::{Added, WriteBuf};

/// How far the request went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    All,
    /// The upstream began its response before the request's end; the rest was not sent.
    Responded,
}

/// How a body is framed: by its exact length when it knows it, else chunked.
pub fn framing(body: &Body) -> Framing {
    if http_body::Body::is_end_stream(body) {
        return Framing::Length(0);
    }
    match body.size_hint().exact() {
        Some(n) => Framing::Length(n),
        None => Framing::Chunked,
    }
}

/// What the body or the connection had next.
enum Next {
    Frame(Frame<Bytes>),
    End,
    /// The body has nothing now: write what is held before waiting.
    Idle,
    /// The upstream refused the request before its end (its response's first bytes are in the
    /// connection's buffer).
    Refused,
}

/// A request on its way up.
struct Upload<'a> {
    conn: &'a mut Conn,
    /// Bytes framed and not yet written.
    buf: WriteBuf,
    framing: Framing,
    /// Body bytes so far.
    sent: u64,
    /// Whether the connection is watched for a response: until one that accepts the request
    /// begins (then the rest of the request is sent before its response is read).
    watching: bool,
}

/// Writes `out` (the request head) and the body, framed by `framing`. The body's trailers
/// are not sent (as with hyper's client, which sends only those a `Trailer` field names, and
/// lingo removes that field): a client's trailers could otherwise carry what the header
/// rules keep from the upstream, such as its credentials.
pub async fn send(
    conn: &mut Conn,
    out: BytesMut,
    mut body: Body,
    framing: Framing,
) -> Result<Sent, SendError> {
    let mut up = Upload {
        conn,
        buf: WriteBuf::new(out, framing == Framing::Chunked),
        framing,
        sent: 0,
        watching: true,
    };
    loop {
        let next = poll_fn(|cx| up.next(&mut body, cx)).await?;
        let sent = match next {
            Next::Frame(frame) => match frame.into_data() {
                // A body that says it has ended is not polled for its end (a poll more
                // through its layers, for nothing). Asked only once its length is sent: a
                // client's body tells it under its connection's lock, which a streamed
                // upload's every chunk would otherwise take once more.
                Ok(data) => match up.add(data).await? {
                    Sent::All if up.length_sent() && body.is_end_stream() => {
                        return up.end().await;
                    }
                    sent => sent,
                },
                Err(_trailers) => Sent::All,
            },
            Next::End => return up.end().await,
            Next::Idle => up.flush().await?,
            Next::Refused => Sent::Responded,
        };
        if sent == Sent::Responded {
            return Ok(Sent::Responded);
        }
    }
}

fn upload(reason: &'static str) -> SendError {
    SendError::Upload(reason.into())
}

impl Upload<'_> {
    /// The body's next frame; when it has none yet, [`Next::Idle`] if bytes are held (to be
    /// written first), else a wait on both the body and the connection.
    fn next(&mut self, body: &mut Body, cx: &mut Context<'_>) -> Poll<Result<Next, SendError>> {
        match Pin::new(body).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => return Poll::Ready(Ok(Next::Frame(frame))),
            Poll::Ready(Some(Err(err))) => return Poll::Ready(Err(SendError::Upload(err))),
            Poll::Ready(None) => return Poll::Ready(Ok(Next::End)),
            Poll::Pending if !self.buf.is_empty() => return Poll::Ready(Ok(Next::Idle)),
            Poll::Pending => {}
        }
        self.refused(cx)
            .map(|refused| refused.map(|()| Next::Refused))
    }

    /// Ready when the upstream has refused the request before its end (see [`head::early`]).
    /// Pending otherwise, with the connection's read side watched until a response that wants
    /// the rest begins (then its rest waits in the socket until the request is sent), until
    /// the first-byte deadline passes: every wait of an upload comes here (and a socket that
    /// never makes it wait spends the task's budget, outside which the deadline is polled).
    fn refused(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), SendError>> {
        while self.watching {
            match head::early(&mut self.conn.buf)? {
                Some(Early::KeepSending) => self.watching = false,
                Some(Early::StopSending) => return Poll::Ready(Ok(())),
                None => match ready!(self.conn.poll_fill_by_deadline(cx)) {
                    Ok(0) => return Poll::Ready(Err(SendError::Closed)),
                    Ok(_) => {}
                    Err(err) => return Poll::Ready(Err(err)),
                },
            }
        }
        self.conn.poll_deadline(cx)
    }

    /// Adds a data frame to what is held, and writes what [`WriteBuf::add`] asks for.
    async fn add(&mut self, data: Bytes) -> Result<Sent, SendError> {
        self.sent += data.len() as u64;
        if matches!(self.framing, Framing::Length(n) if self.sent > n) {
            return Err(upload("the body is longer than its length"));
        }
        if data.is_empty() {
            return Ok(Sent::All);
        }
        match self.buf.add(data) {
            Added::Held => Ok(Sent::All),
            Added::Full => self.flush().await,
            Added::Large(mut data) => {
                if self.flush().await? == Sent::Responded
                    || self.write_all(&mut data).await? == Sent::Responded
                {
                    return Ok(Sent::Responded);
                }
                self.buf.large_written();
                Ok(Sent::All)
            }
        }
    }

    /// Whether the body is framed by its length and all of it is sent.
    fn length_sent(&self) -> bool {
        matches!(self.framing, Framing::Length(n) if self.sent == n)
    }

    /// The body's end: its length checked, or the last chunk; then everything held written.
    async fn end(&mut self) -> Result<Sent, SendError> {
        if matches!(self.framing, Framing::Length(n) if self.sent < n) {
            return Err(upload("the body ended before its length"));
        }
        self.buf.end();
        self.flush().await
    }

    /// Writes what is held.
    async fn flush(&mut self) -> Result<Sent, SendError> {
        let mut held = self.buf.take();
        let sent = self.write_all(&mut held).await;
        self.buf.written(held);
        sent
    }

    /// Writes all of `bytes`; while the upstream takes no more, watches for its refusal.
    async fn write_all(&mut self, bytes: &mut impl Buf) -> Result<Sent, SendError> {
        poll_fn(|cx| {
            while bytes.has_remaining() {
                match Pin::new(&mut self.conn.io).poll_write(cx, bytes.chunk()) {
                    Poll::Ready(Ok(0)) => return Poll::Ready(Err(write_zero())),
                    Poll::Ready(Ok(n)) => bytes.advance(n),
                    // A response has begun: the upstream may have closed once it was sent
                    // (a reset then fails the write); the response is read, not lost.
                    Poll::Ready(Err(_)) if !self.conn.buf.is_empty() => {
                        return Poll::Ready(Ok(Sent::Responded));
                    }
                    Poll::Ready(Err(err)) => return Poll::Ready(Err(err.into())),
                    Poll::Pending => {
                        return self.refused(cx).map(|r| r.map(|()| Sent::Responded));
                    }
                }
            }
            Poll::Ready(Ok(Sent::All))
        })
        .await
    }
}

fn write_zero() -> SendError {
    io::Error::new(
        io::ErrorKind::WriteZero,
        "the upstream took no more of the request",
    )
    .into()
}
