//! The connection's socket and the bytes read from it, shared by the connection (which reads
//! heads and writes responses) and the request body on its way (which may be polled by another
//! task, hyper's client for a TLS upstream). Each is polled in turn, never at once: the
//! connection reads only once the body is read, and writes only the response.
//!
//! A connection waiting for its next request, or for the next token of a streamed response,
//! holds no read buffer: a read into nothing is made on the stack and what it brought is
//! copied into room of its size (hyper keeps 8 KiB a connection for its whole life).
//!
//! A request's body may be silent for `limits.body_timeout` at most (nginx's
//! `client_body_timeout`): the silence is timed only while the body is waited for, from the
//! first wait after it was asked for or last brought bytes, by one sleep the connection
//! makes the first time a body keeps it waiting and keeps for its life (moved on when it
//! fires early, as `http::idle` moves its own; one left set when its body came to an end
//! wakes the connection once, for nothing).

use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep, sleep_until};

use crate::base::clock;
use crate::http::h1::decode::{Decoded, Decoder};
use crate::http::h1::read::{Reads, release_room};
use crate::http::idle::BodyTimeout;

/// The stack read's size: a request head and a small body fit.
const STACK_READ: usize = 4 * 1024;
/// What a read made only to notice a client's close may take.
const WATCH_READ: usize = 512;

/// `100 Continue`, owed to a client that waits for it before sending its body.
pub const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// The socket and what was read from it.
pub struct ConnState<I> {
    /// `None` once handed over to an upgrade.
    pub io: Option<I>,
    /// Bytes read and not yet used.
    pub buf: BytesMut,
    /// The current request's body.
    pub body: Decoder,
    /// Which request the body is: a body left behind by an earlier request reads nothing.
    pub request: u64,
    /// How much of [`CONTINUE`] is written, while it is owed.
    pub continue_written: Option<usize>,
    /// The current request's body failed (it cannot be read to its end): its response says
    /// `Connection: close`.
    pub broken: bool,
    /// When the body waited for now has been silent too long (`None`: not timed yet).
    pub body_due: Option<Instant>,
    body_timeout: Duration,
    body_sleep: Option<Pin<Box<Sleep>>>,
    reads: Reads,
}

pub type Shared<I> = Arc<Mutex<ConnState<I>>>;

pub fn lock<I>(conn: &Shared<I>) -> MutexGuard<'_, ConnState<I>> {
    conn.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

// === impl Wire ===

impl<I: AsyncRead + AsyncWrite + Unpin> ConnState<I> {
    /// `io`, whose request bodies may be silent for `body_timeout` at most.
    pub fn new(io: I, body_timeout: Duration) -> Self {
        ConnState {
            io: Some(io),
            buf: BytesMut::new(),
            body: Decoder::Done,
            request: 0,
            continue_written: None,
            broken: false,
            body_due: None,
            body_timeout,
            body_sleep: None,
            reads: Reads::default(),
        }
    }

    /// Reads what the socket has into the buffer: how many bytes (0: the client closed).
    pub fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let Some(io) = self.io.as_mut() else {
            return Poll::Ready(Ok(0));
        };
        if self.buf.capacity() == 0 {
            let mut stack = [MaybeUninit::<u8>::uninit(); STACK_READ];
            let mut read = ReadBuf::uninit(&mut stack);
            ready!(Pin::new(io).poll_read(cx, &mut read))?;
            self.buf = BytesMut::from(read.filled());
            return Poll::Ready(Ok(read.filled().len()));
        }
        self.reads.poll_into(io, &mut self.buf, cx)
    }

    /// Ready once the body waited for has been silent for `body_timeout` (see the module's
    /// doc); the silence is timed from this first wait when none is being timed.
    pub fn poll_body_stalled(&mut self, cx: &mut Context<'_>) -> Poll<BodyTimeout> {
        let due = *self
            .body_due
            .get_or_insert_with(|| clock::after(self.body_timeout));
        let sleep = self
            .body_sleep
            .get_or_insert_with(|| Box::pin(sleep_until(due)));
        if sleep.deadline() > due {
            sleep.as_mut().reset(due);
        }
        loop {
            ready!(sleep.as_mut().poll(cx));
            // Read fresh: the poll's reading may predate the timer's firing (`http::idle`).
            if due <= clock::fresh() {
                return Poll::Ready(BodyTimeout(self.body_timeout));
            }
            // Fired for an earlier wait's deadline.
            sleep.as_mut().reset(due);
        }
    }

    /// Gives back the buffer's room while nothing is in it.
    pub fn release_room(&mut self) {
        release_room(&mut self.buf);
    }

    /// Ready(true) when the client has closed (or its socket failed) while a response is
    /// being made. Only watched once the request's body is read and nothing of the next
    /// request is here: bytes that come are kept for the next request, and watching stops.
    pub fn poll_client_gone(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        let Some(io) = self.io.as_mut() else {
            return Poll::Pending;
        };
        if self.body != Decoder::Done || !self.buf.is_empty() {
            return Poll::Pending;
        }
        let mut stack = [MaybeUninit::<u8>::uninit(); WATCH_READ];
        let mut read = ReadBuf::uninit(&mut stack);
        match Pin::new(io).poll_read(cx, &mut read) {
            Poll::Ready(Ok(())) if read.filled().is_empty() => Poll::Ready(true),
            Poll::Ready(Ok(())) => {
                self.buf = BytesMut::from(read.filled());
                Poll::Pending
            }
            Poll::Ready(Err(_)) => Poll::Ready(true),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Writes all of `out`.
    pub fn poll_write_all(
        &mut self,
        cx: &mut Context<'_>,
        out: &mut impl Buf,
    ) -> Poll<io::Result<()>> {
        let Some(io) = self.io.as_mut() else {
            return Poll::Ready(Err(io::ErrorKind::NotConnected.into()));
        };
        while out.has_remaining() {
            match ready!(Pin::new(&mut *io).poll_write(cx, out.chunk()))? {
                0 => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                n => out.advance(n),
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Writes what is left of a `100 Continue` being sent.
    pub fn poll_go_ahead(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some(at) = self.continue_written else {
            return Poll::Ready(Ok(()));
        };
        let mut rest = &CONTINUE[at..];
        let written = self.poll_write_all(cx, &mut rest);
        self.continue_written = (!rest.is_empty()).then(|| CONTINUE.len() - rest.len());
        written
    }

    /// After a response: whether the request's body is all read, reading what of it is already
    /// here (hyper's rule: a body left unread is drained only as far as it has arrived;
    /// otherwise the connection cannot be reused).
    pub fn drained(&mut self) -> bool {
        loop {
            match self.body.decode(&mut self.buf) {
                Ok(Decoded::Data(_) | Decoded::Trailers(_)) => {}
                Ok(Decoded::End) => return true,
                Ok(Decoded::More) | Err(_) => return false,
            }
        }
    }
}
