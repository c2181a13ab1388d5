//! A stream's frames waiting to be sent, and where a translator writes them.

use bytes::Bytes;

use super::frozen;

/// The frames the lines of one upstream read became, in order, in one buffer: they leave as
/// one frame ([`Frames::take`]), so the layers after the translator handle a burst of tokens
/// once (`http::write_buf` tells the rest of a frame's way). A translator on a token's path
/// writes its frames here in place ([`FrameSink`]); a frame made whole is copied in.
#[derive(Debug, Default)]
pub struct Frames(Vec<u8>);

impl Frames {
    /// Queues a frame made whole, after every frame queued so far.
    pub fn push(&mut self, frame: Bytes) {
        self.0.extend_from_slice(&frame);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Makes room for `additional` bytes of frames at once, before a read's lines are
    /// translated, rather than growing the buffer a frame at a time.
    pub fn reserve(&mut self, additional: usize) {
        self.0.reserve(additional);
    }

    /// Every frame queued, as one frame (`None` when none is).
    pub fn take(&mut self) -> Option<Bytes> {
        (!self.0.is_empty()).then(|| frozen(std::mem::take(&mut self.0)))
    }
}

impl Extend<Bytes> for Frames {
    fn extend<I: IntoIterator<Item = Bytes>>(&mut self, frames: I) {
        frames.into_iter().for_each(|frame| self.push(frame));
    }
}

/// Where a translator writes its frames: in place at the end of a stream's queue
/// ([`Frames`]), or each made whole (a list: `LineTranslator::on_line`).
pub trait FrameSink {
    /// One frame, written by `write` onto the end of the buffer it is given.
    fn write_frame(&mut self, write: impl FnOnce(&mut Vec<u8>));
}

impl FrameSink for Frames {
    fn write_frame(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        write(&mut self.0);
    }
}

impl FrameSink for Vec<Bytes> {
    fn write_frame(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        let mut frame = Vec::new();
        write(&mut frame);
        self.push(frozen(frame));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames leave in the order they came, whole or written in place, as one.
    #[test]
    fn frames_keep_their_order_and_leave_as_one() {
        let mut frames = Frames::default();
        assert!(frames.is_empty());
        assert_eq!(frames.take(), None);
        frames.write_frame(|out| out.extend_from_slice(b"a"));
        frames.push(Bytes::from_static(b"b"));
        frames.write_frame(|out| out.extend_from_slice(b"c"));
        frames.extend([Bytes::from_static(b"d")]);
        assert!(!frames.is_empty());
        assert_eq!(frames.take().unwrap(), "abcd");
        assert!(frames.is_empty());
        assert_eq!(frames.take(), None);
    }

    #[test]
    fn a_list_gets_each_frame_whole() {
        let mut list: Vec<Bytes> = Vec::new();
        list.write_frame(|out| out.extend_from_slice(b"a"));
        list.write_frame(|out| out.extend_from_slice(b"b"));
        assert_eq!(list, ["a", "b"]);
    }
}
