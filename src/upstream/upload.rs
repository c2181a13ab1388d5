//! A client's body on its way through hyper's client (TLS and HTTP/2 upstreams), its failure
//! noted.
//!
//! hyper's HTTP/2 client tells a request whose body failed as a stream it reset itself, and
//! the body's own error is not in what it returns; its HTTP/1.1 client keeps that error as
//! the cause. Noted here as the body fails, the client's fault (a body that stalled past
//! `limits.body_timeout`, broke off, was malformed, or went over the route's limit) is
//! reported as its own (408, 400, 413), not as an unreachable upstream (502). Only a request
//! with a body is noted (one `Arc` more for it); lingo's own client reads its body itself
//! and needs none of this.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use hyper::Request;
use pin_project_lite::pin_project;

use crate::error::ProxyError;
use crate::http::body::{Body, BoxError};

/// What a request's body failed with, as the client is told it.
#[derive(Clone, Default)]
pub struct Failure(Arc<Mutex<Option<ProxyError>>>);

pin_project! {
    /// A body whose failure is noted in its [`Failure`].
    struct Noted {
        #[pin]
        body: Body,
        failure: Failure,
        limit: u64,
    }
}

/// `req` with its body noted, when it has one, and where its failure will be (`limit`: the
/// route's body limit, which a 413 names).
pub fn noted(req: Request<Body>, limit: u64) -> (Request<Body>, Option<Failure>) {
    if http_body::Body::is_end_stream(req.body()) {
        return (req, None);
    }
    let failure = Failure::default();
    let noting = failure.clone();
    let req = req.map(|body| {
        Body::new(Noted {
            body,
            failure: noting,
            limit,
        })
    });
    (req, Some(failure))
}

impl Failure {
    /// The client's fault, when its body failed: that is the response, whatever the sending
    /// made of it.
    pub fn client_error(&self) -> Option<ProxyError> {
        self.0.lock().ok()?.take()
    }
}

impl http_body::Body for Noted {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.project();
        let polled = this.body.poll_frame(cx);
        if let Poll::Ready(Some(Err(err))) = &polled
            && let Ok(mut failure) = this.failure.0.lock()
        {
            *failure = Some(super::client_body(err.as_ref(), *this.limit));
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
