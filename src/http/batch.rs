//! Letting the frames that are already on their way go out in one write.
//!
//! hyper writes (and so makes a system call) whenever the answer's body says `Pending`. An
//! upstream's answer reaches lingo's side through hyper's body channel one frame at a time,
//! each handed over only once the previous one was taken, so a streamed answer would cost
//! one write per token even when the upstream sent many at once. [`Batch`] keeps the frames
//! it gets, stepping aside after each ([`STEPS`] deferred wakes: every task already runnable, the
//! upstream connection's included, runs first), and hands them on as one frame (their bytes
//! joined, at most [`MAX_JOINED`]) once stepping aside brought nothing new: hyper writes them
//! together, in one chunk. [`Batch::prime`] does the same before the answer's head is handed
//! to hyper, so that the head leaves with the first frames rather than alone (hyper writes the
//! head by itself when the body's first poll is `Pending`). A frame waits for those steps
//! only, never for more data to come: every token still leaves as soon as it arrived.

use std::collections::VecDeque;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body::{Frame, SizeHint};
use pin_project_lite::pin_project;

use crate::http::body::BoxError;

/// The most frames kept for one write.
const MAX_FRAMES: usize = 64;

/// The most bytes kept, and joined into one frame: what a connection holds stays small, and
/// a large body's frames (already large) are handed on as they are.
const MAX_JOINED: usize = 16 * 1024;

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
        // Stepped aside before handing on an error (see `poll_frame`).
        flushed: bool,
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
            flushed: false,
        }
    }
}

impl<B> Batch<B>
where
    B: http_body::Body<Data = Bytes, Error = BoxError>,
{
    /// Takes the frames that arrive while this task steps aside [`STEPS`] times, before the
    /// answer's head goes to hyper: the head then leaves in the same write as they do. With
    /// nothing arriving, the head goes alone, as late as [`STEPS`] deferred wakes.
    pub async fn prime(self: Pin<&mut Self>) {
        let mut this = self.project();
        let mut steps = 0;
        poll_fn(|cx| {
            loop {
                match this.inner.as_mut().poll_frame(cx) {
                    Poll::Ready(Some(Ok(frame))) => {
                        this.kept.push_back(frame);
                        steps = 0;
                        if !full(this.kept) {
                            continue;
                        }
                    }
                    Poll::Ready(end) => *this.end = Some(end),
                    Poll::Pending if steps < STEPS => {
                        steps += 1;
                        step_aside(cx);
                        return Poll::Pending;
                    }
                    Poll::Pending => {}
                }
                *this.handing = true;
                return Poll::Ready(());
            }
        })
        .await;
    }
}

/// Whether no more frames should be kept before handing them on.
fn full(kept: &VecDeque<Frame<Bytes>>) -> bool {
    let bytes = || kept.iter().filter_map(Frame::data_ref).map(Bytes::len);
    kept.len() >= MAX_FRAMES || bytes().sum::<usize>() >= MAX_JOINED
}

/// Asks the runtime to poll this task again after every task that is runnable now.
fn step_aside(cx: &mut Context<'_>) {
    let _ = pin!(tokio::task::yield_now()).poll(cx);
}

/// The first kept frame, joined with the data frames after it (up to [`MAX_JOINED`] bytes
/// in all): one chunk for hyper to write instead of many.
fn join_front(kept: &mut VecDeque<Frame<Bytes>>) -> Option<Frame<Bytes>> {
    let (mut count, mut len) = (0, 0);
    for data in kept.iter().map_while(Frame::data_ref) {
        if count > 0 && len + data.len() > MAX_JOINED {
            break;
        }
        (count, len) = (count + 1, len + data.len());
    }
    if count < 2 {
        return kept.pop_front();
    }
    let mut joined = BytesMut::with_capacity(len);
    for frame in kept.drain(..count) {
        if let Some(data) = frame.data_ref() {
            joined.extend_from_slice(data);
        }
    }
    Some(Frame::data(joined.freeze()))
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
            if let Some(frame) = join_front(this.kept) {
                return Poll::Ready(Some(Ok(frame)));
            }
            // hyper drops what it buffered when the body fails: step aside once, so that
            // it writes the head and the frames handed on before it sees the error.
            if matches!(this.end, Some(Some(Err(_)))) && !*this.flushed {
                *this.flushed = true;
                step_aside(cx);
                return Poll::Pending;
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
                    if !full(this.kept) {
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
            return Poll::Ready(join_front(this.kept).map(Ok));
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

    /// Frames sent before the head are taken by `prime` and handed on as one frame, with
    /// the end after it; the size hint still counts them (hyper's `Content-Length`).
    #[tokio::test]
    async fn prime_takes_what_was_sent_and_joins_it() {
        let (mut tx, rx) = Channel::<Bytes, BoxError>::new(8);
        for n in 0..5 {
            tx.send_data(Bytes::from(format!("{n}"))).await.unwrap();
        }
        drop(tx);
        let mut body = Batch::new(rx);
        Pin::new(&mut body).prime().await;
        assert_eq!(body.kept.len(), 5);
        assert_eq!(body.size_hint().lower(), 5);
        let first = body.frame().await.unwrap().unwrap();
        assert_eq!(first.into_data().unwrap(), "01234");
        assert!(body.frame().await.is_none());
    }

    /// With nothing sent, `prime` returns after stepping aside (the head is not held back
    /// for a frame that has not arrived), and a frame sent later still comes through.
    #[tokio::test]
    async fn prime_does_not_wait_for_a_first_frame() {
        let (mut tx, rx) = Channel::<Bytes, BoxError>::new(8);
        let mut body = Batch::new(rx);
        tokio::time::timeout(
            std::time::Duration::from_secs(10),
            Pin::new(&mut body).prime(),
        )
        .await
        .expect("prime returns although nothing was sent");
        assert!(body.kept.is_empty());
        tx.send_data(Bytes::from_static(b"late")).await.unwrap();
        drop(tx);
        let late = body.frame().await.unwrap().unwrap();
        assert_eq!(late.into_data().unwrap(), "late");
    }

    /// Joining stops at `MAX_JOINED` bytes and at a frame that is not data (trailers stay
    /// a frame of their own, last).
    #[test]
    fn join_front_is_bounded_and_keeps_trailers_apart() {
        let big = Bytes::from(vec![b'x'; MAX_JOINED - 2]);
        let mut kept: VecDeque<Frame<Bytes>> = [
            Frame::data(Bytes::from_static(b"a")),
            Frame::data(big.clone()),
            Frame::data(Bytes::from_static(b"bc")),
            Frame::data(Bytes::from_static(b"d")),
            Frame::trailers(hyper::HeaderMap::new()),
        ]
        .into();
        let first = join_front(&mut kept).unwrap().into_data().unwrap();
        assert_eq!(first.len(), MAX_JOINED - 1, "a and the big frame, not bc");
        let second = join_front(&mut kept).unwrap().into_data().unwrap();
        assert_eq!(second, "bcd");
        assert!(join_front(&mut kept).unwrap().is_trailers());
        assert!(join_front(&mut kept).is_none());
    }

    /// A frame larger than `MAX_JOINED` on its own is handed on as it is, not copied.
    #[test]
    fn a_large_frame_is_not_copied() {
        let big = Bytes::from(vec![b'y'; MAX_JOINED + 1]);
        let mut kept: VecDeque<Frame<Bytes>> = [
            Frame::data(big.clone()),
            Frame::data(Bytes::from_static(b"z")),
        ]
        .into();
        let first = join_front(&mut kept).unwrap().into_data().unwrap();
        assert_eq!(first.as_ptr(), big.as_ptr());
        assert_eq!(kept.len(), 1);
    }

    /// Keeping stops at `MAX_JOINED` bytes: a large body is not held in memory.
    #[test]
    fn full_counts_frames_and_bytes() {
        let mut kept = VecDeque::new();
        assert!(!full(&kept));
        kept.push_back(Frame::data(Bytes::from(vec![0; MAX_JOINED - 1])));
        assert!(!full(&kept));
        kept.push_back(Frame::data(Bytes::from_static(b"1")));
        assert!(full(&kept));
        let small: VecDeque<_> = (0..MAX_FRAMES).map(|_| Frame::data(Bytes::new())).collect();
        assert!(full(&small));
        assert!(!full(&small.into_iter().skip(1).collect()));
    }
}
