//! The NDJSON line framer: complete lines out of arbitrary chunks, with a length cap.
//!
//! Works on bytes, never on chunks: a line split across reads, several lines in one read and
//! a last line without a newline all come out the same. A line that grows past the cap is an
//! error at once (before its newline arrives), so a broken upstream cannot grow the buffer.

use bytes::{Bytes, BytesMut};

/// Why the framer gave up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("upstream sent a line longer than {limit} bytes")]
    LineTooLong { limit: usize },
}

#[derive(Debug)]
pub struct LineFramer {
    buf: BytesMut,
    max_line: usize,
    /// How much of `buf` is known to hold no newline, so a long line is scanned once.
    scanned: usize,
}

// === impl LineFramer ===

impl LineFramer {
    pub fn new(max_line: usize) -> Self {
        LineFramer {
            buf: BytesMut::new(),
            max_line,
            scanned: 0,
        }
    }

    /// Adds a chunk of the body.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete, non-empty line (without `\n` or `\r\n`), if one is buffered.
    pub fn next_line(&mut self) -> Option<Result<Bytes, FrameError>> {
        loop {
            let Some(at) = memchr::memchr(b'\n', &self.buf[self.scanned..]) else {
                self.scanned = self.buf.len();
                return (self.buf.len() > self.max_line).then_some(Err(self.too_long()));
            };
            let end = self.scanned + at;
            self.scanned = 0;
            if end > self.max_line {
                return Some(Err(self.too_long()));
            }
            let mut line = self.buf.split_to(end + 1).freeze();
            line.truncate(trim_end(&line[..end]));
            if !line.is_empty() {
                return Some(Ok(line));
            }
        }
    }

    /// At the end of the body: the last line if it had no newline.
    pub fn finish(&mut self) -> Option<Result<Bytes, FrameError>> {
        self.scanned = 0;
        let rest = self.buf.split().freeze();
        let len = trim_end(&rest);
        if len > self.max_line {
            return Some(Err(self.too_long()));
        }
        (len > 0).then(|| Ok(rest.slice(..len)))
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

    fn lines(chunks: &[&[u8]], max: usize) -> Vec<Result<Bytes, FrameError>> {
        let mut framer = LineFramer::new(max);
        let mut out = Vec::new();
        for chunk in chunks {
            framer.push(chunk);
            while let Some(line) = framer.next_line() {
                let stop = line.is_err();
                out.push(line);
                if stop {
                    return out;
                }
            }
        }
        out.extend(framer.finish());
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
        ];
        for (chunks, want) in cases {
            assert_eq!(&lines(chunks, 100), want, "{chunks:?}");
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
