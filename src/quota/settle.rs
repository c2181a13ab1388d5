//! Settling a reservation when its answer ends: [`Settling`] reads the usage counts in the
//! answer's frames as they pass (for routes whose translator does not count them) and, once
//! the body is done with, settles with what the answer used, or refunds when it did not end
//! well. Settlement happens when the body is dropped, after its last byte was handed on.

use std::cell::Cell;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::Frame;
use pin_project_lite::pin_project;

use super::Reservation;
use super::cost::{UsageScan, Used};
use crate::base::dialect::Dialect;
use crate::http::body::{Body, BoxError};
use crate::observe::RequestStats;

pin_project! {
    /// An answer's body that settles its reservation when it is done with.
    pub struct Settling<B> {
        #[pin]
        inner: B,
        reservation: Option<Reservation>,
        stats: Arc<RequestStats>,
        scan: Option<UsageScan>,
        // The answer is a success (not an error response, which refunds).
        success: bool,
        // The body ended whole: polled to its end, or said so by `is_end_stream`.
        ended: Cell<bool>,
        failed: bool,
    }

    impl<B> PinnedDrop for Settling<B> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            let Some(reservation) = this.reservation.take() else {
                return;
            };
            let whole = this.ended.get() && !*this.failed && *this.success;
            let used = (whole && this.stats.failure().is_none())
                .then(|| used(this.stats, this.scan.as_ref()));
            reservation.settle(used);
        }
    }
}

/// `body` of an answer with `status` in `dialect`, settling `reservation` (when there is one)
/// as it ends.
pub fn settling(
    body: Body,
    reservation: Option<Reservation>,
    (status, dialect): (u16, Dialect),
    stats: &Arc<RequestStats>,
) -> Body {
    let Some(reservation) = reservation else {
        return body;
    };
    let scan = reservation.reads_answer().then(|| UsageScan::new(dialect));
    Body::boxed(Settling {
        inner: body,
        reservation: Some(reservation),
        stats: Arc::clone(stats),
        scan,
        success: status < 400,
        ended: Cell::new(false),
        failed: false,
    })
}

/// What the answer used: the translator's counts when it made them, else those read in it.
fn used(stats: &RequestStats, scan: Option<&UsageScan>) -> Used {
    let read = scan.map(UsageScan::used).unwrap_or_default();
    match stats.tokens() {
        (0, 0) => read,
        // A prompt of no tokens is a count the upstream left out (a cached prompt).
        (input, output) => Used {
            input_tokens: (input > 0).then_some(input),
            output_tokens: Some(output),
            credits: read.credits,
        },
    }
}

impl<B> http_body::Body for Settling<B>
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
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(scan), Some(data)) = (this.scan.as_mut(), frame.data_ref()) {
                    scan.frame(data);
                }
            }
            Poll::Ready(Some(Err(_))) => *this.failed = true,
            Poll::Ready(None) => this.ended.set(true),
            Poll::Pending => {}
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
