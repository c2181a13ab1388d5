//! The WebSocket watcher's frames, upstream to client: each complete
//! text frame is a JSON message (`catchup`, `document`) whose documents get their json result
//! where a v1 client reads it ([`super::ws_frame`]); every other frame (control frames,
//! fragments, compressed or masked frames) goes on byte for byte. Sans-IO: bytes in as the
//! tunnel reads them, bytes out to write; frames are cut on their own lengths, never on reads.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::{JsonAs, ws_frame};

/// Opcode of a text frame.
const TEXT: u8 = 0x1;
/// FIN set, RSV bits clear, opcode text: the only first byte lingo rewrites.
const WHOLE_TEXT: u8 = 0x80 | TEXT;

/// Re-tells the text frames of one watcher stream.
#[derive(Debug)]
pub struct Frames {
    buf: BytesMut,
    json_as: JsonAs,
    /// Frames longer than this go on unread, and so does everything after them.
    max: usize,
    raw: bool,
}

/// The longest frame a watcher holds to re-tell, whatever `limits.max_response` says: a
/// status frame carries one page of documents, and each open watcher may hold this much.
pub const MAX_FRAME: usize = 16 << 20;

// === impl Frames ===

impl Frames {
    /// `max` is the longest frame held to be rewritten (capped at `MAX_FRAME`).
    pub fn new(json_as: JsonAs, max: usize) -> Self {
        Frames {
            buf: BytesMut::new(),
            json_as,
            max: max.min(MAX_FRAME),
            raw: false,
        }
    }

    /// The bytes to send on after `data` arrived: every frame now complete, rewritten.
    pub fn push(&mut self, data: &[u8]) -> Bytes {
        if self.raw {
            return Bytes::copy_from_slice(data);
        }
        self.buf.extend_from_slice(data);
        let mut out = BytesMut::new();
        while let Some((header, len)) = head(&self.buf) {
            if len > self.max {
                // Too long to hold: lingo stops reading frames and passes bytes on.
                self.raw = true;
                out.extend_from_slice(&self.buf.split());
                break;
            }
            // `len <= max <= MAX_FRAME`, so this cannot overflow.
            if self.buf.len() < header + len {
                break;
            }
            let frame = self.buf.split_to(header + len).freeze();
            out.extend_from_slice(&self.rewrite(frame, header));
        }
        out.freeze()
    }

    /// What is left when the upstream closed: sent on as it is.
    pub fn finish(&mut self) -> Bytes {
        self.buf.split().freeze()
    }

    /// One complete frame, rewritten if it is a whole, unmasked, uncompressed text message.
    fn rewrite(&self, frame: Bytes, header: usize) -> Bytes {
        let masked = frame[1] & 0x80 != 0;
        if frame[0] != WHOLE_TEXT || masked {
            return frame;
        }
        let Ok(text) = std::str::from_utf8(&frame[header..]) else {
            return frame;
        };
        match ws_frame(self.json_as, text) {
            Some(text) => encode(WHOLE_TEXT, text.as_bytes()),
            None => frame,
        }
    }
}

/// The header length and payload length of the frame `buf` starts with, once its header is
/// complete.
fn head(buf: &[u8]) -> Option<(usize, usize)> {
    let (&second, mut rest) = buf.get(1..)?.split_first()?;
    let mask = if second & 0x80 != 0 { 4 } else { 0 };
    let (extended, len) = match second & 0x7f {
        126 if rest.len() >= 2 => (2, u64::from(rest.get_u16())),
        127 if rest.len() >= 8 => (8, rest.get_u64()),
        126 | 127 => return None,
        short => (0, u64::from(short)),
    };
    let header = 2 + extended + mask;
    (buf.len() >= header).then_some((header, usize::try_from(len).unwrap_or(usize::MAX)))
}

/// A server frame (unmasked) with `first` and `payload`.
pub fn encode(first: u8, payload: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(payload.len() + 10);
    out.put_u8(first);
    match payload.len() {
        n if n < 126 => out.put_u8(u8::try_from(n).unwrap_or(0)),
        n if n <= usize::from(u16::MAX) => {
            out.put_u8(126);
            out.put_u16(u16::try_from(n).unwrap_or(u16::MAX));
        }
        n => {
            out.put_u8(127);
            out.put_u64(u64::try_from(n).unwrap_or(u64::MAX));
        }
    }
    out.extend_from_slice(payload);
    out.freeze()
}
