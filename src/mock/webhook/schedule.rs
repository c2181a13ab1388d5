//! How the mock delivers webhooks: the retry schedule, the reply time and the signing secret
//! (the `webhook_retry`, `webhook_timeout` and `webhook_secret` knobs).

use std::sync::Arc;
use std::time::Duration;

use crate::base::secret::Secret;
use crate::table::MAX_WEBHOOK_RETRIES;

/// The successive delays between the attempts of one event: the first retry waits the first
/// delay after the first attempt failed, the second the next delay after the first retry
/// failed, and so on. Held inline (no allocation) so that knobs copy as cheaply as before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    delays: [Duration; MAX_WEBHOOK_RETRIES],
    len: usize,
}

/// Everything about delivering one job's events that is not in the job's `webhook`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub retry: Schedule,
    /// A reply that is not a 2xx within this time is a failed attempt.
    pub timeout: Duration,
    /// With a secret, every delivery is signed (`X-Firecrawl-Signature`).
    pub secret: Option<Arc<Secret>>,
}

/// The web-data contract's reply time.
pub const CONTRACT_TIMEOUT: Duration = Duration::from_secs(10);

// === impl Schedule ===

impl Schedule {
    /// The web-data contract's schedule: 1, 5 and 15 minutes (four attempts in all).
    pub const CONTRACT: Schedule = {
        let mut delays = [Duration::ZERO; MAX_WEBHOOK_RETRIES];
        delays[0] = Duration::from_secs(60);
        delays[1] = Duration::from_secs(5 * 60);
        delays[2] = Duration::from_secs(15 * 60);
        Schedule { delays, len: 3 }
    };

    /// No retries: one attempt per event.
    pub const NONE: Schedule = Schedule {
        delays: [Duration::ZERO; MAX_WEBHOOK_RETRIES],
        len: 0,
    };

    /// A schedule of `delays`; `None` past [`MAX_WEBHOOK_RETRIES`].
    pub fn new(delays: &[Duration]) -> Option<Schedule> {
        let mut schedule = Schedule::NONE;
        delays.iter().all(|&d| schedule.push(d)).then_some(schedule)
    }

    /// Adds a retry after the others; false when the schedule is full.
    pub fn push(&mut self, delay: Duration) -> bool {
        let Some(slot) = self.delays.get_mut(self.len) else {
            return false;
        };
        *slot = delay;
        self.len += 1;
        true
    }

    /// The delays, first retry first.
    pub fn delays(&self) -> &[Duration] {
        &self.delays[..self.len]
    }
}

// === impl Delivery ===

impl Default for Delivery {
    fn default() -> Self {
        Delivery {
            retry: Schedule::CONTRACT,
            timeout: CONTRACT_TIMEOUT,
            secret: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_hold_up_to_the_limit_in_order() {
        let secs = Duration::from_secs;
        assert_eq!(
            Schedule::CONTRACT.delays(),
            [secs(60), secs(300), secs(900)]
        );
        let three = Schedule::new(&[secs(1), secs(2), secs(3)]).unwrap();
        assert_eq!(three.delays(), [secs(1), secs(2), secs(3)]);
        assert!(Schedule::new(&[]).unwrap().delays().is_empty());
        let full = vec![secs(1); MAX_WEBHOOK_RETRIES];
        assert_eq!(Schedule::new(&full).unwrap().delays().len(), full.len());
        let over = vec![secs(1); MAX_WEBHOOK_RETRIES + 1];
        assert_eq!(Schedule::new(&over), None);
    }
}
