//! How much room a connection's next read gets, for lingo's HTTP/1.1 server and client alike.
//!
//! The smallest read fits a head or a few tokens; a read that fills the room it had doubles
//! the next one, up to 64 KiB: a long body is read in few calls, while a connection
//! that carries tokens keeps a small buffer.

use std::io;
use std::pin::pin;
use std::task::{Context, Poll, ready};

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt};

pub const MIN_READ: usize = 4 * 1024;
const MAX_READ: usize = 64 * 1024;

/// The size the next read's room grows to.
#[derive(Debug, Clone, Copy)]
pub struct Reads {
    size: usize,
}

impl Default for Reads {
    fn default() -> Self {
        Reads { size: MIN_READ }
    }
}

impl Reads {
    /// Reads what `io` has into `buf`, making room first when little is left: how many bytes
    /// (0: the other end closed).
    pub fn poll_into<R: AsyncRead + Unpin>(
        &mut self,
        io: &mut R,
        buf: &mut BytesMut,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<usize>> {
        let room = buf.capacity() - buf.len();
        if room < MIN_READ / 4 || (buf.is_empty() && room < self.size) {
            // An empty buffer whose earlier bytes are all gone takes its whole room back
            // without allocating; the tail a previous response left was read full first and
            // then read again, a second call for every streamed response on a kept connection.
            buf.reserve(self.size);
        }
        let room = buf.capacity() - buf.len();
        let n = ready!(pin!(io.read_buf(buf)).poll(cx))?;
        self.size = match n >= room {
            true => (self.size * 2).min(MAX_READ),
            false => MIN_READ,
        };
        Poll::Ready(Ok(n))
    }
}

/// Gives back `buf`'s room while nothing is in it: a connection waiting for more holds none.
pub fn release_room(buf: &mut BytesMut) {
    if buf.is_empty() && buf.capacity() > 0 {
        *buf = BytesMut::new();
    }
}
