//! The idle-between-chunks timeout, as a body wrapper with its own error type.
//!
//! A streamed answer may legitimately take minutes in total, so there is no total timeout;
//! what is bounded is the silence between two frames. The error carries the configured
//! duration so the log line says which limit fired.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::Frame;
use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep, sleep};

use crate::http::body::BoxError;

/// The upstream sent nothing for longer than the idle limit.
#[derive(Debug, thiserror::Error)]
#[error("upstream sent nothing for {}", crate::base::units::format_duration(*.0))]
pub struct IdleTimeout(pub Duration);

pin_project! {
    /// Fails the body with [`IdleTimeout`] when no frame arrives within `limit`.
    pub struct Idle<B> {
        #[pin]
        inner: B,
        #[pin]
        sleep: Sleep,
        limit: Duration,
    }
}

// === impl Idle ===

impl<B> Idle<B> {
    pub fn new(inner: B, limit: Duration) -> Self {
        Idle {
            inner,
            sleep: sleep(limit),
            limit,
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
        let this = self.project();
        if let Poll::Ready(frame) = this.inner.poll_frame(cx) {
            this.sleep.reset(Instant::now() + *this.limit);
            return Poll::Ready(frame.map(|r| r.map_err(Into::into)));
        }
        ready!(this.sleep.poll(cx));
        Poll::Ready(Some(Err(IdleTimeout(*this.limit).into())))
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
    use http_body_util::BodyExt;
    use http_body_util::channel::Channel;

    #[tokio::test(start_paused = true)]
    async fn fires_after_silence_and_not_before() {
        let (mut tx, rx) = Channel::<Bytes, BoxError>::new(4);
        let mut body = Box::pin(Idle::new(rx, Duration::from_secs(5)));
        tx.send_data(Bytes::from_static(b"a")).await.unwrap();
        let first = body.frame().await.unwrap().unwrap();
        assert_eq!(first.into_data().unwrap(), "a");
        tokio::time::advance(Duration::from_secs(4)).await;
        tx.send_data(Bytes::from_static(b"b")).await.unwrap();
        assert!(
            body.frame().await.unwrap().is_ok(),
            "4s of silence is under the limit"
        );
        let err = body.frame().await.unwrap().unwrap_err();
        assert_eq!(err.to_string(), "upstream sent nothing for 5s");
        drop(tx);
    }
}
