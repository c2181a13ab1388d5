//! A client connection's socket, telling its [`Activity`] when bytes arrive: on an idle
//! HTTP/1.1 connection the first byte starts the request head's clock (`header_timeout`),
//! and a write restarts a clock already running (a head pipelined behind a response still
//! being written). Writes pass through unchanged, vectored ones included.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::limits::Activity;

pin_project! {
    pub struct Watched<S> {
        #[pin]
        inner: S,
        activity: Arc<Activity>,
    }
}

impl<S> Watched<S> {
    pub fn new(inner: S, activity: Arc<Activity>) -> Self {
        Watched { inner, activity }
    }
}

impl<S: AsyncRead> AsyncRead for Watched<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.project();
        let before = buf.filled().len();
        let polled = this.inner.poll_read(cx, buf);
        if buf.filled().len() > before {
            this.activity.saw_bytes();
        }
        polled
    }
}

impl<S: AsyncWrite> AsyncWrite for Watched<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        noting_writes(this.activity, this.inner.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        noting_writes(this.activity, this.inner.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_shutdown(cx)
    }
}

/// `polled`, after telling `activity` when it wrote something.
fn noting_writes(activity: &Activity, polled: Poll<io::Result<usize>>) -> Poll<io::Result<usize>> {
    if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
        activity.wrote();
    }
    polled
}
