//! The arithmetic of one counter, pure: a fixed window (aligned to the Unix epoch, so every
//! replica and Redis agree on where it starts) or a bucket refilled continuously. The Redis
//! scripts (`redis/scripts.rs`) do the same sums in Lua.

/// How a counter counts: `amount` each `per_ms`, in fixed windows or into a bucket of
/// `capacity`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    pub amount: u64,
    pub per_ms: u64,
    /// A bucket of this size instead of a window.
    pub capacity: Option<u64>,
}

/// What a counter holds: `used` (a window's count, or a bucket's level) as of `mark` (the
/// window's index, or the millisecond the bucket was last filled to).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct State {
    pub used: f64,
    pub mark: i64,
}

/// What asking a counter for `cost` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Check {
    /// The cost did not fit.
    pub over: bool,
    /// What is left after the cost (when it fitted), else what was left.
    pub remaining: u64,
    /// Milliseconds until it is whole again (a window's end; a bucket's time to empty); when
    /// `over`, until the cost would fit.
    pub reset_ms: u64,
    /// Which window the cost went to (a settlement goes to the same one).
    pub mark: i64,
}

// === impl Shape ===

impl Shape {
    fn ceiling(&self) -> f64 {
        self.capacity.unwrap_or(self.amount) as f64
    }

    /// A bucket's refill per millisecond.
    fn rate(&self) -> f64 {
        self.amount as f64 / self.per_ms.max(1) as f64
    }

    /// `state` as of `now_ms`: a new window starts empty; a bucket drains by the time past.
    pub fn current(&self, state: State, now_ms: u64) -> State {
        let now = now_ms as i64;
        match self.capacity {
            None => {
                let window = now / self.per_ms.max(1) as i64;
                if state.mark == window {
                    state
                } else {
                    State {
                        used: 0.0,
                        mark: window,
                    }
                }
            }
            Some(_) => {
                let past = (now - state.mark).max(0) as f64;
                State {
                    used: (state.used - past * self.rate()).max(0.0),
                    mark: now,
                }
            }
        }
    }

    /// Asks for `cost` at `now_ms`: the state after (the cost added, unless it did not fit
    /// and `enforce`), and what was found.
    pub fn admit(&self, state: State, cost: u64, now_ms: u64, enforce: bool) -> (State, Check) {
        let mut state = self.current(state, now_ms);
        let ceiling = self.ceiling();
        let over = state.used + cost as f64 > ceiling;
        if !(over && enforce) {
            state.used += cost as f64;
        }
        let left = (ceiling - state.used).max(0.0);
        let reset_ms = match self.capacity {
            None => {
                let end = (state.mark + 1) as u64 * self.per_ms;
                end.saturating_sub(now_ms)
            }
            // Not charged: until the cost fits.
            Some(_) if over && enforce => {
                ((state.used + cost as f64 - ceiling) / self.rate()).ceil() as u64
            }
            // Charged over the top (shadow): until it is back under.
            Some(_) if over => ((state.used - ceiling) / self.rate()).ceil() as u64,
            Some(_) => (state.used / self.rate()).ceil() as u64,
        };
        let check = Check {
            over,
            remaining: left.floor() as u64,
            reset_ms,
            mark: state.mark,
        };
        (state, check)
    }

    /// Adds `delta` (a refund when negative) to `cost` charged at `mark` (a window's index; a
    /// bucket's millisecond): a window that has ended is left alone; a bucket drains first, and
    /// gives back no more of the charge than it still holds. Never below empty.
    pub fn settle(&self, state: State, (mark, cost): (i64, u64), delta: i64, now_ms: u64) -> State {
        let mut state = self.current(state, now_ms);
        let delta = match self.capacity {
            None if state.mark != mark => return state,
            None => delta as f64,
            Some(_) => {
                let drained = (now_ms as i64 - mark).max(0) as f64 * self.rate();
                let held = (cost as f64 - drained).max(0.0);
                (delta as f64).max(-held)
            }
        };
        state.used = (state.used + delta).max(0.0);
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Shape = Shape {
        amount: 3,
        per_ms: 60_000,
        capacity: None,
    };

    /// A bucket of 4 that refills 2 a second.
    const BUCKET: Shape = Shape {
        amount: 2,
        per_ms: 1_000,
        capacity: Some(4),
    };

    /// A step: (time in ms, cost, enforce) and what it should find: (over, remaining, reset
    /// in ms).
    type Step = (u64, u64, bool, (bool, u64, u64));

    fn run(shape: Shape, steps: &[Step]) {
        let mut state = State::default();
        for (i, &(now, cost, enforce, want)) in steps.iter().enumerate() {
            let (next, check) = shape.admit(state, cost, now, enforce);
            state = next;
            assert_eq!(
                (check.over, check.remaining, check.reset_ms),
                want,
                "step {i} at {now} ms"
            );
        }
    }

    #[test]
    fn a_window_admits_its_amount_and_starts_again_at_its_end() {
        run(
            MINUTE,
            &[
                (120_000, 1, true, (false, 2, 60_000)),
                (150_000, 2, true, (false, 0, 30_000)),
                (170_000, 1, true, (true, 0, 10_000)),
                // Shadow: counted though over.
                (175_000, 1, false, (true, 0, 5_000)),
                (180_000, 1, true, (false, 2, 60_000)),
            ],
        );
    }

    #[test]
    fn a_bucket_holds_its_capacity_and_refills_at_its_rate() {
        run(
            BUCKET,
            &[
                (10_000, 4, true, (false, 0, 2_000)),
                // 1 more needs half a second of refill.
                (10_000, 1, true, (true, 0, 500)),
                (10_500, 1, true, (false, 0, 2_000)),
                (12_500, 3, true, (false, 1, 1_500)),
            ],
        );
    }

    #[test]
    fn a_settlement_goes_to_its_own_window_and_never_below_empty() {
        let (state, check) = MINUTE.admit(State::default(), 3, 60_000, true);
        let charged = (check.mark, 3);
        let refunded = MINUTE.settle(state, charged, -2, 61_000);
        assert_eq!(refunded.used, 1.0);
        let floor = MINUTE.settle(state, charged, -9, 61_000);
        assert_eq!(floor.used, 0.0);
        // The window ended: the next one is not charged for the last one's extra.
        let later = MINUTE.settle(state, charged, 5, 121_000);
        assert_eq!(later.used, 0.0);
        let extra = MINUTE.settle(state, charged, 5, 61_000);
        assert_eq!(extra.used, 8.0);
    }

    /// A bucket's late refund gives back only what of the charge it still holds: the rest
    /// has drained, and refunding it would erase other requests' charges.
    #[test]
    fn a_bucket_refunds_only_what_it_still_holds() {
        let (state, check) = BUCKET.admit(State::default(), 4, 10_000, true);
        // Another request's 2 arrive a second later, when the first 4 have drained to 2.
        let (state, _) = BUCKET.admit(state, 2, 11_000, true);
        assert_eq!(state.used, 4.0);
        // The first answer used nothing: of its 4, 2 are still held and given back.
        let settled = BUCKET.settle(state, (check.mark, 4), -4, 11_000);
        assert_eq!(settled.used, 2.0);
    }

    /// A shadow limit charged over the top says when it is back under, not when one more
    /// would fit.
    #[test]
    fn a_shadow_bucket_over_the_top_resets_when_it_is_back_under() {
        let (state, _) = BUCKET.admit(State::default(), 4, 10_000, false);
        let (_, check) = BUCKET.admit(state, 2, 10_000, false);
        assert!(check.over);
        // 6 in a bucket of 4, draining 2 a second: under again in a second.
        assert_eq!(check.reset_ms, 1_000);
    }
}
