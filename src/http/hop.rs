//! Hop-by-hop fields (RFC 9110 §7.6.1): meaningful to one connection only, so a proxy never
//! passes them on. Read two ways: from a map, and from a head's bytes as read (a
//! passed-through response's or a served request's, kept without a map: see `h1::raw`); and
//! the comparison of a name as read with a map's name that both use. Pure.

use std::collections::HashSet;

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

/// Whether a field named `name` (as read, any case) is one of [`HOP_BY_HOP`]: told apart by
/// length first, so that most names cost one comparison of lengths (the test below holds it
/// to the list).
pub fn is_hop_by_hop(name: &[u8]) -> bool {
    match name.len() {
        2 => is(name, &TE),
        7 => is(name, &TRAILER) || is(name, &UPGRADE),
        10 => is(name, &CONNECTION) || is(name, &KEEP_ALIVE),
        16 => is(name, &PROXY_CONNECTION),
        17 => is(name, &TRANSFER_ENCODING),
        18 => is(name, &PROXY_AUTHENTICATE),
        19 => is(name, &PROXY_AUTHORIZATION),
        _ => false,
    }
}

/// Whether the field name `read` (as read, in any case) is `known` (a map's name, which is
/// always lowercase: only the name read needs lowering).
#[inline]
pub fn is(read: &[u8], known: &HeaderName) -> bool {
    is_lowered(read, known.as_str().as_bytes())
}

/// [`is`], for a name already lowercase (ASCII; a `HeaderName`'s bytes): `known.as_str()`
/// made once, not per field.
#[inline]
pub fn is_lowered(read: &[u8], lower: &[u8]) -> bool {
    debug_assert!(
        !lower.iter().any(u8::is_ascii_uppercase),
        "{lower:?} is not lowercase"
    );
    read.len() == lower.len() && eq_lowered(read, lower)
}

/// Whether `read`, ASCII letters lowered, is `lower` (ASCII, lowercase, as long): eight bytes
/// at a time, for the few names every request is searched for.
fn eq_lowered(read: &[u8], lower: &[u8]) -> bool {
    debug_assert_eq!(read.len(), lower.len());
    let (len, mut at) = (read.len(), 0);
    if len < 8 {
        return read
            .iter()
            .zip(lower)
            .all(|(r, l)| r.to_ascii_lowercase() == *l);
    }
    let word = |bytes: &[u8], at: usize| {
        u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default())
    };
    // Whole words, then the last eight bytes (overlapping the one before, if need be).
    while at + 8 < len {
        if lowered(word(read, at)) != word(lower, at) {
            return false;
        }
        at += 8;
    }
    lowered(word(read, len - 8)) == word(lower, len - 8)
}

/// `word`'s eight bytes with their ASCII capitals lowered; other bytes, non-ASCII ones too,
/// as they were.
fn lowered(word: u64) -> u64 {
    const EACH: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x80 * EACH;
    // Each byte's low seven bits plus an offset sets its high bit from `A` on, and from
    // `[` on: no sum carries into the next byte.
    let seven = word & !HIGH;
    let from_a = seven + (0x80 - u64::from(b'A')) * EACH;
    let from_bracket = seven + (0x80 - u64::from(b'[')) * EACH;
    let capitals = from_a & !from_bracket & !word & HIGH;
    word | (capitals >> 2)
}

/// Whether `value` (a `Connection` field's, as read) names the field `name`: one more field
/// that stays on its hop.
pub fn names(value: &[u8], name: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|token| token.trim_ascii().eq_ignore_ascii_case(name))
}

/// `a` against `b` as if both were lowercase: the order in which a name is found among
/// others whatever its case.
pub fn cmp_ignoring_case(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    a.iter()
        .map(u8::to_ascii_lowercase)
        .cmp(b.iter().map(u8::to_ascii_lowercase))
}

/// The fields a message's `Connection` header names (RFC 9110 §7.6.1): hop-by-hop too. Read
/// as bytes, as [`names`] reads them: a value with other text besides its names still names
/// them. A set (keyed per process), so that asking it about each field costs the same however
/// many tokens a client sent: as a list, a 64 KiB value and 100 fields cost millions of
/// comparisons.
pub fn connection_named(headers: &HeaderMap) -> HashSet<HeaderName> {
    // Most messages have no `Connection` field: a pass over their few names costs less than
    // a lookup.
    if !headers.keys().any(|name| name == CONNECTION) {
        return HashSet::new();
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
    // each of the nine.
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
    /// names that are near them or as long (the byte test tells them apart by length first).
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
            "tf",
            "referer",
            "warning",
            "set-cookie",
            "user-agent",
            "content-location",
            "www-authenticate",
            "if-modified-since",
            "proxy-authenticatf",
            "content-disposition",
            "if-unmodified-since",
        ] {
            assert!(!is_hop_by_hop(name.as_bytes()), "{name}");
        }
    }

    /// Eight bytes at a time, the comparison is a byte-by-byte one's: every byte (each of the
    /// 256, at each place in a word and in the tail) lowered as `to_ascii_lowercase` lowers it.
    #[test]
    fn words_compare_as_bytes_do() {
        let name = b"x-a-longer-name-01";
        for len in [1, 7, 8, 9, 15, 16, 17, 18] {
            let lower = &name[..len];
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut read = lower.to_vec();
                    read[at] = b;
                    let want = read.to_ascii_lowercase() == lower;
                    assert_eq!(eq_lowered(&read, lower), want, "{read:?} {len}");
                    read.make_ascii_uppercase();
                    assert_eq!(eq_lowered(&read, lower), want, "{read:?} {len}");
                }
            }
        }
        for b in 0..=255u8 {
            let word = u64::from_le_bytes([b; 8]);
            let want = u64::from_le_bytes([b.to_ascii_lowercase(); 8]);
            assert_eq!(lowered(word), want, "{b}");
        }
    }

    #[test]
    fn a_connection_value_names_its_tokens() {
        assert!(names(b"keep-alive, X-Secret", b"x-secret"));
        assert!(names(b" close ,x-a", b"X-A"));
        assert!(!names(b"x-ab", b"x-a"));
        assert!(!names(b"", b"x-a"));
    }

    /// Each name once, whatever its case or how often it is told.
    #[test]
    fn a_connection_header_names_each_field_once() {
        let mut headers = HeaderMap::new();
        let tokens: String = (0..5000)
            .map(|i| format!("X-{}, x-{}, ", i % 3, i % 3))
            .collect();
        headers.insert(CONNECTION, tokens.parse().unwrap());
        headers.append(CONNECTION, "keep-alive".parse().unwrap());
        let named = connection_named(&headers);
        let mut names: Vec<&str> = named.iter().map(HeaderName::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["keep-alive", "x-0", "x-1", "x-2"]);
    }
}
