//! Base64 (RFC 4648): the standard alphabet with padding (what the Standard Webhooks
//! signature and its `whsec_` secrets use) and the URL-safe alphabet without padding (what
//! lingo's webhook receiver tokens use, being path segments).

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// `bytes` in the standard alphabet, padded with `=`.
pub fn encode(bytes: &[u8]) -> String {
    encode_with(bytes, STANDARD, true)
}

/// `bytes` in the URL-safe alphabet, unpadded.
pub fn encode_url(bytes: &[u8]) -> String {
    encode_with(bytes, URL_SAFE, false)
}

/// The bytes of standard base64 text (padding optional); `None` for anything else.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    decode_with(text.trim_end_matches('='), STANDARD)
}

/// The bytes of unpadded URL-safe base64 text; `None` for anything else.
pub fn decode_url(text: &str) -> Option<Vec<u8>> {
    decode_with(text, URL_SAFE)
}

fn encode_with(bytes: &[u8], alphabet: &[u8; 64], pad: bool) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let digits = chunk.len() + 1;
        for i in 0..4 {
            if i < digits {
                let index = usize::try_from((n >> (18 - 6 * i)) & 0x3f).unwrap_or(0);
                out.push(char::from(alphabet[index]));
            } else if pad {
                out.push('=');
            }
        }
    }
    out
}

fn decode_with(text: &str, alphabet: &[u8; 64]) -> Option<Vec<u8>> {
    if text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let value = alphabet.iter().position(|&a| a == c)?;
        acc = (acc << 6) | u32::try_from(value).ok()?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(u8::try_from((acc >> bits) & 0xff).ok()?);
        }
    }
    // The bits left over must be zero: only one text decodes to given bytes.
    (acc & ((1 << bits) - 1) == 0).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4648 section 10's test vectors, both ways.
    #[test]
    fn the_rfcs_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, coded) in cases {
            assert_eq!(encode(plain.as_bytes()), coded);
            assert_eq!(decode(coded).unwrap(), plain.as_bytes());
            let url = coded.trim_end_matches('=');
            assert_eq!(encode_url(plain.as_bytes()), url);
            assert_eq!(decode_url(url).unwrap(), plain.as_bytes());
        }
    }

    #[test]
    fn the_alphabets_differ_and_bad_text_is_refused() {
        let bytes = [0xfb, 0xff, 0xbf];
        assert_eq!(encode(&bytes), "+/+/");
        assert_eq!(encode_url(&bytes), "-_-_");
        assert_eq!(decode_url("-_-_").unwrap(), bytes);
        assert_eq!(decode_url("+/+/"), None);
        for bad in ["a", "Zm9v!", "Zh", "Zm9vYg=x"] {
            assert_eq!(decode_url(bad), None, "{bad}");
        }
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decode(&encode(&all)).unwrap(), all);
        assert_eq!(decode_url(&encode_url(&all)).unwrap(), all);
    }
}
