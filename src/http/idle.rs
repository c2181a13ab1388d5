//! The idle-between-chunks timeout, as a body wrapper with its own error type: around the
//! responses of hyper-util's client and of the mock upstream (`upstream::UpstreamClient::send`)
//! and a WebSocket handshake's response. lingo's own HTTP/1.1 client times the same limit, with
//! the same error, on its connection's timer (`upstream::h1::deadline`).
//!
//! A streamed response may legitimately take minutes in total, so there is no total timeout;
//! what is bounded is the silence between two frames. The error carries the configured
//! duration so the log line says which limit fired.
//!
//! A frame only notes the time: the timer is moved when it fires early (a frame came since it
//! was set), not on every frame: a timer that fires about once per `limit` of a stream's
//! life is not reset for each of its frames. And the timer is made only when the body first
//! has nothing to give: a whole response, whose frames are all there when asked, never makes
//! one (making and dropping it takes the runtime's handle, an atomic count each way).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::Frame;
use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep, sleep_until};

use crate::base::clock;
use crate::http::body::BoxError;

/// The upstream sent nothing for longer than the idle limit.
#[derive(Debug, thiserror::Error)]
#[error("upstream sent nothing for {}", crate::base::units::format_duration(*.0))]
pub struct IdleTimeout(pub Duration);

/// The client sent nothing of its request's body for longer than `limits.body_timeout`
/// (timed by lingo's HTTP/1.1 connection as it reads the body: `server::h1`).
#[derive(Debug, thiserror::Error)]
#[error("the client sent nothing of the request body for {}", crate::base::units::format_duration(*.0))]
pub struct BodyTimeout(pub Duration);

pin_project! {
    /// Fails the body with [`IdleTimeout`] when no frame arrives within `limit`.
    pub struct Idle<B> {
        #[pin]
        inner: B,
        #[pin]
        sleep: Option<Sleep>,
        limit: Duration,
        // When the last frame came (or the body began).
        last: Instant,
    }
}

// === impl Idle ===

impl<B> Idle<B> {
    pub fn new(inner: B, limit: Duration) -> Self {
        Idle {
            inner,
            sleep: None,
            limit,
            last: clock::now(),
        }
    }
}

impl<B> http_body::Body for Idle<B>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let mut this = self.project();
        if let Poll::Ready(frame) = this.inner.poll_frame(cx) {
            // Only a frame ends a silence (after the end or an error, nothing is awaited).
            if let Some(Ok(_)) = frame {
                *this.last = clock::now();
            }
            return Poll::Ready(frame.map(|r| r.map_err(Into::into)));
        }
        let due = *this.last + *this.limit;
        loop {
            match this.sleep.as_mut().as_pin_mut() {
                None => this.sleep.set(Some(sleep_until(due))),
                Some(mut sleep) => {
                    ready!(sleep.as_mut().poll(cx));
                    // Read fresh: the poll's reading may predate the timer's firing (see
                    // the test `a_timer_fired_after_the_polls_reading_times_out_in_that_poll`).
                    if due <= clock::fresh() {
                        return Poll::Ready(Some(Err(IdleTimeout(*this.limit).into())));
                    }
                    // Fired early: a frame came since the timer was set.
                    sleep.reset(due);
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body::Body as _;
    use http_body_util::BodyExt;
    use http_body_util::channel::Channel;

    #[tokio::test(start_paused = true)]
    async fn fires_after_silence_and_not_before() {
        let start = Instant::now();
        let (mut tx, rx) = Channel::<Bytes, BoxError>::new(4);
        let mut body = Box::pin(Idle::new(rx, Duration::from_secs(5)));
        tx.send_data(Bytes::from_static(b"a")).await.unwrap();
        let first = body.frame().await.unwrap().unwrap();
        assert_eq!(first.into_data().unwrap(), "a");
        // Frames at 4 s and 8 s: each silence is under the limit, though the timer first
        // set for 5 s fires between them.
        for (at, data) in [(4, "b"), (8, "c")] {
            let sender = async {
                tokio::time::sleep_until(start + Duration::from_secs(at)).await;
                tx.send_data(Bytes::from_static(data.as_bytes()))
                    .await
                    .unwrap();
            };
            let (frame, ()) = tokio::join!(body.frame(), sender);
            let frame = frame.unwrap().expect("a silence under the limit");
            assert_eq!(frame.into_data().unwrap(), data);
        }
        // A guard, not a threshold (the clock is paused): a timer that never fires fails.
        let waited = tokio::time::timeout(Duration::from_secs(60), body.frame()).await;
        let err = waited.expect("the idle timer fired").unwrap().unwrap_err();
        assert_eq!(err.to_string(), "upstream sent nothing for 5s");
        assert_eq!(
            start.elapsed(),
            Duration::from_secs(13),
            "5 s after the last frame"
        );
        drop(tx);
    }

    /// The timer is made at the first wait, but the silence counts from the body's start.
    #[tokio::test(start_paused = true)]
    async fn silence_counts_from_the_start_not_the_first_wait() {
        let start = Instant::now();
        let (tx, rx) = Channel::<Bytes, BoxError>::new(4);
        let mut body = Box::pin(Idle::new(rx, Duration::from_secs(5)));
        tokio::time::sleep(Duration::from_secs(3)).await;
        // A guard, not a threshold (the clock is paused): a timer that never fires fails.
        let waited = tokio::time::timeout(Duration::from_secs(60), body.frame()).await;
        let err = waited.expect("the idle timer fired").unwrap().unwrap_err();
        assert_eq!(err.to_string(), "upstream sent nothing for 5s");
        assert_eq!(start.elapsed(), Duration::from_secs(5));
        drop(tx);
    }

    /// On a runtime whose other threads drive the timers, the timer can fire after the
    /// poll's one reading of the clock (`base::clock`) was taken: the silence is then over
    /// its limit though that reading says not yet. Read again, it times out at once; judged
    /// by the old reading, it was set again for the same deadline, fired again at once, and
    /// so on until tokio's budget for the task ran out (128 times a poll).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_timer_fired_after_the_polls_reading_times_out_in_that_poll() {
        let limit = Duration::from_millis(20);
        let polled = clock::Ticking::new(std::future::poll_fn(|cx| {
            let _ = clock::now(); // the poll's reading, taken before the deadline
            let (_tx, rx) = Channel::<Bytes, BoxError>::new(1);
            let mut body = Box::pin(Idle::new(rx, limit));
            assert!(body.as_mut().poll_frame(cx).is_pending(), "silent so far");
            // Another worker fires the timer while this poll goes on: a probe set just
            // after it says when it has (a guard, not a threshold).
            let mut probe = Box::pin(sleep_until(clock::now() + limit * 2));
            let _ = probe.as_mut().poll(cx);
            let patience = std::time::Instant::now();
            while !probe.is_elapsed() {
                assert!(
                    patience.elapsed() < Duration::from_secs(10),
                    "no timer fired"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            Poll::Ready(body.as_mut().poll_frame(cx))
        }));
        let err = match polled.await {
            Poll::Ready(Some(Err(err))) => err,
            other => panic!(
                "timed out in the same poll, not {:?}",
                other.map(|f| f.is_some())
            ),
        };
        assert_eq!(err.to_string(), "upstream sent nothing for 20ms");
    }
}
