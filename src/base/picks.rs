//! Deterministic picks for the tests that generate their cases: xorshift64, so that every
//! run generates the same cases (a failure can be rerun) with no crate for it.

/// Picks from `seed` (not zero): each call gives a number below its `n`.
pub fn picker(mut seed: u64) -> impl FnMut(usize) -> usize {
    move |n| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    }
}
