//! The first-byte deadline, then the idle limit between the response's frames, timed by one
//! timer a connection keeps from request to request.
//!
//! A timeout around each request would put a timer into tokio's wheel and take it out again
//! every time. Here a connection keeps its sleep, and a request only stores its deadline: the
//! sleep, set for an earlier request's (earlier) deadline, is moved on when it fires, at most
//! once per limit, as lingo's client connections' timers are (`limits::activity`). It is
//! polled only where sending or reading the head would wait (`Conn::poll_fill_by_deadline`,
//! the upload's `refused`), not on every poll of the exchange. Once the head is read, the
//! deadline is the end of the idle limit, moved on by each frame of the response
//! ([`Deadline::renew`]) and polled where its body would wait. A sleep fires on the runtime
//! it was made on, so one is kept only on a worker thread (`base::worker`), whose
//! connections stay on it; elsewhere (`LINGO_WORKERS=0`, the control runtime) each request
//! makes its own, in a box of its own.
//!
//! While its connection waits in the pool, the sleep keeps the waker of the last task that
//! polled it (that request's client connection), until it fires (waking that task once, for
//! nothing: at the last response's idle deadline, or the head's first-byte one) or the
//! connection is used again, closed or expires (`pool::IDLE`): that task's memory is held
//! as long.

use std::future::Future;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, ready};

use tokio::time::{Instant, Sleep, sleep_until};

use crate::base::worker;

/// A connection's timer: the first-byte deadline of its request, then the idle limit of its
/// response's body.
#[derive(Default)]
pub struct Deadline {
    /// The current request's deadline.
    at: Option<Instant>,
    /// The sleep, and the worker slot it was made on (0: not a worker, see the module doc).
    sleep: Option<(usize, Pin<Box<Sleep>>)>,
}

impl Deadline {
    /// The first-byte deadline of the request about to be sent (a sleep made on another
    /// runtime, or off a worker, is not kept for it).
    pub fn set(&mut self, at: Instant) {
        self.at = Some(at);
        let slot = worker::slot();
        if self
            .sleep
            .as_ref()
            .is_some_and(|(made, _)| slot == 0 || *made != slot)
        {
            self.sleep = None;
        }
    }

    /// A later deadline of the same request, on the same task (its response's head or a frame
    /// of its body came: the idle limit runs from it), only noted: the sleep, set for the
    /// earlier one, moves on when it fires.
    pub fn renew(&mut self, at: Instant) {
        self.at = Some(at);
    }

    /// Ready once the deadline set has passed (never, with none set).
    pub fn poll_passed(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(at) = self.at else {
            return Poll::Pending;
        };
        let (_, sleep) = self
            .sleep
            .get_or_insert_with(|| (worker::slot(), Box::pin(sleep_until(at))));
        if sleep.deadline() > at {
            sleep.as_mut().reset(at);
        }
        loop {
            // Always outside the task's budget (`tokio::time::Timeout` steps outside it when
            // its inner future spent it): a socket that always has more spends the budget,
            // and the sleep would then say Pending without looking at the time.
            ready!(pin!(tokio::task::unconstrained(sleep.as_mut())).poll(cx));
            if sleep.deadline() >= at {
                return Poll::Ready(());
            }
            // Fired for an earlier request's deadline.
            sleep.as_mut().reset(at);
        }
    }
}

#[cfg(test)]
pub mod tests {
    use std::future::{Future, poll_fn};
    use std::time::Duration;

    use super::*;

    /// This test's thread taken for worker `slot` (where sleeps are kept), until dropped.
    pub struct OnWorker;

    impl OnWorker {
        pub fn enter(slot: usize) -> OnWorker {
            worker::enter(slot);
            OnWorker
        }
    }

    impl Drop for OnWorker {
        fn drop(&mut self) {
            worker::enter(0);
        }
    }

    async fn passed(deadline: &mut Deadline) -> bool {
        poll_fn(|cx| Poll::Ready(deadline.poll_passed(cx).is_ready())).await
    }

    const LIMIT: Duration = Duration::from_secs(5);

    #[tokio::test(start_paused = true)]
    async fn passes_at_its_deadline_not_before() {
        let mut deadline = Deadline::default();
        assert!(!passed(&mut deadline).await, "none set");
        deadline.set(Instant::now() + LIMIT);
        assert!(!passed(&mut deadline).await);
        tokio::time::advance(LIMIT - Duration::from_millis(1)).await;
        assert!(!passed(&mut deadline).await);
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(passed(&mut deadline).await);
    }

    /// A socket that always has more spends the task's budget (tokio's cooperative
    /// scheduling) before it would wait: the deadline is seen all the same.
    #[tokio::test(start_paused = true)]
    async fn a_passed_deadline_is_seen_with_the_tasks_budget_spent() {
        let mut deadline = Deadline::default();
        deadline.set(Instant::now() + LIMIT);
        assert!(!passed(&mut deadline).await);
        tokio::time::advance(LIMIT).await;
        let seen = poll_fn(|cx| {
            while std::pin::pin!(tokio::task::consume_budget())
                .poll(cx)
                .is_ready()
            {}
            Poll::Ready(deadline.poll_passed(cx).is_ready())
        })
        .await;
        assert!(seen);
    }

    /// A kept sleep, fired for the last request's deadline, is moved on to the next one's.
    #[tokio::test(start_paused = true)]
    async fn a_sleep_fired_for_an_earlier_request_moves_on() {
        let _worker = OnWorker::enter(1);
        let mut deadline = Deadline::default();
        deadline.set(Instant::now() + LIMIT);
        assert!(!passed(&mut deadline).await);
        // The request gets a response; its connection waits past that deadline.
        tokio::time::advance(LIMIT * 2).await;
        let next = Instant::now() + LIMIT;
        deadline.set(next);
        assert!(deadline.sleep.is_some(), "kept on a worker");
        assert!(!passed(&mut deadline).await, "fired for the last request");
        assert_eq!(deadline.sleep.as_ref().unwrap().1.deadline(), next);
        tokio::time::advance(LIMIT).await;
        assert!(passed(&mut deadline).await);
    }

    #[tokio::test(start_paused = true)]
    async fn an_earlier_deadline_moves_the_sleep_back() {
        let _worker = OnWorker::enter(1);
        let mut deadline = Deadline::default();
        deadline.set(Instant::now() + LIMIT * 2);
        assert!(!passed(&mut deadline).await);
        deadline.set(Instant::now() + LIMIT);
        assert!(!passed(&mut deadline).await);
        tokio::time::advance(LIMIT).await;
        assert!(passed(&mut deadline).await);
    }

    /// Off a worker (or on another one) a sleep may belong to another runtime: each request
    /// makes its own.
    #[tokio::test(start_paused = true)]
    async fn a_sleep_is_kept_only_on_the_worker_that_made_it() {
        let mut deadline = Deadline::default();
        deadline.set(Instant::now() + LIMIT);
        assert!(!passed(&mut deadline).await);
        deadline.set(Instant::now() + LIMIT);
        assert!(deadline.sleep.is_none(), "not a worker");
        let worker = OnWorker::enter(1);
        assert!(!passed(&mut deadline).await);
        deadline.set(Instant::now() + LIMIT);
        assert!(deadline.sleep.is_some(), "the worker that made it");
        drop(worker);
        let _other = OnWorker::enter(2);
        deadline.set(Instant::now() + LIMIT);
        assert!(deadline.sleep.is_none(), "another worker");
    }
}
