//! A request's body, read from the connection as it is polled: no task, channel or buffer
//! of its own between the socket and whoever reads it (hyper's server hands each piece of a
//! body over a channel from the connection's task). A body silent for `limits.body_timeout`
//! while it is waited for fails with [`crate::http::idle::BodyTimeout`] (see `conn`).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite};

use super::conn::{ConnState, Shared, lock};
use crate::http::body::BoxError;
use crate::http::h1::decode::{BodyError, Decoded, Decoder};

/// A request body that cannot be read as framed: the client's fault.
#[derive(Debug, thiserror::Error)]
pub enum IncomingBodyError {
    #[error("the client closed the connection before the end of the body")]
    Cut,
    #[error("invalid chunked encoding in the request body")]
    Chunked,
    #[error("invalid trailers in the request body")]
    Trailers,
    #[error("the connection moved on to another request")]
    Gone,
    #[error("reading the request body failed: {0}")]
    Io(#[from] std::io::Error),
}

impl From<BodyError> for IncomingBodyError {
    fn from(err: BodyError) -> Self {
        match err {
            BodyError::Cut => IncomingBodyError::Cut,
            BodyError::ChunkSize | BodyError::ChunkEnd => IncomingBodyError::Chunked,
            BodyError::Trailers(_) => IncomingBodyError::Trailers,
        }
    }
}

/// The body of request number `request` on its connection.
pub struct IncomingBody<I> {
    conn: Shared<I>,
    request: u64,
}

impl<I> IncomingBody<I> {
    pub fn new(conn: Shared<I>, request: u64) -> Self {
        IncomingBody { conn, request }
    }
}

type Polled = Poll<Option<Result<Frame<Bytes>, BoxError>>>;

fn fail(err: impl Into<IncomingBodyError>) -> Polled {
    Poll::Ready(Some(Err(Box::new(err.into()))))
}

/// The body's next frame, read from the connection as far as it has one; while nothing
/// comes, the body's silence is timed (`BodyTimeout` past `limits.body_timeout`).
fn poll_body<I: AsyncRead + AsyncWrite + Unpin>(
    conn: &mut ConnState<I>,
    cx: &mut Context<'_>,
) -> Polled {
    // The client waits for the `100 Continue` once its body is asked for (hyper's rule too).
    match conn.poll_go_ahead(cx) {
        Poll::Ready(Ok(())) => {}
        Poll::Ready(Err(err)) => return fail(err),
        Poll::Pending => return Poll::Pending,
    }
    loop {
        match conn.body.decode(&mut conn.buf) {
            Ok(Decoded::Data(data)) => return Poll::Ready(Some(Ok(Frame::data(data)))),
            Ok(Decoded::Trailers(fields)) => {
                return Poll::Ready(Some(Ok(Frame::trailers(*fields))));
            }
            Ok(Decoded::End) => return Poll::Ready(None),
            Ok(Decoded::More) => {}
            Err(err) => return fail(err),
        }
        match conn.poll_fill(cx) {
            Poll::Ready(Ok(0)) => {
                let closed = conn.body.closed();
                return fail(closed.err().unwrap_or(BodyError::Cut));
            }
            // The body moved: its next wait is timed afresh.
            Poll::Ready(Ok(_)) => conn.body_due = None,
            Poll::Ready(Err(err)) => return fail(err),
            Poll::Pending => {
                conn.release_room();
                return match conn.poll_body_stalled(cx) {
                    // Itself, not wrapped: whoever tells the client finds it in the chain.
                    Poll::Ready(stalled) => Poll::Ready(Some(Err(Box::new(stalled)))),
                    Poll::Pending => Poll::Pending,
                };
            }
        }
    }
}

impl<I: AsyncRead + AsyncWrite + Unpin + Send + 'static> http_body::Body for IncomingBody<I> {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
        let mut conn = lock(&self.conn);
        if conn.request != self.request {
            return fail(IncomingBodyError::Gone);
        }
        let polled = poll_body(&mut conn, cx);
        if let Poll::Ready(Some(Err(_))) = polled {
            conn.broken = true;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        let conn = lock(&self.conn);
        conn.request != self.request || conn.body == Decoder::Done
    }

    fn size_hint(&self) -> SizeHint {
        let conn = lock(&self.conn);
        let left = match conn.request == self.request {
            true => conn.body.exact(),
            false => Some(0),
        };
        match left {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}
