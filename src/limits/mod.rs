//! Admission: what a listener lets in, and what a request's headers may weigh.
//!
//! Each listener has a [`Gate`] with two bounded pools, one slot per open connection and one
//! per request in flight. When a pool is empty lingo answers 503 with `Retry-After` at once
//! instead of queueing: a queue in front of a model server only turns overload into timeouts.
//! Each connection has an [`Activity`] so that it can be closed once it has been idle (no
//! request in flight) for the idle timeout, or slow to send a request head.

mod activity;

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ProxyError;
use crate::http::fields::Fields;
use crate::table::Limits;

pub use activity::{Activity, Busy, Quiet, Timeouts};

/// How many over-the-limit connections may be in the middle of being told "503" at once;
/// beyond that they are closed without an answer, so a flood costs a bounded amount.
const REJECTING: usize = 64;

/// One listener's pools, sized when it is bound.
#[derive(Debug)]
pub struct Gate {
    connections: Arc<Semaphore>,
    requests: Arc<Semaphore>,
    rejecting: Arc<Semaphore>,
    max_connections: usize,
    max_in_flight: usize,
}

/// An open connection's slot in its listener's pool.
#[derive(Debug)]
pub struct ConnectionSlot(#[allow(dead_code)] OwnedSemaphorePermit);

/// A request in flight: holds its listener slot and marks its connection busy until the
/// answer's body has ended (or been dropped).
#[derive(Debug)]
pub struct InFlight {
    _permit: OwnedSemaphorePermit,
    _busy: Busy,
}

/// What to do with a connection just accepted.
pub enum Admission {
    Serve(ConnectionSlot),
    /// Full: answer its requests with 503 (the permit bounds how many such answers run).
    Refuse(OwnedSemaphorePermit),
    /// Full, and too many are being refused already: close it.
    Drop,
}

// === impl Gate ===

impl Gate {
    pub fn new(limits: &Limits) -> Gate {
        Gate {
            connections: Arc::new(Semaphore::new(limits.max_connections)),
            requests: Arc::new(Semaphore::new(limits.max_in_flight)),
            rejecting: Arc::new(Semaphore::new(REJECTING)),
            max_connections: limits.max_connections,
            max_in_flight: limits.max_in_flight,
        }
    }

    pub fn admit_connection(&self) -> Admission {
        if let Ok(permit) = Arc::clone(&self.connections).try_acquire_owned() {
            return Admission::Serve(ConnectionSlot(permit));
        }
        match Arc::clone(&self.rejecting).try_acquire_owned() {
            Ok(permit) => Admission::Refuse(permit),
            Err(_) => Admission::Drop,
        }
    }

    pub fn connections_full(&self) -> ProxyError {
        ProxyError::Overloaded {
            what: "connections",
            limit: self.max_connections,
        }
    }

    /// A slot for one request on a connection, or the 503 to answer with. Either way the
    /// request's head is complete, so its connection stops timing the head.
    pub fn admit_request(&self, activity: &Arc<Activity>) -> Result<InFlight, ProxyError> {
        let busy = activity.begin();
        let permit = Arc::clone(&self.requests)
            .try_acquire_owned()
            .map_err(|_| ProxyError::Overloaded {
                what: "requests in flight",
                limit: self.max_in_flight,
            })?;
        Ok(InFlight {
            _permit: permit,
            _busy: busy,
        })
    }
}

pin_project! {
    /// An answer's body that keeps its request's [`InFlight`] slot until it has ended or been
    /// dropped: a streamed answer is in flight until its last frame.
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
pub fn check_headers(headers: Fields<'_>, limits: &Limits) -> Result<(), ProxyError> {
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
