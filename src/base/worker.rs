//! Which serving thread this is, for whatever keeps one of a thing per thread.
//!
//! lingo serves on one single-threaded runtime per core (see `server::workers`): a
//! connection, its requests and the upstream connections they use all stay on the thread that
//! serves it (the one that accepted it, or the one it was handed to before a byte was read:
//! `server::balance`), so no frame crosses to another core. What is pooled per thread (the
//! upstream connections) is indexed by [`slot`]: 0 on any thread that is not a worker (the
//! control runtime, tests), 1..=n on the workers.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

thread_local! {
    static SLOT: Cell<usize> = const { Cell::new(0) };
}

/// How many slots there are: the workers plus slot 0.
static SLOTS: AtomicUsize = AtomicUsize::new(1);

/// Sets the number of workers; before the route table is loaded, so that its pools have one
/// slot each.
pub fn set_workers(workers: usize) {
    SLOTS.store(workers + 1, Ordering::Relaxed);
}

/// The number of slots a per-thread thing should have.
pub fn slots() -> usize {
    SLOTS.load(Ordering::Relaxed)
}

/// Marks the current thread as worker `slot` (1-based).
pub fn enter(slot: usize) {
    SLOT.with(|s| s.set(slot));
}

/// This thread's slot.
pub fn slot() -> usize {
    SLOT.with(Cell::get)
}
