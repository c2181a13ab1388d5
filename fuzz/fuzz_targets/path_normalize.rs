//! Path normalisation: whatever is accepted holds no dot segment, empty segment, encoded
//! slash or backslash (before or after one more decoding, as an upstream would), no control
//! byte, and normalising it again changes nothing.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(out) = lingo::path::normalize(raw) else {
        return;
    };
    assert!(out.starts_with('/'));
    assert!(
        !out.contains("//") && !out.contains('\\'),
        "{raw:?} -> {out:?}"
    );
    assert!(
        !out.bytes()
            .any(|b| b.is_ascii_control() || b == b' ' || b >= 0x80),
        "{raw:?} -> {out:?}"
    );
    let lower = out.to_ascii_lowercase();
    for encoded in ["%2f", "%5c", "%2e"] {
        assert!(!lower.contains(encoded), "{raw:?} -> {out:?}");
    }
    for segment in out.split('/').skip(1) {
        let decoded = decode_once(segment);
        assert!(
            !matches!(segment, "." | "..") && !matches!(decoded.as_str(), "." | ".."),
            "{raw:?} -> {out:?}"
        );
        assert!(!decoded.contains(['/', '\\']), "{raw:?} -> {out:?}");
    }
    assert_eq!(
        lingo::path::normalize(&out).as_deref(),
        Ok(&*out),
        "not idempotent on {raw:?}"
    );
    if !raw.contains('%') {
        assert_eq!(&*out, raw);
    }
});

fn decode_once(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (b[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
