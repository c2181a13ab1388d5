//! Settlements waiting to be sent to Redis: each waits [`SEND_AFTER`] to twice that (the
//! sender looks each [`SEND_AFTER`]), and goes with its client's others that wait then. A
//! client that keeps sending costs one script call a request (its admit) and one each
//! [`SEND_AFTER`] at most, not two a request; its counters are settled that much later.
//! While the store is away they wait here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::super::Charge;

/// How long a settlement waits for others of its client's to go with.
pub const SEND_AFTER: Duration = Duration::from_millis(10);
/// The most charges that wait (while the store is away); past it a new settlement is
/// dropped, and its reservation stands.
const CHARGES_AT_MOST: usize = 10_000;

/// A client's charges, to settle.
pub type Settlement = (Arc<str>, Vec<Charge>);

/// The settlements not sent yet, by client.
#[derive(Default)]
pub struct Waiting {
    by_client: Mutex<ByClient>,
    /// Wakes the sender (`super::spawn_sender`) when a settlement waits, or
    /// the store answers again.
    pub wake: Notify,
}

#[derive(Default)]
struct ByClient {
    clients: HashMap<Arc<str>, Entry>,
    charges: usize,
}

/// One client's charges, and since when the oldest waits.
struct Entry {
    since: Instant,
    charges: Vec<Charge>,
}

// === impl Waiting ===

impl Waiting {
    /// Adds `client`'s settlement; false when too many wait and it is dropped.
    pub fn add(&self, client: Arc<str>, charges: Vec<Charge>) -> bool {
        let added = {
            let mut waiting = self.lock();
            if waiting.charges + charges.len() > CHARGES_AT_MOST {
                return false;
            }
            waiting.charges += charges.len();
            let entry = waiting.clients.entry(client).or_insert_with(|| Entry {
                since: Instant::now(),
                charges: Vec::new(),
            });
            entry.charges.extend(charges);
            true
        };
        self.wake.notify_one();
        added
    }

    /// Takes the settlements of every client whose first has waited [`SEND_AFTER`] by `now`,
    /// and says whether others still wait.
    pub fn due(&self, now: Instant) -> (Vec<Settlement>, bool) {
        let mut waiting = self.lock();
        let mut due = Vec::new();
        waiting.clients.retain(|client, entry| {
            if now.duration_since(entry.since) < SEND_AFTER {
                return true;
            }
            due.push((Arc::clone(client), std::mem::take(&mut entry.charges)));
            false
        });
        waiting.charges -= due.iter().map(|(_, c)| c.len()).sum::<usize>();
        (due, !waiting.clients.is_empty())
    }

    /// How many charges wait.
    pub fn charges(&self) -> usize {
        self.lock().charges
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ByClient> {
        self.by_client.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::count::Shape;

    fn charge(delta: i64) -> Charge {
        let shape = Shape {
            amount: 10,
            per_ms: 1_000,
            capacity: None,
        };
        let id = Arc::from("tokens");
        Charge {
            id,
            shape,
            mark: 1,
            cost: 5,
            delta,
        }
    }

    #[test]
    fn a_clients_settlements_go_together_once_the_first_has_waited() {
        let waiting = Waiting::default();
        let before = Instant::now();
        assert!(waiting.add("a".into(), vec![charge(-1)]));
        assert!(waiting.add("a".into(), vec![charge(-2)]));
        let (due, more) = waiting.due(before);
        assert!(due.is_empty() && more);
        std::thread::sleep(SEND_AFTER);
        let then = Instant::now();
        assert!(waiting.add("b".into(), vec![charge(3)]));
        let (due, more) = waiting.due(then);
        let deltas: Vec<i64> = due[0].1.iter().map(|c| c.delta).collect();
        assert_eq!(
            (due.len(), &*due[0].0, &deltas[..]),
            (1, "a", &[-1, -2][..])
        );
        assert!(more, "b waits on");
        assert_eq!(waiting.lock().charges, 1);
        let (due, more) = waiting.due(Instant::now() + SEND_AFTER);
        assert_eq!((due.len(), more), (1, false));
        assert_eq!(waiting.lock().charges, 0);
    }

    #[test]
    fn past_the_most_that_wait_a_settlement_is_dropped() {
        let waiting = Waiting::default();
        let many = vec![charge(-1); CHARGES_AT_MOST];
        assert!(waiting.add("a".into(), many));
        assert!(!waiting.add("b".into(), vec![charge(-1)]));
        let (due, _) = waiting.due(Instant::now() + SEND_AFTER);
        assert_eq!((due.len(), &*due[0].0), (1, "a"));
    }
}
