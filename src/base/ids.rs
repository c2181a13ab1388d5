//! Unguessable identifiers (request ids, and later response ids) without a RNG crate, and
//! the stable digests of model names.
//!
//! `RandomState` is seeded from the OS per process; hashing a counter with it gives
//! SipHash-keyed output that differs per process and per call.

use std::hash::{BuildHasher, RandomState};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// 32 lowercase hex characters, unique within the process and unguessable across processes.
pub fn random_hex() -> String {
    let mut out = String::with_capacity(32);
    push_random_hex(&mut out);
    out
}

/// `prefix`, `-` and [`random_hex`]: a response id (`chatcmpl-...`), in one allocation.
pub fn prefixed(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + 33);
    out.push_str(prefix);
    out.push('-');
    push_random_hex(&mut out);
    out
}

fn push_random_hex(out: &mut String) {
    static STATE: OnceLock<(RandomState, RandomState)> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let (a, b) = STATE.get_or_init(|| (RandomState::new(), RandomState::new()));
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    push_hex(out, a.hash_one(n));
    push_hex(out, b.hash_one(n));
}

/// `word` as 16 lowercase hex digits: what `{:016x}` writes, without the formatting
/// machinery (a third of the instructions of a translated request's ids), into a buffer on
/// the stack and then in one copy.
fn push_hex(out: &mut String, word: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = [0u8; 16];
    for (i, digit) in hex.iter_mut().enumerate() {
        let nibble = (word >> ((15 - i) * 4)) & 0xf;
        *digit = DIGITS[nibble as usize];
    }
    out.push_str(std::str::from_utf8(&hex).expect("hex digits are ASCII"));
}

/// FNV-1a's standard offset basis.
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a of `bytes` from `seed` (`FNV_OFFSET` is the standard one).
pub fn fnv1a(seed: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(seed, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// A stable 64-hex digest per model name. A native server's is the SHA-256 of the model's
/// manifest; the mock and the native translators (over an upstream that has no manifest)
/// have none, so four FNV-1a hashes of the name, each from its own seed, stand in:
/// deterministic, different per model, the right shape for clients that shorten or compare
/// digests.
pub fn digest(name: &str) -> String {
    (0..4_u64)
        .map(|round| {
            let seed = FNV_OFFSET ^ round.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let mut hex = String::with_capacity(16);
            push_hex(&mut hex, fnv1a(seed, name.as_bytes()));
            hex
        })
        .collect()
}

#[cfg(test)]
mod tests {
    /// `push_hex` writes what `{:016x}` does.
    #[test]
    fn hex_is_the_formatters() {
        for word in [
            0,
            1,
            0xf,
            0x10,
            0xdead_beef,
            u64::MAX,
            0x0123_4567_89ab_cdef,
        ] {
            let mut out = String::new();
            super::push_hex(&mut out, word);
            assert_eq!(out, format!("{word:016x}"));
        }
    }

    #[test]
    fn prefixed_ids_carry_the_prefix() {
        let id = super::prefixed("chatcmpl");
        assert_eq!(id.len(), "chatcmpl-".len() + 32);
        assert!(id.starts_with("chatcmpl-"));
        assert!(id[9..].bytes().all(|b| b.is_ascii_hexdigit()));
    }

    #[test]
    fn ids_are_hex_and_distinct() {
        let ids: std::collections::HashSet<_> = (0..1000).map(|_| super::random_hex()).collect();
        assert_eq!(ids.len(), 1000);
        assert!(
            ids.iter()
                .all(|id| id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()))
        );
    }
}
