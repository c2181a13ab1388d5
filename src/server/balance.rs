//! Which worker serves a new connection: the one with the fewest open.
//!
//! Workers accept on clones of one socket, and whichever polls first takes what is waiting.
//! That spreads connections that come one by one, but not a burst: when a client's pool opens
//! 32 keep-alive connections at once, the worker that wakes first takes most of them (21
//! against 12 in one measurement), keeps them for their whole life, and bounds the
//! throughput while the other idles. So a worker that accepts a connection while it serves
//! more than another hands it over (Envoy's "exact balance"): one channel send and the
//! socket moved to the other's event loop, paid only when the counts differ, before a byte
//! is read.

use std::sync::Arc;

use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::connection::{self, Accepted, Drain};
use crate::limits::ConnectionSlot;

/// A connection accepted by one worker for another to serve.
pub struct Moved {
    accepted: Accepted<std::net::TcpStream>,
    slot: ConnectionSlot,
}

/// Each worker's inbox for connections others accepted; worker `n` (1-based) has index n - 1.
pub struct Balance {
    inboxes: Box<[mpsc::UnboundedSender<Moved>]>,
}

/// A worker's end of its inbox.
pub type Inbox = mpsc::UnboundedReceiver<Moved>;

// === impl Balance ===

impl Balance {
    /// A balance over `workers` workers, and each one's inbox.
    pub fn new(workers: usize) -> (Balance, Vec<Inbox>) {
        let (inboxes, receivers) = (0..workers).map(|_| mpsc::unbounded_channel()).unzip();
        let inboxes = Vec::into_boxed_slice(inboxes);
        (Balance { inboxes }, receivers)
    }

    /// The worker a connection accepted by worker `here` should go to: `here` unless another
    /// serves fewer.
    pub fn choose(&self, drain: &Drain, here: usize) -> usize {
        let mut best = (drain.open_on(here), here);
        for worker in 1..=self.inboxes.len() {
            best = best.min((drain.open_on(worker), worker));
        }
        best.1
    }

    /// Serves `accepted` on worker `to`; here when it cannot be moved (its worker is gone, or
    /// the socket cannot leave this event loop).
    pub fn hand(&self, to: usize, accepted: Accepted, slot: ConnectionSlot, drain: &Arc<Drain>) {
        let Some(inbox) = to.checked_sub(1).and_then(|i| self.inboxes.get(i)) else {
            return connection::serve(accepted, slot);
        };
        let accepted = match accepted.map_stream(TcpStream::into_std) {
            Ok(accepted) => accepted,
            Err(err) => return tracing::warn!("cannot move a connection to another worker: {err}"),
        };
        if let Err(mpsc::error::SendError(mut moved)) = inbox.send(Moved { accepted, slot }) {
            moved.accepted.drain = drain.guard(crate::base::worker::slot());
            serve(moved);
        }
    }
}

/// Serves the connections other workers hand this one, until every sender is gone.
pub async fn receive(mut inbox: Inbox) {
    while let Some(moved) = inbox.recv().await {
        serve(moved);
    }
}

fn serve(Moved { accepted, slot }: Moved) {
    match accepted.map_stream(TcpStream::from_std) {
        Ok(accepted) => connection::serve(accepted, slot),
        Err(err) => tracing::warn!("cannot serve a connection moved from another worker: {err}"),
    }
}
