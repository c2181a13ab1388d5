//! A client connection handed over after a `101 Switching Protocols` response (a WebSocket).
//!
//! lingo's HTTP/1.1 server puts an [`OnUpgrade`] in the extensions of each request that asks
//! for an upgrade; once the 101 is written it sends the socket, and the bytes it had read past
//! the request head, through it. A request that came some other way (HTTP/2) has none.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::oneshot;

/// A socket, whatever it is under (plain TCP, TLS).
pub trait Io: AsyncRead + AsyncWrite + Send + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

/// The client's connection after the switch.
pub struct Upgraded {
    io: Box<dyn Io>,
    /// Read past the request head, before the switch: the first bytes of the new protocol.
    read: Bytes,
}

/// Where a request's upgraded connection will come from. In a request's extensions (which
/// must be `Clone`), so the receiver is shared and taken once.
#[derive(Clone)]
pub struct OnUpgrade(Arc<Mutex<Option<oneshot::Receiver<Upgraded>>>>);

/// The sending half, kept by the connection.
pub type Handover = oneshot::Sender<Upgraded>;

/// Why no upgraded connection came.
#[derive(Debug, thiserror::Error)]
#[error("the client connection was not upgraded")]
pub struct NotUpgraded;

pub fn pair() -> (Handover, OnUpgrade) {
    let (tx, rx) = oneshot::channel();
    (tx, OnUpgrade(Arc::new(Mutex::new(Some(rx)))))
}

/// The upgraded connection of `req`, once its 101 response is written.
pub fn on<B>(
    req: &mut crate::http::message::Request<B>,
) -> impl Future<Output = Result<Upgraded, NotUpgraded>> + Send + 'static {
    let rx = req
        .extensions_mut()
        .remove::<OnUpgrade>()
        .and_then(|on| on.0.lock().ok()?.take());
    async move {
        match rx {
            Some(rx) => rx.await.map_err(|_| NotUpgraded),
            None => Err(NotUpgraded),
        }
    }
}

impl Upgraded {
    pub fn new(io: Box<dyn Io>, read: Bytes) -> Self {
        Upgraded { io, read }
    }
}

impl AsyncRead for Upgraded {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.read.is_empty() {
            let n = self.read.len().min(buf.remaining());
            buf.put_slice(&self.read[..n]);
            self.read.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Upgraded {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
