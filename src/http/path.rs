//! Request-path normalisation, done once before routing.
//!
//! Routing, the model-management block and the upstream all must see the *same* path, or a
//! client could spell `/api/pull` so that lingo's check misses it while the upstream (which
//! percent-decodes) still serves it. So lingo decodes what is safe to decode (unreserved
//! characters, RFC 3986 §2.3), forwards that decoded form, and refuses what could change
//! meaning between two parsers: dot segments, empty segments, encoded `/`, `\`, `.`-segments,
//! control bytes.

use std::borrow::Cow;

/// Why a path was refused.
pub type Refusal = &'static str;

/// Returns the normalised path, or why it is refused.
pub fn normalize(raw: &str) -> Result<Cow<'_, str>, Refusal> {
    if !raw.starts_with('/') {
        return Err("the path must start with /");
    }
    if plainly_clean(raw) {
        return Ok(Cow::Borrowed(raw));
    }
    let decoded = decode_unreserved(raw)?;
    for segment in decoded.split('/').skip(1) {
        check_segment(segment)?;
    }
    Ok(decoded)
}

/// Whether one look at each byte shows nothing to decode or refuse: no escape, control,
/// space, non-ASCII byte or backslash, and no `/` followed by `/` or `.` (so no empty or dot
/// segment). Most paths are; anything else takes the careful way below (searches and
/// splits), which tells why.
fn plainly_clean(raw: &str) -> bool {
    let mut after_slash = false;
    raw.bytes().all(|b| {
        let fine = match b {
            b'/' | b'.' if after_slash => false,
            b'%' | b'\\' | b' ' => false,
            _ => !b.is_ascii_control() && b < 0x80,
        };
        after_slash = b == b'/';
        fine
    })
}

fn check_segment(segment: &str) -> Result<(), Refusal> {
    match segment {
        "." | ".." => Err("dot segments (. and ..) are not allowed"),
        _ if segment.contains('\\') => Err("backslashes are not allowed"),
        _ => Ok(()),
    }
}

/// Decodes `%XX` escapes of unreserved characters; keeps other escapes as they are, except
/// those that could be read as a separator or dot segment by a later parser, which are refused.
fn decode_unreserved(raw: &str) -> Result<Cow<'_, str>, Refusal> {
    if !raw.contains('%') {
        return check_bytes(raw).map(|()| Cow::Borrowed(raw));
    }
    let bytes = raw.as_bytes();
    let mut out = String::with_capacity(raw.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'%' {
            out.push(bytes[i] as char);
            i += 1;
            continue;
        }
        let byte = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .ok_or("malformed percent-encoding")?;
        match byte {
            b'/' | b'\\' => return Err("encoded slashes are not allowed"),
            b'.' => out.push('.'),
            b if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'~' => {
                out.push(b as char)
            }
            0..=0x1f | 0x7f => return Err("control characters are not allowed"),
            _ => out.push_str(&raw[i..i + 3]),
        }
        i += 3;
    }
    check_bytes(&out)?;
    Ok(Cow::Owned(out))
}

/// hyper already refuses non-visible bytes in a request target; this keeps the function
/// total on its own.
fn check_bytes(path: &str) -> Result<(), Refusal> {
    if path
        .bytes()
        .any(|b| b.is_ascii_control() || b == b' ' || b >= 0x80)
    {
        return Err("control characters are not allowed");
    }
    if path.contains("//") {
        return Err("empty path segments (//) are not allowed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_or_refuses() {
        let ok = [
            ("/", "/"),
            ("/api/tags", "/api/tags"),
            ("/api/%70ull", "/api/pull"),
            ("/v1/models/llama3.2%3A3b", "/v1/models/llama3.2%3A3b"),
            ("/v1/models/a%2Db", "/v1/models/a-b"),
            ("/v1/x/", "/v1/x/"),
            ("/v1/file.json", "/v1/file.json"),
            ("/v1/%2E%2Ehidden", "/v1/..hidden"),
        ];
        for (raw, want) in ok {
            assert_eq!(normalize(raw).as_deref(), Ok(want), "{raw}");
        }
        let refused = [
            "api/tags",
            "/api/../api/pull",
            "/api/./pull",
            "/api/%2e%2e/pull",
            "/api/%2E/pull",
            "/v1%2fchat",
            "/v1%5Cchat",
            "/v1\\chat",
            "//api/pull",
            "/api//pull",
            "/api/%zz",
            "/api/%2",
            "/api/%00",
        ];
        for raw in refused {
            assert!(normalize(raw).is_err(), "{raw} should be refused");
        }
    }

    mod quick {
        use proptest::prelude::*;

        use super::super::*;

        /// The careful way alone, without the quick look: what `normalize` must return.
        fn careful(raw: &str) -> Result<Cow<'_, str>, Refusal> {
            let decoded = decode_unreserved(raw)?;
            for segment in decoded.split('/').skip(1) {
                check_segment(segment)?;
            }
            Ok(decoded)
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 2048, failure_persistence: None, ..ProptestConfig::default() })]

            /// A path the quick look passes is one the careful way keeps as it is.
            #[test]
            fn the_quick_look_passes_only_what_the_careful_way_keeps(
                rest in "[/.a%2F\\\\ \u{1}\u{e9}~-]{0,12}"
            ) {
                let raw = format!("/{rest}");
                if plainly_clean(&raw) {
                    prop_assert_eq!(careful(&raw), Ok(Cow::Borrowed(raw.as_str())));
                }
                prop_assert_eq!(normalize(&raw), careful(&raw));
            }
        }

        #[test]
        fn the_quick_look_sends_the_doubtful_the_careful_way() {
            for raw in [
                "/a//b",
                "/a/./b",
                "/a/..",
                "/.well-known",
                "/a%41",
                "/a\\b",
                "/a b",
                "/caf\u{e9}",
            ] {
                assert!(!plainly_clean(raw), "{raw}");
            }
            for raw in ["/", "/api/chat", "/v1/models/llama3.2:3b", "/a.b/c-d_e~f"] {
                assert!(plainly_clean(raw), "{raw}");
            }
        }
    }
}
