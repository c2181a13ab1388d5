//! The time, read once per poll of a connection's task.
//!
//! A whole pass-through asks the time a dozen times (when it came, when the upstream was
//! received and responded to, when the response's body last moved, when it ended, when the
//! connection went quiet...), all within two polls of its connection's task, and a clock
//! read is slow on a virtual machine. Like nginx's cached time, [`now`] (and [`wall`])
//! inside a [`Ticking`] future reads the clock on first use in each poll and gives that
//! reading for the rest of the poll. A time so taken lags by as much of the poll as had
//! passed, and a deadline made from it comes that much early: fine for deadlines (the
//! connection's, the pool's, the silence between a response's frames) and for stamps. What
//! measures lingo's own work, which happens within a poll (an upstream wait's two ends, a
//! response's head, a request's end: the overhead metric and the logged duration, both counted
//! from the reading of the poll where the request began), takes [`fresh`] readings, which are
//! also kept as the poll's; so does whatever follows a timer that fired (on a runtime whose
//! other threads drive the timers, its deadline may have passed after the poll's reading). A
//! task not inside a [`Ticking`] (the control runtime's, a WebSocket relay's, a test's)
//! reads the clock each time.
//!
//! [`now`] is tokio's `Instant`, so that tests with paused time see the time they set.

use std::cell::Cell;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use pin_project_lite::pin_project;
use tokio::time::Instant;

/// What one of this thread's clock caches holds.
#[derive(Clone, Copy)]
enum Cached<T> {
    /// Not inside a [`Ticking`] poll: every reading reads the clock.
    Off,
    /// Inside one, the clock not read yet.
    Unread,
    /// Inside one, read.
    Read(T),
}

thread_local! {
    static MONOTONIC: Cell<Cached<Instant>> = const { Cell::new(Cached::Off) };
    static WALL: Cell<Cached<SystemTime>> = const { Cell::new(Cached::Off) };
}

/// The time: within a [`Ticking`] poll, the poll's one reading.
#[inline]
pub fn now() -> Instant {
    cached(&MONOTONIC, Instant::now)
}

/// The time read now, kept as the poll's reading from here on (see the module's doc).
#[inline]
pub fn fresh() -> Instant {
    let at = Instant::now();
    if !matches!(MONOTONIC.get(), Cached::Off) {
        MONOTONIC.set(Cached::Read(at));
    }
    at
}

/// How long since `at`, by a [`fresh`] reading.
#[inline]
pub fn fresh_since(at: Instant) -> Duration {
    fresh().saturating_duration_since(at)
}

/// The wall-clock time (for a `Date` field, a `created` stamp): within a [`Ticking`] poll,
/// the poll's one reading of it.
#[inline]
pub fn wall() -> SystemTime {
    cached(&WALL, SystemTime::now)
}

/// How long since `at`, by [`now`]; zero for a time not yet reached.
#[inline]
pub fn since(at: Instant) -> Duration {
    now().saturating_duration_since(at)
}

/// `limit` from [`now`]; thirty years for a limit past what an `Instant` holds (tokio's
/// `timeout` sets no timer then), so that a deadline from a huge limit never panics.
#[inline]
pub fn after(limit: Duration) -> Instant {
    let now = now();
    now.checked_add(limit)
        .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30))
}

#[inline]
fn cached<T: Copy + 'static>(
    cache: &'static std::thread::LocalKey<Cell<Cached<T>>>,
    read: fn() -> T,
) -> T {
    match cache.get() {
        Cached::Read(at) => at,
        Cached::Unread => {
            let at = read();
            cache.set(Cached::Read(at));
            at
        }
        Cached::Off => read(),
    }
}

pin_project! {
    /// A future whose polls share one reading of each clock (see the module's doc).
    pub struct Ticking<F> {
        #[pin]
        inner: F,
    }
}

impl<F> Ticking<F> {
    pub fn new(inner: F) -> Self {
        Ticking { inner }
    }
}

impl<F: Future> Future for Ticking<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let _poll = Caches::enter();
        self.project().inner.poll(cx)
    }
}

/// One poll's caches: emptied on entry, and what was there before put back on exit, also
/// when the poll panics (the thread goes on to poll other tasks).
struct Caches(Cached<Instant>, Cached<SystemTime>);

impl Caches {
    fn enter() -> Self {
        Caches(
            MONOTONIC.replace(Cached::Unread),
            WALL.replace(Cached::Unread),
        )
    }
}

impl Drop for Caches {
    fn drop(&mut self) {
        MONOTONIC.set(self.0);
        WALL.set(self.1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn one_reading_a_poll_inside_and_every_reading_outside() {
        let start = now();
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(
            since(start),
            Duration::from_secs(1),
            "outside: read each time"
        );
        let (first, later) = Ticking::new(async {
            let first = now();
            tokio::time::sleep(Duration::from_secs(3)).await; // the next poll reads again
            (first, now())
        })
        .await;
        assert_eq!(first - start, Duration::from_secs(1));
        assert_eq!(later - first, Duration::from_secs(3));
        assert!(matches!(MONOTONIC.get(), Cached::Off), "left as found");
    }

    #[test]
    fn a_poll_reads_once_and_restores_on_panic() {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut fut = std::pin::pin!(Ticking::new(std::future::poll_fn(|_| {
            let (a, wall) = (now(), wall());
            std::thread::sleep(Duration::from_millis(5));
            Poll::Ready((a, now(), wall == super::wall()))
        })));
        let Poll::Ready((a, b, same_wall)) = fut.as_mut().poll(&mut cx) else {
            panic!("ready at once")
        };
        assert_eq!(a, b, "one reading in one poll");
        assert!(same_wall, "one reading of the wall clock in one poll");
        let outside = now();
        std::thread::sleep(Duration::from_millis(5));
        assert!(
            now() > outside,
            "outside a poll the clock is read each time"
        );
        let panicking = std::panic::catch_unwind(|| {
            let mut fut = std::pin::pin!(Ticking::new(std::future::poll_fn(|_| -> Poll<()> {
                now();
                panic!("in a poll")
            })));
            let _ = fut
                .as_mut()
                .poll(&mut Context::from_waker(std::task::Waker::noop()));
        });
        assert!(panicking.is_err());
        assert!(
            matches!(MONOTONIC.get(), Cached::Off),
            "restored after the panic"
        );
        assert!(matches!(WALL.get(), Cached::Off));
    }

    /// Polls `f` once inside a [`Ticking`], with a waker that does nothing.
    fn in_a_poll<T>(f: impl FnOnce() -> T) -> T {
        let mut f = Some(f);
        let mut fut = std::pin::pin!(Ticking::new(std::future::poll_fn(|_| {
            Poll::Ready(f.take().expect("polled once")())
        })));
        match fut
            .as_mut()
            .poll(&mut Context::from_waker(std::task::Waker::noop()))
        {
            Poll::Ready(out) => out,
            Poll::Pending => unreachable!("ready at once"),
        }
    }

    #[test]
    fn a_fresh_reading_becomes_the_polls_and_an_inner_poll_gives_the_outer_one_back() {
        let (first, fresh, after, inner, restored) = in_a_poll(|| {
            let first = now();
            std::thread::sleep(Duration::from_millis(5));
            let fresh = super::fresh();
            let after = now();
            std::thread::sleep(Duration::from_millis(5));
            let inner = in_a_poll(now);
            (first, fresh, after, inner, now())
        });
        assert!(fresh > first, "read, not cached");
        assert_eq!(after, fresh, "kept as the poll's reading");
        assert!(inner > fresh, "an inner poll reads for itself");
        assert_eq!(restored, fresh, "and gives the outer poll's reading back");
        let outside = super::fresh();
        assert!(
            matches!(MONOTONIC.get(), Cached::Off),
            "outside: nothing kept"
        );
        assert!(now() >= outside);
    }

    #[test]
    fn a_limit_past_what_an_instant_holds_is_thirty_years() {
        let start = now();
        let far = after(Duration::MAX);
        assert!(
            far - start >= Duration::from_secs(86_400 * 365 * 30),
            "{:?}",
            far - start
        );
        let second = in_a_poll(|| after(Duration::from_secs(1)) - now());
        assert_eq!(second, Duration::from_secs(1));
    }
}
