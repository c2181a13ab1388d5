//! Request smuggling and path tricks, over raw sockets: ambiguous framing, malformed header
//! lines and encoded path escapes are refused (400, or the connection closed) and never
//! reach an upstream; no spelling of a path escapes its route's prefix or reaches a blocked
//! model-management endpoint.
//!
//! Each exchange writes the hostile bytes followed by a harmless `GET /healthz` with
//! `Connection: close`, then reads to the end of the connection: if lingo refuses and
//! closes, the health check never gets a response; if it read the hostile request some other way,
//! everything it sent is on the wire. No timing is involved.

mod support;

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use support::*;

/// The health check that closes every exchange.
const CLOSE: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: lingo\r\nConnection: close\r\n\r\n";

/// What came back on one connection.
#[derive(Debug)]
struct Exchange {
    /// Status codes of the responses, in order.
    statuses: Vec<u16>,
    raw: String,
}

impl Exchange {
    /// Refused: a 400 first (then at most the health check, see `refused`), or
    /// closed without a response.
    fn refused(&self) -> bool {
        matches!(self.statuses.first(), None | Some(400))
    }

    /// The first response's body as JSON (lingo's errors carry a `Content-Length`).
    fn first_json(&self) -> serde_json::Value {
        let (head, rest) = self
            .raw
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("no response: {:?}", self.raw));
        let len: usize = head
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse().unwrap())
            })
            .unwrap_or_else(|| panic!("no content-length: {head}"));
        serde_json::from_str(&rest[..len]).unwrap_or_else(|e| panic!("{e}: {rest}"))
    }
}

/// Writes `bytes` (then the closing health check) and reads until lingo closes.
async fn exchange(lingo: &Lingo, bytes: &[u8]) -> Exchange {
    let mut stream = TcpStream::connect(lingo.addr).await.unwrap();
    let mut out = bytes.to_vec();
    out.extend_from_slice(CLOSE);
    // lingo may close before reading everything: a failed write is a response too.
    let _ = stream.write_all(&out).await;
    let mut raw = Vec::new();
    // Not a threshold: only a guard so that a hung connection fails the test with a message.
    let read = tokio::time::timeout(Duration::from_secs(30), async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => raw.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(
        read.is_ok(),
        "lingo neither responded nor closed: {:?}",
        String::from_utf8_lossy(bytes)
    );
    let statuses = statuses(&raw);
    Exchange {
        statuses,
        raw: String::from_utf8_lossy(&raw).into_owned(),
    }
}

/// The status codes of the HTTP/1.1 responses in `raw`, in order, framed by their
/// `Content-Length` or chunked encoding (what lingo sends).
fn statuses(mut raw: &[u8]) -> Vec<u16> {
    let mut out = Vec::new();
    while let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
        let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
        raw = &raw[end + 4..];
        let status = (head.strip_prefix("http/1.1 "))
            .or_else(|| head.strip_prefix("http/1.0 "))
            .and_then(|r| r.get(..3))
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("not a status line: {head:?}"));
        out.push(status);
        let header = |name: &str| {
            head.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':').map(str::trim))
                .map(str::to_owned)
        };
        if let Some(len) = header("content-length") {
            raw = &raw[len.parse::<usize>().unwrap().min(raw.len())..];
        } else if header("transfer-encoding").is_some_and(|te| te.contains("chunked")) {
            loop {
                let Some(at) = raw.windows(2).position(|w| w == b"\r\n") else {
                    return out;
                };
                let size = std::str::from_utf8(&raw[..at]).unwrap();
                let size =
                    usize::from_str_radix(size.split(';').next().unwrap().trim(), 16).unwrap();
                raw = &raw[(at + 2 + size + 2).min(raw.len())..];
                if size == 0 {
                    break;
                }
            }
        }
    }
    out
}

/// lingo in front of two recording upstreams: `/api` (native, model management blocked)
/// and `/public` (web data).
async fn setup() -> (Lingo, Backend, Backend) {
    let api = Backend::json(200, r#"{"models":[]}"#).await;
    let public = Backend::json(200, r#"{"success":true}"#).await;
    let lingo = Lingo::start(&table(&format!(
        "upstreams:\n  \
           models:\n    url: {}\n    speaks: native\n  \
           pub:\n    url: {}\n    speaks: web-data\n\
         routes:\n  \
           - {{ prefix: /api, to: models }}\n  \
           - {{ prefix: /public, to: pub }}\n",
        api.url(),
        public.url()
    )))
    .await;
    (lingo, api, public)
}

/// Asserts that `cases` are each refused and that nothing reached either upstream.
async fn assert_refused(cases: &[(&str, &[u8])]) {
    let (lingo, api, public) = setup().await;
    // The harness itself works: a plain request on the same setup is forwarded.
    let control = exchange(&lingo, b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\n\r\n").await;
    assert_eq!(control.statuses, [200, 200], "{}", control.raw);
    assert_eq!(api.requests().len(), 1);
    for (name, bytes) in cases {
        let before = (api.requests().len(), public.requests().len());
        let response = exchange(&lingo, bytes).await;
        assert!(
            response.refused(),
            "{name}: not refused: {:?}\n{}",
            response.statuses,
            response.raw
        );
        assert_eq!(
            (api.requests().len(), public.requests().len()),
            before,
            "{name}: reached an upstream: {:?}",
            api.requests().last().or(public.requests().last())
        );
    }
}

// === ambiguous framing ===

/// Whatever lingo does with CL + TE, the upstream never gets both headers nor the bytes of
/// the smuggled request, and the smuggled `/api/pull` is still checked (and blocked) as a
/// request of its own.
#[tokio::test]
async fn content_length_with_transfer_encoding_never_smuggles_past_lingo() {
    let (lingo, api, _public) = setup().await;
    let smuggled = "POST /api/pull HTTP/1.1\r\nHost: lingo\r\nContent-Length: 2\r\n\r\n{}";
    let body = format!("0\r\n\r\n{smuggled}");
    let request = format!(
        "POST /api/chat HTTP/1.1\r\nHost: lingo\r\nContent-Length: {}\r\nTransfer-Encoding: chunked\r\n\r\n{body}",
        body.len()
    );
    let response = exchange(&lingo, request.as_bytes()).await;
    for seen in api.requests() {
        assert_ne!(
            seen.uri, "/api/pull",
            "smuggled past the block: {response:?}"
        );
        assert!(
            !seen.headers.contains_key("transfer-encoding")
                || !seen.headers.contains_key("content-length"),
            "both framings forwarded: {:?}",
            seen.headers
        );
        assert!(
            !String::from_utf8_lossy(&seen.body).contains("/api/pull"),
            "the smuggled request reached the upstream as a body"
        );
    }
    // RFC 9112 §6.3: whether it refuses or frames by Transfer-Encoding, the server closes the
    // connection after responding, so nothing after the body is read as a request (the
    // closing health check never gets a response).
    assert!(
        response.statuses.len() <= 1,
        "{:?}\n{}",
        response.statuses,
        response.raw
    );
}

/// A chunk size is read by its value: leading zeros, however many, are not digits that could
/// overflow (hyper reads them alike); a value past 64 bits is refused.
#[tokio::test]
async fn a_chunk_size_with_many_leading_zeros_is_read_by_its_value() {
    let (lingo, api, _public) = setup().await;
    let zeros = "0".repeat(40);
    let request = format!(
        "POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: chunked\r\n\r\n\
         {zeros}2\r\n{{}}\r\n{zeros}0\r\n\r\n"
    );
    let response = exchange(&lingo, request.as_bytes()).await;
    assert_eq!(response.statuses, [200, 200], "{}", response.raw);
    assert_eq!(&api.last().body[..], b"{}");
}

/// A trailer section ends at its blank line: with CRLF line ends, the request after it is
/// read as the next one; a trailer line ended by a bare LF is refused (400, the connection
/// closed), never read in a way that swallows the next request (hyper reads a trailer line
/// to its CR, taking the next request's head into the trailers) or finds one another reader
/// would not.
#[tokio::test]
async fn a_bare_lf_in_the_trailers_does_not_swallow_the_next_request() {
    let (lingo, api, _public) = setup().await;
    let post =
        "POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n";
    let next = "GET /api/tags HTTP/1.1\r\nHost: lingo\r\n\r\n";
    let well_ended = format!("{post}0\r\nx-sum: 1\r\n\r\n{next}");
    let response = exchange(&lingo, well_ended.as_bytes()).await;
    assert_eq!(response.statuses, [200, 200, 200], "{}", response.raw);
    assert_eq!(api.last().uri, "/api/tags");
    for trailers in ["0\r\nx-sum: 1\n\n", "0\r\n\n"] {
        let before = api.requests().len();
        let bare = format!("{post}{trailers}{next}");
        let response = exchange(&lingo, bare.as_bytes()).await;
        assert_eq!(response.statuses, [400], "{trailers:?}: {}", response.raw);
        let after: Vec<_> = api.requests()[before..]
            .iter()
            .map(|s| s.uri.clone())
            .collect();
        assert!(!after.contains(&"/api/tags".to_owned()), "{after:?}");
    }
}

/// A chunked upload whose framing breaks part-way is the client's fault: a 400
/// `invalid_request_body` (here in the native shape, `{"error"}` naming it; the codes in the
/// other dialects are in promises.rs), not an upstream failure, and the connection is closed
/// after it (the closing health check never gets a response).
#[tokio::test]
async fn a_malformed_chunked_body_is_a_client_error() {
    let (lingo, _api, _public) = setup().await;
    for body in [
        "zz\r\n{}\r\n0\r\n\r\n",
        "fffffffffffffffffff\r\n{}\r\n0\r\n\r\n",
        "2\r\n{}XX0\r\n\r\n",
    ] {
        let request = format!(
            "POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: chunked\r\n\r\n{body}"
        );
        let response = exchange(&lingo, request.as_bytes()).await;
        assert_eq!(response.statuses, [400], "{body:?}\n{}", response.raw);
        let json = response.first_json();
        assert_eq!(json.as_object().unwrap().len(), 1, "{json}");
        assert!(
            json["error"]
                .as_str()
                .unwrap()
                .starts_with("the request body could not be read"),
            "{json}"
        );
    }
}

/// A `Content-Length` that is no number, or values that disagree, are unrecoverable framing
/// (RFC 9112 §6.3): refused, beside `Transfer-Encoding: chunked` too, whichever comes first
/// (hyper skips a length after the coding; a server behind lingo might frame by it).
#[tokio::test]
async fn conflicting_content_lengths_are_refused() {
    assert_refused(&[
        (
            "two headers",
            b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nContent-Length: 2\r\nContent-Length: 12\r\n\r\n{}GET /api/ps",
        ),
        (
            "one list",
            b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nContent-Length: 2, 12\r\n\r\n{}GET /api/ps",
        ),
        (
            "signed",
            b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nContent-Length: +2\r\n\r\n{}",
        ),
        (
            "hex",
            b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nContent-Length: 0x2\r\n\r\n{}",
        ),
        (
            "overflowing",
            b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nContent-Length: 99999999999999999999999\r\n\r\n{}",
        ),
        (
            "no number, beside chunked",
            b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nContent-Length: 2x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        ),
        (
            "no number, after chunked",
            b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: chunked\r\nContent-Length: 2x\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        ),
    ])
    .await;
}

/// A length no body can have (2^64-2 and above: hyper's lengths end below them) is refused
/// as one past 64 bits is, before any body is awaited; the largest length read is a length,
/// which the route's body limit then refuses (413). Nothing reaches the upstream.
#[tokio::test]
async fn a_length_no_body_can_have_is_refused() {
    let post = |length: &str| {
        format!("POST /api/chat HTTP/1.1\r\nHost: lingo\r\nContent-Length: {length}\r\n\r\n{{}}")
    };
    let refused = [post("18446744073709551614"), post("18446744073709551615")];
    assert_refused(&[
        ("2^64-2", refused[0].as_bytes()),
        ("2^64-1", refused[1].as_bytes()),
    ])
    .await;
    let (lingo, api, _public) = setup().await;
    let largest = exchange(&lingo, post("18446744073709551613").as_bytes()).await;
    assert_eq!(largest.statuses.first(), Some(&413), "{}", largest.raw);
    assert!(api.requests().is_empty(), "{:?}", api.requests());
}

/// A length said twice, even the same length, as a list or in two fields: RFC 9110 §8.6
/// lets a recipient take equal ones as one, nginx refuses both and hyper the list. Refused,
/// so that no server behind lingo that reads them another way can frame the body otherwise.
#[tokio::test]
async fn a_length_said_twice_is_refused_even_when_equal() {
    assert_refused(&[
        (
            "one list",
            b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nContent-Length: 2, 2\r\n\r\n{}",
        ),
        (
            "two fields",
            b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
        ),
        (
            "two fields and chunked",
            b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nContent-Length: 2\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        ),
    ])
    .await;
}

#[tokio::test]
async fn unusable_transfer_encodings_are_refused() {
    let te = |value: &str| {
        format!(
            "POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: {value}\r\n\r\n2\r\n{{}}\r\n0\r\n\r\n"
        )
    };
    let chunked_identity = te("chunked, identity");
    let identity = te("identity");
    let garbage = te("garbage");
    let xchunked = te("xchunked");
    let chunked_twice_then_identity = "POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
    let http10 = "POST /api/chat HTTP/1.0\r\nHost: lingo\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
    let space_before_colon = "POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding : chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
    assert_refused(&[
        ("chunked, identity", chunked_identity.as_bytes()),
        ("identity", identity.as_bytes()),
        ("garbage", garbage.as_bytes()),
        ("xchunked", xchunked.as_bytes()),
        (
            "chunked then identity",
            chunked_twice_then_identity.as_bytes(),
        ),
        ("TE on HTTP/1.0", http10.as_bytes()),
        ("space before the colon", space_before_colon.as_bytes()),
        // A coding is a token: a value with obs-text is no list of codings, whatever it
        // seems to end in (hyper reads no `chunked` in it; another reader might).
        (
            "obs-text before chunked",
            b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: \xff, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        ),
        (
            "obs-text in a coding",
            b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: gzip\xe9, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        ),
        (
            "obs-text in a field before a chunked one",
            b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: \xff\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        ),
    ])
    .await;
}

// === malformed lines ===

#[tokio::test]
async fn obs_fold_is_refused() {
    assert_refused(&[
        (
            "folded value",
            b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\nX-Long: a\r\n b\r\n\r\n",
        ),
        (
            "folded with a tab",
            b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\nX-Long: a\r\n\tb\r\n\r\n",
        ),
        (
            "folded content-length",
            b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nContent-Length: 2\r\n 0\r\n\r\n{}",
        ),
        (
            "folded transfer-encoding",
            b"POST /api/chat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n",
        ),
        (
            "a space before the first header",
            b"GET /api/tags HTTP/1.1\r\n Host: lingo\r\n\r\n",
        ),
    ])
    .await;
}

#[tokio::test]
async fn invalid_bytes_in_header_names_and_values_are_refused() {
    assert_refused(&[
        (
            "space in a name",
            b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\nX Bad: 1\r\n\r\n",
        ),
        (
            "NUL in a name",
            b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\nX\0Bad: 1\r\n\r\n",
        ),
        (
            "separator in a name",
            b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\nX(Bad): 1\r\n\r\n",
        ),
        (
            "non-ASCII in a name",
            "GET /api/tags HTTP/1.1\r\nHost: lingo\r\nX-Bäd: 1\r\n\r\n".as_bytes(),
        ),
        (
            "empty name",
            b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\n: 1\r\n\r\n",
        ),
        (
            "NUL in a value",
            b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\nX-Bad: a\0b\r\n\r\n",
        ),
        (
            "DEL in a value",
            b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\nX-Bad: a\x7fb\r\n\r\n",
        ),
        (
            "bare CR in a value",
            b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\nX-Bad: a\rb\r\n\r\n",
        ),
        (
            "no colon",
            b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\nX-Bad\r\n\r\n",
        ),
    ])
    .await;
}

#[tokio::test]
async fn malformed_request_lines_are_refused() {
    assert_refused(&[
        ("bare CR", b"GET /api/tags HTTP/1.1\rHost: lingo\r\r"),
        (
            "two spaces",
            b"GET  /api/tags HTTP/1.1\r\nHost: lingo\r\n\r\n",
        ),
        (
            "trailing junk",
            b"GET /api/tags HTTP/1.1 x\r\nHost: lingo\r\n\r\n",
        ),
        (
            "unknown version",
            b"GET /api/tags HTTP/1.7\r\nHost: lingo\r\n\r\n",
        ),
        (
            "space in the target",
            b"GET /api/ tags HTTP/1.1\r\nHost: lingo\r\n\r\n",
        ),
        (
            "NUL in the target",
            b"GET /api/\0tags HTTP/1.1\r\nHost: lingo\r\n\r\n",
        ),
        (
            "lowercase version",
            b"GET /api/tags http/1.1\r\nHost: lingo\r\n\r\n",
        ),
        ("asterisk target", b"GET * HTTP/1.1\r\nHost: lingo\r\n\r\n"),
    ])
    .await;
}

/// A request whose lines end in a bare LF: read as if they ended in CRLF, never passed on
/// as such (hyper re-frames what it forwards), so no hop can read it differently.
#[tokio::test]
async fn bare_lf_request_lines_are_read_as_crlf() {
    // RFC 9112 §2.2 lets a recipient take a bare LF as a line end; hyper does, and lingo
    // forwards what it parsed, framed with CRLF, so the upstream sees one ordinary request.
    let (lingo, api, _public) = setup().await;
    for bytes in [
        &b"GET /api/tags HTTP/1.1\nHost: lingo\n\n"[..],
        &b"GET /api/tags HTTP/1.1\nHost: lingo\r\n\r\n"[..],
    ] {
        let before = api.requests().len();
        let response = exchange(&lingo, bytes).await;
        assert_eq!(response.statuses.first(), Some(&200), "{}", response.raw);
        let seen = api.requests();
        assert_eq!(seen.len(), before + 1);
        assert_eq!(seen.last().unwrap().uri, "/api/tags");
    }
}

/// A `Connection` value with a byte outside visible ASCII is no list of tokens: none is read
/// from it (an HTTP/1.0 client's `keep-alive` there is not, as hyper's server reads none),
/// and the connection closes after the response, an HTTP/1.1 one too (a `close` may be in it);
/// from a plain value, the connection is kept.
#[tokio::test]
async fn an_unreadable_connection_value_closes_the_connection() {
    let (lingo, _api, _public) = setup().await;
    let request = |version: &str, connection: &[u8]| {
        let head = format!("GET /healthz {version}\r\nHost: lingo\r\nConnection: ");
        [head.as_bytes(), connection, b"\r\n\r\n"].concat()
    };
    let kept = exchange(&lingo, &request("HTTP/1.0", b"keep-alive")).await;
    assert_eq!(kept.statuses, [200, 200], "{}", kept.raw);
    let closed = exchange(&lingo, &request("HTTP/1.0", b"\xff, keep-alive")).await;
    assert_eq!(closed.statuses, [200], "{}", closed.raw);
    let kept = exchange(&lingo, &request("HTTP/1.1", b"x-plain")).await;
    assert_eq!(kept.statuses, [200, 200], "{}", kept.raw);
    let closed = exchange(&lingo, &request("HTTP/1.1", b"caf\xe9, close")).await;
    assert_eq!(closed.statuses, [200], "{}", closed.raw);
}

/// RFC 9112 §3.2: a server MUST respond with 400 to an HTTP/1.1 request without a Host: it gets a response
/// (not just closed) with lingo's `invalid_request` error, then the connection is closed.
#[tokio::test]
async fn missing_host_is_refused() {
    assert_refused(&[("no Host", b"GET /api/tags HTTP/1.1\r\n\r\n")]).await;
    let (lingo, api, _public) = setup().await;
    for (path, code) in [
        ("/api/tags", None),
        ("/v1/chat/completions", Some("invalid_request")),
        ("/v1/scrape", Some("INVALID_REQUEST")),
    ] {
        let response = exchange(&lingo, format!("GET {path} HTTP/1.1\r\n\r\n").as_bytes()).await;
        assert_eq!(response.statuses, [400], "{path}: {}", response.raw);
        assert!(
            response
                .raw
                .to_ascii_lowercase()
                .contains("connection: close")
        );
        let json = response.first_json();
        let message = match code {
            None => json["error"].as_str().unwrap().to_owned(),
            Some("invalid_request") => {
                assert_eq!(json["error"]["code"], "invalid_request", "{json}");
                json["error"]["message"].as_str().unwrap().to_owned()
            }
            Some(code) => {
                assert_eq!(json["code"], code, "{json}");
                json["error"].as_str().unwrap().to_owned()
            }
        };
        assert!(message.contains("Host"), "{path}: {message}");
    }
    assert!(api.requests().is_empty());
}

/// RFC 9112 §3.2: ... and to one whose Host is no `uri-host [ ":" port ]` (nginx refuses
/// them too): a 400 `invalid_request` in the dialect its path implies (it is refused
/// before it is routed), nothing forwarded.
#[tokio::test]
async fn an_invalid_host_is_refused() {
    let host = |value: &str| format!("GET /api/tags HTTP/1.1\r\nHost: {value}\r\n\r\n");
    let cases = ["a b@c", "u@lingo", "lingo/x", "lingo:80x", "[::1", "a%zz"].map(host);
    let cases: Vec<(&str, &[u8])> = cases.iter().map(|c| (c.as_str(), c.as_bytes())).collect();
    assert_refused(&cases).await;
    let (lingo, api, _public) = setup().await;
    let response = exchange(&lingo, b"GET /v1/scrape HTTP/1.1\r\nHost: a b@c\r\n\r\n").await;
    assert_eq!(response.statuses, [400], "{}", response.raw);
    let json = response.first_json();
    assert_eq!(json["code"], "INVALID_REQUEST", "{json}");
    assert!(json["error"].as_str().unwrap().contains("Host"), "{json}");
    assert!(api.requests().is_empty());
}

/// RFC 9112 §3.2.2: with an absolute-form target, its authority is the host the client
/// addressed, whatever `Host` says: the upstream's `X-Forwarded-Host` names it. One whose
/// authority names a user is refused (RFC 9110 §4.2.4). An empty `Host` names none.
#[tokio::test]
async fn an_absolute_form_targets_authority_is_the_host() {
    let (lingo, _api, public) = setup().await;
    let response = exchange(
        &lingo,
        b"GET http://addressed.example:8080/public/v1/scrape HTTP/1.1\r\nHost: other.example\r\n\r\n",
    )
    .await;
    assert_eq!(response.statuses, [200, 200], "{}", response.raw);
    let seen = public.last();
    assert_eq!(seen.uri, "/public/v1/scrape");
    assert_eq!(seen.headers["x-forwarded-host"], "addressed.example:8080");
    let response = exchange(
        &lingo,
        b"GET /public/v1/scrape HTTP/1.1\r\nHost: other.example\r\n\r\n",
    )
    .await;
    assert_eq!(response.statuses, [200, 200], "{}", response.raw);
    assert_eq!(public.last().headers["x-forwarded-host"], "other.example");
    // An empty Host (RFC 9112 §3.2 lets a client send one) names no host to pass on.
    let response = exchange(&lingo, b"GET /public/v1/scrape HTTP/1.1\r\nHost:\r\n\r\n").await;
    assert_eq!(response.statuses, [200, 200], "{}", response.raw);
    assert!(!public.last().headers.contains_key("x-forwarded-host"));
    assert_refused(&[(
        "userinfo",
        b"GET http://user@lingo/api/tags HTTP/1.1\r\nHost: lingo\r\n\r\n",
    )])
    .await;
}

/// RFC 9112 §3.2.3, §3.2.4: the authority form (`CONNECT`'s) and the asterisk form
/// (`OPTIONS *`) name no path a route could serve: refused, nothing forwarded.
#[tokio::test]
async fn authority_and_asterisk_form_targets_are_refused() {
    assert_refused(&[
        (
            "authority form",
            b"CONNECT lingo:443 HTTP/1.1\r\nHost: lingo:443\r\n\r\n",
        ),
        (
            "asterisk form",
            b"OPTIONS * HTTP/1.1\r\nHost: lingo\r\n\r\n",
        ),
    ])
    .await;
}

/// A request target longer than lingo reads (hyper's and `http::Uri`'s limit, 65534 bytes),
/// or a request line that alone outgrows the head's limit, gets a 414 (hyper's and
/// nginx's status), not 400 or 431; a head over the limit in its fields stays 431.
#[tokio::test]
async fn an_over_long_request_target_is_414() {
    let (lingo, api, _public) = setup().await;
    let long = format!(
        "GET /api/{} HTTP/1.1\r\nHost: lingo\r\n\r\n",
        "a".repeat(70_000)
    );
    let response = exchange(&lingo, long.as_bytes()).await;
    assert_eq!(response.statuses, [414], "{:.200}", response.raw);
    let small = Backend::json(200, "{}").await;
    let lingo = Lingo::start(&table(&format!(
        "limits: {{ max_header_bytes: 1KiB }}\n\
         upstreams:\n  models:\n    url: {}\n    speaks: native\n\
         routes:\n  - {{ prefix: /api, to: models }}\n",
        small.url()
    )))
    .await;
    let long = format!(
        "GET /api/{} HTTP/1.1\r\nHost: lingo\r\n\r\n",
        "a".repeat(10_000)
    );
    let response = exchange(&lingo, long.as_bytes()).await;
    assert_eq!(response.statuses, [414], "{:.200}", response.raw);
    let large = format!(
        "GET /api/tags HTTP/1.1\r\nHost: lingo\r\nX-Big: {}\r\n\r\n",
        "a".repeat(10_000)
    );
    let response = exchange(&lingo, large.as_bytes()).await;
    assert_eq!(response.statuses, [431], "{:.200}", response.raw);
    assert!(api.requests().is_empty() && small.requests().is_empty());
}

/// RFC 9112 §3.2: ... and to one with two Host lines. lingo uses the client's Host to
/// re-base web-data links and for `X-Forwarded-Host`, so which one wins matters.
#[tokio::test]
async fn duplicate_host_is_refused() {
    assert_refused(&[
        (
            "two Hosts",
            b"GET /api/tags HTTP/1.1\r\nHost: lingo\r\nHost: evil.example\r\n\r\n",
        ),
        (
            "two Hosts, one empty",
            b"GET /api/tags HTTP/1.1\r\nHost:\r\nHost: evil.example\r\n\r\n",
        ),
    ])
    .await;
}

// === paths ===

/// Every spelling of a way out of `/public` or into `/api/pull`, sent raw on the request line.
const ESCAPES: &[&str] = &[
    "/public/../api/pull",
    "/public/%2e%2e/api/pull",
    "/public/%2E%2E/api/pull",
    "/public/.%2e/api/pull",
    "/public/%2e./api/pull",
    "/public/..%2fapi%2fpull",
    "/public/%2e%2e%2fapi%2fpull",
    "/public/..%5capi%5cpull",
    "/public/..\\api\\pull",
    "/public/%252e%252e/api/pull",
    "/public/./../api/pull",
    "/public/x/../../api/pull",
    "//api/pull",
    "/public//../api/pull",
    "/api/tags/../pull",
    "/api/tags/%2e%2e/pull",
    "/api/tags/%2E%2E/pull",
    "/api/./pull",
    "/api/%2e/pull",
    "/api%2fpull",
    "/api%2Fpull",
    "/api%5cpull",
    "/api%5Cpull",
    "/api\\pull",
    "/api//pull",
    "/api/%70ull",
    "/api/%70%75%6c%6c",
    "/api/PULL",
    "/api/pull/",
    "/api/pull?x=1",
    "/api/pull#x",
    "/api/blobs/sha256:0",
    "/api/blobs%2fsha256:0",
    "/api/%62lobs/x",
    "/api/pull%00",
    "http://lingo/api/pull",
    "http://lingo/public/../api/pull",
];

#[tokio::test]
async fn paths_cannot_escape_a_prefix_or_reach_model_management() {
    let (lingo, api, public) = setup().await;
    for path in ESCAPES {
        for method in ["GET", "POST", "DELETE"] {
            let request =
                format!("{method} {path} HTTP/1.1\r\nHost: lingo\r\nContent-Length: 2\r\n\r\n{{}}");
            let forwarded = public.requests().len();
            let response = exchange(&lingo, request.as_bytes()).await;
            let first = response.statuses.first().copied();
            // Either refused, or forwarded inside `/public` (checked below).
            assert!(
                matches!(first, None | Some(400 | 403 | 404))
                    || (first == Some(200) && public.requests().len() == forwarded + 1),
                "{method} {path}: {:?}\n{}",
                response.statuses,
                response.raw
            );
        }
    }
    assert!(
        api.requests().is_empty(),
        "a hostile path reached the native upstream: {:?}",
        api.requests().iter().map(|s| &s.uri).collect::<Vec<_>>()
    );
    for seen in public.requests() {
        let lower = seen.uri.to_ascii_lowercase();
        assert!(
            seen.uri.starts_with("/public/")
                && !lower.contains("..")
                && !lower.contains("%2e")
                && !lower.contains("%2f")
                && !lower.contains("%5c")
                && !lower.contains('\\')
                && !lower.contains("//"),
            "the web-data upstream got {}",
            seen.uri
        );
    }
}

/// The same paths through hyper's client (what most callers would send) are refused too,
/// and the refusal is a 4xx in the native dialect, not a dropped connection.
#[tokio::test]
async fn encoded_escapes_get_a_response_in_the_native_dialect() {
    let (lingo, api, _public) = setup().await;
    for path in [
        "/api/tags/%2e%2e/pull",
        "/api/x%2f..%2fpull",
        "/api/x%5cpull",
        "/api//pull",
        "/api/%70ull",
    ] {
        let response = send(request(hyper::Method::POST, &lingo.url(path), &[], "{}")).await;
        assert!(
            matches!(response.status.as_u16(), 400 | 403),
            "{path}: {}",
            response.status
        );
        assert!(
            response.json()["error"].is_string(),
            "{path}: {}",
            response.body
        );
    }
    assert!(api.requests().is_empty());
}

/// A correct request on the same routes is forwarded with its path unchanged (so the tests
/// above refuse because of the trick, not because nothing works).
#[tokio::test]
async fn plain_paths_are_forwarded() {
    let (lingo, api, public) = setup().await;
    let response = exchange(
        &lingo,
        b"POST /public/v1/scrape HTTP/1.1\r\nHost: lingo\r\nContent-Length: 2\r\n\r\n{}",
    )
    .await;
    assert_eq!(response.statuses, [200, 200], "{}", response.raw);
    assert_eq!(public.last().uri, "/public/v1/scrape");
    let response = exchange(
        &lingo,
        b"POST /api/%63hat HTTP/1.1\r\nHost: lingo\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    )
    .await;
    assert_eq!(response.statuses, [200, 200], "{}", response.raw);
    assert_eq!(api.last().uri, "/api/chat");
    assert_eq!(&api.last().body[..], b"{}");
}
