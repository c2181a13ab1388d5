//! Writing a request: its head, then its body as the body has it, framed by length or
//! chunked.
//!
//! A whole body (every translated request, most uploads) goes out with its head in one write.
//! A streamed one is written as it comes, a write per burst rather than per frame, and no
//! more than [`FLUSH_AT`] is held. While the request waits (for the client's next bytes, or for
//! the upstream to take more) the connection is watched: an upstream that answers before the
//! request's end (a 413 to an upload too big for it) is read, not left to reset a write.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use http_body::{Body as _, Frame};
use tokio::io::AsyncWrite;

use super::head::Framing;
use super::{Conn, SendError};
use crate::http::body::Body;

/// Held bytes past this are written before more of the body is read.
const FLUSH_AT: usize = 16 * 1024;

/// How far the request went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    All,
    /// The upstream began its answer before the request's end; the rest was not sent.
    Answered,
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
    /// The upstream answered (its first bytes are in the connection's buffer).
    Answered,
}

/// Writes `out` (the request head) and the body, framed by `framing`.
pub async fn send(
    conn: &mut Conn,
    mut out: BytesMut,
    mut body: Body,
    framing: Framing,
) -> Result<Sent, SendError> {
    let mut sent: u64 = 0;
    loop {
        let next = poll_fn(|cx| next(conn, &mut body, !out.is_empty(), cx)).await?;
        match next {
            Next::Frame(frame) => match frame.into_data() {
                Ok(data) => {
                    sent += data.len() as u64;
                    if matches!(framing, Framing::Length(n) if sent > n) {
                        return Err(upload("the body is longer than its length"));
                    }
                    if let Sent::Answered = add(conn, &mut out, data, framing).await? {
                        return Ok(Sent::Answered);
                    }
                }
                Err(frame) => {
                    if let (Ok(fields), Framing::Chunked) = (frame.into_trailers(), framing) {
                        last_chunk(&mut out, Some(&fields));
                        return flush(conn, &mut out).await;
                    }
                }
            },
            Next::End => {
                match framing {
                    Framing::Length(n) if sent < n => {
                        return Err(upload("the body ended before its length"));
                    }
                    Framing::Length(_) => {}
                    Framing::Chunked => last_chunk(&mut out, None),
                }
                return flush(conn, &mut out).await;
            }
            Next::Idle => {
                if let Sent::Answered = flush(conn, &mut out).await? {
                    return Ok(Sent::Answered);
                }
            }
            Next::Answered => return Ok(Sent::Answered),
        }
    }
}

fn upload(reason: &'static str) -> SendError {
    SendError::Upload(reason.into())
}

/// The body's next frame; when it has none yet, [`Next::Idle`] if bytes are held (to be
/// written first), else a wait on both the body and the connection.
fn next(
    conn: &mut Conn,
    body: &mut Body,
    holding: bool,
    cx: &mut Context<'_>,
) -> Poll<Result<Next, SendError>> {
    match Pin::new(body).poll_frame(cx) {
        Poll::Ready(Some(Ok(frame))) => return Poll::Ready(Ok(Next::Frame(frame))),
        Poll::Ready(Some(Err(err))) => return Poll::Ready(Err(SendError::Upload(err))),
        Poll::Ready(None) => return Poll::Ready(Ok(Next::End)),
        Poll::Pending if holding => return Poll::Ready(Ok(Next::Idle)),
        Poll::Pending => {}
    }
    answered(conn, cx).map(|answered| answered.map(|()| Next::Answered))
}

/// Whether the upstream has begun to answer (or closed): ready once it has sent something.
fn answered(conn: &mut Conn, cx: &mut Context<'_>) -> Poll<Result<(), SendError>> {
    match conn.poll_fill(cx) {
        Poll::Ready(Ok(0)) => Poll::Ready(Err(SendError::Closed)),
        Poll::Ready(Ok(_)) => Poll::Ready(Ok(())),
        Poll::Ready(Err(err)) => Poll::Ready(Err(err.into())),
        Poll::Pending => Poll::Pending,
    }
}

/// Adds a data frame to what is held, framed; a large frame is written as it is, after what
/// was held, rather than copied.
async fn add(
    conn: &mut Conn,
    out: &mut BytesMut,
    mut data: Bytes,
    framing: Framing,
) -> Result<Sent, SendError> {
    if data.is_empty() {
        return Ok(Sent::All);
    }
    if framing == Framing::Chunked {
        use std::fmt::Write as _;
        let _ = write!(out, "{:x}\r\n", data.len());
    }
    let mut sent = Sent::All;
    if out.len() + data.len() <= FLUSH_AT {
        out.extend_from_slice(&data);
    } else {
        sent = flush(conn, out).await?;
        if sent == Sent::All {
            sent = write_all(conn, &mut data).await?;
        }
    }
    if framing == Framing::Chunked {
        out.extend_from_slice(b"\r\n");
    }
    if sent == Sent::All && out.len() >= FLUSH_AT {
        sent = flush(conn, out).await?;
    }
    Ok(sent)
}

/// The zero-size chunk that ends a chunked body, with its trailers if any.
fn last_chunk(out: &mut BytesMut, trailers: Option<&hyper::HeaderMap>) {
    out.extend_from_slice(b"0\r\n");
    for (name, value) in trailers.into_iter().flatten() {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

async fn flush(conn: &mut Conn, out: &mut BytesMut) -> Result<Sent, SendError> {
    write_all(conn, out).await
}

/// Writes all of `bytes`; while the upstream takes no more, watches for its answer.
async fn write_all(conn: &mut Conn, bytes: &mut impl Buf) -> Result<Sent, SendError> {
    poll_fn(|cx| {
        while bytes.has_remaining() {
            match Pin::new(&mut conn.io).poll_write(cx, bytes.chunk()) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(write_zero())),
                Poll::Ready(Ok(n)) => bytes.advance(n),
                Poll::Ready(Err(err)) => return Poll::Ready(Err(err.into())),
                Poll::Pending => {
                    return answered(conn, cx).map(|answered| answered.map(|()| Sent::Answered));
                }
            }
        }
        Poll::Ready(Ok(Sent::All))
    })
    .await
}

fn write_zero() -> SendError {
    io::Error::new(
        io::ErrorKind::WriteZero,
        "the upstream took no more of the request",
    )
    .into()
}
