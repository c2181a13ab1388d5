//! Hop-by-hop fields (RFC 9110 §7.6.1): meaningful to one connection only, so a proxy never
//! passes them on. Read two ways: from a map, and from a head's bytes as read (an answer whose
//! fields lingo passes on without building a map of them, see `h1::raw`). Pure.

use hyper::HeaderMap;
use hyper::header::{
    CONNECTION, HeaderName, PROXY_AUTHENTICATE, PROXY_AUTHORIZATION, TE, TRAILER,
    TRANSFER_ENCODING, UPGRADE,
};

pub const KEEP_ALIVE: HeaderName = HeaderName::from_static("keep-alive");
pub const PROXY_CONNECTION: HeaderName = HeaderName::from_static("proxy-connection");

/// The hop-by-hop fields of RFC 9110 §7.6.1 (besides those `Connection` names).
pub const HOP_BY_HOP: [HeaderName; 9] = [
    CONNECTION,
    KEEP_ALIVE,
    PROXY_CONNECTION,
    PROXY_AUTHENTICATE,
    PROXY_AUTHORIZATION,
    TE,
    TRAILER,
    TRANSFER_ENCODING,
    UPGRADE,
];

/// Whether a field named `name` (as read, any case) is one of [`HOP_BY_HOP`]. (A comparison
/// of names of other lengths stops at their lengths.)
pub fn is_hop_by_hop(name: &[u8]) -> bool {
    HOP_BY_HOP.iter().any(|hop| is(name, hop))
}

/// Whether the field name `read` (as read, in any case) is `known`.
pub fn is(read: &[u8], known: &HeaderName) -> bool {
    read.eq_ignore_ascii_case(known.as_str().as_bytes())
}

/// Whether `value` (a `Connection` field's, as read) names the field `name`: one more field
/// that stays on its hop.
pub fn names(value: &[u8], name: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|token| token.trim_ascii().eq_ignore_ascii_case(name))
}

/// The fields a message's `Connection` header names (RFC 9110 §7.6.1): hop-by-hop too. Read
/// as bytes, as [`names`] reads them: a value with other text besides its names still names
/// them.
pub fn connection_named(headers: &HeaderMap) -> Vec<HeaderName> {
    // Most messages have no `Connection` field: a pass over their few names costs less than
    // a lookup.
    if !headers.keys().any(|name| name == CONNECTION) {
        return Vec::new();
    }
    headers
        .get_all(CONNECTION)
        .iter()
        .flat_map(|v| v.as_bytes().split(|&b| b == b','))
        .filter_map(|name| HeaderName::from_bytes(name.trim_ascii()).ok())
        .collect()
}

/// Removes the hop-by-hop fields, including any the `Connection` field names.
pub fn remove_hop_by_hop(headers: &mut HeaderMap) {
    // Many messages carry none: one pass over their few names costs less than a lookup of
    // each of the nine (callgrind: 2,700 instructions a request).
    if !headers.keys().any(|name| HOP_BY_HOP.contains(name)) {
        return;
    }
    for name in connection_named(headers) {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte test and the map's list agree on every hop-by-hop name, in any case, and on
    /// names that are near them.
    #[test]
    fn the_byte_test_is_the_lists() {
        for name in &HOP_BY_HOP {
            assert!(is_hop_by_hop(name.as_str().as_bytes()), "{name}");
            let upper = name.as_str().to_ascii_uppercase();
            assert!(is_hop_by_hop(upper.as_bytes()), "{upper}");
        }
        for name in [
            "t",
            "tf",
            "content-type",
            "connectionx",
            "keep-alivf",
            "date",
            "x-request-id",
            "trailers",
            "upgrade-insecure-requests",
            "proxy-authorisation",
        ] {
            assert!(!is_hop_by_hop(name.as_bytes()), "{name}");
        }
    }

    #[test]
    fn a_connection_value_names_its_tokens() {
        assert!(names(b"keep-alive, X-Secret", b"x-secret"));
        assert!(names(b" close ,x-a", b"X-A"));
        assert!(!names(b"x-ab", b"x-a"));
        assert!(!names(b"", b"x-a"));
    }
}
