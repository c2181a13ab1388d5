//! Where a body's frames are joined: the bytes an HTTP/1.1 connection has framed and not yet
//! written. lingo's server writes each response's body through a [`WriteBuf`], and its
//! client each request's body.
//!
//! How a frame travels from an upstream read to a client write:
//!
//! 1. The upstream connection is read. Over lingo's own HTTP/1.1 client the response body
//!    reads it as it is polled, on the request's own task, and the chunks one read brought
//!    leave the decoder as one frame; over hyper's (TLS, HTTP/2) a frame is what hyper hands
//!    on.
//! 2. A translated stream (`proxy::run::reframe`) gives that frame's complete lines to the
//!    translator, which writes the frames they become into the stream's queue
//!    (`translate::frames`); the queue leaves as one frame. One read, one frame: nothing is
//!    held for the next read. A pass-through frame goes on as it is.
//! 3. The wrappers on the way (the merge of a request's streams, the request's record, its
//!    in-flight slot, the idle timeout) hand each frame on as they get it.
//! 4. The response writer (`server::h1::response`) takes what the body has ready before it
//!    makes the head, without waiting, so that the head leaves in one write with it (a body
//!    that ended there is framed by its length). Then it frames each frame here, by length or
//!    chunked, and polls the body again: what the body has ready is added, and when it has
//!    nothing ready (it says `Pending`) what is held is written. A burst leaves in one write
//!    and a lone token leaves at once: nothing waits for data that has not come. Over
//!    HTTP/2, hyper sends each frame as a DATA frame and its connection task writes what its
//!    streams have ready.
//!
//! Held bytes are bounded ([`FLUSH_AT`]): past it they are written before the body is read
//! again, and a frame that would take them past it is written on its own, after them, rather
//! than copied. Between writes a buffer keeps only a little room, so a stream waiting for its
//! next token holds no burst's room.

use bytes::{BufMut, Bytes, BytesMut};

use crate::http::h1::fields::push_hex;

/// Held bytes past this are written before the body is read again.
pub const FLUSH_AT: usize = 16 * 1024;

/// Room a buffer keeps after a write: a token's frame fits, so that a stream sent a token at
/// a time takes no new room per token, and a burst's larger room is given back.
const ROOM_KEPT: usize = 512;

/// A body's bytes framed for the wire and not yet written (after the head, if it is still
/// held).
#[derive(Debug)]
pub struct WriteBuf {
    held: BytesMut,
    /// Each data frame is a chunk (RFC 9112 §7.1); else the body is written as it is.
    chunked: bool,
}

/// What a frame added to a [`WriteBuf`] asks of its writer.
#[derive(Debug)]
pub enum Added {
    /// Held: read the body's next frame, and write what is held when it has none ready.
    Held,
    /// Write what is held now.
    Full,
    /// Write what is held, then this frame as it is, then tell [`WriteBuf::large_written`].
    Large(Bytes),
}

// === impl WriteBuf ===

impl WriteBuf {
    /// A buffer holding `head` (the message's head, or nothing), for a body chunked or not.
    pub fn new(head: BytesMut, chunked: bool) -> Self {
        WriteBuf {
            held: head,
            chunked,
        }
    }

    /// Adds a data frame, framed.
    pub fn add(&mut self, data: Bytes) -> Added {
        if self.chunked {
            push_hex(&mut self.held, data.len());
        }
        if self.held.len() + data.len() > FLUSH_AT {
            return Added::Large(data);
        }
        // An empty buffer takes the room it may keep at once; a fuller one grows as a `Vec`.
        let needed = data.len() + 2;
        if self.held.capacity() - self.held.len() < needed {
            let kept = ROOM_KEPT.saturating_sub(self.held.len());
            self.held.reserve(needed.max(kept));
        }
        self.held.extend_from_slice(&data);
        self.end_chunk();
        match self.held.len() >= FLUSH_AT {
            true => Added::Full,
            false => Added::Held,
        }
    }

    /// A frame given back as [`Added::Large`] has been written: its chunk is closed.
    pub fn large_written(&mut self) {
        self.end_chunk();
    }

    /// The body's end: the last chunk, when chunked.
    pub fn end(&mut self) {
        if self.chunked {
            self.held.put_slice(b"0\r\n\r\n");
        }
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// What is held, to be written; hand it back with [`WriteBuf::written`].
    pub fn take(&mut self) -> BytesMut {
        std::mem::take(&mut self.held)
    }

    /// `held` has been written: its room is kept if it is small, else given back.
    pub fn written(&mut self, mut held: BytesMut) {
        held.clear();
        if held.capacity() <= ROOM_KEPT {
            self.held = held;
        }
    }

    fn end_chunk(&mut self) {
        if self.chunked {
            self.held.put_slice(b"\r\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn added(buf: &mut WriteBuf, data: &'static [u8]) -> &'static str {
        match buf.add(Bytes::from_static(data)) {
            Added::Held => "held",
            Added::Full => "full",
            Added::Large(_) => "large",
        }
    }

    /// Frames are held, framed, after the head; the end closes a chunked body.
    #[test]
    fn frames_are_held_framed_after_the_head() {
        let mut buf = WriteBuf::new(BytesMut::from(&b"HEAD\r\n\r\n"[..]), true);
        assert_eq!(added(&mut buf, b"hello"), "held");
        assert_eq!(added(&mut buf, b" there, a longer one"), "held");
        buf.end();
        assert_eq!(
            buf.take(),
            "HEAD\r\n\r\n5\r\nhello\r\n14\r\n there, a longer one\r\n0\r\n\r\n"
        );
        let mut plain = WriteBuf::new(BytesMut::new(), false);
        assert_eq!(added(&mut plain, b"a"), "held");
        assert_eq!(added(&mut plain, b"b"), "held");
        plain.end();
        assert_eq!(plain.take(), "ab");
    }

    /// Held bytes reaching the bound ask for a write; a frame that would pass it is given
    /// back whole, its chunk-size line held before it and its chunk closed after.
    #[test]
    fn the_bound_asks_for_a_write_and_a_large_frame_is_not_copied() {
        let mut buf = WriteBuf::new(BytesMut::new(), false);
        let almost = Bytes::from(vec![b'x'; FLUSH_AT - 1]);
        assert!(matches!(buf.add(almost), Added::Held));
        assert!(matches!(buf.add(Bytes::from_static(b"y")), Added::Full));
        buf.take();
        let mut buf = WriteBuf::new(BytesMut::from(&b"HEAD"[..]), true);
        let large = Bytes::from(vec![b'z'; FLUSH_AT]);
        let Added::Large(given) = buf.add(large.clone()) else {
            panic!("a large frame is held")
        };
        assert_eq!(given.as_ptr(), large.as_ptr(), "given back, not copied");
        assert_eq!(buf.take(), "HEAD4000\r\n");
        buf.large_written();
        assert_eq!(buf.take(), "\r\n");
    }

    /// After a write a small buffer keeps its room; a burst's is given back.
    #[test]
    fn a_write_gives_back_a_bursts_room() {
        let mut buf = WriteBuf::new(BytesMut::new(), true);
        buf.add(Bytes::from_static(b"token"));
        let held = buf.take();
        let room = held.capacity();
        assert!(room <= ROOM_KEPT, "{room}");
        buf.written(held);
        assert_eq!((buf.is_empty(), buf.held.capacity()), (true, room));
        buf.add(Bytes::from(vec![b'b'; 4 * ROOM_KEPT]));
        let held = buf.take();
        buf.written(held);
        assert_eq!(buf.held.capacity(), 0);
    }
}
