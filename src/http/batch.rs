//! Letting the frames that are already on their way go out in one write.
//!
//! hyper writes (and so makes a system call) whenever the answer's body says `Pending`. An
//! upstream's answer reaches lingo's side through hyper's body channel one frame at a time,
//! each handed over only once the previous one was taken, so a streamed answer would cost
//! one write per token even when the upstream sent many at once. [`Batch`] keeps the frames
//! it gets, stepping aside after each (`STEPS` deferred wakes: every task already runnable, the
//! upstream connection's included, runs first), and hands them on as one frame (their bytes
//! joined, at most `MAX_JOINED`) once stepping aside brought nothing new: hyper writes them
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

/// Room made for kept frames at the first (see [`Kept::push`]).
const ROOM: usize = 16;

/// The most bytes kept, and joined into one frame: what a connection holds stays small, and
/// a large body's frames (already large) are handed on as they are.
pub(crate) const MAX_JOINED: usize = 16 * 1024;

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
        kept: Kept,
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
            kept: Kept::default(),
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
    /// Takes the frames that arrive while this task steps aside `STEPS` times, before the
    /// answer's head goes to hyper: the head then leaves in the same write as they do. With
    /// nothing arriving, the head goes alone, as late as `STEPS` deferred wakes.
    pub async fn prime(self: Pin<&mut Self>) {
        let mut this = self.project();
        let mut steps = 0;
        poll_fn(|cx| {
            loop {
                match this.inner.as_mut().poll_frame(cx) {
                    Poll::Ready(Some(Ok(frame))) => {
                        this.kept.push(frame);
                        steps = 0;
                        if !this.kept.full() && !this.inner.is_end_stream() {
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

/// The frames kept, and how many data bytes they hold.
#[derive(Default)]
struct Kept {
    /// The one frame kept when it is the only one (a whole answer's body): no room made.
    lone: Option<Frame<Bytes>>,
    /// The frames kept when there are more (`lone` is then `None`).
    frames: VecDeque<Frame<Bytes>>,
    bytes: usize,
}

impl Kept {
    /// A lone frame is kept without room made for more (making and freeing it was 1% of a
    /// whole answer's instructions). Room for [`ROOM`] frames is made at once rather than by
    /// doubling from four (the growth was 1% of a streamed answer's instructions), and given
    /// back when the frames have been handed on, so that a stream waiting for its next token
    /// holds none.
    fn push(&mut self, frame: Frame<Bytes>) {
        self.bytes += frame.data_ref().map_or(0, Bytes::len);
        if self.is_empty() {
            self.lone = Some(frame);
            return;
        }
        if self.frames.capacity() == 0 {
            self.frames.reserve(ROOM);
        }
        self.frames.extend(self.lone.take());
        self.frames.push_back(frame);
    }

    fn is_empty(&self) -> bool {
        self.lone.is_none() && self.frames.is_empty()
    }

    fn len(&self) -> usize {
        usize::from(self.lone.is_some()) + self.frames.len()
    }

    /// Whether no more frames should be kept before handing them on.
    fn full(&self) -> bool {
        self.len() >= MAX_FRAMES || self.bytes >= MAX_JOINED
    }

    /// The first kept frame, joined with the data frames after it (up to [`MAX_JOINED`]
    /// bytes in all): one chunk for hyper to write instead of many.
    fn join_front(&mut self) -> Option<Frame<Bytes>> {
        if let Some(lone) = self.lone.take() {
            self.bytes -= lone.data_ref().map_or(0, Bytes::len);
            return Some(lone);
        }
        let data = self.frames.iter().map_while(Frame::data_ref);
        let (count, mut len) = joinable(data.map(Bytes::len));
        let front = if count < 2 {
            let front = self.frames.pop_front()?;
            len = front.data_ref().map_or(0, Bytes::len);
            front
        } else {
            let mut joined = BytesMut::with_capacity(len);
            for frame in self.frames.drain(..count) {
                if let Some(data) = frame.data_ref() {
                    joined.extend_from_slice(data);
                }
            }
            Frame::data(joined.freeze())
        };
        self.bytes -= len;
        if self.frames.is_empty() {
            self.frames = VecDeque::new();
        }
        Some(front)
    }
}

/// How many of the frames of `lens` (front first) make one frame of at most [`MAX_JOINED`]
/// bytes (the first always counts, however large), and their bytes: what both the batch and
/// a re-framed stream join.
pub(crate) fn joinable(lens: impl Iterator<Item = usize>) -> (usize, usize) {
    let (mut count, mut len) = (0, 0);
    for next in lens {
        if count > 0 && len + next > MAX_JOINED {
            break;
        }
        (count, len) = (count + 1, len + next);
    }
    (count, len)
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
            if let Some(frame) = this.kept.join_front() {
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
                    this.kept.push(frame);
                    *this.yielded = 0;
                    // A body that says it has ended is not polled for its end: what its end
                    // sets off (its record, its upstream connection put back) then happens
                    // when it is dropped, after its last bytes are written.
                    if !this.kept.full() && !this.inner.is_end_stream() {
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
            return Poll::Ready(this.kept.join_front().map(Ok));
        }
    }

    fn is_end_stream(&self) -> bool {
        self.kept.is_empty() && self.end.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let held = self.kept.bytes as u64;
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

    /// A body that says it has ended once its frame is taken is not polled for its end,
    /// primed or not: its end's work (an answer's record, its upstream connection put back)
    /// is left to its drop, after its bytes are written. The batch then says it has ended.
    #[tokio::test]
    async fn a_body_is_not_polled_for_an_end_it_told() {
        use crate::http::body::Told;
        for primed in [true, false] {
            let (told, dropped) = Told::new("all");
            let mut body = Box::pin(Batch::new(told));
            if primed {
                body.as_mut().prime().await;
            }
            let frame = body.frame().await.unwrap().unwrap();
            assert_eq!(frame.into_data().unwrap(), "all");
            assert!(body.is_end_stream(), "primed: {primed}");
            drop(body);
            assert!(dropped.load(std::sync::atomic::Ordering::SeqCst));
        }
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

    fn kept(frames: impl IntoIterator<Item = Frame<Bytes>>) -> Kept {
        let mut kept = Kept::default();
        frames.into_iter().for_each(|frame| kept.push(frame));
        kept
    }

    /// Joining stops at `MAX_JOINED` bytes and at a frame that is not data (trailers stay
    /// a frame of their own, last); the byte count follows, and the room is given back.
    #[test]
    fn join_front_is_bounded_and_keeps_trailers_apart() {
        let big = Bytes::from(vec![b'x'; MAX_JOINED - 2]);
        let mut kept = kept([
            Frame::data(Bytes::from_static(b"a")),
            Frame::data(big.clone()),
            Frame::data(Bytes::from_static(b"bc")),
            Frame::data(Bytes::from_static(b"d")),
            Frame::trailers(hyper::HeaderMap::new()),
        ]);
        assert_eq!(kept.bytes, MAX_JOINED + 2);
        let first = kept.join_front().unwrap().into_data().unwrap();
        assert_eq!(first.len(), MAX_JOINED - 1, "a and the big frame, not bc");
        assert_eq!(kept.bytes, 3);
        let second = kept.join_front().unwrap().into_data().unwrap();
        assert_eq!(second, "bcd");
        assert_eq!(kept.bytes, 0);
        assert!(kept.join_front().unwrap().is_trailers());
        assert!(kept.join_front().is_none());
        assert_eq!(kept.frames.capacity(), 0, "an empty keep holds no room");
    }

    /// A lone frame (a whole answer's body) is kept and handed on without room made for
    /// more; a second one moves it into the room, in order.
    #[test]
    fn a_lone_frame_takes_no_room() {
        let mut kept = kept([Frame::data(Bytes::from_static(b"a"))]);
        assert_eq!((kept.len(), kept.bytes, kept.frames.capacity()), (1, 1, 0));
        assert_eq!(kept.join_front().unwrap().into_data().unwrap(), "a");
        assert!(kept.is_empty() && kept.bytes == 0);
        kept.push(Frame::data(Bytes::from_static(b"b")));
        kept.push(Frame::data(Bytes::from_static(b"c")));
        assert_eq!((kept.len(), kept.bytes), (2, 2));
        assert_eq!(kept.join_front().unwrap().into_data().unwrap(), "bc");
        assert!(kept.join_front().is_none());
    }

    /// A frame larger than `MAX_JOINED` on its own is handed on as it is, not copied.
    #[test]
    fn a_large_frame_is_not_copied() {
        let big = Bytes::from(vec![b'y'; MAX_JOINED + 1]);
        let mut kept = kept([
            Frame::data(big.clone()),
            Frame::data(Bytes::from_static(b"z")),
        ]);
        let first = kept.join_front().unwrap().into_data().unwrap();
        assert_eq!(first.as_ptr(), big.as_ptr());
        assert_eq!((kept.len(), kept.bytes), (1, 1));
    }

    /// Keeping stops at `MAX_JOINED` bytes: a large body is not held in memory.
    #[test]
    fn full_counts_frames_and_bytes() {
        let mut kept = Kept::default();
        assert!(!kept.full());
        kept.push(Frame::data(Bytes::from(vec![0; MAX_JOINED - 1])));
        assert!(!kept.full());
        kept.push(Frame::data(Bytes::from_static(b"1")));
        assert!(kept.full());
        let small = || (0..MAX_FRAMES).map(|_| Frame::data(Bytes::new()));
        assert!(self::kept(small()).full());
        assert!(!self::kept(small().skip(1)).full());
    }
}
