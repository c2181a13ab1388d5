//! HTTP/1.1 framing rules the connection leaves to the application (RFC 9112), checked
//! before a request is routed, because a proxy that forwards an ambiguous request is how
//! requests are smuggled past it.

use hyper::header::HOST;
use hyper::{Uri, Version};

use crate::http::message::HeaderView;

/// Why a request's framing is refused, or `Ok` when it is sound. The HTTP/1.1 connection
/// (`server::h1`, with hyper's parser and rules; hyper itself for HTTP/2) has already refused
/// what it parses itself (repeated or conflicting `Content-Length`s, bad chunk sizes,
/// obs-fold, invalid bytes, a non-chunked `Transfer-Encoding`) and settled `Content-Length`
/// with `Transfer-Encoding` as RFC 9112 §6.3 allows: the length is dropped, the body read as
/// chunked, and the connection closed after the response, so nothing after the body can be
/// taken for a request. What is left is `Host` (RFC 9112 §3.2: respond with 400 to an HTTP/1.1
/// request without one, and to any request with more than one or with one that is no
/// `uri-host [ ":" port ]`), and a target whose authority names a user (RFC 9110 §4.2.4: a
/// recipient treats `userinfo` as an error). lingo passes the host the client addressed on
/// as `X-Forwarded-Host` and re-bases links onto it, so which host that is must be clear.
pub fn check(version: Version, target: &Uri, fields: HeaderView<'_>) -> Result<(), &'static str> {
    let mut hosts = fields.get_all(&HOST);
    let (host, more) = (hosts.next(), hosts.next().is_some());
    if version == Version::HTTP_11 && (host.is_none() || more) {
        return Err("an HTTP/1.1 request needs exactly one Host header");
    }
    if more {
        return Err("a request may carry one Host header at most");
    }
    if host.is_some_and(|host| !is_host(host)) {
        return Err("the Host header is not a host and port");
    }
    if target.authority().is_some_and(|a| a.as_str().contains('@')) {
        return Err("the request target names a user (userinfo)");
    }
    Ok(())
}

/// `uri-host [ ":" port ]` (RFC 9110 §7.2, RFC 3986 §3.2.2): an IP literal in brackets, or a
/// registered name (IPv4 addresses among them) of unreserved characters, sub-delimiters and
/// percent-encodings; then digits after a colon. Empty is a host too (RFC 9112 §3.2: a
/// client sends an empty `Host` for a target without an authority).
fn is_host(value: &[u8]) -> bool {
    let (host, port) = match value.strip_prefix(b"[") {
        Some(literal) => match memchr::memchr(b']', literal) {
            Some(end) if end > 0 => {
                let inside = literal[..end].iter().all(|&b| b == b':' || name_byte(b));
                match &literal[end + 1..] {
                    [] => return inside,
                    [b':', port @ ..] if inside => (&b""[..], port),
                    _ => return false,
                }
            }
            _ => return false,
        },
        None => match memchr::memchr(b':', value) {
            Some(colon) => (&value[..colon], &value[colon + 1..]),
            None => (value, &b""[..]),
        },
    };
    port.iter().all(u8::is_ascii_digit) && is_reg_name(host)
}

/// `*( unreserved / pct-encoded / sub-delims )`.
fn is_reg_name(name: &[u8]) -> bool {
    let mut at = 0;
    while at < name.len() {
        match name[at] {
            b'%' => {
                let hex = name.get(at + 1..at + 3);
                if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                    return false;
                }
                at += 3;
            }
            b if name_byte(b) => at += 1,
            _ => return false,
        }
    }
    true
}

/// `unreserved / sub-delims`, and `%` (a percent-encoding's first byte, or an IPv6 literal's
/// zone): what a host may hold besides the `:` of an IP literal.
fn name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=%".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::{check, is_host};
    use crate::http::message::Request;
    use hyper::Version;

    #[test]
    fn framing_cases() {
        let build = |version: Version, target: &str, headers: &[(&str, &str)]| {
            let mut req = hyper::Request::builder().version(version).uri(target);
            for (k, v) in headers {
                req = req.header(*k, *v);
            }
            Request::from(req.body(()).unwrap())
        };
        type Case<'a> = (Version, &'a str, &'a [(&'a str, &'a str)], bool);
        let cases: &[Case<'_>] = &[
            (Version::HTTP_11, "/api/tags", &[("host", "a")], true),
            (Version::HTTP_11, "/api/tags", &[], false),
            (
                Version::HTTP_11,
                "/api/tags",
                &[("host", "a"), ("host", "b")],
                false,
            ),
            (Version::HTTP_10, "/api/tags", &[], true),
            (
                Version::HTTP_10,
                "/api/tags",
                &[("host", "a"), ("host", "a")],
                false,
            ),
            (Version::HTTP_2, "/api/tags", &[], true),
            (
                Version::HTTP_11,
                "/api/tags",
                &[("host", "a"), ("transfer-encoding", "chunked")],
                true,
            ),
            (Version::HTTP_11, "/api/tags", &[("host", "a b@c")], false),
            (Version::HTTP_10, "/api/tags", &[("host", "a/b")], false),
            (
                Version::HTTP_11,
                "http://a:1/api/tags",
                &[("host", "b")],
                true,
            ),
            (
                Version::HTTP_11,
                "http://u@a/api/tags",
                &[("host", "a")],
                false,
            ),
            (Version::HTTP_2, "http://u:p@a/api/tags", &[], false),
        ];
        for (version, target, headers, ok) in cases {
            let req = build(*version, target, headers);
            assert_eq!(
                check(*version, req.uri(), req.headers()).is_ok(),
                *ok,
                "{version:?} {target} {headers:?}"
            );
        }
    }

    /// `uri-host [ ":" port ]`, and what is not.
    #[test]
    fn hosts_and_what_is_not_one() {
        for host in [
            "",
            "lingo",
            "lingo:8080",
            "lingo:",
            "127.0.0.1:80",
            "[::1]",
            "[::1]:8080",
            "[fe80::1%25eth0]",
            "[v1.x]",
            "xn--bcher-kva.example",
            "a%41b",
            "a_b~c-d.e",
            "!$&'()*+,;=",
        ] {
            assert!(is_host(host.as_bytes()), "{host:?}");
        }
        for not in [
            "a b@c",
            "a b",
            "u@lingo",
            "lingo/x",
            "lingo?x",
            "lingo#x",
            "lingo:80:80",
            "lingo:8o",
            "a%4",
            "a%zz",
            "[::1",
            "[]",
            "[::1]x",
            "[::1]:x",
            "::1",
            "a\"b",
            "a<b>",
            "a\\b",
            "caf\u{e9}",
        ] {
            assert!(!is_host(not.as_bytes()), "{not:?}");
        }
    }
}
