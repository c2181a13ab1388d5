//! `Body`: the one body type lingo's handlers return and send upstream.
//!
//! A boxed body keeps the service's types simple while each transformation (idle timeout,
//! access-log accounting, ...) stays its own small `pin_project!` wrapper.

use std::collections::VecDeque;
use std::pin::{Pin, pin};
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body::{Body as _, Frame, SizeHint};
use http_body_util::{BodyExt, Full, Limited};
use pin_project_lite::pin_project;

use crate::base::pinned;

/// Errors carried through bodies.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A boxed body of `Bytes` frames.
pub struct Body(Pin<Box<dyn http_body::Body<Data = Bytes, Error = BoxError> + Send>>);

// === impl Body ===

impl Body {
    pub fn new<B>(body: B) -> Self
    where
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        Body::boxed(body.map_err(Into::into))
    }

    /// A body whose errors are already [`BoxError`]s, boxed without the error-mapping layer
    /// that [`Body::new`] adds (one more call, and a move of every frame, per frame).
    pub fn boxed<B>(body: B) -> Self
    where
        B: http_body::Body<Data = Bytes, Error = BoxError> + Send + 'static,
    {
        Body(Box::pin(body))
    }

    /// [`Body::boxed`] for a body built in its box (`base::pinned`): what `make` takes in is
    /// moved in once, and the body is never moved.
    pub fn built<B>(make: impl FnOnce() -> B) -> Self
    where
        B: http_body::Body<Data = Bytes, Error = BoxError> + Send + 'static,
    {
        Body(pinned::boxed(make))
    }

    /// Allocates nothing (its box holds a value of no size): a request's body is taken out
    /// of it (`mem::take`, leaving this) on every native call that may name an alias.
    pub fn empty() -> Self {
        Body(Box::pin(Nothing))
    }

    pub fn full(bytes: impl Into<Bytes>) -> Self {
        Body::new(Full::new(bytes.into()))
    }

    /// A body made of several pieces sent one after another, with an exact size hint (so
    /// hyper sends a `Content-Length`). Used to splice rewritten values into a response
    /// without copying the rest of it.
    pub fn pieces(pieces: Vec<Bytes>) -> Self {
        Body::new(Pieces(pieces.into()))
    }
}

/// Reads a body's data to its end, at most `limit` bytes (past it, `Limited`'s
/// `LengthLimitError`). A body of one data frame, as most are, comes back as that frame,
/// where `collect` would first list every frame in a queue it allocates.
pub async fn read_all<B>(body: B, limit: usize) -> Result<Bytes, BoxError>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let mut body = pin!(Limited::new(body, limit));
    let mut first = Bytes::new();
    let mut joined: Option<BytesMut> = None;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else {
            continue; // trailers: not part of the data
        };
        match &mut joined {
            Some(joined) => joined.extend_from_slice(&data),
            None if first.is_empty() => first = data,
            None => {
                let mut both = BytesMut::with_capacity(first.len() + data.len());
                both.extend_from_slice(&first);
                both.extend_from_slice(&data);
                joined = Some(both);
            }
        }
        // A body that says it has ended is not polled for its end: a poll more through
        // each of its layers, for nothing.
        if body.is_end_stream() {
            break;
        }
    }
    Ok(joined.map_or(first, BytesMut::freeze))
}

impl Default for Body {
    fn default() -> Self {
        Body::empty()
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.0.as_mut().poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.0.size_hint()
    }
}

/// See [`Body::empty`]: a body of no size, whose box allocates nothing.
struct Nothing;

impl http_body::Body for Nothing {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        true
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(0)
    }
}

/// See [`Body::pieces`].
struct Pieces(VecDeque<Bytes>);

impl http_body::Body for Pieces {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Poll::Ready(self.0.pop_front().map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.0.iter().map(|b| b.len() as u64).sum())
    }
}

pin_project! {
    /// `head`, then everything `inner` sends: hands on a body whose start was already read.
    pub struct Prepend<B> {
        head: Option<Bytes>,
        #[pin]
        inner: B,
    }
}

impl<B> Prepend<B> {
    pub fn new(head: Bytes, inner: B) -> Self {
        Prepend {
            head: Some(head),
            inner,
        }
    }
}

impl<B: http_body::Body<Data = Bytes>> http_body::Body for Prepend<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.project();
        match this.head.take() {
            Some(head) => Poll::Ready(Some(Ok(Frame::data(head)))),
            None => this.inner.poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.head.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        let head = self.head.as_ref().map_or(0, |h| h.len() as u64);
        let inner = self.inner.size_hint();
        let mut hint = http_body::SizeHint::new();
        hint.set_lower(inner.lower() + head);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + head);
        }
        hint
    }
}

/// A body of one data frame that says it has ended once the frame is taken, fails the test if
/// it is polled after that, and tells when it is dropped: for the readers that must not poll
/// a body for an end it has told them (`read_all`, the HTTP/1.1 response writer, the upload).
#[cfg(test)]
pub(crate) struct SingleFrameBody {
    data: Option<Bytes>,
    dropped: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Whether its size hint is exact (else unknown: an HTTP/1.1 response goes chunked).
    sized: bool,
}

#[cfg(test)]
impl SingleFrameBody {
    /// The body, and whether it has been dropped.
    pub fn new(
        data: &'static str,
    ) -> (
        SingleFrameBody,
        std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) {
        let dropped = std::sync::Arc::default();
        let data = Some(Bytes::from_static(data.as_bytes()));
        let single = SingleFrameBody {
            data,
            dropped: std::sync::Arc::clone(&dropped),
            sized: true,
        };
        (single, dropped)
    }

    /// The same body, of a size it does not tell.
    pub fn of_unknown_size(mut self) -> SingleFrameBody {
        self.sized = false;
        self
    }
}

#[cfg(test)]
impl http_body::Body for SingleFrameBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let data = self.get_mut().data.take();
        let data = data.expect("polled after it said it had ended");
        Poll::Ready(Some(Ok(Frame::data(data))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        match self.sized {
            true => SizeHint::with_exact(self.data.as_ref().map_or(0, |d| d.len() as u64)),
            false => SizeHint::default(),
        }
    }
}

#[cfg(test)]
impl Drop for SingleFrameBody {
    fn drop(&mut self) {
        self.dropped
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use http_body::Body as _;
    use http_body_util::channel::Channel;

    use super::*;

    /// A body that says it has ended after its frame is read without a poll for its end.
    #[tokio::test]
    async fn read_all_does_not_poll_a_body_for_an_end_it_told() {
        let (single, _) = SingleFrameBody::new("all of it");
        assert_eq!(read_all(single, 100).await.unwrap(), "all of it");
        let (single, _) = SingleFrameBody::new("all of it");
        let boxed = Body::boxed(single);
        assert_eq!(read_all(boxed, 100).await.unwrap(), "all of it");
    }

    /// A body of these data frames, then trailers if asked.
    async fn body(parts: &[Bytes], trailers: bool) -> Channel<Bytes, BoxError> {
        let (mut tx, rx) = Channel::<Bytes, BoxError>::new(8);
        for part in parts {
            tx.send_data(part.clone()).await.unwrap();
        }
        if trailers {
            tx.send_trailers(hyper::HeaderMap::new()).await.unwrap();
        }
        rx
    }

    /// An empty body ends at once, and says so before it is polled (a head then says
    /// `Content-Length: 0`).
    #[tokio::test]
    async fn an_empty_body_ends_at_once() {
        let mut empty = Body::empty();
        assert!(empty.is_end_stream());
        assert_eq!(empty.size_hint().exact(), Some(0));
        assert!(empty.frame().await.is_none());
        assert!(Body::default().is_end_stream());
    }

    #[tokio::test]
    async fn read_all_joins_the_data_and_hands_one_frame_back_as_it_is() {
        let one = Bytes::from_static(b"{\"model\":\"m\"}");
        let read = read_all(body(std::slice::from_ref(&one), true).await, 100)
            .await
            .unwrap();
        assert_eq!((read.as_ptr(), read.len()), (one.as_ptr(), one.len()));
        let parts = ["a", "", "bc", "d"].map(|s| Bytes::from_static(s.as_bytes()));
        let read = read_all(body(&parts, true).await, 100).await.unwrap();
        assert_eq!(read, "abcd");
        assert_eq!(read_all(body(&[], false).await, 100).await.unwrap(), "");
        let over = read_all(body(&parts, false).await, 3).await.unwrap_err();
        assert!(over.is::<http_body_util::LengthLimitError>(), "{over}");
    }
}
