//! A lean pool of HTTP/1.1 connections to a plain `http://` upstream: the sidecar's case.
//!
//! hyper-util's pooled client serves every kind of upstream (TLS, ALPN, HTTP/2 sharing), and
//! pays for it on every request: a checkout future raced against a connect future, a lock and
//! two SipHashed map lookups by `(scheme, authority)`, a clone of the URI, and a spawned task
//! per response that puts the connection back once it is ready again. Here each serving thread
//! has its own list of idle connections (`base::worker`), spoken to by lingo's own client
//! (`h1`); a request takes the newest (its socket is the warmest) or opens one, and the
//! response's body puts it back when it has been read to its end. A body dropped before its end
//! takes the connection with it: the connection closes, as it must with a response unread.
//!
//! A connection idle for [`IDLE`] is closed, when the list is next used or by a sweep every
//! half of that. One the upstream closed while it waited (its own keep-alive timer) is seen
//! as closed when it is taken, and passed over: a request is never written to it, and so
//! never has to be sent twice.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use futures_util::TryFutureExt;
use futures_util::future::Either;
use hyper::Uri;
use tokio::time::Instant;

use super::h1::{self, Conn, Outgoing};
use super::headers::Forwarding;
use crate::base::{clock, worker};
use crate::http::body::BoxError;
use crate::http::message::{Request, Response};

/// How long an idle connection is kept.
pub const IDLE: Duration = Duration::from_secs(90);

/// One upstream's idle connections, a list per serving thread.
pub struct Http1Pool {
    /// Where connections go: `host:port`.
    address: String,
    /// How long a connection may take to open.
    connect: Duration,
    lists: Arc<Lists>,
}

type Lists = [Mutex<Vec<Idle>>];

/// A connection waiting for its next request.
struct Idle {
    conn: Conn,
    /// When it has been idle for [`IDLE`]: noted once, so that expiring compares instants
    /// rather than subtracting them.
    expires: Instant,
}

/// Where a response's connection goes back to: its pool's lists.
struct Home(Arc<Lists>);

// === impl Http1Pool ===

impl Http1Pool {
    /// A pool of connections to `base`'s authority (port 80 when it names none).
    pub fn new(base: &Uri, connect: Duration) -> Self {
        let lists: Arc<Lists> = (0..worker::slots()).map(|_| Mutex::default()).collect();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(sweep(Arc::downgrade(&lists)));
        }
        Http1Pool {
            address: address(base),
            connect,
            lists,
        }
    }

    /// Whether this pool opens the connections a pool for `base` under the `connect` limit
    /// would: the same address, the same limit.
    pub fn serves(&self, base: &Uri, connect: Duration) -> bool {
        self.address == address(base) && self.connect == connect
    }

    /// Sends `req` (its URI's path and query go on the request line) and waits for the
    /// response's head until `deadline` (the first-byte limit: `h1::SendError::FirstByte` past
    /// it). The response's body fails when nothing comes for `idle`, and returns the connection
    /// to this thread's list at its end.
    ///
    /// The head is written, and an idle connection taken, before the returned future: it
    /// holds what the sending needs, not the request (see [`Outgoing`]). Dropped without
    /// being polled, it closes that connection instead of giving it back.
    pub fn send(
        &self,
        req: Request,
        rules: &Forwarding<'_>,
        deadline: Instant,
        idle: Duration,
    ) -> impl Future<Output = Result<Response, BoxError>> + Send + '_ {
        let req = Outgoing::new(req, &self.address, Some(rules));
        let home = Home(Arc::clone(&self.lists));
        // An idle connection's sending is returned as it is. One future for both ways would
        // hold the request, the idle connection and the rest beside the sending's state for as
        // long as it ran; the way that opens a connection, the rarer, is boxed.
        match self.take() {
            Some(conn) => Either::Left(conn.send(req, home, deadline, idle).err_into()),
            None => Either::Right(Box::pin(async move {
                let conn = self.open(deadline).await?;
                Ok(conn.send(req, home, deadline, idle).await?)
            })),
        }
    }

    /// A new connection, within the connect limit and the request's first-byte deadline.
    async fn open(&self, deadline: Instant) -> Result<Conn, BoxError> {
        match tokio::time::timeout_at(deadline, Conn::open(&self.address, self.connect)).await {
            Ok(conn) => Ok(conn?),
            Err(_) => Err(h1::SendError::FirstByte.into()),
        }
    }

    /// The newest idle connection of this thread that can take a request now; the expired
    /// and the closed ones are dropped on the way.
    fn take(&self) -> Option<Conn> {
        let mut list = lock(list_of(&self.lists));
        expire(&mut list, clock::now());
        while let Some(idle) = list.pop() {
            if idle.conn.is_fresh() {
                return Some(idle.conn);
            }
        }
        None
    }
}

impl h1::Home for Home {
    fn put_back(self, conn: Conn) {
        let mut list = lock(list_of(&self.0));
        let now = clock::now();
        expire(&mut list, now);
        list.push(Idle {
            conn,
            expires: now + IDLE,
        });
    }
}

/// `host:port` of `base` (port 80 when it names none).
fn address(base: &Uri) -> String {
    let host = base.host().unwrap_or_default();
    format!("{host}:{}", base.port_u16().unwrap_or(80))
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
    let expired = list.iter().take_while(|idle| idle.expires <= now).count();
    list.drain(..expired);
}

/// Every half [`IDLE`], drops the expired connections of every list, so that an upstream
/// nobody calls any more is not held open; ends with the pool.
async fn sweep(lists: Weak<Lists>) {
    loop {
        tokio::time::sleep(IDLE / 2).await;
        let Some(lists) = lists.upgrade() else {
            return;
        };
        let now = clock::now();
        for list in lists.iter() {
            expire(&mut lock(list), now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_connections_idle_for_the_whole_limit_expire() {
        // `expire` reads nothing but `since`: connections to a listener nobody serves will
        // do. `now` is ahead of the clock so that no age goes back before its origin.
        let now = Instant::now() + IDLE * 2;
        let ages = [
            IDLE * 2,
            IDLE,
            IDLE - Duration::from_millis(1),
            Duration::ZERO,
        ];
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut list: Vec<Idle> = runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let address = listener.local_addr().unwrap().to_string();
            let mut list = Vec::new();
            for age in ages {
                let conn = Conn::open(&address, Duration::from_secs(5)).await.unwrap();
                list.push(Idle {
                    conn,
                    expires: now - age + IDLE,
                });
            }
            list
        });
        expire(&mut list, now);
        let left: Vec<Duration> = list.iter().map(|i| now + IDLE - i.expires).collect();
        assert_eq!(left, [IDLE - Duration::from_millis(1), Duration::ZERO]);
    }
}
