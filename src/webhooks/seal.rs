//! Receiver tokens: where a job's events go, sealed into the path of the URL lingo gives the
//! upstream instead of the client's, so that any replica with the same table can open it,
//! with no state shared, and no one without the key can read or forge one.
//!
//! A token is ChaCha20-Poly1305 (an AEAD: encrypted and authenticated) over the
//! [`Destination`] as JSON, with a random nonce, written in unpadded URL-safe base64. Its key
//! is derived with HKDF-SHA256 from `webhooks.seal`, or from `webhooks.sign` when there is no
//! `seal` (with another label, so the signing secret is never used as this key itself).

use ring::aead::{self, Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hkdf;
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};

use crate::base::base64;
use crate::table::webhooks::SealKey;
use crate::translate::webdata::JsonAs;

/// Bound to every token: a token of another scheme (or purpose) does not open.
const AAD: &[u8] = b"lingo webhook receiver token v1";
const SALT: &[u8] = b"lingo webhooks";

/// The longest token opened: a destination's URL and headers, with room to spare.
pub const MAX_TOKEN: usize = 16 * 1024;

/// Where one job's events go, as the job's request said and as lingo saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Destination {
    /// The upstream the job was started on.
    #[serde(rename = "u")]
    pub upstream: String,
    /// The route it came by, as the access line names it.
    #[serde(rename = "r")]
    pub route: String,
    /// The client key's name (`None` on a table without client keys).
    #[serde(rename = "c")]
    pub client: Option<String>,
    /// The client's webhook URL.
    pub url: String,
    /// The client's webhook headers, sent with each delivery.
    #[serde(rename = "h", default)]
    pub headers: Vec<(String, String)>,
    /// In which shape its page events are delivered.
    #[serde(rename = "s")]
    pub shape: Shape,
}

/// The shape a client reads page events in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Shape {
    /// As the upstream sent them.
    #[serde(rename = "same")]
    Same,
    /// A v1 client over a v2-only upstream: documents told in v1's shape, json results where
    /// its request's formats put them.
    #[serde(rename = "v1-json")]
    V1Json,
    #[serde(rename = "v1-extract")]
    V1Extract,
    #[serde(rename = "v1")]
    V1Unknown,
}

/// Seals and opens tokens with one key.
pub struct Sealer {
    key: LessSafeKey,
}

// === impl Shape ===

impl Shape {
    /// The shape of a v1 client's events whose job asked for json results as `json_as`.
    pub fn v1(json_as: JsonAs) -> Shape {
        match json_as {
            JsonAs::Json => Shape::V1Json,
            JsonAs::Extract => Shape::V1Extract,
            JsonAs::Unknown => Shape::V1Unknown,
        }
    }

    /// Where a v1 client reads json results; `None`: the events go as they are.
    pub fn json_as(self) -> Option<JsonAs> {
        match self {
            Shape::Same => None,
            Shape::V1Json => Some(JsonAs::Json),
            Shape::V1Extract => Some(JsonAs::Extract),
            Shape::V1Unknown => Some(JsonAs::Unknown),
        }
    }
}

// === impl Sealer ===

impl Sealer {
    pub fn new(key: &SealKey) -> Sealer {
        let label: &[u8] = if key.own {
            b"seal"
        } else {
            b"seal, derived from the signing secret"
        };
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, SALT).extract(key.secret.expose().as_bytes());
        let info = [label];
        let okm = prk
            .expand(&info, &CHACHA20_POLY1305)
            .expect("a 32-byte key is within HKDF-SHA256's output");
        Sealer {
            key: LessSafeKey::new(UnboundKey::from(okm)),
        }
    }

    /// The token for `destination`; a new one each time (the nonce is random).
    pub fn seal(&self, destination: &Destination) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new()
            .fill(&mut nonce)
            .expect("the system's random source works");
        let mut sealed = serde_json::to_vec(destination).unwrap_or_default();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(AAD),
                &mut sealed,
            )
            .expect("a destination is within ChaCha20-Poly1305's length");
        let mut token = nonce.to_vec();
        token.extend_from_slice(&sealed);
        base64::encode_url(&token)
    }

    /// The destination `token` names, if this key sealed it and it was not changed.
    pub fn open(&self, token: &str) -> Option<Destination> {
        if token.len() > MAX_TOKEN {
            return None;
        }
        let bytes = base64::decode_url(token)?;
        if bytes.len() < NONCE_LEN + aead::MAX_TAG_LEN {
            return None;
        }
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut sealed = sealed.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(AAD), &mut sealed)
            .ok()?;
        serde_json::from_slice(plain).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::secret::Secret;

    fn key(secret: &str, own: bool) -> SealKey {
        SealKey {
            secret: Secret::new(secret),
            own,
        }
    }

    fn destination() -> Destination {
        Destination {
            upstream: "fire".into(),
            route: "prefix /v1".into(),
            client: Some("app".into()),
            url: "https://hooks.example/x?y=1".into(),
            headers: vec![("X-Token".into(), "t".into())],
            shape: Shape::V1Extract,
        }
    }

    #[test]
    fn a_token_opens_with_its_key_only() {
        let sealer = Sealer::new(&key("s3cret", true));
        let token = sealer.seal(&destination());
        assert!(
            token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "{token}"
        );
        assert_eq!(sealer.open(&token), Some(destination()));
        assert_ne!(
            sealer.seal(&destination()),
            token,
            "a fresh nonce each time"
        );
        let same_again = Sealer::new(&key("s3cret", true));
        assert_eq!(same_again.open(&token), Some(destination()));
        for other in [key("another", true), key("s3cret", false)] {
            assert_eq!(Sealer::new(&other).open(&token), None);
        }
    }

    #[test]
    fn a_changed_or_bad_token_does_not_open() {
        let sealer = Sealer::new(&key("s3cret", true));
        let token = sealer.seal(&destination());
        let mut bytes = base64::decode_url(&token).unwrap();
        for i in [0, NONCE_LEN, bytes.len() - 1] {
            bytes[i] ^= 1;
            assert_eq!(sealer.open(&base64::encode_url(&bytes)), None, "byte {i}");
            bytes[i] ^= 1;
        }
        for bad in ["", "abc", "!!!!", &"A".repeat(MAX_TOKEN + 4), &token[..20]] {
            assert_eq!(sealer.open(bad), None);
        }
    }
}
