//! What lingo knows of one backend: requests in flight, whether it is in service, which
//! models it has; and the probes that keep that current.
//!
//! A backend is in service unless it is ejected or its last probe failed. Passive: after
//! `eject_after` failures in a row (connect errors, timeouts, 5xx other than 503) it is
//! ejected for `eject_for`, twice as long for each ejection in a row up to
//! `table::MAX_EJECTION`, unless no other backend of its upstream is in service then (the last
//! one standing is never ejected). 429 and 503 are back-pressure: another backend is tried, and
//! this one keeps its place. Active: every `interval` each backend gets a free request of its
//! dialect (`/api/ps` and `/api/tags` for a native server, which also say which models it has
//! loaded and listed; `/v1/models` for chat completions; `GET /` for web data); a probe that
//! fails (no answer in time, or a 5xx) takes it out of service until one succeeds.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use arc_swap::ArcSwap;
use tokio::time::Instant;

use crate::base::clock;
use crate::table::{Health, MAX_EJECTION};

/// One backend's state, kept across reloads while the backend stays in its upstream.
#[derive(Debug, Default)]
pub struct BackendState {
    pub in_flight: AtomicUsize,
    failures: AtomicU32,
    /// Ejections in a row (reset by a success after one).
    ejections_in_a_row: AtomicU32,
    /// Milliseconds after [`start`] until which it is ejected (0: not ejected).
    ejected_until: AtomicU64,
    probe_failed: AtomicBool,
    /// Read on every request's pick, written by each probe: swapped, never locked.
    models: ArcSwap<Models>,
    pub counts: Counts,
}

/// The models a backend has, as its last good probe said.
#[derive(Debug, Default, Clone)]
pub struct Models {
    pub loaded: Names,
    pub listed: Names,
}

/// Model names, sorted once so that every request's pick looks one up by comparing a few
/// strings, not by hashing its own.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Names(Box<[String]>);

impl Names {
    pub fn contains(&self, name: &str) -> bool {
        self.0.binary_search_by(|n| n.as_str().cmp(name)).is_ok()
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }
}

impl FromIterator<String> for Names {
    fn from_iter<I: IntoIterator<Item = String>>(names: I) -> Names {
        let mut names: Vec<String> = names.into_iter().collect();
        names.sort_unstable();
        names.dedup();
        Names(names.into())
    }
}

/// What `/metrics` says of a backend.
#[derive(Debug, Default)]
pub struct Counts {
    pub ok: AtomicU64,
    pub failed: AtomicU64,
    pub busy: AtomicU64,
    pub ejections: AtomicU64,
    pub failed_after_first_byte: AtomicU64,
    /// Sum of the times to the first byte, in microseconds, and their count.
    pub first_byte_micros: AtomicU64,
    pub first_bytes: AtomicU64,
}

/// How one attempt on a backend ended, for its health.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// Connect error, timeout, 5xx: counts towards an ejection.
    Failed,
    /// 429 or 503: try another, eject no one.
    Busy,
}

impl BackendState {
    /// Whether requests may be sent to it now.
    pub fn in_service(&self) -> bool {
        !self.probe_failed.load(Ordering::Relaxed) && !self.ejected()
    }

    fn ejected(&self) -> bool {
        let until = self.ejected_until.load(Ordering::Relaxed);
        until != 0 && millis_now() < until
    }

    /// Notes how an attempt ended; `others_in_service` says whether ejecting this one leaves
    /// its upstream another. Returns whether it was ejected.
    pub fn ended(&self, outcome: Outcome, health: &Health, others_in_service: bool) -> bool {
        match outcome {
            Outcome::Ok => {
                self.counts.ok.fetch_add(1, Ordering::Relaxed);
                self.failures.store(0, Ordering::Relaxed);
                if !self.ejected() {
                    self.ejections_in_a_row.store(0, Ordering::Relaxed);
                }
                false
            }
            Outcome::Busy => {
                self.counts.busy.fetch_add(1, Ordering::Relaxed);
                false
            }
            Outcome::Failed => {
                self.counts.failed.fetch_add(1, Ordering::Relaxed);
                let failures = self.failures.fetch_add(1, Ordering::Relaxed) + 1;
                if failures < health.eject_after || !others_in_service || self.ejected() {
                    return false;
                }
                self.eject(health.eject_for);
                true
            }
        }
    }

    /// Takes it out of service for `first` doubled per ejection in a row, up to the cap.
    fn eject(&self, first: Duration) {
        let row = self.ejections_in_a_row.fetch_add(1, Ordering::Relaxed);
        let long = first.saturating_mul(1 << row.min(16)).min(MAX_EJECTION);
        self.failures.store(0, Ordering::Relaxed);
        self.counts.ejections.fetch_add(1, Ordering::Relaxed);
        let until = millis_now() + u64::try_from(long.as_millis()).unwrap_or(u64::MAX / 2);
        self.ejected_until.store(until.max(1), Ordering::Relaxed);
        tracing::warn!(for_ = ?long, "backend ejected after failures in a row");
    }

    /// A probe's result: a failed one takes it out of service, a good one brings it back
    /// (once any ejection is over) and may say which models it has.
    pub fn probed(&self, ok: bool, models: Option<Models>) {
        self.probe_failed.store(!ok, Ordering::Relaxed);
        if let Some(models) = models {
            self.models.store(Arc::new(models));
        }
    }

    /// Read without a lock and without a count of its own (`ArcSwap::load`).
    pub fn models(&self) -> arc_swap::Guard<Arc<Models>> {
        self.models.load()
    }

    /// Its state as `/metrics` and `/readyz` say it.
    pub fn state_word(&self) -> &'static str {
        match (self.ejected(), self.probe_failed.load(Ordering::Relaxed)) {
            (true, _) => "ejected",
            (false, true) => "down",
            (false, false) => "in_service",
        }
    }

    /// A first byte came `after` the request was sent.
    pub fn first_byte(&self, after: Duration) {
        let micros = u64::try_from(after.as_micros()).unwrap_or(u64::MAX);
        self.counts
            .first_byte_micros
            .fetch_add(micros, Ordering::Relaxed);
        self.counts.first_bytes.fetch_add(1, Ordering::Relaxed);
    }
}

fn millis_now() -> u64 {
    let since = clock::now().saturating_duration_since(start());
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX / 2) + 1
}

/// The instant ejection times are counted from.
fn start() -> Instant {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *START.get_or_init(clock::now)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEALTH: Health = Health {
        interval: Duration::from_secs(5),
        eject_after: 3,
        eject_for: Duration::from_secs(30),
    };

    #[test]
    fn failures_in_a_row_eject_but_not_the_last_one_standing() {
        let state = BackendState::default();
        assert!(!state.ended(Outcome::Failed, &HEALTH, true));
        assert!(!state.ended(Outcome::Failed, &HEALTH, true));
        // A success between them starts the count again; back-pressure does not count.
        state.ended(Outcome::Ok, &HEALTH, true);
        state.ended(Outcome::Busy, &HEALTH, true);
        assert!(!state.ended(Outcome::Failed, &HEALTH, true));
        assert!(!state.ended(Outcome::Failed, &HEALTH, true));
        assert!(state.in_service());
        assert!(state.ended(Outcome::Failed, &HEALTH, true));
        assert!(!state.in_service());
        assert_eq!(state.state_word(), "ejected");
        let last = BackendState::default();
        for _ in 0..10 {
            assert!(!last.ended(Outcome::Failed, &HEALTH, false));
        }
        assert!(last.in_service());
    }

    #[test]
    fn each_ejection_in_a_row_lasts_twice_the_last_up_to_the_cap() {
        let state = BackendState::default();
        let mut lengths = Vec::new();
        for _ in 0..6 {
            let before = millis_now();
            state.eject(HEALTH.eject_for);
            lengths.push((state.ejected_until.load(Ordering::Relaxed) - before) / 1000);
            state.ejected_until.store(0, Ordering::Relaxed);
        }
        assert_eq!(lengths, [30, 60, 120, 240, 300, 300]);
    }

    #[test]
    fn a_failed_probe_takes_it_out_until_a_good_one() {
        let state = BackendState::default();
        state.probed(false, None);
        assert_eq!(state.state_word(), "down");
        let models = Models {
            loaded: Names::from_iter(["qwen:7b".to_owned(), "llama3.2".to_owned()]),
            listed: Names::default(),
        };
        state.probed(true, Some(models));
        assert!(state.in_service());
        assert!(state.models().loaded.contains("llama3.2"));
        assert!(state.models().loaded.contains("qwen:7b"));
        assert!(!state.models().loaded.contains("qwen"));
    }
}
