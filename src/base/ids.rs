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
    ascii(&random_id()).to_owned()
}

/// `prefix`, `-` and [`random_hex`]: a response id (`chatcmpl-...`), in one allocation.
pub fn prefixed(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + 33);
    out.push_str(prefix);
    out.push('-');
    out.push_str(ascii(&random_id()));
    out
}

/// [`random_hex`]'s characters, on the stack: a request id is made from them with no
/// allocation but the one that holds it.
///
/// The first half is SipHash of a counter, keyed per process: unguessable. The second is a
/// keyed bijection of the same counter (`scramble`): unique, so two ids of one process
/// never share it (64 hashed bits alone could, after billions), with one SipHash run an id.
pub fn random_id() -> [u8; 32] {
    static KEYS: OnceLock<(RandomState, u64, u64)> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let (hasher, before, after) = KEYS.get_or_init(|| {
        let keys = RandomState::new();
        (
            RandomState::new(),
            keys.hash_one(1_u64),
            keys.hash_one(2_u64),
        )
    });
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut id = [0u8; 32];
    id[..16].copy_from_slice(&hex(hasher.hash_one(n)));
    id[16..].copy_from_slice(&hex(scramble(n ^ before) ^ after));
    id
}

/// SplitMix64's finaliser: a bijection of `u64` (each step, a shift folded in by xor or a
/// product with an odd constant, can be undone) that spreads every input bit over the
/// output.
fn scramble(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn ascii(hex: &[u8]) -> &str {
    std::str::from_utf8(hex).expect("hex digits are ASCII")
}

/// `word` as 16 lowercase hex digits: what `{:016x}` writes, without the formatting
/// machinery, a byte (two digits) at a time from a table.
fn hex(word: u64) -> [u8; 16] {
    const PAIRS: [[u8; 2]; 256] = {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut pairs = [[0u8; 2]; 256];
        let mut i = 0;
        while i < 256 {
            pairs[i] = [DIGITS[i >> 4], DIGITS[i & 0xf]];
            i += 1;
        }
        pairs
    };
    let mut out = [0u8; 16];
    for (pair, byte) in out.chunks_exact_mut(2).zip(word.to_be_bytes()) {
        pair.copy_from_slice(&PAIRS[usize::from(byte)]);
    }
    out
}

/// FNV-1a's standard offset basis.
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a of `bytes` from `seed` (`FNV_OFFSET` is the standard one).
pub fn fnv1a(seed: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(seed, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// FNV-1a as a [`Hasher`](std::hash::Hasher), for maps whose keys come from the route table
/// (model aliases): every request looks one up, and FNV hashes a short name in a fraction
/// of SipHash's work. Not keyed, so not for maps a client's input fills: a lookup
/// cannot make colliding keys, only the table's own could collide.
#[derive(Clone, Copy)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(FNV_OFFSET)
    }
}

impl std::hash::Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = fnv1a(self.0, bytes);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map keyed by table-given names, hashed with [`Fnv`].
pub type FnvMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<Fnv>>;

/// A stable 64-hex digest per model name. A native server's is the SHA-256 of the model's
/// manifest; the mock and the native translators (over an upstream that has no manifest)
/// have none, so four FNV-1a hashes of the name, each from its own seed, stand in:
/// deterministic, different per model, the right shape for clients that shorten or compare
/// digests.
pub fn digest(name: &str) -> String {
    let mut out = String::with_capacity(64);
    for round in 0..4_u64 {
        let seed = FNV_OFFSET ^ round.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        out.push_str(ascii(&hex(fnv1a(seed, name.as_bytes()))));
    }
    out
}

#[cfg(test)]
mod tests {
    /// `hex` writes what `{:016x}` does.
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
            assert_eq!(super::ascii(&super::hex(word)), format!("{word:016x}"));
        }
    }

    /// Undoes each step of `scramble`: it is a bijection, so the ids' second halves
    /// never repeat within a process.
    #[test]
    fn scramble_is_undone_step_by_step() {
        fn unshift(y: u64, by: u32) -> u64 {
            (0..64 / by + 1).fold(y, |x, _| y ^ (x >> by))
        }
        fn inverse(odd: u64) -> u64 {
            (0..6).fold(odd, |x, _| {
                x.wrapping_mul(2_u64.wrapping_sub(odd.wrapping_mul(x)))
            })
        }
        let undo = |z: u64| {
            let z = unshift(z, 31).wrapping_mul(inverse(0x94d0_49bb_1331_11eb));
            let z = unshift(z, 27).wrapping_mul(inverse(0xbf58_476d_1ce4_e5b9));
            unshift(z, 30)
        };
        for n in [
            0,
            1,
            2,
            0xdead_beef,
            u64::MAX,
            1 << 63,
            0x0123_4567_89ab_cdef,
        ] {
            assert_eq!(undo(super::scramble(n)), n, "{n:#x}");
        }
        assert_ne!(super::scramble(1), 1);
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
        // Each half on its own differs from id to id: the hash's, and the bijection's.
        for half in [0..16, 16..32] {
            let halves: std::collections::HashSet<_> =
                ids.iter().map(|id| &id[half.clone()]).collect();
            assert_eq!(halves.len(), 1000, "{half:?}");
        }
    }
}
