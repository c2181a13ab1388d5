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

#[cfg(test)]
mod tests {
    use super::*;

    /// How many bytes one read takes from a peer that always has more (`repeat`), or from
    /// `short`'s few bytes, into `buf` as it is.
    fn read(reads: &mut Reads, buf: &mut BytesMut, short: Option<&[u8]>) -> usize {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let poll = match short {
            Some(mut bytes) => reads.poll_into(&mut bytes, buf, &mut cx),
            None => reads.poll_into(&mut tokio::io::repeat(b'x'), buf, &mut cx),
        };
        match poll {
            Poll::Ready(Ok(n)) => n,
            other => panic!("{other:?}"),
        }
    }

    /// A read that fills its room doubles the next one's, up to 64 KiB; a read that does not
    /// brings it back to 4 KiB.
    #[test]
    fn reads_grow_while_they_fill_their_room() {
        let (mut reads, mut buf) = (Reads::default(), BytesMut::new());
        let mut sizes = Vec::new();
        for _ in 0..6 {
            sizes.push(read(&mut reads, &mut buf, None));
            buf.clear();
        }
        assert_eq!(sizes, [4096, 8192, 16384, 32768, 65536, 65536]);
        assert_eq!(read(&mut reads, &mut buf, Some(b"a few")), 5);
        buf.clear();
        release_room(&mut buf);
        assert_eq!(read(&mut reads, &mut buf, None), MIN_READ);
        // A read that fills the room left after bytes already held counts as filling too.
        let (mut reads, mut buf) = (Reads::default(), BytesMut::with_capacity(2 * MIN_READ));
        buf.resize(MIN_READ + MIN_READ / 2, b'h');
        assert_eq!(read(&mut reads, &mut buf, None), MIN_READ / 2);
        buf.clear();
        release_room(&mut buf);
        assert_eq!(read(&mut reads, &mut buf, None), 2 * MIN_READ);
    }

    /// A buffer holding bytes gets more room when under a quarter of the smallest read is
    /// left, and reads into what it has otherwise.
    #[test]
    fn little_room_left_is_grown_first() {
        for (left, grown) in [(100, true), (MIN_READ / 4 - 1, true), (MIN_READ / 4, false)] {
            let mut buf = BytesMut::with_capacity(MIN_READ);
            buf.resize(buf.capacity() - left, b'h');
            let n = read(&mut Reads::default(), &mut buf, None);
            assert_eq!(n > left, grown, "{left} bytes of room");
            assert!(n >= left, "{left} bytes of room, {n} read");
        }
    }
}
