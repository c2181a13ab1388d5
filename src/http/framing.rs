//! HTTP/1.1 framing rules the connection leaves to the application (RFC 9112), checked
//! before a request is routed, because a proxy that forwards an ambiguous request is how requests are
//! smuggled past it.

use hyper::Version;
use hyper::header::HOST;

use crate::http::fields::Fields;

/// Why a request's framing is refused, or `Ok` when it is sound. The HTTP/1.1 connection
/// (`server::h1`, with hyper's parser and rules; hyper itself for HTTP/2) has already refused
/// what it parses itself (conflicting `Content-Length`s, bad chunk sizes, obs-fold, invalid
/// bytes, a non-chunked `Transfer-Encoding`) and settled `Content-Length` with
/// `Transfer-Encoding` as RFC 9112 §6.3 allows: the length is dropped, the body read as
/// chunked, and the connection closed after the answer, so nothing after the body can be
/// taken for a request. What is left is an HTTP/1.1 request without exactly one `Host`
/// (§3.2: answer 400); lingo uses the client's `Host` for links and `X-Forwarded-Host`.
pub fn check(version: Version, fields: Fields<'_>) -> Result<(), &'static str> {
    if version == Version::HTTP_11 && fields.get_all(&HOST).count() != 1 {
        return Err("an HTTP/1.1 request needs exactly one Host header");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check;
    use hyper::{Request, Version};

    #[test]
    fn framing_cases() {
        let build = |version: Version, headers: &[(&str, &str)]| {
            let mut req = Request::builder().version(version).uri("/api/tags");
            for (k, v) in headers {
                req = req.header(*k, *v);
            }
            req.body(()).unwrap()
        };
        type Case<'a> = (Version, &'a [(&'a str, &'a str)], bool);
        let cases: &[Case<'_>] = &[
            (Version::HTTP_11, &[("host", "a")], true),
            (Version::HTTP_11, &[], false),
            (Version::HTTP_11, &[("host", "a"), ("host", "b")], false),
            (Version::HTTP_10, &[], true),
            (Version::HTTP_2, &[], true),
            (
                Version::HTTP_11,
                &[("host", "a"), ("transfer-encoding", "chunked")],
                true,
            ),
        ];
        for (version, headers, ok) in cases {
            assert_eq!(
                check(*version, build(*version, headers).headers().into()).is_ok(),
                *ok,
                "{version:?} {headers:?}"
            );
        }
    }
}
