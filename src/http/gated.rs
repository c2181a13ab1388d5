//! A future that is polled only when its own waker fired.
//!
//! A task polls every future it selects over whenever anything in it wakes. A connection's
//! task wakes a few times per request for its sockets, and each time it would also poll the
//! timers and the shutdown signal that can end the connection (a timer check, a lock on the
//! shutdown `watch` and another on its waiter list), for a future that is ready once in a
//! connection's life. [`Gated`] polls its future the first time and then only after that
//! future's own waker was called, which costs an atomic swap per task wake.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

pin_project_lite::pin_project! {
    /// `inner`, polled only when it asked to be (see the module's doc).
    pub struct Gated<F> {
        #[pin]
        inner: F,
        flag: Arc<Flag>,
        // The waker `inner` is polled with: wakes `flag`.
        own: Waker,
        // The task's waker last handed to `flag`, to see without a lock whether it changed.
        task: Option<Waker>,
    }
}

/// Set when `inner`'s waker is called; wakes the task that polls the [`Gated`].
struct Flag {
    woken: AtomicBool,
    task: Mutex<Option<Waker>>,
}

impl<F: Future> Gated<F> {
    pub fn new(inner: F) -> Self {
        let flag = Arc::new(Flag {
            woken: AtomicBool::new(true),
            task: Mutex::new(None),
        });
        Gated {
            inner,
            own: Waker::from(Arc::clone(&flag)),
            flag,
            task: None,
        }
    }
}

impl<F: Future> Future for Gated<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        if !this.task.as_ref().is_some_and(|t| t.will_wake(cx.waker())) {
            // A first poll, or a poll from another task: wake that one from now on, and poll
            // `inner` so that nothing it waits for is missed.
            *this.task = Some(cx.waker().clone());
            *this.flag.task.lock().unwrap_or_else(|e| e.into_inner()) = Some(cx.waker().clone());
            this.flag.woken.store(true, Ordering::Release);
        }
        // Cleared before `inner` runs: a wake while it runs sets it again.
        if !this.flag.woken.swap(false, Ordering::AcqRel) {
            return Poll::Pending;
        }
        this.inner.poll(&mut Context::from_waker(this.own))
    }
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        if let Some(task) = &*self.task.lock().unwrap_or_else(|e| e.into_inner()) {
            task.wake_by_ref();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;
    use std::time::Duration;

    use super::*;

    /// Never ready; counts its polls.
    struct Counted {
        polls: Rc<Cell<usize>>,
    }

    impl Future for Counted {
        type Output = ();
        fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
            self.polls.set(self.polls.get() + 1);
            Poll::Pending
        }
    }

    struct Noop;
    impl Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }

    #[test]
    fn the_inner_future_is_polled_first_and_then_only_when_it_was_woken() {
        let polls = Rc::new(Cell::new(0));
        let mut gated = Box::pin(Gated::new(Counted {
            polls: Rc::clone(&polls),
        }));
        let task = Waker::from(Arc::new(Noop));
        let mut cx = Context::from_waker(&task);
        for _ in 0..5 {
            assert!(gated.as_mut().poll(&mut cx).is_pending());
        }
        assert_eq!(polls.get(), 1, "polled once, then left alone");
        gated.own.wake_by_ref();
        assert!(gated.as_mut().poll(&mut cx).is_pending());
        assert!(gated.as_mut().poll(&mut cx).is_pending());
        assert_eq!(polls.get(), 2, "polled again once after its own wake");
        // Polled from another task: polled at once, whatever the flag says.
        let other = Waker::from(Arc::new(Noop));
        assert!(
            gated
                .as_mut()
                .poll(&mut Context::from_waker(&other))
                .is_pending()
        );
        assert_eq!(polls.get(), 3);
    }

    /// With nothing else in the task to wake it, the gate's own waker must: a timer behind
    /// the gate ends the wait when it fires, not when the next thing happens to wake the task.
    #[tokio::test(start_paused = true)]
    async fn the_gate_alone_wakes_its_task() {
        let start = tokio::time::Instant::now();
        let gated = Gated::new(tokio::time::sleep(Duration::from_secs(5)));
        let woke = tokio::time::timeout(Duration::from_secs(60), gated).await;
        assert!(woke.is_ok());
        assert_eq!(start.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn a_timer_and_a_watch_behind_the_gate_still_fire_in_a_busy_select() {
        let (tx, mut rx) = tokio::sync::watch::channel(false);
        let sleep = Gated::new(tokio::time::sleep(Duration::from_millis(5050)));
        let stop = Gated::new(async move {
            let _ = rx.wait_for(|stop| *stop).await;
        });
        let (mut sleep, mut stop) = (Box::pin(sleep), Box::pin(stop));
        let mut ticks = 0;
        let woke = loop {
            // Another branch wakes the task every 100 ms, as a socket would.
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(100)) => ticks += 1,
                () = &mut sleep => break "sleep",
                () = &mut stop => break "stop",
            }
            if ticks == 20 {
                tx.send(true).unwrap();
            }
            if ticks > 100 {
                break "neither";
            }
        };
        assert_eq!((woke, ticks), ("stop", 20));
        let woke = loop {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(100)) => ticks += 1,
                () = &mut sleep => break "sleep",
            }
            if ticks > 100 {
                break "neither";
            }
        };
        assert_eq!((woke, ticks), ("sleep", 50));
    }
}
