//! Admission: what a listener lets in, and what a request's headers may weigh.
//!
//! Each listener has a [`Gate`] with two bounded pools, one slot per open connection and one
//! per request in flight. When a pool is empty lingo responds with 503 with `Retry-After` at once
//! instead of queueing: a queue in front of a model server only turns overload into timeouts.
//! Each connection has an [`Activity`] so that it can be closed once it has been idle (no
//! request in flight) for the idle timeout, or slow to send a request head.

mod activity;

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use crate::error::ProxyError;
use crate::http::message::HeaderView;
use crate::table::Limits;

pub use activity::{Activity, Busy, Quiet, Timeouts};

/// How many over-the-limit connections may be in the middle of being told "503" at once;
/// beyond that they are closed without a response, so a flood costs a bounded amount.
const REJECTING: usize = 64;

/// One listener's pools, sized when it is bound.
#[derive(Debug)]
pub struct Gate {
    connections: Arc<Pool>,
    requests: Arc<Pool>,
    rejecting: Arc<Pool>,
}

/// A number of slots, taken without waiting: when none is left the taker is refused at
/// once. (tokio's `Semaphore`, which did this before, also queues waiters, so giving a
/// permit back took its waiters' lock: a lock every worker took for every request.)
#[derive(Debug)]
struct Pool {
    taken: AtomicUsize,
    size: usize,
}

/// A slot taken from a pool, given back when dropped.
#[derive(Debug)]
pub struct Slot(Arc<Pool>);

/// An open connection's slot in its listener's pool.
#[derive(Debug)]
pub struct ConnectionSlot(#[allow(dead_code)] Slot);

/// A request in flight: holds its listener slot and marks its connection busy until the
/// response's body has ended (or been dropped).
#[derive(Debug)]
pub struct InFlight {
    _slot: Slot,
    _busy: Busy,
}

/// What to do with a connection just accepted.
pub enum Admission {
    Serve(ConnectionSlot),
    /// Full: its requests get a 503 (the slot bounds how many such responses run).
    Refuse(Slot),
    /// Full, and too many are being refused already: close it.
    Drop,
}

// === impl Pool ===

impl Pool {
    fn new(size: usize) -> Arc<Pool> {
        Arc::new(Pool {
            taken: AtomicUsize::new(0),
            size,
        })
    }

    /// A slot, or `None` when all are taken. (Only a count: no data is handed over with a
    /// slot, so no ordering beyond the count's own is needed.)
    fn take(self: &Arc<Self>) -> Option<Slot> {
        let free = |taken: usize| (taken < self.size).then_some(taken + 1);
        self.taken
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, free)
            .ok()?;
        Some(Slot(Arc::clone(self)))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.taken.fetch_sub(1, Ordering::Relaxed);
    }
}

// === impl Gate ===

impl Gate {
    pub fn new(limits: &Limits) -> Gate {
        Gate {
            connections: Pool::new(limits.max_connections),
            requests: Pool::new(limits.max_in_flight),
            rejecting: Pool::new(REJECTING),
        }
    }

    pub fn admit_connection(&self) -> Admission {
        if let Some(slot) = self.connections.take() {
            return Admission::Serve(ConnectionSlot(slot));
        }
        match self.rejecting.take() {
            Some(slot) => Admission::Refuse(slot),
            None => Admission::Drop,
        }
    }

    pub fn connections_full(&self) -> ProxyError {
        ProxyError::Overloaded {
            what: "connections",
            limit: self.connections.size,
        }
    }

    /// A slot for one request on a connection, or the 503 to respond with. Either way the
    /// request's head is complete, so its connection stops timing the head.
    pub fn admit_request(&self, activity: &Arc<Activity>) -> Result<InFlight, ProxyError> {
        let busy = activity.begin();
        let slot = self.requests.take().ok_or(ProxyError::Overloaded {
            what: "requests in flight",
            limit: self.requests.size,
        })?;
        Ok(InFlight {
            _slot: slot,
            _busy: busy,
        })
    }
}

pin_project! {
    /// A response's body that keeps its request's [`InFlight`] slot until it has ended or been
    /// dropped: a streamed response is in flight until its last frame.
    pub struct Held<B> {
        #[pin]
        inner: B,
        slot: Option<InFlight>,
    }
}

impl<B> Held<B> {
    pub fn new(inner: B, slot: Option<InFlight>) -> Self {
        Held { inner, slot }
    }
}

impl<B: http_body::Body> http_body::Body for Held<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<B::Data>, B::Error>>> {
        self.project().inner.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Refuses a request whose headers exceed the table's limits (431). The connection enforces
/// a looser backstop itself (see `server::protocol`), so that what reaches here is refused in the caller's
/// dialect rather than with a bare status.
pub fn check_headers(headers: HeaderView<'_>, limits: &Limits) -> Result<(), ProxyError> {
    let count = headers.len();
    if count > limits.max_headers {
        return Err(ProxyError::HeadersTooLarge {
            what: format!("{count} header fields; the limit is {}", limits.max_headers),
        });
    }
    let bytes = headers.wire_len();
    if bytes as u64 > limits.max_header_bytes {
        return Err(ProxyError::HeadersTooLarge {
            what: format!(
                "{bytes} bytes of header fields; the limit is {}",
                limits.max_header_bytes
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_gives_its_slots_then_refuses_until_one_is_given_back() {
        let pool = Pool::new(2);
        let (first, second) = (pool.take().unwrap(), pool.take().unwrap());
        assert!(pool.take().is_none(), "full");
        drop(first);
        let third = pool.take().expect("a slot given back is taken again");
        assert!(pool.take().is_none());
        drop((second, third));
        assert_eq!(pool.taken.load(Ordering::Relaxed), 0);
        assert!(Pool::new(0).take().is_none(), "a pool of none refuses all");
    }

    /// Slots held at once are counted apart from the pool's own count, so that a pool
    /// handing out more than its size while its count stays right is caught.
    #[test]
    fn many_threads_never_hold_more_than_the_size() {
        let pool = Pool::new(3);
        let (held, most, taken) = (
            AtomicUsize::new(0),
            AtomicUsize::new(0),
            AtomicUsize::new(0),
        );
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..10_000 {
                        if let Some(slot) = pool.take() {
                            let now = held.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(now, Ordering::SeqCst);
                            taken.fetch_add(1, Ordering::Relaxed);
                            held.fetch_sub(1, Ordering::SeqCst);
                            drop(slot);
                        }
                    }
                });
            }
        });
        assert!(most.load(Ordering::SeqCst) <= 3, "{most:?}");
        assert!(taken.load(Ordering::Relaxed) > 0);
        assert_eq!(
            pool.taken.load(Ordering::Relaxed),
            0,
            "every slot given back"
        );
    }

    /// A limit as large as the table allows (tokio's semaphore panicked past
    /// `usize::MAX >> 3`).
    #[test]
    fn a_huge_pool_takes_and_gives_back() {
        let pool = Pool::new(usize::MAX);
        let slot = pool.take().expect("room");
        drop(slot);
        assert_eq!(pool.taken.load(Ordering::Relaxed), 0);
    }
}
