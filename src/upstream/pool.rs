//! A lean pool of HTTP/1.1 connections to a plain `http://` upstream: the sidecar's case.
//!
//! hyper-util's pooled client serves every kind of upstream (TLS, ALPN, HTTP/2 sharing), and
//! pays for it on every request: a checkout future raced against a connect future, a lock and
//! two SipHashed map lookups by `(scheme, authority)`, a clone of the URI, and a spawned task
//! per answer that puts the connection back once it is ready again (callgrind: about a tenth
//! of a whole pass-through's instructions). Here each serving thread has its own list of idle
//! connections (`base::worker`); a request takes the newest (its socket is the warmest) or
//! opens one, and the answer's body puts it back when it has been read to its end. A body
//! dropped before its end takes the connection with it: hyper closes a connection whose answer
//! was not read, as it must.
//!
//! A connection idle for [`IDLE`] is dropped (hyper then closes it), when the list is next
//! used or by a sweep every half of that. A request that finds its reused connection closed
//! before it could be sent (the upstream's own keep-alive timer won the race) is sent again on
//! another connection, as hyper-util's client does; one that may have reached the upstream is
//! never sent twice.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper::{Request, Response, Uri};
use pin_project_lite::pin_project;
use tower_service::Service;

use super::Connector;
use crate::base::worker;
use crate::http::body::{Body, BoxError};

/// How long an idle connection is kept.
pub const IDLE: Duration = Duration::from_secs(90);

/// One upstream's idle connections, a list per serving thread.
pub struct Http1Pool {
    connector: Connector,
    /// Where connections go: the upstream's scheme and authority.
    address: Uri,
    lists: Arc<Lists>,
}

type Lists = [Mutex<Vec<Idle>>];

/// A connection waiting for its next request.
struct Idle {
    sender: http1::SendRequest<Body>,
    since: Instant,
}

// === impl Http1Pool ===

impl Http1Pool {
    pub fn new(connector: Connector, address: Uri) -> Self {
        let lists: Arc<Lists> = (0..worker::slots()).map(|_| Mutex::default()).collect();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(sweep(Arc::downgrade(&lists)));
        }
        Http1Pool {
            connector,
            address,
            lists,
        }
    }

    /// Sends `req` (its URI in origin form: the path and query) and waits for the answer's
    /// head. The answer's body returns the connection to this thread's list at its end.
    pub async fn send(&self, mut req: Request<Body>) -> Result<Response<Body>, BoxError> {
        loop {
            let (mut sender, reused) = match self.take() {
                Some(sender) => (sender, true),
                None => (self.connect().await?, false),
            };
            match sender.try_send_request(req).await {
                Ok(response) => {
                    let lists = Arc::clone(&self.lists);
                    return Ok(response.map(|body| Body::new(Returning::new(body, sender, lists))));
                }
                Err(mut err) => match err.take_message() {
                    // Not sent: the connection closed first. Safe to send again, on another.
                    Some(unsent) if reused => req = unsent,
                    _ => return Err(err.into_error().into()),
                },
            }
        }
    }

    /// The newest idle connection of this thread that can take a request now; the expired
    /// and the closed ones are dropped on the way.
    fn take(&self) -> Option<http1::SendRequest<Body>> {
        let mut list = lock(list_of(&self.lists));
        expire(&mut list, Instant::now());
        while let Some(idle) = list.pop() {
            if idle.sender.is_ready() {
                return Some(idle.sender);
            }
        }
        None
    }

    /// Opens a connection (under the connect timeout of [`Connector`]) and starts driving it
    /// on this thread.
    async fn connect(&self) -> Result<http1::SendRequest<Body>, BoxError> {
        let mut connector = self.connector.clone();
        std::future::poll_fn(|cx| connector.poll_ready(cx)).await?;
        let io = connector.call(self.address.clone()).await?;
        let (sender, conn) = http1::handshake(io).await?;
        tokio::spawn(async move {
            if let Err(err) = conn.await {
                tracing::debug!("upstream connection ended: {err}");
            }
        });
        Ok(sender)
    }
}

/// This thread's list.
fn list_of(lists: &Lists) -> &Mutex<Vec<Idle>> {
    &lists[worker::slot() % lists.len()]
}

/// Each list is only ever used by its own thread (and the sweep): never contended, and never
/// left inconsistent by a panic (every change is one push, pop or drain).
fn lock(list: &Mutex<Vec<Idle>>) -> std::sync::MutexGuard<'_, Vec<Idle>> {
    list.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Drops the connections idle for [`IDLE`] or more: the oldest are at the front.
fn expire(list: &mut Vec<Idle>, now: Instant) {
    let expired = list
        .iter()
        .take_while(|idle| now.duration_since(idle.since) >= IDLE)
        .count();
    list.drain(..expired);
}

/// Puts a connection whose answer has been read back on this thread's list, once hyper is
/// ready to send on it again. hyper marks it ready as it hands over the answer's last bytes,
/// so that is nearly always at once; otherwise a small task waits for it.
fn put_back(mut sender: http1::SendRequest<Body>, lists: Arc<Lists>) {
    if sender.is_ready() {
        let mut list = lock(list_of(&lists));
        let now = Instant::now();
        expire(&mut list, now);
        list.push(Idle { sender, since: now });
    } else if !sender.is_closed() {
        tokio::spawn(async move {
            if sender.ready().await.is_ok() {
                put_back(sender, lists);
            }
        });
    }
}

/// Every half [`IDLE`], drops the expired connections of every list, so that an upstream
/// nobody calls any more is not held open; ends with the pool.
async fn sweep(lists: Weak<Lists>) {
    loop {
        tokio::time::sleep(IDLE / 2).await;
        let Some(lists) = lists.upgrade() else {
            return;
        };
        let now = Instant::now();
        for list in lists.iter() {
            expire(&mut lock(list), now);
        }
    }
}

pin_project! {
    /// An answer's body that returns its connection to the pool once read to its end (or
    /// dropped there: a body that was empty from the start is never polled).
    struct Returning {
        #[pin]
        inner: Incoming,
        home: Option<(http1::SendRequest<Body>, Arc<Lists>)>,
    }

    impl PinnedDrop for Returning {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if http_body::Body::is_end_stream(&*this.inner)
                && let Some((sender, lists)) = this.home.take()
            {
                put_back(sender, lists);
            }
        }
    }
}

impl Returning {
    fn new(inner: Incoming, sender: http1::SendRequest<Body>, lists: Arc<Lists>) -> Self {
        Returning {
            inner,
            home: Some((sender, lists)),
        }
    }
}

impl http_body::Body for Returning {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = self.project();
        let polled = this.inner.poll_frame(cx);
        if let Poll::Ready(None) = polled
            && let Some((sender, lists)) = this.home.take()
        {
            put_back(sender, lists);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_connections_idle_for_the_whole_limit_expire() {
        // `expire` reads nothing but `since`: senders of connections nobody drives will do.
        // `now` is ahead of the clock so that no age goes back before its origin.
        let now = Instant::now() + IDLE * 2;
        let ages = [
            IDLE * 2,
            IDLE,
            IDLE - Duration::from_millis(1),
            Duration::ZERO,
        ];
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut list: Vec<Idle> = runtime.block_on(async {
            let mut list = Vec::new();
            for age in ages {
                let (client, _server) = tokio::io::duplex(64);
                let (sender, _conn) = http1::handshake(hyper_util::rt::TokioIo::new(client))
                    .await
                    .unwrap();
                list.push(Idle {
                    sender,
                    since: now - age,
                });
            }
            list
        });
        expire(&mut list, now);
        let left: Vec<Duration> = list.iter().map(|i| now - i.since).collect();
        assert_eq!(left, [IDLE - Duration::from_millis(1), Duration::ZERO]);
    }
}
