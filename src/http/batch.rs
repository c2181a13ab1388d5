//! Letting the frames that are already on their way go out in one write.
//!
//! hyper writes (and so makes a system call) whenever the answer's body says `Pending`. An
//! upstream's answer reaches lingo's side through hyper's body channel one frame at a time,
//! each handed over only once the previous one was taken, so a streamed answer would cost
//! one write per token even when the upstream sent many at once. [`Batch`] keeps the frames
//! it gets, stepping aside after each ([`STEPS`] deferred wakes: every task already runnable, the
//! upstream connection's included, runs first), and hands them all on, one after another
//! without a `Pending` in between, once stepping aside brought nothing new (or [`MAX_FRAMES`]
//! are kept): hyper buffers them and writes them together. A frame waits for those steps
//! only, never for more data to come: every token still leaves as soon as it arrived.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::{Pin, pin};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use pin_project_lite::pin_project;

use crate::http::body::BoxError;

/// The most frames kept for one write (hyper's write queue holds 16 buffers).
const MAX_FRAMES: usize = 16;

/// How many times to step aside before handing on what was kept. Measured: after one, hyper's
/// client connection task has not yet handed over the next frame it already holds; after
/// two, it has.
const STEPS: u8 = 2;

type Polled = Option<Result<Frame<Bytes>, BoxError>>;

pin_project! {
    /// See the module doc.
    pub struct Batch<B> {
        #[pin]
        inner: B,
        // Frames taken from `inner` and not handed on yet.
        kept: VecDeque<Frame<Bytes>>,
        // Handing `kept` on: no `Pending` until it is empty.
        handing: bool,
        // What `inner` ended with while frames were kept (it is not polled again after).
        end: Option<Polled>,
        // How many times this task has stepped aside since the last frame was kept.
        yielded: u8,
    }
}

impl<B> Batch<B> {
    pub fn new(inner: B) -> Self {
        Batch {
            inner,
            kept: VecDeque::new(),
            handing: false,
            end: None,
            yielded: 0,
        }
    }
}

/// Asks the runtime to poll this task again after every task that is runnable now.
fn step_aside(cx: &mut Context<'_>) {
    let _ = pin!(tokio::task::yield_now()).poll(cx);
}

impl<B> http_body::Body for Batch<B>
where
    B: http_body::Body<Data = Bytes, Error = BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Polled> {
        let mut this = self.project();
        if *this.handing {
            if let Some(frame) = this.kept.pop_front() {
                return Poll::Ready(Some(Ok(frame)));
            }
            *this.handing = false;
            if let Some(end) = this.end.take() {
                return Poll::Ready(end);
            }
        }
        loop {
            match this.inner.as_mut().poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    this.kept.push_back(frame);
                    *this.yielded = 0;
                    if this.kept.len() < MAX_FRAMES {
                        continue;
                    }
                }
                Poll::Ready(end) if this.kept.is_empty() => return Poll::Ready(end),
                Poll::Ready(end) => *this.end = Some(end),
                Poll::Pending if this.kept.is_empty() => return Poll::Pending,
                Poll::Pending if *this.yielded < STEPS => {
                    *this.yielded += 1;
                    step_aside(cx);
                    return Poll::Pending;
                }
                Poll::Pending => {}
            }
            *this.handing = true;
            return Poll::Ready(this.kept.pop_front().map(Ok));
        }
    }

    fn is_end_stream(&self) -> bool {
        self.kept.is_empty() && self.end.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let held: u64 = self
            .kept
            .iter()
            .filter_map(Frame::data_ref)
            .map(|d| d.len() as u64)
            .sum();
        let inner = self.inner.size_hint();
        let mut hint = SizeHint::new();
        hint.set_lower(inner.lower() + held);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + held);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body::Body as _;
    use http_body_util::BodyExt;
    use http_body_util::channel::Channel;

    /// Frames already sent come out together and in order; the end follows them.
    #[tokio::test]
    async fn hands_on_what_was_sent_in_order_then_the_end() {
        let (mut tx, rx) = Channel::<Bytes, BoxError>::new(8);
        for n in 0..5 {
            tx.send_data(Bytes::from(format!("{n}"))).await.unwrap();
        }
        drop(tx);
        let body = Batch::new(rx).collect().await.unwrap().to_bytes();
        assert_eq!(body, "01234");
    }

    /// A frame is handed on while the sender is still silent: nothing waits for more data.
    #[tokio::test]
    async fn a_lone_frame_is_not_held_for_more() {
        let (mut tx, rx) = Channel::<Bytes, BoxError>::new(8);
        let mut body = Box::pin(Batch::new(rx));
        tx.send_data(Bytes::from_static(b"a")).await.unwrap();
        let first = tokio::time::timeout(std::time::Duration::from_secs(10), body.frame())
            .await
            .expect("the frame leaves although no other follows")
            .unwrap()
            .unwrap();
        assert_eq!(first.into_data().unwrap(), "a");
        assert!(!body.is_end_stream());
        drop(tx);
    }

    /// An error after frames comes after them, not instead of them.
    #[tokio::test]
    async fn an_error_follows_the_frames_kept() {
        let (mut tx, rx) = Channel::<Bytes, BoxError>::new(8);
        tx.send_data(Bytes::from_static(b"a")).await.unwrap();
        tx.abort("cut".into());
        let mut body = Box::pin(Batch::new(rx));
        let first = body.frame().await.unwrap().unwrap();
        assert_eq!(first.into_data().unwrap(), "a");
        assert!(body.frame().await.unwrap().is_err());
    }
}
