//! Message heads: the request head lingo writes, and the response head it reads (RFC 9112).
//!
//! Pure. A response head is parsed by `httparse` (hyper's own parser, as strict) and its
//! fields are kept as slices of the bytes read, not copied one by one. What frames the
//! response's body is decided here, once, by RFC 9112 §6.3's order.

use std::mem::MaybeUninit;

use bytes::BytesMut;
use hyper::header::{CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
use hyper::{Method, StatusCode, Version};

use crate::http::h1::decode::{Chunk, Decoder};
use crate::http::h1::fields::{FieldError, FramingHeaders, RESPONSE_ADDS, push_decimal};
use crate::http::h1::raw::{Headers, Kind, PendingHeaders};
use crate::http::hop::{self, remove_hop_by_hop};
use crate::http::message::HeaderView;
use crate::upstream::headers::Forwarding;

/// The most fields a response head may have (hyper's default too).
const MAX_FIELDS: usize = 100;
/// The largest response head read.
pub const MAX_HEAD: usize = 64 * 1024;

/// How a request's body is framed on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `Content-Length` (none written for an empty body of a method that has none).
    Length(u64),
    Chunked,
}

/// A parsed response head.
#[derive(Debug)]
pub struct Head {
    pub status: StatusCode,
    pub version: Version,
    /// Its fields, but the hop-by-hop ones (RFC 9110 §7.6.1: they stay on the upstream's hop).
    pub headers: Headers,
    /// How its body is framed.
    pub body: Decoder,
    /// Whether the connection can carry another request after this response.
    pub keep_alive: bool,
}

/// What the bytes read so far hold.
#[derive(Debug)]
pub enum Parsed {
    /// A final response's head (its bytes taken out of the buffer).
    Head(Head),
    /// An interim (1xx) response, taken out of the buffer and dropped.
    Interim,
    /// Not all of a head yet.
    Partial,
}

/// A response head lingo cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeadError {
    #[error("malformed response head from the upstream ({0})")]
    Malformed(String),
    #[error("the upstream's response head is too large")]
    TooLarge,
    #[error("invalid content-length in the upstream's response")]
    ContentLength,
    #[error("the upstream switched protocols (101) unasked")]
    Switched,
}

// === the request head ===

/// Writes a request head: the request line in origin form, the request's own `headers`
/// (but any framing header: lingo writes its own, from `framing`), and `Host` from `host` if
/// it has none. With `rules`, the fields are lingo's and the client's as those rules forward
/// them (the rules `to_upstream` applies to a map, applied here as the fields are written:
/// no map made).
pub fn write_request(
    out: &mut BytesMut,
    method: &Method,
    path_and_query: &str,
    headers: HeaderView<'_>,
    framing: Framing,
    host: &str,
    rules: Option<&Forwarding<'_>>,
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
    match rules {
        Some(rules) => {
            rules.each_added(|name, value| field(out, name.as_str().as_bytes(), value.as_bytes()));
            rules.each_forwarded(headers, |name, value| field(out, name, value));
            if let Some(client) = rules.client {
                rules.each_forwarded(client, |name, value| field(out, name, value));
            }
        }
        None => {
            if !headers.contains(&HOST) {
                field(out, b"host", host.as_bytes());
            }
            for (name, value) in headers.iter() {
                let framing = hop::is(name, &CONTENT_LENGTH) || hop::is(name, &TRANSFER_ENCODING);
                if !framing {
                    field(out, name, value);
                }
            }
        }
    }
    match framing {
        Framing::Length(0) if !wants_length(method) => {}
        Framing::Length(n) => {
            out.extend_from_slice(b"content-length: ");
            push_decimal(out, n);
            out.extend_from_slice(b"\r\n");
        }
        Framing::Chunked => out.extend_from_slice(b"transfer-encoding: chunked\r\n"),
    }
    out.extend_from_slice(b"\r\n");
}

fn field(out: &mut BytesMut, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Methods whose requests carry a body as a rule: an empty one says so with a zero length
/// (RFC 9110 §8.6: a user agent SHOULD send it for them).
fn wants_length(method: &Method) -> bool {
    matches!(*method, Method::POST | Method::PUT | Method::PATCH)
}

// === the response head ===

/// Takes a response head out of `buf` if it is all there. `head_request`: the request was a
/// `HEAD`, so the response has no body whatever its fields say. `as_read`: the response is
/// passed on unchanged, and its fields may be kept raw (`http::h1::raw`).
pub fn parse_response(
    buf: &mut BytesMut,
    head_request: bool,
    as_read: bool,
) -> Result<Parsed, HeadError> {
    let mut fields = [const { MaybeUninit::uninit() }; MAX_FIELDS];
    let (response, parsed) = read(buf, &mut fields);
    let len = match parsed {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD => return Err(HeadError::TooLarge),
        Ok(httparse::Status::Partial) => return Ok(Parsed::Partial),
        Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooLarge),
        Err(err) => return Err(HeadError::Malformed(err.to_string())),
    };
    let code = response.code.unwrap_or_default();
    let version = version_of(&response);
    if code == 101 {
        return Err(HeadError::Switched);
    }
    if (100..200).contains(&code) {
        let _ = buf.split_to(len);
        return Ok(Parsed::Interim);
    }
    let status = StatusCode::from_u16(code).map_err(|e| HeadError::Malformed(e.to_string()))?;
    // The fields indexed where they are, before the head leaves the buffer.
    let (mut room, mut heap) = (None, Vec::new());
    let keep = as_read.then_some(Kind::Response);
    let pending = PendingHeaders::index(buf, len, response.headers, keep, (&mut room, &mut heap));
    let bytes = buf.split_to(len).freeze();
    // Kept as read (lingo's request id is then set among them: `RawHeaders::insert`), or in
    // a map with room for the fields lingo adds.
    let (mut headers, said) = pending.attach(bytes, RESPONSE_ADDS)?;
    if let Headers::Map(map) = &mut headers {
        remove_hop_by_hop(map);
    }
    if said.chunked.is_some() && version == Version::HTTP_10 {
        // RFC 9112 §6.1: framing faulty in HTTP/1.0.
        return Err(HeadError::Malformed("transfer-encoding in HTTP/1.0".into()));
    }
    let no_body =
        head_request || status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED;
    let (body, framed) = framing(&said, no_body)?;
    let keep_alive = framed && said.keeps_alive(version);
    Ok(Parsed::Head(Head {
        status,
        version,
        headers,
        body,
        keep_alive,
    }))
}

/// What a response that begins before the request's end asks of the rest of the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Early {
    /// A success that keeps its connection: the rest is sent, then the response read.
    KeepSending,
    /// Anything else (a refusal, a success that closes the connection, bytes that are no
    /// response): the rest is not sent, and reading the head says what came.
    StopSending,
}

/// What the front of `buf` says while a request is still being sent (`None`: not enough
/// yet). Interim responses before it are taken out: a `100 Continue` or `103 Early Hints` says
/// nothing about the upload. RFC 9112 §9.6: a client stops sending only for a response that
/// says the server does not want the rest, or will close the connection.
pub fn early(buf: &mut BytesMut) -> Result<Option<Early>, HeadError> {
    loop {
        let Some(code) = status_code(buf) else {
            return Ok(None);
        };
        if (200..300).contains(&code) {
            return Ok(closes(buf).map(|closes| match closes {
                true => Early::StopSending,
                false => Early::KeepSending,
            }));
        }
        if code == 101 || !(100..200).contains(&code) {
            return Ok(Some(Early::StopSending));
        }
        // An interim head: taken out when it is all there.
        if let Parsed::Partial = parse_response(buf, false, false)? {
            return Ok(None);
        }
    }
}

/// The status code of the status line `buf` starts with (after empty lines, which httparse
/// skips too), once its code is there; 0 for bytes that are no status line.
fn status_code(buf: &[u8]) -> Option<u16> {
    let start = buf
        .iter()
        .take_while(|&&b| b == b'\r' || b == b'\n')
        .count();
    let line = buf.get(start..start + 12)?;
    let digits = &line[9..12];
    let well_formed = line.starts_with(b"HTTP/1.")
        && line[7].is_ascii_digit()
        && line[8] == b' '
        && digits.iter().all(u8::is_ascii_digit);
    if !well_formed {
        return Some(0);
    }
    Some(digits.iter().fold(0, |n, d| n * 10 + u16::from(d - b'0')))
}

/// Whether the response head at the front of `buf` closes its connection after it, read
/// without taking it out; `None` while the head is not all there. A head that cannot be read
/// counts as closing (reading it again later says what is wrong).
fn closes(buf: &[u8]) -> Option<bool> {
    let mut fields = [const { MaybeUninit::uninit() }; MAX_FIELDS];
    let (response, parsed) = read(buf, &mut fields);
    match parsed {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => return None,
        _ => return Some(true),
    }
    let mut said = FramingHeaders::default();
    for field in response.headers.iter() {
        if field.name.eq_ignore_ascii_case("connection") {
            said.connection(field.value);
        }
    }
    Some(!said.keeps_alive(version_of(&response)))
}

/// httparse's reading of the response head `buf` starts with, its fields in `fields`:
/// uninitialised room, which httparse fills as it finds them (zeroing all 100 cost more than
/// parsing a small head; so did making that room in a function of its own, which returned
/// it by copy).
fn read<'h, 'b>(
    buf: &'b [u8],
    fields: &'h mut [MaybeUninit<httparse::Header<'b>>],
) -> (httparse::Response<'h, 'b>, httparse::Result<usize>) {
    let mut response = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut response,
        buf,
        fields,
    );
    (response, parsed)
}

fn version_of(response: &httparse::Response<'_, '_>) -> Version {
    match response.version {
        Some(0) => Version::HTTP_10,
        _ => Version::HTTP_11,
    }
}

/// The body's framing, and whether it ends on its own (else the connection's close ends
/// it). RFC 9112 §6.3: no body for some responses; then `Transfer-Encoding` over
/// `Content-Length` (and then the connection cannot be reused, §6.1), a `Transfer-Encoding`
/// that is no list of codings an error; a list of equal lengths is one length, differing
/// ones are an error; neither: close-delimited.
fn framing(said: &FramingHeaders, no_body: bool) -> Result<(Decoder, bool), HeadError> {
    if no_body {
        return Ok((Decoder::Done, true));
    }
    if said.codings_unreadable {
        // Read as not chunked (close-delimited), the body would end elsewhere than where a
        // reader that finds `chunked` in the value ends it: faulty framing, no response.
        return Err(HeadError::Malformed(
            "transfer-encoding that is no list of codings".into(),
        ));
    }
    match (said.chunked, said.length) {
        (Some(true), length) => Ok((Decoder::Chunked(Chunk::Size), length.is_none())),
        (Some(false), _) => Ok((Decoder::CloseDelimited, false)),
        (None, Some(Ok(0))) => Ok((Decoder::Done, true)),
        (None, Some(Ok(n))) => Ok((Decoder::Length(n), true)),
        (None, Some(Err(()))) => Err(HeadError::ContentLength),
        (None, None) => Ok((Decoder::CloseDelimited, false)),
    }
}

impl From<FieldError> for HeadError {
    fn from(err: FieldError) -> Self {
        match err {
            FieldError::Malformed(why) => HeadError::Malformed(why),
            FieldError::TooLarge => HeadError::TooLarge,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::h1::raw::MAX_RAW;
    use hyper::HeaderMap;
    use hyper::header::HeaderValue;

    /// `headers` as a map.
    fn map_of(headers: &Headers) -> HeaderMap {
        let mut map = HeaderMap::new();
        match headers {
            Headers::Map(fields) => HeaderView::Map(fields).append_to(&mut map),
            Headers::Raw(raw) => raw.append_to(&mut map),
        }
        map
    }

    /// The head read into a map; read again with its raw header fields, it must be framed,
    /// kept alive and refused alike, and have the same fields.
    fn parse(raw: &str, head_request: bool) -> Result<Parsed, HeadError> {
        let mapped = parse_response(&mut BytesMut::from(raw), head_request, false);
        let kept = parse_response(&mut BytesMut::from(raw), head_request, true);
        match (&mapped, &kept) {
            (Ok(Parsed::Head(m)), Ok(Parsed::Head(k))) => {
                let seen = |h: &Head| (h.status, h.version, h.body, h.keep_alive);
                assert_eq!(seen(m), seen(k), "{raw:?}");
                assert!(matches!(m.headers, Headers::Map(_)), "{raw:?}");
                let as_read = matches!(k.headers, Headers::Raw(_));
                assert!(as_read || map_of(&k.headers).len() > MAX_RAW, "{raw:?}");
                assert_eq!(map_of(&m.headers), map_of(&k.headers), "{raw:?}");
            }
            (Err(m), Err(k)) => assert_eq!(m, k, "{raw:?}"),
            (Ok(Parsed::Partial), Ok(Parsed::Partial))
            | (Ok(Parsed::Interim), Ok(Parsed::Interim)) => {}
            _ => panic!("{raw:?}: {mapped:?}, kept raw {kept:?}"),
        }
        mapped
    }

    fn head(raw: &str) -> Head {
        match parse(raw, false) {
            Ok(Parsed::Head(head)) => head,
            other => panic!("{raw:?}: {other:?}"),
        }
    }

    /// Framing and persistence by RFC 9112 §6.3 and §9.3, one response head each.
    #[test]
    fn responses_are_framed_by_the_rfc_order() {
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
                Decoder::CloseDelimited,
                false,
            ),
            ("HTTP/1.1 200 OK\r\n\r\n", Decoder::CloseDelimited, false),
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
        let Headers::Map(headers) = head.headers else {
            panic!("a map");
        };
        assert_eq!(headers[CONTENT_LENGTH], "10");
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
    fn interim_responses_are_dropped_and_partial_heads_wait() {
        let mut buf =
            BytesMut::from("HTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\nHTTP/1.1 200 OK\r\n");
        assert!(matches!(
            parse_response(&mut buf, false, false),
            Ok(Parsed::Interim)
        ));
        assert!(matches!(
            parse_response(&mut buf, false, false),
            Ok(Parsed::Partial)
        ));
        buf.extend_from_slice(b"content-length: 0\r\n\r\nrest");
        assert!(matches!(
            parse_response(&mut buf, false, false),
            Ok(Parsed::Head(_))
        ));
        assert_eq!(&buf[..], b"rest");
    }

    /// While a request is sent: interim responses are taken out, a success that keeps its
    /// connection lets the upload go on, anything else stops it.
    #[test]
    fn early_responses_say_whether_the_upload_goes_on() {
        use Early::*;
        let cases: &[(&str, Option<Early>, usize)] = &[
            ("", None, 0),
            ("HTTP/1.1 10", None, 11),
            ("HTTP/1.1 100 Continue\r\n\r\n", None, 0),
            ("\r\nHTTP/1.1 100 Continue\r\n\r\n", None, 0),
            ("HTTP/1.1 100 Continue\r\n", None, 23),
            (
                "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 413 Too Large\r\n",
                Some(StopSending),
                24,
            ),
            ("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n", None, 36),
            (
                "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok",
                Some(KeepSending),
                40,
            ),
            (
                "HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n",
                Some(StopSending),
                38,
            ),
            ("HTTP/1.0 200 OK\r\n\r\n", Some(StopSending), 19),
            ("HTTP/1.1 101 Switching\r\n\r\n", Some(StopSending), 26),
            ("garbage, not a response", Some(StopSending), 23),
        ];
        for (raw, want, left) in cases {
            let mut buf = BytesMut::from(*raw);
            assert_eq!(early(&mut buf).unwrap(), *want, "{raw:?}");
            assert_eq!(buf.len(), *left, "{raw:?}");
        }
    }

    #[test]
    fn fields_keep_their_order_and_bytes() {
        let head = head("HTTP/1.1 404 Not Found\r\nX-A: 1\r\nx-a: 2\r\nx-obs: café\r\n\r\n");
        assert_eq!(head.status, StatusCode::NOT_FOUND);
        let Headers::Map(headers) = head.headers else {
            panic!("a map");
        };
        let a: Vec<_> = headers.get_all("x-a").iter().collect();
        assert_eq!(a, ["1", "2"]);
        assert_eq!(headers["x-obs"].as_bytes(), "café".as_bytes());
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
            (
                Method::PUT,
                Framing::Length(1234567890),
                "content-length: 1234567890\r\n",
            ),
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
                HeaderView::Map(&headers),
                *framing,
                "ignored",
                None,
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
            HeaderView::Map(&HeaderMap::new()),
            Framing::Length(0),
            "up:2",
            None,
        );
        assert_eq!(&out[..], b"GET / HTTP/1.1\r\nhost: up:2\r\n\r\n");
    }

    /// The header rules applied as the head is written give the fields that applying them
    /// to the map first gives, whatever the rules and whatever the client sent: the client's
    /// fields as the request's own, or lent to the rules in a map or kept raw.
    #[test]
    fn rules_written_are_the_rules_applied_to_the_map() {
        use crate::base::secret::{Secret, SecretSource};
        use crate::http::h1::raw::{self, Kind};
        use crate::table::Auth;
        use crate::upstream::headers::{Forwarding, sample_client_headers, to_upstream};

        let client = sample_client_headers();
        let section: String = client
            .iter()
            .map(|(name, value)| {
                let name = name.as_str().to_ascii_uppercase();
                format!("{name}: {}\r\n", value.to_str().unwrap())
            })
            .collect();
        let kept = raw::read(&(section + "\r\n"), Kind::Request);
        let auth = |header: &str| Auth {
            header: header.parse().unwrap(),
            value: HeaderValue::from_static("up-key"),
            key: Secret::new("up-key"),
            source: SecretSource::Inline,
        };
        let (bearer, api_key) = (auth("authorization"), auth("x-api-key"));
        let empty = HeaderMap::new();
        let ways = [
            (&client, None),
            (&empty, Some(HeaderView::Map(&client))),
            (&empty, Some(HeaderView::Raw(&kept))),
        ];
        let (up, ip, lingo, rid) = (
            HeaderValue::from_static("up:11434"),
            HeaderValue::from_static("10.1.2.3"),
            HeaderValue::from_static("lingo"),
            HeaderValue::from_static("rid"),
        );
        for auth in [None, Some(&bearer), Some(&api_key)] {
            for flags in 0..16_u8 {
                let rules = Forwarding {
                    host: &up,
                    client_ip: &ip,
                    proto: "https",
                    client_host: (flags & 1 != 0).then_some(&lingo),
                    request_id: &rid,
                    auth,
                    upgrade: flags & 2 != 0,
                    identity: flags & 4 != 0,
                    json: flags & 8 != 0,
                    raw_response: false,
                    client: None,
                };
                let mut mapped = client.clone();
                to_upstream(&mut mapped, &rules);
                let want = written((&mapped).into(), None);
                for (own, client) in ways {
                    let rules = Forwarding { client, ..rules };
                    let got = written(own.into(), Some(&rules));
                    assert_eq!(got, want, "flags {flags}, {client:?}");
                    let mut mapped = own.clone();
                    to_upstream(&mut mapped, &rules);
                    assert_eq!(written((&mapped).into(), None), want, "flags {flags}");
                }
            }
        }
    }

    /// The fields of a `POST /` head written with `headers` and `rules`: each line, its name
    /// lowercased, sorted.
    fn written(headers: HeaderView<'_>, rules: Option<&Forwarding<'_>>) -> Vec<String> {
        let mut out = BytesMut::new();
        write_request(
            &mut out,
            &Method::POST,
            "/",
            headers,
            Framing::Length(2),
            "x",
            rules,
        );
        let text = std::str::from_utf8(&out).unwrap();
        let line = |line: &str| match line.split_once(':') {
            Some((name, value)) => format!("{}:{value}", name.to_ascii_lowercase()),
            None => line.to_owned(),
        };
        let mut lines: Vec<String> = text.split("\r\n").skip(1).map(line).collect();
        lines.sort_unstable();
        lines
    }

    /// A status line's code is read only from a well-formed line: each of its parts checked
    /// on its own; 0 for anything else, `None` until twelve bytes are there.
    #[test]
    fn a_status_code_is_read_from_a_well_formed_line_only() {
        let cases: [(&[u8], Option<u16>); 8] = [
            (b"HTTP/1.1 200 OK\r\n", Some(200)),
            (b"\r\nHTTP/1.0 204 No Content", Some(204)),
            (b"XTTP/1.1 200 OK", Some(0)),
            (b"HTTP/1.x 200 OK", Some(0)),
            (b"HTTP/1.1_200 OK", Some(0)),
            (b"HTTP/1.1 2x0 OK", Some(0)),
            (b"HTTP/1.1 20", None),
            (b"", None),
        ];
        for (line, want) in cases {
            assert_eq!(
                status_code(line),
                want,
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
    }

    /// A head not all there is waited for below [`MAX_HEAD`] (64 KiB) and counts as closing
    /// from there on.
    #[test]
    fn a_head_not_all_there_is_waited_for_up_to_its_limit() {
        let partial = |len: usize| {
            let mut head = b"HTTP/1.1 200 OK\r\nx-long: ".to_vec();
            head.resize(len, b'a');
            head
        };
        assert_eq!(MAX_HEAD, 65_536);
        assert_eq!(closes(&partial(2_000)), None);
        assert_eq!(closes(&partial(MAX_HEAD - 1)), None);
        assert_eq!(closes(&partial(MAX_HEAD)), Some(true));
    }
}
