//! Writing an answer: its head, then its body as the body has it, framed by length, chunked,
//! or (to an HTTP/1.0 client, length unknown) up to the close.
//!
//! What the body has ready is gathered into one write: a whole answer leaves with its head in
//! one write, and a burst of tokens in one write, while a token that comes alone goes out at
//! once (a body with nothing ready means: write what is held). A large frame is written as it
//! is, not copied. While the body has nothing, the client is watched: one that closes ends
//! the answer (and so the upstream request behind it).

use std::cell::Cell;
use std::future::poll_fn;
use std::io;
use std::task::{Context, Poll};
use std::time::UNIX_EPOCH;

use bytes::{BufMut, Bytes, BytesMut};
use http_body::Body as _;
use hyper::header::{CONNECTION, CONTENT_LENGTH};
use hyper::{StatusCode, Version};
use tokio::io::{AsyncRead, AsyncWrite};

use super::head::{self, Framing};
use super::wire::{CONTINUE, Shared, lock};
use crate::base::clock;
use crate::http::body::{Body, BoxError};
use crate::http::h1::fields::{FramingHeaders, parse_length, push_hex};
use crate::http::message::{HeaderView, Response};

/// Held bytes past this are written before more of the body is read; a frame larger than
/// this is written on its own.
const FLUSH_AT: usize = 16 * 1024;
/// Room kept between writes; more is given back once written.
const KEEP_ROOM: usize = 4 * 1024;
/// Room a stream keeps while it waits for its next token: a token's frame fits, so that a
/// stream sent a token at a time takes no new room per token; a burst's larger room is
/// given back.
const IDLE_ROOM: usize = 512;

/// What the request said about its answer.
#[derive(Clone, Copy, Debug)]
pub struct Asked {
    pub head_request: bool,
    pub version: Version,
    /// Whether the connection may carry another request after this answer.
    pub keep_alive: bool,
}

/// Why an answer was not written to its end.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    #[error("writing the answer failed: {0}")]
    Io(#[from] io::Error),
    #[error("the client closed the connection during the answer")]
    ClientGone,
    #[error("the answer's body failed: {0}")]
    Body(BoxError),
    #[error("the answer's body did not match its content-length")]
    Length,
}

/// What the body or the client had next.
enum Next {
    Data(Bytes),
    End,
    /// Nothing ready: write what is held before waiting.
    Idle,
}

/// An answer whose head is made: what is left to send. Its fields are not held for a
/// stream's life, and the connection's state while it streams is only this and the body's
/// own (a connection's task is as large as its largest state, for its whole life).
pub struct Prepared {
    body: Body,
    /// The head, and room for what follows it.
    out: BytesMut,
    framing: Framing,
    /// Whether the connection can carry another request after this answer.
    pub keep_alive: bool,
    /// A `101 Switching Protocols`: the connection is the new protocol's after the head.
    pub switched: bool,
}

/// Makes `response`'s head, ready to be sent with its body.
pub fn prepare<I>(wire: &Shared<I>, response: Response, asked: Asked) -> Prepared {
    let (mut head, body) = response.into_parts();
    let status = head.status();
    let said = ResponseFraming::of(head.headers());
    let framing = framing(status, said.length, &body, asked);
    // A `HEAD` request's response says the length its `GET` would have, when the body lingo
    // made for it knows it (an empty one may stand for a body of unknown length).
    if asked.head_request && !said.declared {
        match body.size_hint().exact() {
            Some(n) if n > 0 => head.insert_header(CONTENT_LENGTH, n.into()),
            _ => {}
        }
    }
    // A `100 Continue` half written is finished first; one not begun is owed no more.
    let (go_ahead, broken) = {
        let mut wire = lock(wire);
        (wire.go_ahead.take(), wire.broken)
    };
    // An answer that says `Connection: close` (lingo's own, to a request it will not read
    // the rest of), or to a request whose body failed, closes the connection after it.
    let keep_alive = asked.keep_alive && framing != Framing::ToClose && !said.close && !broken;
    // Room for the head, and for a whole body that comes in one write with it.
    let whole = (body.size_hint().exact()).and_then(|n| usize::try_from(n).ok());
    let mut out = BytesMut::with_capacity(512 + whole.filter(|&n| n <= FLUSH_AT).unwrap_or(0));
    if let Some(at) = go_ahead
        && at > 0
    {
        out.put_slice(&CONTINUE[at..]);
    }
    let response_head = head::ResponseHead {
        status,
        version: asked.version,
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
        keep_alive,
        switched: status == StatusCode::SWITCHING_PROTOCOLS,
    }
}

/// Sends a prepared answer to its end.
pub async fn send<I>(wire: &Shared<I>, prepared: Prepared) -> Result<(), AnswerError>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    let Prepared {
        mut body,
        mut out,
        framing,
        ..
    } = prepared;
    match framing {
        Framing::None => flush(wire, &mut out).await,
        _ => send_body(wire, &mut body, out, framing).await,
    }
}

/// Writes the body after `out` (the head), framed by `framing`.
async fn send_body<I>(
    wire: &Shared<I>,
    body: &mut Body,
    mut out: BytesMut,
    framing: Framing,
) -> Result<(), AnswerError>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    let mut left = match framing {
        Framing::Length(n) => Some(n),
        _ => None,
    };
    loop {
        let next = match poll_fn(|cx| next(wire, body, !out.is_empty(), cx)).await {
            Ok(next) => next,
            // What came before a failure is the client's: written, then the connection is
            // closed without the body's end, so the client sees the answer cut short.
            Err(err @ AnswerError::Body(_)) => {
                flush(wire, &mut out).await?;
                return Err(err);
            }
            Err(err) => return Err(err),
        };
        match next {
            Next::Data(data) => {
                if let Some(left) = &mut left {
                    *left = (left.checked_sub(data.len() as u64)).ok_or(AnswerError::Length)?;
                }
                add(wire, &mut out, data, framing == Framing::Chunked).await?;
                if body.is_end_stream() {
                    return end(wire, body, out, framing, left).await;
                }
            }
            Next::Idle => {
                flush(wire, &mut out).await?;
                if out.capacity() > IDLE_ROOM {
                    out = BytesMut::new();
                }
            }
            Next::End => return end(wire, body, out, framing, left).await,
        }
    }
}

/// The body's end: what is held written, with the closing chunk when chunked. Also called
/// once a body says it has ended (`is_end_stream`) without being polled for its end, so that
/// what its end sets off when it is dropped (the answer's record, its upstream connection put
/// back) runs after the write, not on the answer's way to its client. A client that does not
/// take the last bytes at once (it is not reading) gets them after the body is dropped: it
/// keeps no upstream connection out of its pool, nor the answer's record waiting.
async fn end<I>(
    wire: &Shared<I>,
    body: &mut Body,
    mut out: BytesMut,
    framing: Framing,
    left: Option<u64>,
) -> Result<(), AnswerError>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    if framing == Framing::Chunked {
        out.put_slice(b"0\r\n\r\n");
    }
    let written = poll_fn(|cx| Poll::Ready(lock(wire).poll_write_all(cx, &mut out))).await;
    if let Poll::Ready(written) = written {
        written?;
    } else {
        *body = Body::empty();
        flush(wire, &mut out).await?;
    }
    match left {
        Some(left) if left > 0 => Err(AnswerError::Length),
        _ => Ok(()),
    }
}

/// How the body goes on the wire (RFC 9112 §6.3): none for a `HEAD` request's answer, 1xx,
/// 204 and 304; else the answer's own `Content-Length` if it has one, or the body's exact
/// size; else chunked, or up to the close for an HTTP/1.0 client.
fn framing(status: StatusCode, declared: Option<u64>, body: &Body, asked: Asked) -> Framing {
    let no_body = asked.head_request
        || status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED;
    if no_body {
        return Framing::None;
    }
    match declared.or_else(|| body.size_hint().exact()) {
        Some(n) => Framing::Length(n),
        None if asked.version == Version::HTTP_10 => Framing::ToClose,
        None => Framing::Chunked,
    }
}

/// What a response's own fields say about its framing and its connection: read in one pass
/// over a map (a lookup of each costs more); kept as read, noted as they were read (their
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
    wire: &Shared<I>,
    body: &mut Body,
    holding: bool,
    cx: &mut Context<'_>,
) -> Poll<Result<Next, AnswerError>>
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
            Poll::Ready(Some(Err(err))) => return Poll::Ready(Err(AnswerError::Body(err))),
            Poll::Ready(None) => return Poll::Ready(Ok(Next::End)),
            Poll::Pending if holding => return Poll::Ready(Ok(Next::Idle)),
            Poll::Pending => {
                return match lock(wire).poll_client_gone(cx) {
                    Poll::Ready(true) => Poll::Ready(Err(AnswerError::ClientGone)),
                    _ => Poll::Pending,
                };
            }
        }
    }
}

/// Adds a data frame to what is held, framed; a large one is written after what is held,
/// as it is.
async fn add<I>(
    wire: &Shared<I>,
    out: &mut BytesMut,
    mut data: Bytes,
    chunked: bool,
) -> Result<(), AnswerError>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    if chunked {
        push_hex(out, data.len());
    }
    if out.len() + data.len() <= FLUSH_AT {
        // Grown once with room for what usually follows (a closing frame, the end): grown
        // only as needed, a streamed chat completion's buffer was grown twice.
        if out.capacity() - out.len() < data.len() + 2 {
            out.reserve(data.len() + IDLE_ROOM);
        }
        out.extend_from_slice(&data);
    } else {
        flush(wire, out).await?;
        poll_fn(|cx| lock(wire).poll_write_all(cx, &mut data)).await?;
    }
    if chunked {
        out.put_slice(b"\r\n");
    }
    if out.len() >= FLUSH_AT {
        flush(wire, out).await?;
    }
    Ok(())
}

/// Writes what is held; room past [`KEEP_ROOM`] is given back.
pub async fn flush<I>(wire: &Shared<I>, out: &mut BytesMut) -> Result<(), AnswerError>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    if !out.is_empty() {
        let mut held = std::mem::take(out);
        poll_fn(|cx| lock(wire).poll_write_all(cx, &mut held)).await?;
        held.clear();
        if held.capacity() <= KEEP_ROOM {
            *out = held;
        }
    }
    Ok(())
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
