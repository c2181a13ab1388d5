//! Where events wait for delivery, behind one small trait: [`embedded`] (the default: one
//! `redb` file, nothing to run) and [`redis`] (a Redis server that replicas share, with a
//! stream and a consumer group).
//!
//! What every store promises: [`Store::put`] returns once the event is durable (or known
//! already: a repeated id is stored once); an event claimed is not claimed again by this
//! process until its attempt is settled ([`Store::delivered`], [`Store::retry`],
//! [`Store::give_up`]); an event whose holder died is claimed again (at least once, in no
//! particular order); given-up events are kept until replayed.

pub mod embedded;
pub mod redis;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use super::event::Event;
use crate::table::StoreAt;

/// How long a received id is remembered, so that a repeat is stored once: well past the
/// upstream's own retries (the contract's last is 21 minutes after the first attempt).
pub const SEEN_FOR: Duration = Duration::from_secs(24 * 60 * 60);

/// A store operation in progress.
pub type Pending<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Why a store could not do what was asked.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct StoreError(pub String);

/// How many events wait, and since when the oldest (Unix milliseconds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Depth {
    pub events: u64,
    pub oldest_ms: Option<u64>,
}

/// The events of one or more relays, kept until delivered or given up.
pub trait Store: Send + Sync {
    /// Keeps `event` durably, due at its `due_ms`: true, or false when an event with its id
    /// was stored before (and nothing is changed).
    fn put(&self, event: Event) -> Pending<'_, bool>;

    /// Up to `max` events due now, claimed for delivery; an event another holder claimed
    /// and has not settled for `stale` is taken over.
    fn claim(&self, max: usize, stale: Duration) -> Pending<'_, Vec<Event>>;

    /// A claimed event was delivered: it is forgotten.
    fn delivered(&self, event: &Event) -> Pending<'_, ()>;

    /// A claimed event failed and is due again at its `due_ms` (its `attempts` and `last`
    /// updated by the caller).
    fn retry(&self, event: &Event) -> Pending<'_, ()>;

    /// A claimed event will not be attempted again: it is kept for inspection and replay.
    fn give_up(&self, event: &Event) -> Pending<'_, ()>;

    /// The events given up, in no particular order.
    fn given_up(&self) -> Pending<'_, Vec<Event>>;

    /// Makes given-up events due now, with their attempts counted afresh: the one with
    /// `id`, or all of them. How many were.
    fn replay(&self, id: Option<String>) -> Pending<'_, usize>;

    /// The events not yet delivered or given up.
    fn depth(&self) -> Pending<'_, Depth>;
}

/// Opens the store at `at`: the embedded store's file is created (with its directory's
/// permission) and locked here, so that an unusable place is an error at start or reload;
/// Redis is connected to when first used.
pub fn open(at: &StoreAt) -> Result<Arc<dyn Store>, String> {
    match at {
        StoreAt::File(path) => {
            let store = embedded::Embedded::open(path)
                .map_err(|e| format!("cannot open the webhook store {}: {e}", path.display()))?;
            Ok(Arc::new(store))
        }
        StoreAt::Redis(url) => {
            let store = redis::Redis::new(url).map_err(|e| format!("cannot use {at}: {e}"))?;
            Ok(Arc::new(store))
        }
    }
}
