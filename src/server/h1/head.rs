//! A request head read, and a response head written (RFC 9112). Pure.
//!
//! The request head is parsed by `httparse` (hyper's parser, with hyper's settings) and held
//! to the framing rules hyper's server applies on top of it, so that lingo reads every
//! request as hyper does or more strictly: `Transfer-Encoding` only in HTTP/1.1, only
//! ending in `chunked` and only as a list of codings (no obs-text), which then wins over
//! `Content-Length` (dropped) and closes the connection after the response (RFC 9112 §6.1);
//! a length that is no number, or more than one (`5, 5`, or two fields: nginx refuses both,
//! hyper the list), refused.

use std::mem::MaybeUninit;

use bytes::{BufMut, BytesMut};
use hyper::header::{CONNECTION, CONTENT_LENGTH, DATE, TRANSFER_ENCODING};
use hyper::{Method, StatusCode, Uri, Version};

use crate::http::h1::decode::{Chunk, Decoder};
use crate::http::h1::fields::{FramingHeaders, push_decimal};
use crate::http::h1::raw::{Kind, PendingHeaders};
use crate::http::message::{HeaderView, Request};

/// Fields read without taking room on the heap: the connection's backstop under the default
/// table (twice `limits.max_headers`' 100, see `server::protocol`), so that a head under the
/// default limits costs no allocation. Uninitialised: the room costs nothing until used.
const STACK_FIELDS: usize = 256;

/// The longest request target read (hyper's limit too, and `http::Uri`'s): longer is 414.
const MAX_TARGET: usize = (u16::MAX - 1) as usize;

/// A request head, read.
#[derive(Debug)]
pub struct Head {
    /// Its method, target, version and fields (kept raw when they fit: `http::h1::raw`).
    pub request: Request<()>,
    /// How its body is framed.
    pub body: Decoder,
    /// Whether the connection can carry another request after this one's response.
    pub keep_alive: bool,
    /// `Expect: 100-continue`: the client waits for a `100 Continue` before sending the body.
    pub expects_continue: bool,
    /// An upgrade is asked for (`Connection: upgrade` with `Upgrade`) by a request without a
    /// body: only such a connection is ever handed over, so that no unread body can become
    /// the first bytes of the new protocol.
    pub upgrade: bool,
}

/// What the bytes read so far hold.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Parsed {
    /// A whole head, taken out of the buffer (a return value, moved once).
    Head(Head),
    /// Not all of a head yet.
    Partial,
}

/// A head lingo does not read: refused with this status, then the connection is closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadHead {
    #[error("malformed request head ({0})")]
    Malformed(String),
    #[error("request head too large")]
    TooLarge,
    #[error("request target too long")]
    TargetTooLong,
}

/// How a response's body goes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body at all (a `HEAD` request's response, 1xx, 204, 304).
    None,
    Length(u64),
    Chunked,
    /// Up to the close of the connection (an HTTP/1.0 client, length unknown).
    CloseDelimited,
}

// === impl Refusal ===

impl BadHead {
    pub fn status(&self) -> StatusCode {
        match self {
            BadHead::Malformed(_) => StatusCode::BAD_REQUEST,
            BadHead::TooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            BadHead::TargetTooLong => StatusCode::URI_TOO_LONG,
        }
    }
}

// === the request head ===

/// Takes a request head out of `buf` if it is all there: at most `max_fields` fields and
/// `max_head` bytes.
pub fn parse(buf: &mut BytesMut, max_fields: usize, max_head: usize) -> Result<Parsed, BadHead> {
    let mut stack = [const { MaybeUninit::uninit() }; STACK_FIELDS];
    let mut heap = Vec::new();
    let fields = if max_fields <= STACK_FIELDS {
        &mut stack[..max_fields]
    } else {
        heap.resize_with(max_fields, MaybeUninit::uninit);
        &mut heap[..]
    };
    let (req, parsed) = read(buf, fields);
    let len = match parsed {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() >= max_head => {
            return Err(too_large(buf, max_head));
        }
        Ok(httparse::Status::Partial) => return Ok(Parsed::Partial),
        Err(httparse::Error::TooManyHeaders) => return Err(BadHead::TooLarge),
        Err(err) => return Err(malformed(err)),
    };
    if len > max_head {
        return Err(too_large(buf, max_head));
    }
    let version = match req.version {
        Some(0) => Version::HTTP_10,
        _ => Version::HTTP_11,
    };
    let method =
        Method::from_bytes(req.method.unwrap_or_default().as_bytes()).map_err(malformed)?;
    let target = req.path.unwrap_or_default().as_bytes();
    if target.len() > MAX_TARGET {
        return Err(BadHead::TargetTooLong);
    }
    let start = target.as_ptr() as usize - buf.as_ptr() as usize;
    let target = start..start + target.len();
    // The fields indexed where they are, before the head leaves the buffer.
    let (mut room, mut heap) = (None, Vec::new());
    let keep = Some(Kind::Request);
    let pending = PendingHeaders::index(buf, len, req.headers, keep, (&mut room, &mut heap));
    let bytes = buf.split_to(len).freeze();
    let uri = Uri::from_maybe_shared(bytes.slice(target)).map_err(malformed)?;
    let attached = pending.attach(bytes, 0);
    let (headers, said) = attached.map_err(|e| BadHead::Malformed(e.to_string()))?;
    let (body, reusable) = framing(&said, version)?;
    let (mut parts, ()) = hyper::Request::new(()).into_parts();
    parts.method = method;
    parts.uri = uri;
    parts.version = version;
    Ok(Parsed::Head(Head {
        request: Request::from_head(parts, headers, ()),
        body,
        keep_alive: reusable && said.keeps_alive(version),
        expects_continue: said.expects_continue
            && version == Version::HTTP_11
            && body != Decoder::Done,
        upgrade: said.upgrade && said.upgrade_to && body == Decoder::Done,
    }))
}

/// A head over `max_head` bytes: 414 when its request line alone is (nginx's response to a
/// request line that outgrows its buffer), else 431.
fn too_large(buf: &[u8], max_head: usize) -> BadHead {
    match memchr::memchr(b'\n', &buf[..buf.len().min(max_head)]) {
        None => BadHead::TargetTooLong,
        Some(_) => BadHead::TooLarge,
    }
}

/// httparse's reading of the request head `buf` starts with, its fields in `fields`
/// (uninitialised room, which httparse fills as it finds them).
fn read<'h, 'b>(
    buf: &'b [u8],
    fields: &'h mut [MaybeUninit<httparse::Header<'b>>],
) -> (httparse::Request<'h, 'b>, httparse::Result<usize>) {
    let mut req = httparse::Request::new(&mut []);
    let parsed =
        httparse::ParserConfig::default().parse_request_with_uninit_headers(&mut req, buf, fields);
    (req, parsed)
}

fn malformed(err: impl std::fmt::Display) -> BadHead {
    BadHead::Malformed(err.to_string())
}

/// The body's framing (RFC 9112 §6.1, §6.3) and whether the connection may be reused after
/// it. A request with neither field has no body. RFC 9110 §8.6 lets a recipient take a list
/// of equal lengths as one; refused here, so that no server behind lingo that reads the list
/// another way can be given a body framed otherwise than lingo framed it.
fn framing(said: &FramingHeaders, version: Version) -> Result<(Decoder, bool), BadHead> {
    if said.lengths_repeated {
        return Err(malformed("more than one content-length"));
    }
    if said.codings_unreadable {
        return Err(malformed("transfer-encoding that is no list of codings"));
    }
    match (said.chunked, said.length) {
        (Some(_), _) if version == Version::HTTP_10 => {
            Err(malformed("transfer-encoding in HTTP/1.0"))
        }
        (Some(false), _) => Err(malformed("transfer-encoding not ending in chunked")),
        // Dropped for the chunked framing, but no number even so (hyper refuses it too).
        (Some(true), Some(Err(()))) => Err(malformed("invalid content-length")),
        (Some(true), length) => Ok((Decoder::Chunked(Chunk::Size), length.is_none())),
        (None, Some(Err(()))) => Err(malformed("invalid content-length")),
        (None, Some(Ok(0)) | None) => Ok((Decoder::Done, true)),
        (None, Some(Ok(n))) => Ok((Decoder::Length(n), true)),
    }
}

// === the response head ===

/// What is known of a response when its head is written.
pub struct ResponseHead<'a> {
    pub status: StatusCode,
    /// The client's version: an HTTP/1.0 client gets an HTTP/1.0 response.
    pub version: Version,
    pub headers: HeaderView<'a>,
    pub framing: Framing,
    /// Whether the connection stays open after this response.
    pub keep_alive: bool,
    /// `Date`'s value, asked for only when the response has none (an upstream's usually
    /// does).
    pub date: fn() -> [u8; 29],
}

/// Writes a response head: the status line, the fields (but any framing field: this one's
/// are written from `framing`), `Date` if missing, and `Connection` as `keep_alive` says.
pub fn write(out: &mut BytesMut, head: &ResponseHead<'_>) {
    out.put_slice(match head.version {
        Version::HTTP_10 => b"HTTP/1.0 ",
        _ => b"HTTP/1.1 ",
    });
    out.put_slice(head.status.as_str().as_bytes());
    out.put_u8(b' ');
    out.put_slice(head.status.canonical_reason().unwrap_or("").as_bytes());
    out.put_slice(b"\r\n");
    let (dated, connection) = fields(out, head.headers, head.keep_alive);
    match head.framing {
        Framing::Length(n) => {
            out.put_slice(b"content-length: ");
            push_decimal(out, n);
            out.put_slice(b"\r\n");
        }
        Framing::Chunked => field(out, b"transfer-encoding", b"chunked"),
        // A `HEAD` or 304 response says the length its `GET` would have, when it knows it.
        Framing::None => {
            if head.status != StatusCode::NO_CONTENT
                && !head.status.is_informational()
                && let Some(length) = declared_length(head.headers)
            {
                out.put_slice(b"content-length: ");
                push_decimal(out, length);
                out.put_slice(b"\r\n");
            }
        }
        Framing::CloseDelimited => {}
    }
    if !dated {
        field(out, b"date", &(head.date)());
    }
    if !head.keep_alive {
        field(out, b"connection", b"close");
    } else if head.version == Version::HTTP_10 && !connection {
        field(out, b"connection", b"keep-alive");
    }
    out.put_slice(b"\r\n");
}

/// Writes the fields but the framing ones (and `Connection` when the connection closes);
/// says whether one was `Date`, and whether one was `Connection`. Raw header fields are
/// the ones passed on, hop-by-hop ones already left out (`Connection` among them).
fn fields(out: &mut BytesMut, headers: HeaderView<'_>, keep_alive: bool) -> (bool, bool) {
    let map = match headers {
        HeaderView::Map(map) => map,
        HeaderView::Raw(raw) => return (raw.each_written(|n, v| field(out, n, v)), false),
    };
    // Noted on the way: two lookups would cost more.
    let (mut dated, mut connection) = (false, false);
    for (name, value) in map {
        dated |= *name == DATE;
        connection |= *name == CONNECTION;
        let framing_field = *name == CONTENT_LENGTH || *name == TRANSFER_ENCODING;
        if framing_field || *name == CONNECTION && !keep_alive {
            continue;
        }
        field(out, name.as_str().as_bytes(), value.as_bytes());
    }
    (dated, connection)
}

/// The length a response without a body says it would have: its `Content-Length`s as one
/// number, when they are numbers that agree. A list of equal lengths is written as one;
/// anything else an upstream sent is not handed on as it came (a client that frames by it
/// would be framed by the upstream's words), and no length is written.
fn declared_length(headers: HeaderView<'_>) -> Option<u64> {
    let mut said = FramingHeaders::default();
    let note = |value: &[u8]| said.note_read(CONTENT_LENGTH.as_str().as_bytes(), value);
    match headers {
        HeaderView::Map(_) => headers.get_all(&CONTENT_LENGTH).for_each(note),
        HeaderView::Raw(raw) => raw.each_length(note),
    }
    said.length?.ok()
}

fn field(out: &mut BytesMut, name: &[u8], value: &[u8]) {
    out.reserve(name.len() + value.len() + 4);
    out.put_slice(name);
    out.put_slice(b": ");
    out.put_slice(value);
    out.put_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::h1::raw::{self, RawHeaders};
    use hyper::HeaderMap;
    use hyper::header::HeaderValue;

    fn head(raw: &str) -> Result<Head, BadHead> {
        match parse(&mut BytesMut::from(raw), 100, 8192)? {
            Parsed::Head(head) => Ok(head),
            Parsed::Partial => panic!("partial: {raw:?}"),
        }
    }

    /// Framing and persistence, one request head each: what hyper's server decided too.
    #[test]
    fn framing_and_persistence() {
        type Case = (&'static str, Option<(Decoder, bool)>);
        let cases: &[Case] = &[
            (
                "GET / HTTP/1.1\r\nhost: a\r\n\r\n",
                Some((Decoder::Done, true)),
            ),
            ("GET / HTTP/1.0\r\n\r\n", Some((Decoder::Done, false))),
            (
                "GET / HTTP/1.0\r\nconnection: keep-alive\r\n\r\n",
                Some((Decoder::Done, true)),
            ),
            (
                "GET / HTTP/1.1\r\nconnection: close\r\n\r\n",
                Some((Decoder::Done, false)),
            ),
            (
                "POST / HTTP/1.1\r\ncontent-length: 5\r\n\r\n",
                Some((Decoder::Length(5), true)),
            ),
            ("POST / HTTP/1.1\r\ncontent-length: 5, 5\r\n\r\n", None),
            (
                "POST / HTTP/1.1\r\ncontent-length: 5\r\ncontent-length: 5\r\n\r\n",
                None,
            ),
            (
                "POST / HTTP/1.1\r\ncontent-length: 5\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n",
                None,
            ),
            ("POST / HTTP/1.1\r\ncontent-length: 5, 6\r\n\r\n", None),
            ("POST / HTTP/1.1\r\ncontent-length: +5\r\n\r\n", None),
            (
                "POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n",
                Some((Decoder::Chunked(Chunk::Size), true)),
            ),
            (
                "POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\ncontent-length: 3\r\n\r\n",
                Some((Decoder::Chunked(Chunk::Size), false)),
            ),
            (
                "POST / HTTP/1.1\r\ncontent-length: x\r\ntransfer-encoding: chunked\r\n\r\n",
                None,
            ),
            (
                "POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\ncontent-length: 1, 2\r\n\r\n",
                None,
            ),
            ("POST / HTTP/1.1\r\ntransfer-encoding: gzip\r\n\r\n", None),
            (
                "POST / HTTP/1.0\r\ntransfer-encoding: chunked\r\n\r\n",
                None,
            ),
        ];
        for (raw, want) in cases {
            let got = head(raw).map(|h| (h.body, h.keep_alive)).ok();
            assert_eq!(got, *want, "{raw:?}");
        }
        let both =
            head("POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\ncontent-length: 3\r\n\r\n");
        assert!(!both.unwrap().request.headers().contains(&CONTENT_LENGTH));
    }

    #[test]
    fn expectations_and_upgrades() {
        let h = head("POST /x?y=1 HTTP/1.1\r\nexpect: 100-Continue\r\ncontent-length: 2\r\n\r\n");
        let h = h.unwrap();
        assert!(h.expects_continue && !h.upgrade);
        assert_eq!(h.request.uri(), "/x?y=1");
        let h = head("GET / HTTP/1.1\r\nexpect: 100-continue\r\n\r\n").unwrap();
        assert!(!h.expects_continue, "nothing to wait for without a body");
        let ws =
            "GET /ws HTTP/1.1\r\nconnection: keep-alive, Upgrade\r\nupgrade: websocket\r\n\r\n";
        assert!(head(ws).unwrap().upgrade);
        assert!(
            !head("GET / HTTP/1.1\r\nupgrade: websocket\r\n\r\n")
                .unwrap()
                .upgrade
        );
        // One with a body is never an upgrade: its connection is never handed over.
        for body in ["content-length: 3", "transfer-encoding: chunked"] {
            let with_body = format!(
                "GET /ws HTTP/1.1\r\nconnection: upgrade\r\nupgrade: websocket\r\n{body}\r\n\r\n"
            );
            assert!(!head(&with_body).unwrap().upgrade, "{body}");
        }
        let empty = "GET /ws HTTP/1.1\r\nconnection: upgrade\r\nupgrade: websocket\r\n\
                     content-length: 0\r\n\r\n";
        assert!(head(empty).unwrap().upgrade);
    }

    #[test]
    fn partial_too_large_and_malformed() {
        let mut buf = BytesMut::from("GET / HTTP/1.1\r\nhost: a\r\n");
        assert!(matches!(parse(&mut buf, 100, 8192), Ok(Parsed::Partial)));
        let mut big = BytesMut::from("GET / HTTP/1.1\r\n");
        big.extend_from_slice(&[b'a'; 100]);
        assert_eq!(parse(&mut big, 100, 64).unwrap_err(), BadHead::TooLarge);
        // A request line that alone outgrows the head's limit is 414, not 431 (complete or
        // not); so is a target past `MAX_TARGET` in a head within it.
        let long_line = format!("GET /{} HTTP/1.1\r\n", "a".repeat(100));
        for raw in [long_line.clone(), format!("{long_line}host: a\r\n\r\n")] {
            let refused = parse(&mut BytesMut::from(raw.as_str()), 100, 64).unwrap_err();
            assert_eq!(refused, BadHead::TargetTooLong);
            assert_eq!(refused.status(), StatusCode::URI_TOO_LONG);
        }
        let at_most = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(MAX_TARGET - 1));
        let past = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(MAX_TARGET));
        let big = 2 * MAX_TARGET;
        assert!(parse(&mut BytesMut::from(at_most.as_str()), 100, big).is_ok());
        let refused = parse(&mut BytesMut::from(past.as_str()), 100, big).unwrap_err();
        assert_eq!(refused, BadHead::TargetTooLong);
        let many = format!("GET / HTTP/1.1\r\n{}\r\n", "a: b\r\n".repeat(4));
        let too_many = parse(&mut BytesMut::from(many.as_str()), 3, 8192);
        assert_eq!(too_many.unwrap_err(), BadHead::TooLarge);
        for raw in [
            "GET / HTTP/1.1\r\nfo o: b\r\n\r\n",
            "GET / HTTP/1.1\r\na:\r\n b\r\n\r\n",
        ] {
            let refused = parse(&mut BytesMut::from(raw), 100, 8192).unwrap_err();
            assert_eq!(refused.status(), StatusCode::BAD_REQUEST, "{raw:?}");
        }
    }

    /// A head of exactly its limit is read; a limit on fields past what fits on the stack
    /// reads them all (on the heap).
    #[test]
    fn a_head_of_its_limit_is_read_and_many_fields_fit() {
        let raw = "GET / HTTP/1.1\r\nhost: a\r\n\r\n";
        assert!(matches!(
            parse(&mut BytesMut::from(raw), 100, raw.len()),
            Ok(Parsed::Head(_))
        ));
        let refused = parse(&mut BytesMut::from(raw), 100, raw.len() - 1).unwrap_err();
        assert_eq!(refused, BadHead::TooLarge);
        let fields = STACK_FIELDS + 2;
        let many = format!("GET / HTTP/1.1\r\n{}\r\n", "a: b\r\n".repeat(fields));
        let parsed = parse(&mut BytesMut::from(many.as_str()), fields + 2, 1 << 20);
        let Ok(Parsed::Head(head)) = parsed else {
            panic!("{fields} fields under a limit of {}", fields + 2)
        };
        assert_eq!(
            head.request
                .headers()
                .get_all(&hyper::header::HeaderName::from_static("a"))
                .count(),
            fields
        );
    }

    /// A response's own `Date` and `Connection` are written once: none is added beside them;
    /// a field with an empty value is written as it is.
    #[test]
    fn a_responses_own_date_and_connection_stand() {
        let mut headers = HeaderMap::new();
        headers.insert(
            DATE,
            HeaderValue::from_static("Thu, 01 Jan 2026 00:00:00 GMT"),
        );
        headers.insert(CONNECTION, HeaderValue::from_static("keep-alive"));
        headers.insert("x", HeaderValue::from_static(""));
        let mut out = BytesMut::new();
        let head = ResponseHead {
            status: StatusCode::OK,
            version: Version::HTTP_10,
            headers: HeaderView::Map(&headers),
            framing: Framing::Length(0),
            keep_alive: true,
            date: || *b"Thu, 26 Nov 2026 05:00:00 GMT",
        };
        write(&mut out, &head);
        let text = String::from_utf8(out.to_vec()).unwrap();
        assert_eq!(text.matches("date: ").count(), 1, "{text}");
        assert!(text.contains("date: Thu, 01 Jan 2026"), "{text}");
        assert_eq!(text.matches("connection: ").count(), 1, "{text}");
        assert!(text.contains("\r\nx: \r\n"), "{text}");
    }

    /// Up to `MAX_RAW` fields are kept raw, more go into the map; either way every field
    /// is there, a chunked body's `Content-Length` left out, and the framing read from them.
    #[test]
    fn fields_kept_as_read_up_to_max_raw_then_in_the_map() {
        use crate::http::h1::raw::MAX_RAW;
        for n in [MAX_RAW, MAX_RAW + 1] {
            let others: String = (2..n).map(|i| format!("X-{i}: v{i}\r\n")).collect();
            let raw = format!(
                "POST / HTTP/1.1\r\nContent-Length: 5\r\n{others}Transfer-Encoding: chunked\r\n\r\n"
            );
            let head = head(&raw).unwrap();
            assert_eq!(head.body, Decoder::Chunked(Chunk::Size), "{n}");
            let fields = head.request.headers();
            let kept = matches!(fields, HeaderView::Raw(_));
            assert_eq!(kept, n <= MAX_RAW, "{n}: kept raw or not");
            assert_eq!(fields.len(), n - 1, "{n}: all but the length");
            assert!(!fields.contains(&CONTENT_LENGTH), "{n}");
            assert_eq!(fields.get(&"x-2".parse().unwrap()), Some(&b"v2"[..]), "{n}");
            let coding = fields.get(&TRANSFER_ENCODING);
            assert_eq!(coding, Some(&b"chunked"[..]), "{n}");
        }
    }

    /// A 200's head, its raw header fields as a response's are, as written.
    fn kept_as_read(raw: &RawHeaders, version: Version, framing: Framing) -> String {
        let mut out = BytesMut::new();
        let head = ResponseHead {
            status: StatusCode::OK,
            version,
            headers: HeaderView::Raw(raw),
            framing,
            keep_alive: true,
            date: || *b"lingo's date, never written!!",
        };
        write(&mut out, &head);
        String::from_utf8(out.to_vec()).unwrap()
    }

    /// Raw header fields are written as they are: their `Date` is the response's, their
    /// length is written only for a response without a body (a `HEAD`'s), and hop-by-hop
    /// ones never. lingo's request id set among them (`RawHeaders::insert`) stands for
    /// theirs: written once, after the fields read.
    #[test]
    fn response_heads_with_fields_kept_as_read() {
        let mut raw = raw::read(
            "X-Request-Id: upstreams\r\nDate: Mon, 02 Jan 2006 15:04:05 GMT\r\n\
             Content-Length: 10\r\nx-request-id: again\r\nX-B: 2\r\nKeep-Alive: timeout=5\r\n\r\n",
            Kind::Response,
        );
        let kept = "X-Request-Id: upstreams\r\nDate: Mon, 02 Jan 2006 15:04:05 GMT\r\n\
                    x-request-id: again\r\nX-B: 2\r\n";
        assert_eq!(
            kept_as_read(&raw, Version::HTTP_11, Framing::Chunked),
            format!("HTTP/1.1 200 OK\r\n{kept}transfer-encoding: chunked\r\n\r\n")
        );
        raw.insert(
            hyper::header::HeaderName::from_static("x-request-id"),
            HeaderValue::from_static("lingos"),
        );
        for (version, framing, head) in [
            (Version::HTTP_11, Framing::None, "HTTP/1.1"),
            (Version::HTTP_10, Framing::Length(10), "HTTP/1.0"),
        ] {
            let written = kept_as_read(&raw, version, framing);
            let fields =
                "Date: Mon, 02 Jan 2006 15:04:05 GMT\r\nX-B: 2\r\nx-request-id: lingos\r\n";
            assert!(
                written.starts_with(&format!("{head} 200 OK\r\n{fields}content-length: 10\r\n")),
                "{written}"
            );
        }
    }

    /// A response without a body (a `HEAD`'s, a 304) says its length as one number, whether
    /// its fields are in the map or kept raw: a list of equal lengths becomes one, and
    /// lengths that disagree or are no number are not written at all.
    #[test]
    fn a_bodyless_responses_length_is_one_number_or_none() {
        let cases = [
            ("content-length: 7\r\n", Some("7")),
            ("content-length: 007\r\n", Some("7")),
            ("content-length: 7, 7\r\n", Some("7")),
            ("content-length: 7\r\ncontent-length: 7\r\n", Some("7")),
            ("content-length: 7, 8\r\n", None),
            ("content-length: 7\r\ncontent-length: 8\r\n", None),
            ("content-length: seven\r\n", None),
            ("content-length: -7\r\n", None),
            ("content-length: \r\n", None),
            ("x-other: 1\r\n", None),
        ];
        for (fields, want) in cases {
            let section = format!("{fields}\r\n");
            let kept = raw::read(&section, Kind::Response);
            let mut map = HeaderMap::new();
            kept.append_to(&mut map);
            for status in [StatusCode::OK, StatusCode::NOT_MODIFIED] {
                for headers in [HeaderView::Map(&map), HeaderView::Raw(&kept)] {
                    let mut out = BytesMut::new();
                    let head = ResponseHead {
                        status,
                        version: Version::HTTP_11,
                        headers,
                        framing: Framing::None,
                        keep_alive: true,
                        date: || *b"Thu, 26 Nov 2026 05:00:00 GMT",
                    };
                    write(&mut out, &head);
                    let written = String::from_utf8(out.to_vec())
                        .unwrap()
                        .to_ascii_lowercase();
                    let lengths: Vec<&str> = written
                        .lines()
                        .filter_map(|l| l.strip_prefix("content-length: "))
                        .collect();
                    assert_eq!(lengths, Vec::from_iter(want), "{fields:?} {written}");
                }
            }
        }
    }

    #[test]
    fn response_heads() {
        let mut headers = HeaderMap::new();
        headers.insert("x-a", HeaderValue::from_static("1"));
        headers.insert(CONTENT_LENGTH, HeaderValue::from_static("99"));
        let write_one = |version, framing, keep_alive| {
            let mut out = BytesMut::new();
            let head = ResponseHead {
                status: StatusCode::OK,
                version,
                headers: HeaderView::Map(&headers),
                framing,
                keep_alive,
                date: || *b"Thu, 26 Nov 2026 05:00:00 GMT",
            };
            write(&mut out, &head);
            String::from_utf8(out.to_vec()).unwrap()
        };
        let d = "date: Thu, 26 Nov 2026 05:00:00 GMT\r\n";
        assert_eq!(
            write_one(Version::HTTP_11, Framing::Length(3), true),
            format!("HTTP/1.1 200 OK\r\nx-a: 1\r\ncontent-length: 3\r\n{d}\r\n")
        );
        assert_eq!(
            write_one(Version::HTTP_11, Framing::Chunked, false),
            format!(
                "HTTP/1.1 200 OK\r\nx-a: 1\r\ntransfer-encoding: chunked\r\n{d}connection: close\r\n\r\n"
            )
        );
        assert_eq!(
            write_one(Version::HTTP_10, Framing::None, true),
            format!(
                "HTTP/1.0 200 OK\r\nx-a: 1\r\ncontent-length: 99\r\n{d}connection: keep-alive\r\n\r\n"
            )
        );
    }
}
