//! A head's fields (RFC 9112 §5), read the same way for the requests lingo serves and the
//! responses it reads: where each sits in one frozen copy of the head, built into a map from
//! it (when they are not kept raw: `h1::raw`), and what they say about framing and
//! persistence ([`FramingHeaders`]). Pure.

use std::ops::Range;

use bytes::{BufMut, Bytes, BytesMut};
use hyper::HeaderMap;
use hyper::Version;
use hyper::header::{
    CONNECTION, CONTENT_LENGTH, EXPECT, HeaderName, HeaderValue, TRANSFER_ENCODING, UPGRADE,
};

use crate::http::hop::is;

/// The most fields a trailer section may have (hyper's default limit for a head too).
const MAX_FIELDS: usize = 100;

/// A field section lingo cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldError {
    #[error("{0}")]
    Malformed(String),
    #[error("too many or too large fields")]
    TooLarge,
}

/// Where a field's name and value sit in the head's bytes.
pub type Span = (Range<usize>, Range<usize>);

/// Fields whose spans are noted on the stack; a head with more takes room on the heap.
pub const STACK_SPANS: usize = 32;

/// Where each field's name and value sit in `buf`, noted in `room` (or in `heap` when there
/// are more): the fields are made from one frozen copy of the head instead of a copy each,
/// and a head's spans cost no allocation.
pub fn spans<'r>(
    buf: &[u8],
    fields: &[httparse::Header<'_>],
    room: &'r mut [Span; STACK_SPANS],
    heap: &'r mut Vec<Span>,
) -> &'r [Span] {
    let at = |s: &[u8]| {
        let start = s.as_ptr() as usize - buf.as_ptr() as usize;
        start..start + s.len()
    };
    let spans = fields.iter().map(|f| (at(f.name.as_bytes()), at(f.value)));
    if fields.len() > STACK_SPANS {
        heap.extend(spans);
        return heap;
    }
    for (slot, span) in room.iter_mut().zip(spans) {
        *slot = span;
    }
    &room[..fields.len()]
}

/// Room for the fields lingo adds to a response before it goes on (`x-request-id`), so that
/// adding them does not grow the map (a rehash of every field).
pub const RESPONSE_ADDS: usize = 2;

/// The map of a head's fields, with room for `adds` more; what they say about framing and
/// persistence noted in `framing` on the way.
pub fn to_map(
    bytes: &Bytes,
    spans: &[Span],
    adds: usize,
    framing: &mut FramingHeaders,
) -> Result<HeaderMap, FieldError> {
    let mut headers = HeaderMap::with_capacity(spans.len() + adds);
    for (name, value) in spans {
        let name = HeaderName::from_bytes(&bytes[name.clone()])
            .map_err(|e| FieldError::Malformed(e.to_string()))?;
        let value = HeaderValue::from_maybe_shared(bytes.slice(value.clone()))
            .map_err(|e| FieldError::Malformed(e.to_string()))?;
        framing.note(&name, &value);
        headers.append(name, value);
    }
    Ok(headers)
}

/// The fields of a trailer section (`name: value` lines, then an empty line).
pub fn fields(section: &Bytes) -> Result<HeaderMap, FieldError> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_FIELDS];
    match httparse::parse_headers(section, &mut fields) {
        Ok(httparse::Status::Complete((_, parsed))) => {
            let (mut room, mut heap) = ([const { (0..0, 0..0) }; STACK_SPANS], Vec::new());
            let spans = spans(section, parsed, &mut room, &mut heap);
            to_map(section, spans, 0, &mut FramingHeaders::default())
        }
        Ok(httparse::Status::Partial) => Err(FieldError::Malformed("partial".into())),
        Err(httparse::Error::TooManyHeaders) => Err(FieldError::TooLarge),
        Err(err) => Err(FieldError::Malformed(err.to_string())),
    }
}

/// What a head's fields say about its body's framing and its connection, noted as its fields
/// are read (one comparison of each name, where lookups afterwards would search the map
/// once for each field).
#[derive(Default, Clone, Copy, Debug)]
pub struct FramingHeaders {
    /// `Content-Length`: the one length all its values agree on, or `Err` when they do not
    /// or one is not a number.
    pub length: Option<Result<u64, ()>>,
    /// More than one `Content-Length` value, in a list or in fields of their own (a request
    /// with them is refused, as nginx and hyper refuse it; a response's equal ones are one).
    pub lengths_repeated: bool,
    /// `Transfer-Encoding`: whether its last coding is `chunked`.
    pub chunked: Option<bool>,
    /// A `Transfer-Encoding` value with a byte outside visible ASCII (obs-text): no list of
    /// codings, since a coding is a token (RFC 9112 §7), so the framing it says is unknown
    /// (hyper reads no coding in it, and no `chunked`).
    pub codings_unreadable: bool,
    /// `Connection: close`, `Connection: keep-alive` and `Connection: upgrade`.
    pub close: bool,
    pub keep_alive: bool,
    pub upgrade: bool,
    /// An `Upgrade` field (a request's).
    pub upgrade_to: bool,
    /// `Expect: 100-continue` (a request's).
    pub expects_continue: bool,
}

impl FramingHeaders {
    #[inline]
    pub fn note(&mut self, name: &HeaderName, value: &HeaderValue) {
        let which = if *name == CONTENT_LENGTH {
            Which::Length
        } else if *name == TRANSFER_ENCODING {
            Which::Coding
        } else if *name == CONNECTION {
            Which::Connection
        } else if *name == UPGRADE {
            Which::Upgrade
        } else if *name == EXPECT {
            Which::Expect
        } else {
            return;
        };
        self.noted(which, value.as_bytes());
    }

    /// [`FramingHeaders::note`] for a field as read (its name in any case), not made into a
    /// map.
    #[inline]
    pub fn note_read(&mut self, name: &[u8], value: &[u8]) {
        let is = |known: &HeaderName| is(name, known);
        // Told apart by length first: most names are none of these.
        let which = match name.len() {
            14 if is(&CONTENT_LENGTH) => Which::Length,
            17 if is(&TRANSFER_ENCODING) => Which::Coding,
            10 if is(&CONNECTION) => Which::Connection,
            7 if is(&UPGRADE) => Which::Upgrade,
            6 if is(&EXPECT) => Which::Expect,
            _ => return,
        };
        self.noted(which, value);
    }

    /// What the fields httparse read say, read as they are (for raw header fields, which
    /// no map notes).
    pub fn of_fields(fields: &[httparse::Header<'_>]) -> FramingHeaders {
        let mut framing = FramingHeaders::default();
        for field in fields {
            framing.note_read(field.name.as_bytes(), field.value);
        }
        framing
    }

    /// Reads the value of a field [`FramingHeaders`] reads, as bytes (`str`'s searchers cost
    /// more than a byte split).
    #[inline]
    fn noted(&mut self, which: Which, value: &[u8]) {
        let items = || value.split(|&b| b == b',').map(<[u8]>::trim_ascii);
        match which {
            Which::Length => {
                for item in items() {
                    self.lengths_repeated |= self.length.is_some();
                    self.length = Some(match (self.length, parse_length(item)) {
                        (None, Some(n)) => Ok(n),
                        (Some(Ok(length)), Some(n)) if length == n => Ok(length),
                        _ => Err(()),
                    });
                }
            }
            Which::Coding => {
                self.codings_unreadable |= !is_text(value);
                let last = items().next_back();
                self.chunked = Some(last.is_some_and(|t| t.eq_ignore_ascii_case(b"chunked")));
            }
            Which::Connection => self.connection(value),
            Which::Upgrade => self.upgrade_to = true,
            Which::Expect => self.expects_continue = value.eq_ignore_ascii_case(b"100-continue"),
        }
    }

    /// A `Connection` field's tokens. A value with a byte outside visible ASCII (obs-text)
    /// is no list of tokens (RFC 9110 §7.6.1, §5.6.2): none is read from it (no
    /// `keep-alive`, no `upgrade`, as hyper reads none), and the connection ends after this
    /// message, since a `close` may be in it and closing is always safe.
    pub fn connection(&mut self, value: &[u8]) {
        if !is_text(value) {
            self.close = true;
            return;
        }
        for token in value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
            self.close |= token.eq_ignore_ascii_case(b"close");
            self.keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
            self.upgrade |= token.eq_ignore_ascii_case(b"upgrade");
        }
    }

    /// Persistence (RFC 9112 §9.3): HTTP/1.1 unless `Connection: close`; HTTP/1.0 only with
    /// `Connection: keep-alive`.
    pub fn keeps_alive(&self, version: Version) -> bool {
        match version {
            Version::HTTP_10 => self.keep_alive && !self.close,
            _ => !self.close,
        }
    }
}

/// The fields [`FramingHeaders`] reads.
#[derive(Clone, Copy)]
enum Which {
    Length,
    Coding,
    Connection,
    Upgrade,
    Expect,
}

/// Whether `value` is visible ASCII, tabs and spaces only: text, as `HeaderValue::to_str`
/// reads it, and the only bytes a token list (RFC 9110 §5.6.1) can hold.
pub fn is_text(value: &[u8]) -> bool {
    value
        .iter()
        .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b))
}

/// The largest body length read: hyper's limit (it keeps the two values above it as marks of
/// its own), so that no length hyper refuses is read here. No body reaches it; a larger one
/// is no length, refused as one past 64 bits is (RFC 9110 §8.6: a recipient guards against
/// numbers it cannot hold).
pub const MAX_LENGTH: u64 = u64::MAX - 2;

/// `1*DIGIT`, at most [`MAX_LENGTH`].
pub fn parse_length(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    let n = digits.iter().try_fold(0u64, |n, &digit| {
        let digit = digit.is_ascii_digit().then(|| u64::from(digit - b'0'))?;
        n.checked_mul(10)?.checked_add(digit)
    })?;
    (n <= MAX_LENGTH).then_some(n)
}

/// `n` in decimal, without the formatting machinery (which costs more than the rest of a
/// field's writing).
pub fn push_decimal(out: &mut BytesMut, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// A chunk-size line: `n` in lowercase hex, then CRLF.
pub fn push_hex(out: &mut BytesMut, mut n: usize) {
    let mut line = [0u8; 18];
    line[16..].copy_from_slice(b"\r\n");
    let mut at = 16;
    loop {
        at -= 1;
        line[at] = b"0123456789abcdef"[n & 15];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    out.put_slice(&line[at..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `Content-Length` and `Transfer-Encoding` values say, read as bytes: a list of
    /// equal lengths is one length; anything but digits, or past `MAX_LENGTH`, is no length.
    #[test]
    fn lengths_and_codings() {
        let length = |value: &str| {
            let mut framing = FramingHeaders::default();
            framing.note_read(b"Content-Length", value.as_bytes());
            framing.length
        };
        assert_eq!(length("0"), Some(Ok(0)));
        assert_eq!(length(" 0042 "), Some(Ok(42)));
        assert_eq!(length("5,5 ,\t5"), Some(Ok(5)));
        assert_eq!(length("18446744073709551613"), Some(Ok(MAX_LENGTH)));
        for bad in [
            "",
            "5, 6",
            "+5",
            "-1",
            "5,",
            "0x10",
            "1 2",
            "18446744073709551614",
            "18446744073709551615",
            "18446744073709551616",
            "5\u{a0}",
        ] {
            assert_eq!(length(bad), Some(Err(())), "{bad:?}");
        }
        let chunked = |value: &str| {
            let mut framing = FramingHeaders::default();
            framing.note_read(b"transfer-encoding", value.as_bytes());
            framing.chunked
        };
        assert_eq!(chunked("chunked"), Some(true));
        assert_eq!(chunked("gzip, Chunked "), Some(true));
        assert_eq!(chunked("chunked, gzip"), Some(false));
        assert_eq!(chunked(""), Some(false));
    }

    /// A field says something about framing only under its own name: another name as long
    /// as `Content-Length`, `Transfer-Encoding`, `Connection`, `Upgrade` or `Expect`, with
    /// the value that one would say it with, says nothing, read or in a map.
    #[test]
    fn only_framing_names_say_anything_about_framing() {
        let others: [(&[u8], &[u8]); 5] = [
            (b"Accept-Charset", b"5"),
            (b"X-Forwarded-Proto", b"chunked"),
            (b"User-Agent", b"close, keep-alive, upgrade"),
            (b"Referer", b"websocket"),
            (b"Cookie", b"100-continue"),
        ];
        let nothing = format!("{:?}", FramingHeaders::default());
        for (name, value) in others {
            let mut read = FramingHeaders::default();
            read.note_read(name, value);
            assert_eq!(format!("{read:?}"), nothing, "{name:?}");
            let mut mapped = FramingHeaders::default();
            let name = HeaderName::from_bytes(name).unwrap();
            mapped.note(&name, &HeaderValue::from_bytes(value).unwrap());
            assert_eq!(format!("{mapped:?}"), nothing, "{name}");
        }
        let mut read = FramingHeaders::default();
        read.note_read(b"EXPECT", b"100-continue");
        read.note_read(b"upgrade", b"websocket");
        assert!(read.expects_continue && read.upgrade_to);
    }

    /// A `Transfer-Encoding` value with a byte outside visible ASCII is no list of codings,
    /// in any of its fields; a plain one, or a tab or space in one, is.
    #[test]
    fn obs_text_in_a_transfer_encoding_is_no_list_of_codings() {
        let unreadable = |values: &[&[u8]]| {
            let mut said = FramingHeaders::default();
            for value in values {
                said.note_read(b"Transfer-Encoding", value);
            }
            said.codings_unreadable
        };
        assert!(!unreadable(&[b"chunked"]));
        assert!(!unreadable(&[b"gzip,\tchunked "]));
        assert!(unreadable(&[b"\xff, chunked"]));
        assert!(unreadable(&[b"gzip\xe9, chunked"]));
        assert!(unreadable(&[b"\xff", b"chunked"]));
        let mut mapped = FramingHeaders::default();
        mapped.note(
            &TRANSFER_ENCODING,
            &HeaderValue::from_bytes(b"\x80chunked").unwrap(),
        );
        assert!(mapped.codings_unreadable);
    }

    /// A `Connection` value with a byte outside visible ASCII: none of its tokens is read
    /// (`keep-alive`, `upgrade`), while another field's are, and it closes.
    #[test]
    fn obs_text_in_a_connection_value_closes() {
        let read = |values: &[&[u8]]| {
            let mut said = FramingHeaders::default();
            for value in values {
                said.note_read(b"Connection", value);
            }
            (said.keep_alive, said.close, said.upgrade)
        };
        assert_eq!(read(&[b"keep-alive"]), (true, false, false));
        assert_eq!(read(&[b"\tClose, upgrade "]), (false, true, true));
        assert_eq!(read(&[b"\xff, keep-alive"]), (false, true, false));
        assert_eq!(read(&[b"caf\xe9, upgrade"]), (false, true, false));
        assert_eq!(read(&[b"\xff", b"keep-alive"]), (true, true, false));
        // An HTTP/1.0 message persists only with a `keep-alive` read (RFC 9112 §9.3).
        let persists = |value: &[u8], version| {
            let mut said = FramingHeaders::default();
            said.note_read(b"connection", value);
            said.keeps_alive(version)
        };
        assert!(persists(b"keep-alive", Version::HTTP_10));
        assert!(!persists(b"\xff, keep-alive", Version::HTTP_10));
        assert!(persists(b"upgrade", Version::HTTP_11));
        assert!(!persists(b"caf\xe9", Version::HTTP_11));
    }
}
