//! Writing a response: its head, then its body as the body has it, framed by length, chunked,
//! or (to an HTTP/1.0 client, length unknown) close-delimited.
//!
//! The body's frames are joined into writes in a [`WriteBuf`] (`http::write_buf` says how
//! a frame gets here and when it is written): a whole response leaves with its head in one
//! write, a burst of tokens in one write, and a token that comes alone goes out at once.
//! While the body has nothing, the client is watched: one that closes ends the response (and
//! so the upstream request behind it).

use std::cell::Cell;
use std::future::poll_fn;
use std::io;
use std::task::{Context, Poll, Waker};
use std::time::UNIX_EPOCH;

use bytes::{BufMut, Bytes, BytesMut};
use http_body::Body as _;
use hyper::header::{CONNECTION, CONTENT_LENGTH};
use hyper::{StatusCode, Version};
use tokio::io::{AsyncRead, AsyncWrite};

use super::conn::{CONTINUE, Shared, lock};
use super::head::{self, Framing};
use crate::base::clock;
use crate::http::body::{Body, BoxError};
use crate::http::h1::fields::{FramingHeaders, parse_length};
use crate::http::message::{HeaderView, Response};
use crate::http::write_buf::{Added, FLUSH_AT, WriteBuf};

/// What the request said about its response.
#[derive(Clone, Copy, Debug)]
pub struct RequestContext {
    pub head_request: bool,
    pub version: Version,
    /// Whether the connection may carry another request after this response.
    pub keep_alive: bool,
}

/// Why a response was not written to its end.
#[derive(Debug, thiserror::Error)]
pub enum ResponseError {
    #[error("writing the response failed: {0}")]
    Io(#[from] io::Error),
    #[error("the client closed the connection during the response")]
    ClientGone,
    #[error("the response's body failed: {0}")]
    Body(BoxError),
    #[error("the response's body did not match its content-length")]
    Length,
}

/// What the body or the client had next.
enum Next {
    Data(Bytes),
    End,
    /// Nothing ready: write what is held before waiting.
    Idle,
}

/// A response whose head is made: what is left to send. Its fields are not held for a
/// stream's life, and the connection's state while it streams is only this and the body's
/// own (a connection's task is as large as its largest state, for its whole life).
pub struct Prepared {
    body: Body,
    /// The head, and room for what follows it.
    out: BytesMut,
    framing: Framing,
    /// What the body had ready when the head was made.
    ready: Ready,
    /// Whether the connection can carry another request after this response.
    pub keep_alive: bool,
    /// A `101 Switching Protocols`: the connection is the new protocol's after the head.
    pub switched: bool,
}

/// Makes `response`'s head, ready to be sent with its body.
pub fn prepare<I>(conn: &Shared<I>, response: Response, context: RequestContext) -> Prepared {
    let (mut head, mut body) = response.into_parts();
    let status = head.status();
    let said = ResponseFraming::of(head.headers());
    let (framing, ready) = framing_and_ready(status, said.length, &mut body, context);
    // A `HEAD` request's response says the length its `GET` would have, when the body lingo
    // made for it knows it (an empty one may stand for a body of unknown length).
    if context.head_request && !said.declared {
        match body.size_hint().exact() {
            Some(n) if n > 0 => head.insert_header(CONTENT_LENGTH, n.into()),
            _ => {}
        }
    }
    // A `100 Continue` half written is finished first; one not begun is owed no more.
    let (continue_written, broken) = {
        let mut conn = lock(conn);
        (conn.continue_written.take(), conn.broken)
    };
    // A response that says `Connection: close` (lingo's own, to a request it will not read
    // the rest of), or to a request whose body failed, closes the connection after it.
    let keep_alive =
        context.keep_alive && framing != Framing::CloseDelimited && !said.close && !broken;
    // Room for the head, and for a whole body that comes in one write with it.
    let whole = match framing {
        Framing::Length(n) => usize::try_from(n).ok(),
        _ => Some(ready.len),
    };
    let mut out = BytesMut::with_capacity(512 + whole.filter(|&n| n <= FLUSH_AT).unwrap_or(0));
    if let Some(at) = continue_written
        && at > 0
    {
        out.put_slice(&CONTINUE[at..]);
    }
    let response_head = head::ResponseHead {
        status,
        version: context.version,
        headers: head.headers(),
        framing,
        keep_alive,
        date,
    };
    head::write(&mut out, &response_head);
    Prepared {
        body,
        out,
        framing,
        ready,
        keep_alive,
        switched: status == StatusCode::SWITCHING_PROTOCOLS,
    }
}

/// Sends a prepared response to its end.
pub async fn send<I>(conn: &Shared<I>, prepared: Prepared) -> Result<(), ResponseError>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    let Prepared {
        mut body,
        out,
        framing,
        ready,
        ..
    } = prepared;
    let mut buf = WriteBuf::new(out, framing == Framing::Chunked);
    match framing {
        Framing::None => flush(conn, &mut buf).await,
        _ => send_body(conn, &mut body, buf, framing, ready).await,
    }
}

/// Writes the body after the head `buf` holds, framed by `framing`: first what it had
/// `ready`, then its frames as they come.
async fn send_body<I>(
    conn: &Shared<I>,
    body: &mut Body,
    mut buf: WriteBuf,
    framing: Framing,
    ready: Ready,
) -> Result<(), ResponseError>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    let mut left = match framing {
        Framing::Length(n) => Some(n - ready.len as u64),
        _ => None,
    };
    for data in ready.first.into_iter().chain(ready.more) {
        add(conn, &mut buf, data).await?;
    }
    match ready.end {
        Some(Ok(())) => return end(conn, body, buf, left).await,
        Some(Err(err)) => {
            flush(conn, &mut buf).await?;
            return Err(ResponseError::Body(err));
        }
        None => {}
    }
    loop {
        let next = match poll_fn(|cx| next(conn, body, !buf.is_empty(), cx)).await {
            Ok(next) => next,
            // What came before a failure is the client's: written, then the connection is
            // closed without the body's end, so the client sees the response cut short.
            Err(err @ ResponseError::Body(_)) => {
                flush(conn, &mut buf).await?;
                return Err(err);
            }
            Err(err) => return Err(err),
        };
        match next {
            Next::Data(data) => {
                if let Some(left) = &mut left {
                    *left = (left.checked_sub(data.len() as u64)).ok_or(ResponseError::Length)?;
                }
                add(conn, &mut buf, data).await?;
                if body.is_end_stream() {
                    return end(conn, body, buf, left).await;
                }
            }
            Next::Idle => flush(conn, &mut buf).await?,
            Next::End => return end(conn, body, buf, left).await,
        }
    }
}

/// The body's end: what is held written, with the closing chunk when chunked. Also called
/// once a body says it has ended (`is_end_stream`) without being polled for its end, so that
/// what its end sets off when it is dropped (the response's record, its upstream connection put
/// back) runs after the write, not on the response's way to its client. A client that does not
/// take the last bytes at once (it is not reading) gets them after the body is dropped: it
/// keeps no upstream connection out of its pool, nor the response's record waiting.
async fn end<I>(
    conn: &Shared<I>,
    body: &mut Body,
    mut buf: WriteBuf,
    left: Option<u64>,
) -> Result<(), ResponseError>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    buf.end();
    let mut out = buf.take();
    let written = poll_fn(|cx| Poll::Ready(lock(conn).poll_write_all(cx, &mut out))).await;
    if let Poll::Ready(written) = written {
        written?;
    } else {
        *body = Body::empty();
        poll_fn(|cx| lock(conn).poll_write_all(cx, &mut out)).await?;
    }
    match left {
        Some(left) if left > 0 => Err(ResponseError::Length),
        _ => Ok(()),
    }
}

/// [`framing`], and what a body of unknown size has ready ([`Ready::take`]): when that is
/// all of it, it is framed by its length.
fn framing_and_ready(
    status: StatusCode,
    declared: Option<u64>,
    body: &mut Body,
    context: RequestContext,
) -> (Framing, Ready) {
    let framing = framing(status, declared, body, context);
    if !matches!(framing, Framing::Chunked | Framing::CloseDelimited) {
        return (framing, Ready::default());
    }
    let ready = Ready::take(body);
    match ready.end {
        Some(Ok(())) => (Framing::Length(ready.len as u64), ready),
        _ => (framing, ready),
    }
}

/// What a body of unknown size had ready when its head was made, taken without waiting: the
/// head leaves in one write with it, and a body that was all there is framed by its length.
#[derive(Default)]
struct Ready {
    /// The first frame: most bodies have one ready, and keeping it takes no list.
    first: Option<Bytes>,
    /// The frames after the first.
    more: Vec<Bytes>,
    /// Their bytes.
    len: usize,
    /// How the body ended, if it did: `Ok` once it said it has no more, or its error.
    end: Option<Result<(), BoxError>>,
}

impl Ready {
    /// Polls `body` until it has nothing ready, ends, or has given [`FLUSH_AT`] bytes. It is
    /// polled with a waker that does nothing: `send` polls it again, with the task's, before
    /// it waits. A body that says it has ended is not polled for its end (see [`end`]).
    fn take(body: &mut Body) -> Ready {
        let mut cx = Context::from_waker(Waker::noop());
        let mut ready = Ready::default();
        while ready.len < FLUSH_AT {
            match std::pin::Pin::new(&mut *body).poll_frame(&mut cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data().map_err(drop)
                        && !data.is_empty()
                    {
                        ready.len += data.len();
                        match ready.first {
                            None => ready.first = Some(data),
                            Some(_) => ready.more.push(data),
                        }
                    }
                    if body.is_end_stream() {
                        ready.end = Some(Ok(()));
                    }
                }
                Poll::Ready(Some(Err(err))) => ready.end = Some(Err(err)),
                Poll::Ready(None) => ready.end = Some(Ok(())),
                Poll::Pending => break,
            }
            if ready.end.is_some() {
                break;
            }
        }
        ready
    }
}

/// How the body goes on the wire (RFC 9112 §6.3): none for a `HEAD` request's response, 1xx,
/// 204 and 304; else the response's own `Content-Length` if it has one, or the body's exact
/// size; else chunked, or close-delimited for an HTTP/1.0 client.
fn framing(
    status: StatusCode,
    declared: Option<u64>,
    body: &Body,
    context: RequestContext,
) -> Framing {
    let no_body = context.head_request
        || status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED;
    if no_body {
        return Framing::None;
    }
    match declared.or_else(|| body.size_hint().exact()) {
        Some(n) => Framing::Length(n),
        None if context.version == Version::HTTP_10 => Framing::CloseDelimited,
        None => Framing::Chunked,
    }
}

/// What a response's own fields say about its framing and its connection: read in one pass
/// over a map (a lookup of each costs more); kept raw, noted as they were read (their
/// `Connection`, hop-by-hop, was the upstream's and is not passed on).
struct ResponseFraming {
    /// It has a `Content-Length`.
    declared: bool,
    /// Its (first) `Content-Length`, when that is a number.
    length: Option<u64>,
    /// `Connection: close`.
    close: bool,
}

impl ResponseFraming {
    fn of(headers: HeaderView<'_>) -> ResponseFraming {
        let mut length = None;
        let mut connection = FramingHeaders::default();
        match headers {
            HeaderView::Map(map) => {
                for (name, value) in map {
                    if *name == CONTENT_LENGTH && length.is_none() {
                        length = Some(value.as_bytes());
                    } else if *name == CONNECTION {
                        connection.connection(value.as_bytes());
                    }
                }
            }
            HeaderView::Raw(raw) => length = raw.length(),
        }
        ResponseFraming {
            declared: length.is_some(),
            // `1*DIGIT`, as the upstream's was read (no sign, unlike `str::parse`).
            length: length.and_then(parse_length),
            close: connection.close,
        }
    }
}

/// The body's next frame (trailers are not sent on: `Trailer` is a hop-by-hop field lingo
/// drops, and hyper sent only the trailers it named); when it has none yet, [`Next::Idle`] if bytes are
/// held, else a wait on both the body and the client's close.
fn next<I>(
    conn: &Shared<I>,
    body: &mut Body,
    holding: bool,
    cx: &mut Context<'_>,
) -> Poll<Result<Next, ResponseError>>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    loop {
        match std::pin::Pin::new(&mut *body).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                Ok(data) if data.is_empty() => continue,
                Ok(data) => return Poll::Ready(Ok(Next::Data(data))),
                Err(_trailers) => continue,
            },
            Poll::Ready(Some(Err(err))) => return Poll::Ready(Err(ResponseError::Body(err))),
            Poll::Ready(None) => return Poll::Ready(Ok(Next::End)),
            Poll::Pending if holding => return Poll::Ready(Ok(Next::Idle)),
            Poll::Pending => {
                return match lock(conn).poll_client_gone(cx) {
                    Poll::Ready(true) => Poll::Ready(Err(ResponseError::ClientGone)),
                    _ => Poll::Pending,
                };
            }
        }
    }
}

/// Adds a data frame to what is held, and writes what [`WriteBuf::add`] asks for.
async fn add<I>(conn: &Shared<I>, buf: &mut WriteBuf, data: Bytes) -> Result<(), ResponseError>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    match buf.add(data) {
        Added::Held => Ok(()),
        Added::Full => flush(conn, buf).await,
        Added::Large(mut data) => {
            flush(conn, buf).await?;
            poll_fn(|cx| lock(conn).poll_write_all(cx, &mut data)).await?;
            buf.large_written();
            Ok(())
        }
    }
}

/// Writes what `buf` holds.
async fn flush<I>(conn: &Shared<I>, buf: &mut WriteBuf) -> Result<(), ResponseError>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    if !buf.is_empty() {
        let mut held = buf.take();
        poll_fn(|cx| lock(conn).poll_write_all(cx, &mut held)).await?;
        buf.written(held);
    }
    Ok(())
}

/// Writes `out` (a head with no body, on a connection that closes after it).
pub async fn write_head<I>(conn: &Shared<I>, out: BytesMut) -> Result<(), ResponseError>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    flush(conn, &mut WriteBuf::new(out, false)).await
}

/// The `Date` field's value, formatted once a second per thread. An IMF-fixdate is always
/// 29 bytes; kept as bytes, it is copied into the head with no allocation or reference count.
pub fn date() -> [u8; 29] {
    thread_local! {
        static CACHED: Cell<(u64, [u8; 29])> = const { Cell::new((u64::MAX, [0; 29])) };
    }
    let now = clock::wall();
    let second = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (at, value) = CACHED.get();
    if at == second {
        return value;
    }
    let value = httpdate::fmt_http_date(now)
        .as_bytes()
        .try_into()
        .unwrap_or(*b"Thu, 01 Jan 1970 00:00:00 GMT");
    CACHED.set((second, value));
    value
}
