//! A connection's quiet spells, and the one timer per connection that ends them.
//!
//! Between requests an HTTP/1.1 connection may stay silent for `idle_timeout`; once the next
//! request's first byte arrives, its head must be complete within `header_timeout`; a new
//! connection must send its first head within `header_timeout` of being accepted (nginx's
//! `keepalive_timeout` and `client_header_timeout`). An HTTP/2 connection has no heads to
//! time: it is closed once it has had no stream in flight for `idle_timeout`.
//!
//! hyper's own header timer is not used: it starts whenever hyper waits for a head, so it
//! closed every kept-alive HTTP/1.1 connection after `header_timeout` (30 s) instead of
//! `idle_timeout` (75 s), and it cost every request a boxed timer, a timer-wheel insert and
//! removal under a lock, and mostly a wakeup of the runtime through its eventfd. Here the
//! request path and the socket's reads only store a few atomics, and [`Activity::quiet`]
//! keeps one sleep per connection, set to the earliest moment anything could expire; when it
//! fires, [`verdict`] decides from the state whether something did, or when to look again.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::base::clock;

/// Why a connection is closed for being quiet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quiet {
    /// No request in flight for `idle_timeout`.
    Idle,
    /// A request head (or a new connection's first) not complete within `header_timeout`.
    Head,
}

/// The two limits a quiet connection is held to.
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    pub idle: Duration,
    pub header: Duration,
}

impl From<&crate::table::Limits> for Timeouts {
    fn from(limits: &crate::table::Limits) -> Self {
        Timeouts {
            idle: limits.idle_timeout,
            header: limits.header_timeout,
        }
    }
}

/// Whether a connection has requests in flight, and since when it has waited for what.
/// Times are nanoseconds after the connection was accepted.
#[derive(Debug)]
pub struct Activity {
    born: Instant,
    active: AtomicUsize,
    /// When the last request in flight ended.
    idle_since: AtomicU64,
    /// When the head being read began, plus one; 0 while none is.
    head_since: AtomicU64,
    /// Whether bytes read while idle begin a head: HTTP/1.1, not HTTP/2 (whose pings and
    /// settings arrive on idle connections).
    heads: AtomicBool,
}

/// What [`verdict`] reads: the state at one moment, times since the connection's birth.
#[derive(Clone, Copy, Debug)]
pub struct Snapshot {
    pub active: usize,
    pub idle_since: Duration,
    pub head_since: Option<Duration>,
    pub heads: bool,
}

/// A request counted in flight on its connection until dropped.
#[derive(Debug)]
pub struct Busy(std::sync::Arc<Activity>);

// === impl Activity ===

impl Activity {
    /// A connection just accepted: waiting for its first head.
    pub fn new() -> Activity {
        Activity {
            born: Instant::now(),
            active: AtomicUsize::new(0),
            idle_since: AtomicU64::new(0),
            head_since: AtomicU64::new(1),
            heads: AtomicBool::new(true),
        }
    }

    /// The connection speaks HTTP/2: from now on only `idle_timeout` applies.
    pub fn speaks_http2(&self) {
        self.heads.store(false, Ordering::Relaxed);
        self.head_since.store(0, Ordering::Relaxed);
        self.idle_since.store(self.now(), Ordering::Relaxed);
    }

    /// Bytes were read from the client: on an idle HTTP/1.1 connection, a head begins.
    #[inline]
    pub fn saw_bytes(&self) {
        if self.heads.load(Ordering::Relaxed)
            && self.active.load(Ordering::Relaxed) == 0
            && self.head_since.load(Ordering::Relaxed) == 0
        {
            self.head_since.store(self.now() + 1, Ordering::Relaxed);
        }
    }

    /// Bytes were written to the client: a head that began while a response was still being
    /// written (a pipelined request) is timed from the last write, so that a slow reader of
    /// a long response is not dropped mid-response.
    #[inline]
    pub fn wrote(&self) {
        if self.head_since.load(Ordering::Relaxed) != 0 && self.heads.load(Ordering::Relaxed) {
            self.head_since.store(self.now() + 1, Ordering::Relaxed);
        }
    }

    /// A request's head is complete: it is in flight until the guard is dropped.
    pub fn begin(self: &std::sync::Arc<Self>) -> Busy {
        self.active.fetch_add(1, Ordering::AcqRel);
        self.head_since.store(0, Ordering::Relaxed);
        Busy(std::sync::Arc::clone(self))
    }

    /// Completes when the connection has been quiet for too long, and says how.
    pub async fn quiet(&self, limits: Timeouts) -> Quiet {
        let next = match self.look(limits) {
            Ok(next) => next,
            Err(quiet) => return quiet,
        };
        let mut sleep = std::pin::pin!(tokio::time::sleep_until(next));
        loop {
            sleep.as_mut().await;
            clock::fresh(); // the poll's reading may predate the timer's firing
            match self.look(limits) {
                Ok(next) => sleep.as_mut().reset(next),
                Err(quiet) => return quiet,
            }
        }
    }

    fn look(&self, limits: Timeouts) -> Result<Instant, Quiet> {
        let now = Duration::from_nanos(self.now());
        verdict(self.snapshot(), now, limits).map(|next| self.born + next)
    }

    fn snapshot(&self) -> Snapshot {
        let head = self.head_since.load(Ordering::Relaxed);
        Snapshot {
            active: self.active.load(Ordering::Acquire),
            idle_since: Duration::from_nanos(self.idle_since.load(Ordering::Relaxed)),
            head_since: head.checked_sub(1).map(Duration::from_nanos),
            heads: self.heads.load(Ordering::Relaxed),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(clock::since(self.born).as_nanos()).unwrap_or(u64::MAX - 1)
    }
}

impl Default for Activity {
    fn default() -> Self {
        Activity::new()
    }
}

impl Drop for Busy {
    /// The idle start is stored before the count falls, so that a timer on another thread
    /// that sees no request in flight also sees when the last one ended.
    fn drop(&mut self) {
        self.0.idle_since.store(self.0.now(), Ordering::Relaxed);
        self.0.active.fetch_sub(1, Ordering::Release);
    }
}

/// At `now`: which limit a connection in state `s` has run past, or else the earliest moment
/// one could expire. Besides the deadline running now, a head may begin or an idle spell
/// start at any moment, so the connection is looked at again no later than the shorter of
/// the limits from now.
pub fn verdict(s: Snapshot, now: Duration, limits: Timeouts) -> Result<Duration, Quiet> {
    let soonest = if s.heads {
        limits.idle.min(limits.header)
    } else {
        limits.idle
    };
    if s.active > 0 {
        return Ok(now + soonest);
    }
    if let Some(head) = s.head_since {
        let deadline = head + limits.header;
        return if now >= deadline {
            Err(Quiet::Head)
        } else {
            Ok(deadline.min(now + soonest))
        };
    }
    let deadline = s.idle_since + limits.idle;
    if now >= deadline {
        Err(Quiet::Idle)
    } else {
        Ok(deadline.min(now + soonest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Timeouts = Timeouts {
        idle: Duration::from_secs(75),
        header: Duration::from_secs(30),
    };

    fn s(active: usize, idle_since: u64, head_since: Option<u64>, heads: bool) -> Snapshot {
        Snapshot {
            active,
            idle_since: Duration::from_secs(idle_since),
            head_since: head_since.map(Duration::from_secs),
            heads,
        }
    }

    /// (name, state, now, verdict), times in seconds.
    type Case = (&'static str, Snapshot, u64, Result<u64, Quiet>);

    fn check(limits: Timeouts, cases: &[Case]) {
        for (name, state, now, want) in cases {
            let got = verdict(*state, Duration::from_secs(*now), limits);
            assert_eq!(got, want.map(Duration::from_secs), "{name}");
        }
    }

    #[test]
    fn the_state_decides_what_expired_or_when_to_look_again() {
        let cases: [Case; _] = [
            ("new, silent", s(0, 0, Some(0), true), 10, Ok(30)),
            (
                "new, silent too long",
                s(0, 0, Some(0), true),
                30,
                Err(Quiet::Head),
            ),
            ("busy", s(2, 0, None, true), 100, Ok(130)),
            ("busy HTTP/2", s(1, 0, None, false), 100, Ok(175)),
            (
                "kept alive 40 s: not a head",
                s(0, 100, None, true),
                140,
                Ok(170),
            ),
            ("kept alive near idle", s(0, 100, None, true), 160, Ok(175)),
            (
                "kept alive too long",
                s(0, 100, None, true),
                175,
                Err(Quiet::Idle),
            ),
            ("head begun", s(0, 100, Some(150), true), 170, Ok(180)),
            (
                "head too slow",
                s(0, 100, Some(150), true),
                180,
                Err(Quiet::Head),
            ),
            (
                "head outlives idle",
                s(0, 100, Some(170), true),
                190,
                Ok(200),
            ),
            ("HTTP/2 idle", s(0, 100, None, false), 140, Ok(175)),
            (
                "HTTP/2 idle too long",
                s(0, 100, None, false),
                175,
                Err(Quiet::Idle),
            ),
        ];
        check(LIMITS, &cases);
    }

    #[test]
    fn an_idle_timeout_shorter_than_the_header_timeout_is_not_overslept() {
        let limits = Timeouts {
            idle: Duration::from_secs(1),
            header: Duration::from_secs(60),
        };
        let cases: [Case; _] = [
            // A new connection's head may complete and its response end at once: the idle
            // spell that follows must not wait for the head's 60 s.
            ("new, silent", s(0, 0, Some(0), true), 0, Ok(1)),
            (
                "new, silent too long",
                s(0, 0, Some(0), true),
                60,
                Err(Quiet::Head),
            ),
            ("busy", s(1, 0, None, true), 5, Ok(6)),
            ("idle", s(0, 5, None, true), 5, Ok(6)),
            ("idle too long", s(0, 5, None, true), 6, Err(Quiet::Idle)),
        ];
        check(limits, &cases);
    }

    #[tokio::test(start_paused = true)]
    async fn a_kept_alive_connection_waits_idle_timeout_then_header_timeout_from_its_first_byte() {
        let limits = Timeouts {
            idle: Duration::from_secs(20),
            header: Duration::from_secs(2),
        };
        let activity = std::sync::Arc::new(Activity::new());
        let mut quiet = Box::pin(async {
            let quiet = activity.quiet(limits).await;
            (quiet, activity.born.elapsed())
        });
        drop(activity.begin()); // one request, served at once
        tokio::time::advance(Duration::from_secs(8)).await;
        assert!(
            futures_poll(&mut quiet).await.is_none(),
            "8 s idle is allowed"
        );
        activity.saw_bytes(); // the next head begins at 8 s
        let (quiet, at) = quiet.await;
        assert_eq!(quiet, Quiet::Head);
        assert_eq!(
            at,
            Duration::from_secs(10),
            "2 s after the head began, not at 20 s idle"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_pipelined_head_is_timed_from_the_last_write() {
        let limits = Timeouts {
            idle: Duration::from_secs(60),
            header: Duration::from_secs(2),
        };
        let activity = std::sync::Arc::new(Activity::new());
        drop(activity.begin());
        activity.saw_bytes(); // the next head arrives while the response is still written
        for _ in 0..3 {
            tokio::time::advance(Duration::from_secs(1)).await;
            activity.wrote();
        }
        let at = activity.born.elapsed();
        assert_eq!(
            activity.look(limits),
            Ok(activity.born + at + limits.header)
        );
    }

    /// Polls once, without waiting.
    async fn futures_poll<F: std::future::Future + Unpin>(f: &mut F) -> Option<F::Output> {
        tokio::time::timeout(Duration::ZERO, f).await.ok()
    }
}
