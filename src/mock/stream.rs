//! The mock's streamed response: NDJSON lines (or SSE frames) made one at a time, paced by the
//! knobs.
//!
//! Lines are built when they are due, not up front, so ten thousand slow streams cost a few
//! hundred bytes each, and a token delay is a timer, not a sleeping task.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::Frame;
use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep, sleep};

use crate::http::body::BoxError;

/// What a stream says, line by line.
pub trait Script: Send + 'static {
    /// The line for token `i` (0-based), newline included.
    fn token(&mut self, i: u32) -> Bytes;
    /// The closing `done: true` line, newline included.
    fn done(&mut self) -> Bytes;
    /// How many token lines come before the closing line.
    fn len(&self) -> u32;
    /// The error that ends the stream after `n` tokens (`error_after`): a native
    /// `{"error": ...}` line unless the dialect says otherwise.
    fn error(&mut self, n: u32) -> Bytes {
        Bytes::from(format!("{{\"error\":\"mock error after {n} tokens\"}}\n"))
    }
}

/// How the stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The closing line, then the end of the body.
    Done,
    /// A native `{"error": ...}` line after this many tokens.
    ErrorAfter(u32),
    /// The connection is cut after this many tokens.
    CutAfter(u32),
}

#[derive(Debug, thiserror::Error)]
#[error("mock backend cut the stream (cut_after)")]
pub struct Cut;

pin_project! {
    pub struct Drip<S> {
        script: S,
        next: u32,
        ending: Ending,
        delay: Duration,
        finished: bool,
        cut_pending: bool,
        #[pin]
        sleep: Sleep,
    }
}

// === impl Drip ===

impl<S: Script> Drip<S> {
    pub fn new(script: S, delay: Duration, ending: Ending) -> Self {
        Drip {
            script,
            next: 0,
            ending,
            delay,
            finished: false,
            cut_pending: false,
            // The first token is due at once: the first-token delay is spent before the head.
            sleep: sleep(Duration::ZERO),
        }
    }
}

impl<S: Script> http_body::Body for Drip<S> {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let mut this = self.project();
        if *this.finished {
            return Poll::Ready(None);
        }
        let i = *this.next;
        match *this.ending {
            Ending::ErrorAfter(n) if i == n => {
                *this.finished = true;
                return Poll::Ready(Some(Ok(Frame::data(this.script.error(n)))));
            }
            Ending::CutAfter(n) if i == n => {
                // Yield once first: hyper flushes what it has written when a body is
                // pending, so the tokens before the cut really reach the wire.
                if !*this.cut_pending {
                    *this.cut_pending = true;
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                *this.finished = true;
                return Poll::Ready(Some(Err(Cut.into())));
            }
            _ => {}
        }
        if i >= this.script.len() {
            *this.finished = true;
            return Poll::Ready(Some(Ok(Frame::data(this.script.done()))));
        }
        // A zero delay skips the timer, whose tick would otherwise pace tokens at 1 ms.
        if i > 0 && !this.delay.is_zero() {
            ready!(this.sleep.as_mut().poll(cx));
        }
        *this.next += 1;
        if !this.delay.is_zero() {
            this.sleep.as_mut().reset(Instant::now() + *this.delay);
        }
        Poll::Ready(Some(Ok(Frame::data(this.script.token(i)))))
    }

    fn is_end_stream(&self) -> bool {
        self.finished
    }
}
