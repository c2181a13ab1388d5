//! The shared store as a table uses it: Redis, this replica's share of each limit for while it
//! is away, and the limits clients are known to be over (refused without asking Redis).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::Ask;
use super::local::Local;
use super::redis::Shared;
use crate::error::Refusal;
use crate::table::quota::{Limit, QuotaStore, Unit};

/// How long a client found over a token or credit limit is refused without asking the
/// store: answers in flight may give some of it back as they settle.
const KNOWN_OVER_AT_MOST_MS: u64 = 1_000;

/// Redis, and what each replica keeps beside it.
pub struct SharedStore {
    pub redis: Arc<Shared>,
    pub config: QuotaStore,
    /// This replica's share of each limit, while the store is away.
    pub fallback: Local,
    /// The limits each client is known to be over, by client name.
    over: Mutex<HashMap<Arc<str>, Vec<KnownOver>>>,
}

/// A limit a client is known to be over.
struct KnownOver {
    id: Arc<str>,
    /// Until when (ms since the epoch) it is refused without asking the store.
    until: u64,
    /// When the limit has room again (ms since the epoch): what its refusals say.
    renews: u64,
    refusal: Refusal,
}

// === impl SharedStore ===

impl SharedStore {
    pub fn new(redis: Arc<Shared>, config: QuotaStore) -> SharedStore {
        SharedStore {
            redis,
            config,
            fallback: Local::default(),
            over: Mutex::default(),
        }
    }

    /// A limit among `asked` that `client` is known to be over at `now`, and its refusal.
    pub fn known_over<'l>(
        &self,
        client: &str,
        asked: &[(&'l Limit, Ask)],
        now: u64,
    ) -> Option<(Refusal, &'l Limit)> {
        let over = self.over.lock().unwrap_or_else(|e| e.into_inner());
        let known = over.get(client)?;
        asked.iter().find_map(|(limit, ask)| {
            let found = (known.iter()).find(|k| k.id == ask.id && k.until > now && !ask.shadow)?;
            let retry_after = std::time::Duration::from_millis(found.renews.saturating_sub(now));
            let refusal = Refusal {
                retry_after,
                ..found.refusal.clone()
            };
            Some((refusal, *limit))
        })
    }

    /// Notes that `client` is over `limit` from `now`, with room again in `reset_ms`. A request
    /// limit has room only when it resets; a token or credit limit may have sooner.
    pub fn remember_over(
        &self,
        client: &str,
        limit: &Limit,
        (now, reset_ms): (u64, u64),
        refusal: &Refusal,
    ) {
        let known_for = match limit.unit {
            Unit::Requests => reset_ms,
            _ => reset_ms.min(KNOWN_OVER_AT_MOST_MS),
        };
        let mut over = self.over.lock().unwrap_or_else(|e| e.into_inner());
        let known = over.entry(Arc::from(client)).or_default();
        known.retain(|k| k.until > now && k.id != limit.id);
        known.push(KnownOver {
            id: Arc::clone(&limit.id),
            until: now + known_for,
            renews: now + reset_ms,
            refusal: refusal.clone(),
        });
    }

    /// Forgets what is known: a reload may have given a limit more room.
    pub fn forget_known(&self) {
        self.over.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}
