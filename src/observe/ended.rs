//! Noticing how a response's body ends, once: the one job of the [`Ended`] wrapper.
//!
//! The [`Record`] (the access line and the request's metrics) is told when the body ends
//! cleanly, when it fails, or when it is dropped unfinished because the client went away.

use std::cell::Cell;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::Frame;
use pin_project_lite::pin_project;

use super::{AccessLog, Finish, Outcome};
use crate::base::clock;
use crate::http::body::BoxError;

/// What is written about one request when its response ends.
pub struct Record {
    log: AccessLog,
    finish: Option<Finish>,
}

pin_project! {
    /// Counts a response's bytes and tells its [`Record`] how it ended.
    pub struct Ended<B> {
        #[pin]
        inner: B,
        // `None` once told.
        record: Option<Record>,
        // Set when a reader learns from `is_end_stream` that the response is complete (hyper's
        // HTTP/2 writer, lingo's HTTP/1.1 one): it then stops polling, so the record is told,
        // `Complete`, on drop.
        ended: Cell<bool>,
    }

    impl<B> PinnedDrop for Ended<B> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            let outcome = if this.ended.get() {
                Outcome::Complete
            } else {
                Outcome::ClientClosed
            };
            if let Some(record) = this.record.take() {
                record.tell(outcome, None);
            }
        }
    }
}

// === impl Record ===

impl Record {
    /// A request's record; `finish` records its metrics (none for responses refused before
    /// the request was read).
    pub fn new(log: AccessLog, finish: Option<Finish>) -> Self {
        Record { log, finish }
    }

    /// Writes the access line and records the metrics. A stream that reported its own
    /// failure (a translated stream ends its body cleanly, with an error frame) is told as
    /// that failure; otherwise as `outcome`, which the body's end decided.
    fn tell(mut self, outcome: Outcome, error: Option<String>) {
        let (outcome, error) = match self.finish.as_ref().and_then(Finish::stream_failure) {
            Some((failed, reason)) => (failed, Some(reason)),
            None => (outcome, error),
        };
        if error.is_some() {
            self.log.error = error;
        }
        clock::fresh(); // the end of lingo's work: the log's duration and the metrics'
        self.log.emit(outcome);
        if let Some(finish) = self.finish.take() {
            finish.done(&self.log, outcome);
        }
    }
}

// === impl Ended ===

impl<B> Ended<B> {
    pub fn new(inner: B, record: Record) -> Self {
        Ended {
            inner,
            record: Some(record),
            ended: Cell::new(false),
        }
    }
}

impl<B> http_body::Body for Ended<B>
where
    B: http_body::Body<Data = Bytes, Error = BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.project();
        let polled = this.inner.poll_frame(cx);
        let finished = match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(record), Some(data)) = (this.record.as_mut(), frame.data_ref()) {
                    record.log.bytes += data.len() as u64;
                }
                None
            }
            Poll::Ready(Some(Err(err))) => {
                Some((Outcome::of_error(err.as_ref()), Some(err.to_string())))
            }
            Poll::Ready(None) => Some((Outcome::Complete, None)),
            Poll::Pending => None,
        };
        if let Some((outcome, error)) = finished
            && let Some(record) = this.record.take()
        {
            record.tell(outcome, error);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        let ended = self.inner.is_end_stream();
        if ended {
            self.ended.set(true);
        }
        ended
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
