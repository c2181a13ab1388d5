//! A body's framing (RFC 9112 §6.3, §7.1), decoded from the bytes read so far: by length,
//! chunked, or close-delimited. The same for a request lingo serves and a
//! response it reads.
//!
//! Pure: the connection reads into a buffer, and [`Decoder::decode`] takes what it can out of
//! it. A token stream's chunks come out as slices of the bytes read, without copies; the
//! chunk-size lines and trailers around them are checked as strictly as hyper checks them
//! (CRLF line ends, hex sizes that fit in 64 bits), so that a response cannot be read two ways.

use bytes::{Buf, Bytes, BytesMut};
use hyper::HeaderMap;

use super::fields::{self, FieldError};

/// The longest chunk-size line (with its extensions) and the largest trailer section read.
const MAX_LINE: usize = 4096;
const MAX_TRAILERS: usize = 16 * 1024;

/// Where a body's decoding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoder {
    /// `Content-Length`: this many bytes left.
    Length(u64),
    /// Chunked, at this point of a chunk.
    Chunked(Chunk),
    /// No framing: the body ends when the upstream closes the connection.
    CloseDelimited,
    /// Read to its end.
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunk {
    /// Before a chunk-size line.
    Size,
    /// Inside a chunk's data: this many bytes left.
    Data(u64),
    /// After a chunk's data: its CRLF.
    DataEnd,
    /// After the last (zero-size) chunk: the trailer section.
    Trailers,
}

/// What one call of [`Decoder::decode`] found.
#[derive(Debug, PartialEq)]
pub enum Decoded {
    Data(Bytes),
    /// Boxed: rare, and a map held inline would make every step of a chunk move it (a test
    /// holds the enum to the size of its data).
    Trailers(Box<HeaderMap>),
    /// Nothing more in the buffer: read more.
    More,
    /// The body's end.
    End,
}

/// A body that cannot be read as framed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error("the peer closed the connection before the end of the body")]
    Cut,
    #[error("invalid chunk size line")]
    ChunkSize,
    #[error("chunk data not followed by CRLF")]
    ChunkEnd,
    #[error("invalid trailers: {0}")]
    Trailers(FieldError),
}

// === impl Decoder ===

impl Decoder {
    /// Takes the next piece of the body out of `buf`.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Decoded, BodyError> {
        self.next(buf, None)
    }

    /// [`Decoder::decode`], but the next piece of data is copied onto the end of `onto`
    /// (and `None` returned) instead of split off `buf`: for a caller joining pieces, a split
    /// would take a count on the buffer and give it back for nothing. The whole chunks at the
    /// front of `buf` are copied in one go (`whole_chunks`).
    pub fn decode_onto(
        &mut self,
        buf: &mut BytesMut,
        onto: &mut BytesMut,
    ) -> Result<Option<Decoded>, BodyError> {
        self.whole_chunks(buf, onto);
        match self.next(buf, Some(onto))? {
            Decoded::Data(_) => Ok(None),
            other => Ok(Some(other)),
        }
    }

    /// The next piece: data split off `buf`, or with `onto`, copied onto it (and told as
    /// data of no bytes).
    fn next(
        &mut self,
        buf: &mut BytesMut,
        mut onto: Option<&mut BytesMut>,
    ) -> Result<Decoded, BodyError> {
        loop {
            match *self {
                Decoder::Done => return Ok(Decoded::End),
                Decoder::Length(0) => *self = Decoder::Done,
                Decoder::Length(left) => {
                    let Some((taken, data)) = take(buf, left, onto) else {
                        return Ok(Decoded::More);
                    };
                    *self = match left - taken {
                        0 => Decoder::Done,
                        left => Decoder::Length(left),
                    };
                    return Ok(Decoded::Data(data));
                }
                Decoder::CloseDelimited => {
                    return Ok(take(buf, u64::MAX, onto)
                        .map_or(Decoded::More, |(_, data)| Decoded::Data(data)));
                }
                Decoder::Chunked(chunk) => match chunked(chunk, buf, onto.as_deref_mut())? {
                    Step::Next(next) => *self = next,
                    Step::Out(next, decoded) => {
                        *self = next;
                        return Ok(decoded);
                    }
                },
            }
        }
    }

    /// The chunks at the front of `buf` that are all there (size line, data, CRLF), their
    /// data copied onto `onto`, in one loop. A stream's burst is many small chunks, and the
    /// state machine takes three steps a chunk, each a state and a piece moved in and out.
    /// What is not whole, the last chunk and anything wrong are left where they are, for
    /// [`Decoder::next`] to read (or refuse).
    fn whole_chunks(&mut self, buf: &mut BytesMut, onto: &mut BytesMut) {
        let mut at = match *self {
            Decoder::Chunked(Chunk::Size) => 0,
            Decoder::Chunked(Chunk::DataEnd) if buf.starts_with(b"\r\n") => 2,
            _ => return,
        };
        while let Some((data, next)) = whole_chunk(&buf[at..]) {
            onto.extend_from_slice(&buf[at + data.start..at + data.end]);
            at += next;
        }
        if at > 0 {
            buf.advance(at);
            *self = Decoder::Chunked(Chunk::Size);
        }
    }

    /// The connection closed (nothing left in the buffer): the end of a body framed by it,
    /// or else one cut short.
    pub fn closed(&mut self) -> Result<(), BodyError> {
        match *self {
            Decoder::CloseDelimited | Decoder::Done => {
                *self = Decoder::Done;
                Ok(())
            }
            Decoder::Length(_) | Decoder::Chunked(_) => Err(BodyError::Cut),
        }
    }

    /// The body's exact length, when its framing says it up front.
    pub fn exact(&self) -> Option<u64> {
        match self {
            Decoder::Length(n) => Some(*n),
            Decoder::Done => Some(0),
            _ => None,
        }
    }
}

/// Up to `left` bytes from the front of `buf` (`None` when it is empty), and how many:
/// split off, or copied onto `onto` (then the `Bytes` is empty).
fn take(buf: &mut BytesMut, left: u64, onto: Option<&mut BytesMut>) -> Option<(u64, Bytes)> {
    if buf.is_empty() {
        return None;
    }
    let n = usize::try_from(left).map_or(buf.len(), |left| left.min(buf.len()));
    let data = match onto {
        Some(onto) => {
            onto.extend_from_slice(&buf[..n]);
            buf.advance(n);
            Bytes::new()
        }
        None => buf.split_to(n).freeze(),
    };
    Some((n as u64, data))
}

/// The chunk `bytes` starts with, if it is all there and is not the last: where its data
/// lies, and where the next chunk starts.
fn whole_chunk(bytes: &[u8]) -> Option<(std::ops::Range<usize>, usize)> {
    let lf = line_end(&bytes[..bytes.len().min(MAX_LINE)])?;
    let size = usize::try_from(parse_size(&bytes[..lf])?).ok()?;
    let start = lf + 1;
    let end = start.checked_add(size)?;
    let next = end.checked_add(2)?;
    (size > 0 && bytes.get(end..next)? == b"\r\n").then_some((start..end, next))
}

/// One step of chunked decoding: a new state, and maybe something for the caller.
enum Step {
    Next(Decoder),
    Out(Decoder, Decoded),
}

fn chunked(
    chunk: Chunk,
    buf: &mut BytesMut,
    onto: Option<&mut BytesMut>,
) -> Result<Step, BodyError> {
    let more = |at| Ok(Step::Out(Decoder::Chunked(at), Decoded::More));
    match chunk {
        Chunk::Size => match size_line(buf)? {
            None => more(Chunk::Size),
            Some(0) => Ok(Step::Next(Decoder::Chunked(Chunk::Trailers))),
            Some(size) => Ok(Step::Next(Decoder::Chunked(Chunk::Data(size)))),
        },
        Chunk::Data(left) => match take(buf, left, onto) {
            None => more(Chunk::Data(left)),
            Some((taken, data)) => {
                let left = left - taken;
                let next = if left == 0 {
                    Chunk::DataEnd
                } else {
                    Chunk::Data(left)
                };
                Ok(Step::Out(Decoder::Chunked(next), Decoded::Data(data)))
            }
        },
        Chunk::DataEnd if buf.len() < 2 => more(Chunk::DataEnd),
        Chunk::DataEnd if buf.starts_with(b"\r\n") => {
            buf.advance(2);
            Ok(Step::Next(Decoder::Chunked(Chunk::Size)))
        }
        Chunk::DataEnd => Err(BodyError::ChunkEnd),
        Chunk::Trailers => trailers(buf),
    }
}

/// A whole chunk-size line taken from `buf`: its size (extensions are skipped); `None` when
/// the line is not all there yet.
fn size_line(buf: &mut BytesMut) -> Result<Option<u64>, BodyError> {
    let Some(lf) = line_end(&buf[..buf.len().min(MAX_LINE)]) else {
        return if buf.len() >= MAX_LINE {
            Err(BodyError::ChunkSize)
        } else {
            Ok(None)
        };
    };
    let size = parse_size(&buf[..lf]).ok_or(BodyError::ChunkSize)?;
    buf.advance(lf + 1);
    Ok(Some(size))
}

/// Where the first LF in `bytes` is. A chunk-size line is most often a few bytes, which a
/// plain scan reads in less than `memchr` spends choosing its search; a longer one gets
/// `memchr`.
fn line_end(bytes: &[u8]) -> Option<usize> {
    const SHORT: usize = 16;
    let (head, rest) = bytes.split_at(bytes.len().min(SHORT));
    match head.iter().position(|&b| b == b'\n') {
        Some(at) => Some(at),
        None => memchr::memchr(b'\n', rest).map(|at| at + SHORT),
    }
}

/// `1*HEXDIG [ BWS ";" extensions ] CR` (the LF already cut off). The digits are read in
/// the same pass that finds their end (no `str` is made to be parsed again), and a line of
/// digits alone, the usual one, is done there.
/// Only the value may overflow 64 bits, not the spelling: leading zeros are not counted
/// (hyper reads any number of them), and at most 16 digits after them make no overflow.
fn parse_size(line: &[u8]) -> Option<u64> {
    let line = line.strip_suffix(b"\r")?;
    let (mut size, mut digits, mut significant) = (0u64, 0, 0);
    for &b in line {
        let digit = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' | b'A'..=b'F' => (b | 0x20) - b'a' + 10,
            _ => break,
        };
        size = size << 4 | u64::from(digit);
        digits += 1;
        significant += usize::from(significant > 0 || digit > 0);
    }
    if digits == 0 || significant > 16 {
        return None;
    }
    let rest = &line[digits..];
    if rest.is_empty() {
        return Some(size);
    }
    // Only spaces and tabs may follow the digits (hyper's rule too): no stray CR or other
    // whitespace that another reader could take differently.
    let rest = &rest[rest
        .iter()
        .take_while(|&&b| b == b' ' || b == b'\t')
        .count()..];
    if !(rest.is_empty() || rest.starts_with(b";")) {
        return None;
    }
    // An extension may hold any visible byte, but no bare CR or other control.
    if rest.iter().any(|&b| b < b' ' && b != b'\t' || b == 0x7f) {
        return None;
    }
    Some(size)
}

/// The trailer section after the last chunk: nothing (a bare CRLF), or fields then CRLF.
///
/// Every line of it ends in CRLF (RFC 9112 §7.1.2), and a bare LF is refused rather than
/// taken for a line's end: read one way, `x: 1\n\n` ends the section and what follows is
/// the next request; read another (hyper's: a trailer line runs to its CR), what follows is
/// more of the section, up to the next blank line. Refused, neither reading is ever made, and
/// the connection closes with the body's failure.
fn trailers(buf: &mut BytesMut) -> Result<Step, BodyError> {
    let more = Ok(Step::Out(Decoder::Chunked(Chunk::Trailers), Decoded::More));
    if buf.starts_with(b"\r\n") {
        buf.advance(2);
        return Ok(Step::Out(Decoder::Done, Decoded::End));
    }
    let window = &buf[..buf.len().min(MAX_TRAILERS)];
    let end = memchr::memmem::find(window, b"\r\n\r\n");
    if bare_lf(&window[..end.map_or(window.len(), |at| at + 4)]) {
        return Err(BodyError::Trailers(FieldError::Malformed(
            "a trailer line not ending in CRLF".into(),
        )));
    }
    match end {
        Some(at) => {
            // Taken out only once read: a failed decode leaves the buffer as it was, so that
            // the next call fails alike.
            let section = Bytes::copy_from_slice(&buf[..at + 4]);
            let fields = fields::fields(&section).map_err(BodyError::Trailers)?;
            buf.advance(at + 4);
            Ok(Step::Out(
                Decoder::Done,
                Decoded::Trailers(Box::new(fields)),
            ))
        }
        None if buf.len() >= MAX_TRAILERS => Err(BodyError::Trailers(FieldError::TooLarge)),
        None => more,
    }
}

/// Whether `bytes` has an LF that does not end a CRLF.
fn bare_lf(bytes: &[u8]) -> bool {
    memchr::memchr_iter(b'\n', bytes).any(|at| at == 0 || bytes[at - 1] != b'\r')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Trailers, which are rare, are boxed so that every step of a chunk moves no more than
    /// its data.
    #[test]
    fn a_decoded_piece_is_the_size_of_its_data() {
        let data = std::mem::size_of::<Bytes>() + std::mem::size_of::<usize>();
        assert!(std::mem::size_of::<Decoded>() <= data);
    }

    /// The first LF, wherever it is: in the scanned head, just past it, far after, or none.
    #[test]
    fn line_ends_are_found_as_memchr_finds_them() {
        for len in [0, 1, 15, 16, 17, 40] {
            for at in 0..=len {
                let mut bytes = vec![b'a'; len];
                if at < len {
                    bytes[at] = b'\n';
                    bytes.push(b'\n');
                }
                assert_eq!(
                    line_end(&bytes),
                    memchr::memchr(b'\n', &bytes),
                    "{len} {at}"
                );
            }
        }
    }

    /// Decodes `input` fed in pieces of `step` bytes; the data joined, whether trailers came,
    /// and how it ended (`Ok` once `End` came; the connection's close is fed after the input).
    fn run(decoder: Decoder, input: &[u8], step: usize) -> (Vec<u8>, bool, Result<(), BodyError>) {
        let split = decoding(decoder, input, step, false);
        // Copied onto a buffer instead of split off, the same.
        assert_eq!(decoding(decoder, input, step, true), split, "{input:?}");
        split
    }

    /// [`run`], its data split off the buffer, or with `onto`, copied onto the data so far.
    fn decoding(
        mut decoder: Decoder,
        input: &[u8],
        step: usize,
        onto: bool,
    ) -> (Vec<u8>, bool, Result<(), BodyError>) {
        let mut buf = BytesMut::new();
        let (mut data, mut trailers) = (BytesMut::new(), false);
        let mut pieces = input.chunks(step.max(1));
        loop {
            let decoded = match onto {
                true => decoder.decode_onto(&mut buf, &mut data),
                false => decoder.decode(&mut buf).map(Some),
            };
            match decoded {
                Ok(None) => assert!(onto),
                Ok(Some(Decoded::Data(d))) => {
                    assert!(!onto && !d.is_empty());
                    data.extend_from_slice(&d);
                }
                Ok(Some(Decoded::Trailers(_))) => trailers = true,
                Ok(Some(Decoded::End)) => return (data.to_vec(), trailers, Ok(())),
                Ok(Some(Decoded::More)) => match pieces.next() {
                    Some(piece) => buf.extend_from_slice(piece),
                    None => {
                        let closed = decoder.closed();
                        return (data.to_vec(), trailers, closed);
                    }
                },
                Err(err) => return (data.to_vec(), trailers, Err(err)),
            }
        }
    }

    const CHUNKED: Decoder = Decoder::Chunked(Chunk::Size);

    /// A decoder, its input, the data it gives, whether trailers came, how it ends.
    type Case = (
        Decoder,
        &'static [u8],
        &'static [u8],
        bool,
        Result<(), BodyError>,
    );

    /// Every case read whole and a byte at a time: a piece boundary anywhere gives the same.
    #[test]
    fn framings_decode_alike_however_the_bytes_arrive() {
        use BodyError::*;
        let cases: &[Case] = &[
            (Decoder::Length(5), b"hello", b"hello", false, Ok(())),
            (Decoder::Length(3), b"hel", b"hel", false, Ok(())),
            (Decoder::Length(5), b"hel", b"hel", false, Err(Cut)),
            (Decoder::Length(0), b"", b"", false, Ok(())),
            (
                Decoder::CloseDelimited,
                b"all of it",
                b"all of it",
                false,
                Ok(()),
            ),
            (CHUNKED, b"5\r\nhello\r\n0\r\n\r\n", b"hello", false, Ok(())),
            (
                CHUNKED,
                b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
                b"abcde",
                false,
                Ok(()),
            ),
            (
                CHUNKED,
                b"A\r\n0123456789\r\n0\r\n\r\n",
                b"0123456789",
                false,
                Ok(()),
            ),
            (
                CHUNKED,
                b"5;ext=1\r\nhello\r\n0;x\r\n\r\n",
                b"hello",
                false,
                Ok(()),
            ),
            (
                CHUNKED,
                b"5 ;ext\r\nhello\r\n0\r\n\r\n",
                b"hello",
                false,
                Ok(()),
            ),
            (
                CHUNKED,
                b"5\r\nhello\r\n0\r\nx-sum: 1\r\nx-b: 2\r\n\r\n",
                b"hello",
                true,
                Ok(()),
            ),
            (CHUNKED, b"5\r\nhello\r\n", b"hello", false, Err(Cut)),
            (CHUNKED, b"5\r\nhel", b"hel", false, Err(Cut)),
            (CHUNKED, b"zz\r\nhello\r\n", b"", false, Err(ChunkSize)),
            (CHUNKED, b"\r\n", b"", false, Err(ChunkSize)),
            (
                CHUNKED,
                b"5\nhello\r\n0\r\n\r\n",
                b"",
                false,
                Err(ChunkSize),
            ),
            (CHUNKED, b"-5\r\nhello\r\n", b"", false, Err(ChunkSize)),
            (CHUNKED, b"5x\r\nhello\r\n", b"", false, Err(ChunkSize)),
            (
                CHUNKED,
                b"11111111111111111\r\n",
                b"",
                false,
                Err(ChunkSize),
            ),
            (CHUNKED, b"5;a\rb\r\nhello\r\n", b"", false, Err(ChunkSize)),
            (CHUNKED, b"5\r\r\nhello\r\n", b"", false, Err(ChunkSize)),
            (CHUNKED, b"5\x0c\r\nhello\r\n", b"", false, Err(ChunkSize)),
            (
                CHUNKED,
                b"5\t;x\r\nhello\r\n0\r\n\r\n",
                b"hello",
                false,
                Ok(()),
            ),
            (
                CHUNKED,
                b"5\r\nhelloXY0\r\n\r\n",
                b"hello",
                false,
                Err(ChunkEnd),
            ),
            // Whole chunks and then something wrong, or not all there, or the end.
            (
                CHUNKED,
                b"3\r\nabc\r\nzz\r\nx\r\n",
                b"abc",
                false,
                Err(ChunkSize),
            ),
            (
                CHUNKED,
                b"3\r\nabc\r\n2\r\ndeXY",
                b"abcde",
                false,
                Err(ChunkEnd),
            ),
            (
                CHUNKED,
                b"1\r\na\r\n1\r\nb\r\n3\r\ncd",
                b"abcd",
                false,
                Err(Cut),
            ),
            (
                CHUNKED,
                b"3\r\nabc\r\nffffffffffffffff\r\nxy",
                b"abcxy",
                false,
                Err(Cut),
            ),
            (
                CHUNKED,
                b"1\r\na\r\n2;e\r\nbc\r\n0\r\nx-t: 1\r\n\r\n",
                b"abc",
                true,
                Ok(()),
            ),
        ];
        for (i, (decoder, input, data, trailers, end)) in cases.iter().enumerate() {
            for step in [input.len(), 1, 2, 3, 7] {
                let got = run(*decoder, input, step);
                assert_eq!(
                    got,
                    (data.to_vec(), *trailers, end.clone()),
                    "case {i}, step {step}"
                );
            }
        }
    }

    /// Bodies of whole, partial and broken chunks in random order, size lines up to and past
    /// the longest read, each read whole and in pieces: copied onto a buffer (whole chunks
    /// in one loop) the same as split off it (`run` checks), and in pieces as whole: data,
    /// trailers and end alike.
    #[test]
    fn random_bodies_decode_alike_copied_or_split() {
        let long = |n: usize| [b"2;".as_slice(), &vec![b'x'; n], b"\r\nhi\r\n"].concat();
        let pieces: Vec<Vec<u8>> = [
            b"3\r\nabc\r\n".as_slice(),
            b"1;e=\"v\"\r\n\n\r\n",
            b"a \t;x\r\n0123\r\n5678\r\n",
            b"0003\r\nxyz\r\n",
            b"0\r\n\r\n",
            b"0\r\nx-t: 1\r\n\r\n",
            b"3\nabc\r\n",
            b"3\r\nabcXY",
            b"ffffffffffffffff\r\n",
            b"10000000000000000\r\n",
            b"3;\x01\r\nabc\r\n",
            b"3\r\r\nabc\r\n",
            b"3\r\nab",
            b"\r\n",
        ]
        .iter()
        .map(|p| p.to_vec())
        // Size lines whose LF is the last byte a size line may have, and the first past it.
        .chain([MAX_LINE - 4, MAX_LINE - 3].map(long))
        .collect();
        let mut next = crate::base::picks::picker(0x9e37_79b9_7f4a_7c15);
        for _ in 0..2_000 {
            let count = 1 + next(6);
            // Mostly whole chunks, as an upstream sends them; the rest anywhere.
            let body: Vec<u8> = (0..count)
                .flat_map(|_| pieces[if next(2) == 0 { 0 } else { next(pieces.len()) }].clone())
                .collect();
            // A long size line a byte at a time is searched again at each byte: kept short.
            let steps = if body.len() > 256 {
                &[64, 1000][..]
            } else {
                &[1, 2, 3, 5][..]
            };
            let whole = run(CHUNKED, &body, body.len());
            for &step in steps {
                assert_eq!(run(CHUNKED, &body, step), whole, "{body:?} in {step}s");
            }
        }
    }

    /// Chunk sizes in either case, up to 16 digits, with or without extensions; anything
    /// else refused.
    #[test]
    fn chunk_sizes() {
        let cases: &[(&[u8], Option<u64>)] = &[
            (b"0\r", Some(0)),
            (b"a\r", Some(10)),
            (b"Ff\r", Some(255)),
            (b"7fFfFfFf;x=1\r", Some(0x7fff_ffff)),
            (b"00000000000000010 \t;a=\"b\"\r", Some(16)),
            (
                b"00000000000000000000000000000000000000ffffffffffffffff\r",
                Some(u64::MAX),
            ),
            (
                b"0000000000000000000000000000000000000000000000000\r",
                Some(0),
            ),
            (
                b"0000000000000000000000000000000000000010000000000000000\r",
                None,
            ),
            (b"FFFFFFFFFFFFFFFF\r", Some(u64::MAX)),
            (b"0123456789abcdef\r", Some(0x0123_4567_89ab_cdef)),
            (b"10 ;ext\r", Some(16)),
            (b"g\r", None),
            (b"\r", None),
            (b"1", None),
            (b"1 x\r", None),
            (b"-1\r", None),
            (b"10000000000000000\r", None),
            (b"A \t\r", Some(10)),
            (b"1;a\x01\r", None),
            (b"1\r\r", None),
            (b"1 2\r", None),
        ];
        for (line, want) in cases {
            assert_eq!(
                parse_size(line),
                *want,
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn bytes_after_the_end_are_left_in_the_buffer() {
        let mut buf = BytesMut::from(&b"2\r\nhi\r\n0\r\n\r\nHTTP/1.1"[..]);
        let mut decoder = CHUNKED;
        assert_eq!(
            decoder.decode(&mut buf),
            Ok(Decoded::Data(Bytes::from("hi")))
        );
        assert_eq!(decoder.decode(&mut buf), Ok(Decoded::End));
        assert_eq!(&buf[..], b"HTTP/1.1");
        let mut buf = BytesMut::from(&b"hiHTTP"[..]);
        let mut decoder = Decoder::Length(2);
        assert_eq!(
            decoder.decode(&mut buf),
            Ok(Decoded::Data(Bytes::from("hi")))
        );
        assert_eq!(decoder.decode(&mut buf), Ok(Decoded::End));
        assert_eq!(&buf[..], b"HTTP");
    }

    /// A trailer section ends at its blank line, all its lines ended by CRLF: what follows
    /// is left for the next request. One with a bare LF is refused whichever way it could be
    /// read (the next request's bytes taken into it, or its end taken early).
    #[test]
    fn a_trailer_section_ends_only_at_crlf_crlf() {
        let mut buf = BytesMut::from(&b"0\r\nx-a: 1\r\n\r\nGET /next"[..]);
        let mut decoder = CHUNKED;
        assert!(matches!(decoder.decode(&mut buf), Ok(Decoded::Trailers(_))));
        assert_eq!(decoder.decode(&mut buf), Ok(Decoded::End));
        assert_eq!(&buf[..], b"GET /next");
        for body in [
            &b"0\r\nx-a: 1\n\nGET /next HTTP/1.1\r\nhost: a\r\n\r\n"[..],
            b"0\r\n\nGET /next HTTP/1.1\r\nhost: a\r\n\r\n",
            b"0\r\nx-a: 1\r\nx-b: 2\n\r\n",
            b"0\r\nx-a: 1\n",
        ] {
            for step in [body.len(), 1, 3] {
                let (data, trailers, end) = run(CHUNKED, body, step);
                assert!((data.is_empty(), trailers) == (true, false), "{body:?}");
                assert!(
                    matches!(end, Err(BodyError::Trailers(FieldError::Malformed(_)))),
                    "{body:?} in {step}s: {end:?}"
                );
            }
        }
    }

    #[test]
    fn trailers_are_read_as_fields() {
        let mut buf = BytesMut::from(&b"0\r\nx-sum: 7\r\n\r\n"[..]);
        let mut decoder = CHUNKED;
        let Ok(Decoded::Trailers(fields)) = decoder.decode(&mut buf) else {
            panic!("no trailers");
        };
        assert_eq!(fields["x-sum"], "7");
        assert_eq!(decoder.decode(&mut buf), Ok(Decoded::End));
    }

    #[test]
    fn endless_size_lines_and_trailers_are_refused() {
        let long = [b'1'; MAX_LINE];
        assert_eq!(run(CHUNKED, &long, MAX_LINE).2, Err(BodyError::ChunkSize));
        let mut trailers = b"0\r\n".to_vec();
        trailers.extend(std::iter::repeat_n(b'a', MAX_TRAILERS));
        let got = run(CHUNKED, &trailers, 512).2;
        assert_eq!(got, Err(BodyError::Trailers(FieldError::TooLarge)));
    }
}
