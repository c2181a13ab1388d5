//! Unguessable identifiers (request ids, and later response ids) without a RNG crate.
//!
//! `RandomState` is seeded from the OS per process; hashing a counter with it gives
//! SipHash-keyed output that differs per process and per call.

use std::hash::{BuildHasher, RandomState};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// 32 lowercase hex characters, unique within the process and unguessable across processes.
pub fn random_hex() -> String {
    static STATE: OnceLock<(RandomState, RandomState)> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let (a, b) = STATE.get_or_init(|| (RandomState::new(), RandomState::new()));
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{:016x}{:016x}", a.hash_one(n), b.hash_one(n))
}

#[cfg(test)]
mod tests {
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
