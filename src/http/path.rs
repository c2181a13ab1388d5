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
    let decoded = decode_unreserved(raw)?;
    for segment in decoded.split('/').skip(1) {
        check_segment(segment)?;
    }
    Ok(decoded)
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
}
