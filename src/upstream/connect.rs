//! The connect timeout over the whole of getting a connection: name lookup, TCP connect and,
//! on `https://` upstreams, the TLS handshake. hyper-util's own connect timeout covers only
//! the TCP connect, so a server that accepts and then never finishes the handshake would
//! otherwise hold a request until its first-byte timeout and be reported as slow to respond
//! rather than unreachable.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::Uri;
use tower_service::Service;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A connector whose every connection must be ready within `limit`; past it, the attempt
/// fails with an `io::ErrorKind::TimedOut` error, which [`super::classify`] reports as the
/// connect timeout.
#[derive(Clone, Debug)]
pub struct Timed<C> {
    inner: C,
    limit: Duration,
}

impl<C> Timed<C> {
    pub fn new(inner: C, limit: Duration) -> Self {
        Timed { inner, limit }
    }
}

impl<C> Service<Uri> for Timed<C>
where
    C: Service<Uri>,
    C::Future: Send + 'static,
    C::Error: Into<BoxError>,
{
    type Response = C::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<C::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let connecting = self.inner.call(uri);
        let limit = self.limit;
        Box::pin(async move {
            match tokio::time::timeout(limit, connecting).await {
                Ok(result) => result.map_err(Into::into),
                Err(_) => Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "connect (name lookup, TCP and TLS handshake) timed out",
                )
                .into()),
            }
        })
    }
}
