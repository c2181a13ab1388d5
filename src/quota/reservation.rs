//! A request's reservation: what it was charged of each limit, where, and its settlement with
//! what the answer used. A reservation dropped unsettled (the request's future ended before
//! its answer had a body: a client that left, a shutdown) is refunded.

use std::sync::Arc;

use super::cost::{Estimate, Used};
use super::count::Shape;
use super::local::Local;
use super::shared::SharedStore;
use super::{Charge, now_ms};
use crate::observe::Metrics;
use crate::table::quota::Unit;

/// A request's charges, settled when its answer ends.
pub struct Reservation {
    pub(super) client: Arc<str>,
    pub(super) placed: Placed,
    /// Emptied once settled.
    pub(super) parts: Vec<Part>,
    pub(super) estimate: Estimate,
    /// The answer's usage counts are read in it (it passes through lingo as the upstream
    /// sent it); otherwise they are the translator's.
    pub(super) reads_answer: bool,
    pub(super) metrics: Arc<Metrics>,
}

/// Where a reservation was charged.
pub(super) enum Placed {
    Local(Arc<Local>),
    Shared(Arc<SharedStore>),
    /// This replica's share, the shared store being away.
    Fallback(Arc<SharedStore>),
}

/// One limit's part of a reservation.
pub(super) struct Part {
    pub unit: Unit,
    pub id: Arc<str>,
    pub shape: Shape,
    pub cost: u64,
    pub mark: i64,
}

// === impl Reservation ===

impl Reservation {
    /// Says that the answer is translated: its usage is the translator's, not read in it.
    pub fn translated(mut self) -> Reservation {
        self.reads_answer = false;
        self
    }

    /// Whether the answer's usage counts are to be read in it as it passes.
    pub fn reads_answer(&self) -> bool {
        self.reads_answer && self.counts_usage()
    }

    /// Whether any part counts what an answer's usage says (tokens or credits).
    pub fn counts_usage(&self) -> bool {
        self.parts.iter().any(|p| p.unit != Unit::Requests)
    }

    /// Settles with what the answer used; `None`: it did not end well (the client left, the
    /// upstream failed or refused), and everything but the request itself is refunded.
    pub fn settle(mut self, used: Option<Used>) {
        self.finish(used);
    }

    fn finish(&mut self, used: Option<Used>) {
        let parts = std::mem::take(&mut self.parts);
        if parts.is_empty() {
            return;
        }
        let used = self.count_used(&parts, used);
        let charges: Vec<Charge> = (parts.iter())
            .filter(|part| part.unit != Unit::Requests)
            .map(|part| {
                let actual = used.map_or(0, |u| u.cost(part.unit, part.cost, &self.estimate));
                Charge {
                    id: Arc::clone(&part.id),
                    shape: part.shape,
                    mark: part.mark,
                    cost: part.cost,
                    delta: actual as i64 - part.cost as i64,
                }
            })
            .filter(|charge| charge.delta != 0)
            .collect();
        if charges.is_empty() {
            return;
        }
        let client = Arc::clone(&self.client);
        match &self.placed {
            Placed::Local(local) => local.settle(&client, &charges, now_ms()),
            Placed::Fallback(shared) => shared.fallback.settle(&client, &charges, now_ms()),
            // Sent off the answer's path: the last byte is not held for it.
            Placed::Shared(shared) => shared.redis.settle(client, charges),
        }
    }

    /// Counts what the client used in `lingo_quota_used_total`, the way its charges count it
    /// (a count the answer lacked stands at what was reserved for it); what `used` becomes.
    fn count_used(&self, parts: &[Part], used: Option<Used>) -> Option<Used> {
        let quota = &self.metrics.quota;
        let client = &*self.client;
        quota.used(client, "requests", 1, false);
        let used = used?;
        let estimate = &self.estimate;
        let reserved = |unit: Unit| {
            let of = |p: &Part| match p.unit {
                u if u == unit => p.cost,
                Unit::Tokens if unit == Unit::OutputTokens => {
                    p.cost.saturating_sub(estimate.input_tokens)
                }
                _ => 0,
            };
            parts.iter().map(of).max().unwrap_or(0)
        };
        let tell = |unit, count: Option<u64>, reserved| {
            quota.used(client, unit, count.unwrap_or(reserved), count.is_none());
        };
        if parts.iter().any(|p| p.unit.is_tokens()) {
            tell("input_tokens", used.input_tokens, estimate.input_tokens);
            tell(
                "output_tokens",
                used.output_tokens,
                reserved(Unit::OutputTokens),
            );
        }
        if parts.iter().any(|p| p.unit == Unit::Credits) {
            tell("credits", used.credits, reserved(Unit::Credits));
        }
        Some(used)
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.finish(None);
    }
}
