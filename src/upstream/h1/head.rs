//! Message heads: the request head lingo writes, and the answer head it reads (RFC 9112).
//!
//! Pure. An answer head is parsed by `httparse` (hyper's own parser, as strict) and its
//! fields are kept as slices of the bytes read, not copied one by one. What frames the answer's
//! body is decided here, once, by RFC 9112 §6.3's order.

use std::fmt::Write as _;
use std::ops::Range;

use bytes::{Bytes, BytesMut};
use hyper::header::{CONNECTION, CONTENT_LENGTH, HOST, HeaderName, HeaderValue, TRANSFER_ENCODING};
use hyper::{HeaderMap, Method, StatusCode, Version};

use super::decode::{Chunk, Decoder};

/// The most fields an answer head may have (hyper's default too).
const MAX_FIELDS: usize = 100;
/// The largest answer head read.
pub const MAX_HEAD: usize = 64 * 1024;

/// How a request's body is framed on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `Content-Length` (none written for an empty body of a method that has none).
    Length(u64),
    Chunked,
}

/// A parsed answer head.
#[derive(Debug)]
pub struct Head {
    pub status: StatusCode,
    pub version: Version,
    pub headers: HeaderMap,
    /// How its body is framed.
    pub body: Decoder,
    /// Whether the connection can carry another request after this answer.
    pub keep_alive: bool,
}

/// What the bytes read so far hold.
#[derive(Debug)]
pub enum Parsed {
    /// A final answer's head (its bytes taken out of the buffer).
    Head(Head),
    /// An interim (1xx) answer, taken out of the buffer and dropped.
    Interim,
    /// Not all of a head yet.
    Partial,
}

/// An answer head lingo cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeadError {
    #[error("malformed answer head from the upstream ({0})")]
    Malformed(String),
    #[error("the upstream's answer head is too large")]
    TooLarge,
    #[error("invalid content-length in the upstream's answer")]
    ContentLength,
    #[error("the upstream switched protocols (101) unasked")]
    Switched,
}

// === the request head ===

/// Writes a request head: the request line in origin form, the headers (but any framing
/// header: lingo writes its own, from `framing`), and `Host` from `host` if it has none.
pub fn write_request(
    out: &mut BytesMut,
    method: &Method,
    path_and_query: &str,
    headers: &HeaderMap,
    framing: Framing,
    host: &str,
) {
    let path = if path_and_query.is_empty() {
        "/"
    } else {
        path_and_query
    };
    out.extend_from_slice(method.as_str().as_bytes());
    out.extend_from_slice(b" ");
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    if !headers.contains_key(HOST) {
        field(out, "host", host.as_bytes());
    }
    for (name, value) in headers {
        if name != CONTENT_LENGTH && name != TRANSFER_ENCODING {
            field(out, name.as_str(), value.as_bytes());
        }
    }
    match framing {
        Framing::Length(0) if !wants_length(method) => {}
        Framing::Length(n) => {
            let _ = write!(out, "content-length: {n}\r\n");
        }
        Framing::Chunked => out.extend_from_slice(b"transfer-encoding: chunked\r\n"),
    }
    out.extend_from_slice(b"\r\n");
}

fn field(out: &mut BytesMut, name: &str, value: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Methods whose requests carry a body as a rule: an empty one says so with a zero length
/// (RFC 9110 §8.6: a user agent SHOULD send it for them).
fn wants_length(method: &Method) -> bool {
    matches!(*method, Method::POST | Method::PUT | Method::PATCH)
}

// === the answer head ===

/// Takes an answer head out of `buf` if it is all there. `head_request`: the request was a
/// `HEAD`, so the answer has no body whatever its fields say.
pub fn parse_answer(buf: &mut BytesMut, head_request: bool) -> Result<Parsed, HeadError> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_FIELDS];
    let mut answer = httparse::Response::new(&mut fields);
    let len = match answer.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD => return Err(HeadError::TooLarge),
        Ok(httparse::Status::Partial) => return Ok(Parsed::Partial),
        Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooLarge),
        Err(err) => return Err(HeadError::Malformed(err.to_string())),
    };
    let code = answer.code.unwrap_or_default();
    let version = if answer.version == Some(0) {
        Version::HTTP_10
    } else {
        Version::HTTP_11
    };
    if code == 101 {
        return Err(HeadError::Switched);
    }
    if (100..200).contains(&code) {
        let _ = buf.split_to(len);
        return Ok(Parsed::Interim);
    }
    let status = StatusCode::from_u16(code).map_err(|e| HeadError::Malformed(e.to_string()))?;
    let spans = spans(buf, answer.headers);
    let bytes = buf.split_to(len).freeze();
    let headers = to_map(&bytes, &spans)?;
    let no_body =
        head_request || status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED;
    let (body, framed) = framing(&headers, no_body)?;
    let keep_alive = framed && keeps_alive(&headers, version);
    Ok(Parsed::Head(Head {
        status,
        version,
        headers,
        body,
        keep_alive,
    }))
}

/// Where each field's name and value sit in `buf`: the fields are made from one frozen copy
/// of the head instead of a copy each.
fn spans(buf: &[u8], fields: &[httparse::Header<'_>]) -> Vec<(Range<usize>, Range<usize>)> {
    let at = |s: &[u8]| {
        let start = s.as_ptr() as usize - buf.as_ptr() as usize;
        start..start + s.len()
    };
    fields
        .iter()
        .map(|f| (at(f.name.as_bytes()), at(f.value)))
        .collect()
}

fn to_map(bytes: &Bytes, spans: &[(Range<usize>, Range<usize>)]) -> Result<HeaderMap, HeadError> {
    let mut headers = HeaderMap::with_capacity(spans.len());
    for (name, value) in spans {
        let name = HeaderName::from_bytes(&bytes[name.clone()])
            .map_err(|e| HeadError::Malformed(e.to_string()))?;
        let value = HeaderValue::from_maybe_shared(bytes.slice(value.clone()))
            .map_err(|e| HeadError::Malformed(e.to_string()))?;
        headers.append(name, value);
    }
    Ok(headers)
}

/// The fields of a trailer section (`name: value` lines, then an empty line).
pub fn fields(section: &Bytes) -> Result<HeaderMap, HeadError> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_FIELDS];
    match httparse::parse_headers(section, &mut fields) {
        Ok(httparse::Status::Complete((_, parsed))) => to_map(section, &spans(section, parsed)),
        Ok(httparse::Status::Partial) => Err(HeadError::Malformed("partial".into())),
        Err(httparse::Error::TooManyHeaders) => Err(HeadError::TooLarge),
        Err(err) => Err(HeadError::Malformed(err.to_string())),
    }
}

/// The body's framing, and whether it ends on its own (else the connection's close ends it).
/// RFC 9112 §6.3: no body for some answers; then `Transfer-Encoding` over `Content-Length`
/// (and then the connection cannot be reused, §6.1); a list of equal lengths is one length,
/// differing ones are an error; neither: up to the close.
fn framing(headers: &HeaderMap, no_body: bool) -> Result<(Decoder, bool), HeadError> {
    if no_body {
        return Ok((Decoder::Done, true));
    }
    if headers.contains_key(TRANSFER_ENCODING) {
        let chunked = last_token(headers, TRANSFER_ENCODING)
            .is_some_and(|t| t.eq_ignore_ascii_case("chunked"));
        let alone = !headers.contains_key(CONTENT_LENGTH);
        return Ok(match chunked {
            true => (Decoder::Chunked(Chunk::Size), alone),
            false => (Decoder::ToClose, false),
        });
    }
    let mut length = None;
    for value in headers.get_all(CONTENT_LENGTH) {
        let text = value.to_str().map_err(|_| HeadError::ContentLength)?;
        for part in text.split(',') {
            let part = part.trim();
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(HeadError::ContentLength);
            }
            let n: u64 = part.parse().map_err(|_| HeadError::ContentLength)?;
            if length.is_some_and(|l| l != n) {
                return Err(HeadError::ContentLength);
            }
            length = Some(n);
        }
    }
    Ok(match length {
        Some(0) => (Decoder::Done, true),
        Some(n) => (Decoder::Length(n), true),
        None => (Decoder::ToClose, false),
    })
}

/// Persistence (RFC 9112 §9.3): HTTP/1.1 unless `Connection: close`; HTTP/1.0 only with
/// `Connection: keep-alive`.
fn keeps_alive(headers: &HeaderMap, version: Version) -> bool {
    let has = |token: &str| {
        headers
            .get_all(CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    };
    match version {
        Version::HTTP_10 => has("keep-alive"),
        _ => !has("close"),
    }
}

/// The last comma-separated token of a field's last line.
fn last_token(headers: &HeaderMap, name: HeaderName) -> Option<&str> {
    let last = headers.get_all(name).iter().next_back()?.to_str().ok()?;
    last.rsplit(',').next().map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(raw: &str, head_request: bool) -> Result<Parsed, HeadError> {
        parse_answer(&mut BytesMut::from(raw), head_request)
    }

    fn head(raw: &str) -> Head {
        match parse(raw, false) {
            Ok(Parsed::Head(head)) => head,
            other => panic!("{raw:?}: {other:?}"),
        }
    }

    /// Framing and persistence by RFC 9112 §6.3 and §9.3, one answer head each.
    #[test]
    fn answers_are_framed_by_the_rfc_order() {
        let cases: &[(&str, Decoder, bool)] = &[
            (
                "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n",
                Decoder::Length(5),
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n",
                Decoder::Length(5),
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 5\r\n\r\n",
                Decoder::Length(5),
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
                Decoder::Chunked(Chunk::Size),
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, Chunked\r\n\r\n",
                Decoder::Chunked(Chunk::Size),
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-length: 5\r\n\r\n",
                Decoder::Chunked(Chunk::Size),
                false,
            ),
            (
                "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n",
                Decoder::ToClose,
                false,
            ),
            ("HTTP/1.1 200 OK\r\n\r\n", Decoder::ToClose, false),
            ("HTTP/1.1 204 No Content\r\n\r\n", Decoder::Done, true),
            (
                "HTTP/1.1 304 Not Modified\r\ncontent-length: 9\r\n\r\n",
                Decoder::Done,
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n",
                Decoder::Length(2),
                false,
            ),
            (
                "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: x, Close\r\n\r\n",
                Decoder::Length(2),
                false,
            ),
            (
                "HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\n",
                Decoder::Length(2),
                false,
            ),
            (
                "HTTP/1.0 200 OK\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\n",
                Decoder::Length(2),
                true,
            ),
        ];
        for (raw, body, keep_alive) in cases {
            let head = head(raw);
            assert_eq!(
                (head.body, head.keep_alive),
                (*body, *keep_alive),
                "{raw:?}"
            );
        }
    }

    #[test]
    fn a_head_request_has_no_body_whatever_its_length() {
        let raw = "HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n";
        let Ok(Parsed::Head(head)) = parse(raw, true) else {
            panic!("no head");
        };
        assert_eq!((head.body, head.keep_alive), (Decoder::Done, true));
        assert_eq!(head.headers[CONTENT_LENGTH], "10");
    }

    #[test]
    fn unreadable_heads_are_errors() {
        let cases: &[(&str, HeadError)] = &[
            (
                "HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\n",
                HeadError::ContentLength,
            ),
            (
                "HTTP/1.1 200 OK\r\ncontent-length: 5, 6\r\n\r\n",
                HeadError::ContentLength,
            ),
            (
                "HTTP/1.1 200 OK\r\ncontent-length: -5\r\n\r\n",
                HeadError::ContentLength,
            ),
            (
                "HTTP/1.1 200 OK\r\ncontent-length: +5\r\n\r\n",
                HeadError::ContentLength,
            ),
            (
                "HTTP/1.1 200 OK\r\ncontent-length: 99999999999999999999\r\n\r\n",
                HeadError::ContentLength,
            ),
            (
                "HTTP/1.1 101 Switching Protocols\r\n\r\n",
                HeadError::Switched,
            ),
        ];
        for (raw, want) in cases {
            assert_eq!(parse(raw, false).unwrap_err(), *want, "{raw:?}");
        }
        for raw in [
            "garbage\r\n\r\n",
            "HTTP/1.1 2000 OK\r\n\r\n",
            "HTTP/1.1 200 OK\r\nbad name: x\r\n\r\n",
        ] {
            assert!(
                matches!(parse(raw, false), Err(HeadError::Malformed(_))),
                "{raw:?}"
            );
        }
        let many: String = (0..=MAX_FIELDS).map(|i| format!("x-{i}: 1\r\n")).collect();
        let raw = format!("HTTP/1.1 200 OK\r\n{many}\r\n");
        assert_eq!(parse(&raw, false).unwrap_err(), HeadError::TooLarge);
        let endless = format!("HTTP/1.1 200 OK\r\nx: {}", "a".repeat(MAX_HEAD));
        assert_eq!(parse(&endless, false).unwrap_err(), HeadError::TooLarge);
    }

    #[test]
    fn interim_answers_are_dropped_and_partial_heads_wait() {
        let mut buf =
            BytesMut::from("HTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\nHTTP/1.1 200 OK\r\n");
        assert!(matches!(parse_answer(&mut buf, false), Ok(Parsed::Interim)));
        assert!(matches!(parse_answer(&mut buf, false), Ok(Parsed::Partial)));
        buf.extend_from_slice(b"content-length: 0\r\n\r\nrest");
        assert!(matches!(parse_answer(&mut buf, false), Ok(Parsed::Head(_))));
        assert_eq!(&buf[..], b"rest");
    }

    #[test]
    fn fields_keep_their_order_and_bytes() {
        let head = head("HTTP/1.1 404 Not Found\r\nX-A: 1\r\nx-a: 2\r\nx-obs: café\r\n\r\n");
        assert_eq!(head.status, StatusCode::NOT_FOUND);
        let a: Vec<_> = head.headers.get_all("x-a").iter().collect();
        assert_eq!(a, ["1", "2"]);
        assert_eq!(head.headers["x-obs"].as_bytes(), "café".as_bytes());
    }

    #[test]
    fn request_heads_carry_lingos_framing_only() {
        let mut headers = HeaderMap::new();
        headers.insert(HOST, HeaderValue::from_static("up:1"));
        headers.insert(CONTENT_LENGTH, HeaderValue::from_static("999"));
        headers.insert(TRANSFER_ENCODING, HeaderValue::from_static("gzip"));
        headers.insert("x-a", HeaderValue::from_static("1"));
        let cases: &[(Method, Framing, &str)] = &[
            (Method::POST, Framing::Length(2), "content-length: 2\r\n"),
            (Method::POST, Framing::Length(0), "content-length: 0\r\n"),
            (Method::GET, Framing::Length(0), ""),
            (
                Method::GET,
                Framing::Chunked,
                "transfer-encoding: chunked\r\n",
            ),
        ];
        for (method, framing, tail) in cases {
            let mut out = BytesMut::new();
            write_request(
                &mut out,
                method,
                "/api/x?q=1",
                &headers,
                *framing,
                "ignored",
            );
            let want =
                format!("{method} /api/x?q=1 HTTP/1.1\r\nhost: up:1\r\nx-a: 1\r\n{tail}\r\n");
            assert_eq!(std::str::from_utf8(&out).unwrap(), want);
        }
        let mut out = BytesMut::new();
        write_request(
            &mut out,
            &Method::GET,
            "",
            &HeaderMap::new(),
            Framing::Length(0),
            "up:2",
        );
        assert_eq!(&out[..], b"GET / HTTP/1.1\r\nhost: up:2\r\n\r\n");
    }
}
