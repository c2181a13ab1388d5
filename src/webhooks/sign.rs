//! Signatures on both sides of the relay.
//!
//! - From the upstream: `X-Firecrawl-Signature: sha256=<hex>`, the HMAC-SHA256 of the exact
//!   body with the upstream's secret, checked in constant time ([`verify_firecrawl`]).
//! - To the client: the Standard Webhooks scheme ([`SigningKey::standard`]): `webhook-id`,
//!   `webhook-timestamp` and `webhook-signature: v1,<base64 HMAC-SHA256>` of
//!   `id.timestamp.body`; a secret written `whsec_<base64>` is those bytes (the scheme's own
//!   convention), any other is its UTF-8 bytes. Optionally also `X-Firecrawl-Signature`, made
//!   with the same secret as the upstream would have made it ([`SigningKey::firecrawl`]), so that a
//!   receiver written for the upstream checks it unchanged.

use hyper::header::{HeaderName, HeaderValue};
use ring::hmac;

use crate::base::base64;
use crate::base::secret::Secret;

pub const FIRECRAWL_SIGNATURE: HeaderName = HeaderName::from_static("x-firecrawl-signature");
pub const WEBHOOK_ID: HeaderName = HeaderName::from_static("webhook-id");
pub const WEBHOOK_TIMESTAMP: HeaderName = HeaderName::from_static("webhook-timestamp");
pub const WEBHOOK_SIGNATURE: HeaderName = HeaderName::from_static("webhook-signature");

/// What deliveries to one client are signed with.
#[derive(Clone)]
pub struct SigningKey {
    /// The Standard Webhooks key.
    standard: hmac::Key,
    /// The secret's own bytes, the upstream's way.
    firecrawl: hmac::Key,
}

// === impl SigningKey ===

impl SigningKey {
    pub fn new(secret: &Secret) -> SigningKey {
        let text = secret.expose();
        let decoded = text.strip_prefix("whsec_").and_then(base64::decode);
        let standard = decoded.as_deref().unwrap_or(text.as_bytes());
        SigningKey {
            standard: hmac::Key::new(hmac::HMAC_SHA256, standard),
            firecrawl: hmac::Key::new(hmac::HMAC_SHA256, text.as_bytes()),
        }
    }

    /// `webhook-signature`'s value for message `id` sent at `timestamp` (Unix seconds).
    pub fn standard(&self, id: &str, timestamp: u64, body: &[u8]) -> HeaderValue {
        let mut signing = hmac::Context::with_key(&self.standard);
        signing.update(id.as_bytes());
        signing.update(format!(".{timestamp}.").as_bytes());
        signing.update(body);
        let value = format!("v1,{}", base64::encode(signing.sign().as_ref()));
        HeaderValue::from_str(&value).expect("base64 is a header value")
    }

    /// `X-Firecrawl-Signature`'s value for `body`.
    pub fn firecrawl(&self, body: &[u8]) -> HeaderValue {
        firecrawl_value(&self.firecrawl, body)
    }
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(<redacted>)")
    }
}

/// Whether `header` (an `X-Firecrawl-Signature` value) is the signature of `body` with
/// `secret`, compared in constant time.
pub fn verify_firecrawl(secret: &Secret, header: &[u8], body: &[u8]) -> bool {
    let Some(tag) = header.strip_prefix(b"sha256=").and_then(unhex) else {
        return false;
    };
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.expose().as_bytes());
    hmac::verify(&key, body, &tag).is_ok()
}

fn firecrawl_value(key: &hmac::Key, body: &[u8]) -> HeaderValue {
    let tag = hmac::sign(key, body);
    let mut value = String::with_capacity(7 + 64);
    value.push_str("sha256=");
    for byte in tag.as_ref() {
        value.push(char::from(HEX[usize::from(byte >> 4)]));
        value.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    HeaderValue::from_str(&value).expect("hex is a header value")
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Hex digits (either case) as bytes.
fn unhex(text: &[u8]) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| {
        char::from(c)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    };
    text.chunks(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Standard Webhooks specification's own example: its secret, message id,
    /// timestamp, body and signature.
    #[test]
    fn the_standard_webhooks_example_signs_alike() {
        let key = SigningKey::new(&Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"));
        let body = br#"{"test": 2432232314}"#;
        let signature = key.standard("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body);
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn firecrawl_signatures_verify_with_their_secret_only() {
        let secret = Secret::new("s3cret");
        let key = SigningKey::new(&secret);
        let value = key.firecrawl(b"{\"a\":1}");
        let text = value.to_str().unwrap();
        assert!(
            text.starts_with("sha256=") && text.len() == 7 + 64,
            "{text}"
        );
        assert!(verify_firecrawl(&secret, value.as_bytes(), b"{\"a\":1}"));
        let upper = format!("sha256={}", text[7..].to_ascii_uppercase());
        assert!(verify_firecrawl(&secret, upper.as_bytes(), b"{\"a\":1}"));
        assert!(!verify_firecrawl(&secret, value.as_bytes(), b"{\"a\":2}"));
        let other = Secret::new("other");
        assert!(!verify_firecrawl(&other, value.as_bytes(), b"{\"a\":1}"));
        for bad in ["", "sha256=", "sha256=zz", "md5=00", &text[7..]] {
            assert!(
                !verify_firecrawl(&secret, bad.as_bytes(), b"{\"a\":1}"),
                "{bad}"
            );
        }
    }
}
