//! The NDJSON line framer: complete lines out of arbitrary chunks, with a length cap.
//!
//! Works on bytes, never on chunks: a line split across reads, several lines in one read and
//! a last line without a newline all come out the same. A line that grows past the cap is an
//! error at once (before its newline arrives), so a broken upstream cannot grow the buffer.

/// Why the framer gave up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("upstream sent a line longer than {limit} bytes")]
    LineTooLong { limit: usize },
}

/// Lines are lent out of one buffer, not split off it: the translator only reads a line, so
/// no `Bytes` (and no count of the buffer's users) is made per line.
#[derive(Debug)]
pub struct LineFramer {
    buf: Vec<u8>,
    /// Where the bytes not yet framed start in `buf`.
    start: usize,
    max_line: usize,
    /// How much of `buf` past `start` is known to hold no newline, so a long line is
    /// scanned once.
    scanned: usize,
}

/// A buffer larger than this is freed, not kept, once every line in it is framed: a stream
/// idle between lines keeps no burst's room (one idle mid-line keeps its buffer: the line
/// so far and the read that brought it).
const KEPT: usize = 4096;

// === impl LineFramer ===

impl LineFramer {
    pub fn new(max_line: usize) -> Self {
        LineFramer {
            buf: Vec::new(),
            start: 0,
            max_line,
            scanned: 0,
        }
    }

    /// Adds a chunk of the body.
    pub fn push(&mut self, chunk: &[u8]) {
        if self.start > 0 {
            // A line begun in an earlier chunk moves to the front (short, and only then).
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The complete lines buffered and not yet framed: their bytes and how many. A line
    /// not yet ended counts for nothing, and the part of it already searched for its end is
    /// not searched again.
    pub fn pending(&self) -> (usize, usize) {
        let rest = &self.buf[self.start..];
        let Some(last) = memchr::memrchr(b'\n', &rest[self.scanned..]) else {
            return (0, 0);
        };
        let bytes = self.scanned + last + 1;
        // Counted, not iterated: memchr counts a run in one vector pass.
        let lines = memchr::memchr_iter(b'\n', &rest[self.scanned..bytes]).count();
        (bytes, lines)
    }

    /// The next complete, non-empty line (without `\n` or `\r\n`), if one is buffered.
    pub fn next_line(&mut self) -> Option<Result<&[u8], FrameError>> {
        loop {
            let rest = &self.buf[self.start..];
            let Some(at) = memchr::memchr(b'\n', &rest[self.scanned..]) else {
                self.scanned = rest.len();
                if rest.len() > self.max_line {
                    return Some(Err(self.too_long()));
                }
                if rest.is_empty() {
                    self.reset();
                }
                return None;
            };
            let end = self.scanned + at;
            self.scanned = 0;
            if end > self.max_line {
                return Some(Err(self.too_long()));
            }
            let line = self.start;
            self.start += end + 1;
            let len = trim_end(&self.buf[line..line + end]);
            if len > 0 {
                return Some(Ok(&self.buf[line..line + len]));
            }
        }
    }

    /// At the end of the body: the last line if it had no newline.
    pub fn finish(&mut self) -> Option<Result<&[u8], FrameError>> {
        self.scanned = 0;
        let line = self.start;
        self.start = self.buf.len();
        let len = trim_end(&self.buf[line..]);
        if len > self.max_line {
            return Some(Err(self.too_long()));
        }
        (len > 0).then(|| Ok(&self.buf[line..line + len]))
    }

    /// Every line framed: the buffer starts over, or is freed if it grew large.
    fn reset(&mut self) {
        if self.buf.capacity() > KEPT {
            self.buf = Vec::new();
        } else {
            self.buf.clear();
        }
        self.start = 0;
    }

    fn too_long(&self) -> FrameError {
        FrameError::LineTooLong {
            limit: self.max_line,
        }
    }
}

/// Length of `line` without trailing `\r` and blanks.
fn trim_end(line: &[u8]) -> usize {
    line.iter()
        .rposition(|b| !matches!(b, b'\r' | b' ' | b'\t'))
        .map_or(0, |p| p + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn lines(chunks: &[&[u8]], max: usize) -> Vec<Result<Bytes, FrameError>> {
        let mut framer = LineFramer::new(max);
        let mut out = Vec::new();
        let owned = |line: Result<&[u8], FrameError>| line.map(Bytes::copy_from_slice);
        for chunk in chunks {
            framer.push(chunk);
            while let Some(line) = framer.next_line() {
                let stop = line.is_err();
                out.push(owned(line));
                if stop {
                    return out;
                }
            }
        }
        out.extend(framer.finish().map(owned));
        out
    }

    #[test]
    fn frames_lines_however_they_are_chunked() {
        let ok = |s: &'static str| Ok(Bytes::from_static(s.as_bytes()));
        type Case<'a> = (&'a [&'a [u8]], Vec<Result<Bytes, FrameError>>);
        let cases: &[Case] = &[
            (&[b"a\nb\n"], vec![ok("a"), ok("b")]),
            (&[b"a", b"b\n", b"c"], vec![ok("ab"), ok("c")]),
            (&[b"a\r\n\n\nb\r\n"], vec![ok("a"), ok("b")]),
            (&[b"", b"x"], vec![ok("x")]),
            (&[b"\n\n"], vec![]),
            (
                &[b"a\r", b"\nb", b"c", b"d\ne\n", b"f"],
                vec![ok("a"), ok("bcd"), ok("e"), ok("f")],
            ),
            (&[b"ab\nc", b"", b"d\n"], vec![ok("ab"), ok("cd")]),
        ];
        for (chunks, want) in cases {
            assert_eq!(&lines(chunks, 100), want, "{chunks:?}");
        }
    }

    /// Once every line is framed, a large buffer is freed and a small one kept for the next
    /// read; a line begun stays, however large the buffer.
    #[test]
    fn an_idle_framer_holds_no_large_buffer() {
        let mut framer = LineFramer::new(1 << 20);
        let burst = b"0123456789abcde\n".repeat(KEPT / 8);
        framer.push(&burst);
        framer.push(b"part");
        let mut count = 0;
        while let Some(line) = framer.next_line() {
            assert_eq!(line.unwrap(), b"0123456789abcde");
            count += 1;
        }
        assert_eq!(count, KEPT / 8);
        assert!(
            framer.buf.capacity() > KEPT,
            "a line begun keeps its buffer"
        );
        framer.push(b"ial\n");
        assert_eq!(framer.next_line().unwrap().unwrap(), b"partial");
        assert!(framer.next_line().is_none());
        assert_eq!(framer.buf.capacity(), 0, "freed once all is framed");
        framer.push(b"x\n");
        assert_eq!(framer.next_line().unwrap().unwrap(), b"x");
        assert!(framer.next_line().is_none());
        assert!(framer.buf.capacity() > 0, "a small buffer is kept");
    }

    /// What is pending is the complete lines only, however the reads cut them, and the
    /// buffer holds no more than the line not yet ended and the last read.
    #[test]
    fn pending_lines_and_what_the_buffer_holds() {
        let mut framer = LineFramer::new(1 << 20);
        assert_eq!(framer.pending(), (0, 0));
        framer.push(b"ab\ncd\r\nef");
        assert_eq!(framer.pending(), (7, 2), "`ef` has not ended");
        assert_eq!(framer.next_line().unwrap().unwrap(), b"ab");
        assert_eq!(framer.pending(), (4, 1));
        assert_eq!(framer.next_line().unwrap().unwrap(), b"cd");
        assert!(framer.next_line().is_none());
        assert_eq!(framer.pending(), (0, 0));
        framer.push(b"gh");
        assert_eq!(framer.pending(), (0, 0));
        framer.push(b"\n\nij\n"); // `efgh`, a blank line, `ij`
        assert_eq!(framer.pending(), (9, 3));
        // Reads that each end mid-line: the framed ones do not pile up.
        let mut framer = LineFramer::new(1 << 20);
        for _ in 0..1000 {
            framer.push(b"0123456789\n01234");
            while let Some(line) = framer.next_line() {
                line.unwrap();
            }
            assert!(framer.buf.len() - framer.start <= 5);
            assert!(framer.buf.len() <= 5 + 16, "{}", framer.buf.len());
        }
    }

    #[test]
    fn a_long_line_fails_before_its_newline() {
        let too_long = Err(FrameError::LineTooLong { limit: 4 });
        assert_eq!(
            lines(&[b"abcd\n", b"abcde"], 4),
            vec![Ok(Bytes::from_static(b"abcd")), too_long.clone()]
        );
        assert_eq!(lines(&[b"abc", b"def", b"\n"], 4), vec![too_long]);
    }
}
