//! Which worker serves a new connection: the one with the fewest open.
//!
//! Workers accept on clones of one socket, and whichever polls first takes what is waiting;
//! nothing makes that the worker with the least to do. A client's pool of 32 keep-alive
//! connections, opened at once, left one worker a third of the load, and in two runs of
//! eight all of it; each connection stays where it landed for its whole life, so the busier
//! worker bounds the throughput while the other idles. So a worker that accepts a connection
//! while it serves more than another hands it over (Envoy's "exact balance", without its
//! lock: two workers accepting at the same instant may both choose the same one, a count off
//! by one): one channel send and the socket moved to the other's event loop, before a byte
//! is read, paid only when the counts differ.

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

    /// Serves a connection worker `here` accepted (`accepted`, given the worker it is counted
    /// on): here, unless another worker serves fewer.
    pub fn place(
        &self,
        here: usize,
        slot: ConnectionSlot,
        drain: &Arc<Drain>,
        accepted: impl FnOnce(usize) -> Accepted,
    ) {
        let to = self.choose(drain, here);
        let accepted = accepted(to);
        let inbox = to.checked_sub(1).and_then(|i| self.inboxes.get(i));
        let Some(inbox) = inbox.filter(|_| to != here) else {
            return connection::serve(accepted, slot);
        };
        // On failure the socket is already out of this worker's event loop, and closed.
        let accepted = match accepted.map_stream(TcpStream::into_std) {
            Ok(accepted) => accepted,
            Err(err) => return tracing::warn!("cannot move a connection to another worker: {err}"),
        };
        if let Err(mpsc::error::SendError(mut moved)) = inbox.send(Moved { accepted, slot }) {
            // Its worker has just ended: served here after all, and counted here.
            moved.accepted.drain = drain.guard(here);
            serve(moved);
        }
    }

    /// `here` unless another worker that is still running serves fewer (on a tie, `here`:
    /// moving a connection is not free).
    fn choose(&self, drain: &Drain, here: usize) -> usize {
        let mut best = (drain.open_on(here), here);
        for (i, inbox) in self.inboxes.iter().enumerate() {
            let open = drain.open_on(i + 1);
            if open < best.0 && !inbox.is_closed() {
                best = (open, i + 1);
            }
        }
        best.1
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

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;
    use tokio::sync::watch;

    use super::*;
    use crate::limits::{Admission, Gate};
    use crate::observe::metrics::Metrics;
    use crate::reload::Reloader;

    /// Where the next connection goes, with `open[i]` connections on worker i + 1, accepted
    /// by worker `here`; `gone` workers have ended.
    fn chosen(open: &[usize], here: usize, gone: &[usize]) -> usize {
        let drain = Arc::new(Drain::new(open.len(), &Metrics::new()));
        let guards: Vec<_> = (1..=open.len())
            .flat_map(|worker| (0..open[worker - 1]).map(move |_| worker))
            .map(|worker| drain.guard(worker))
            .collect();
        let (balance, mut inboxes) = Balance::new(open.len());
        for worker in gone {
            inboxes[worker - 1].close();
        }
        let to = balance.choose(&drain, here);
        drop(guards);
        to
    }

    #[test]
    fn a_connection_goes_where_fewest_are_and_stays_on_a_tie() {
        let cases: &[(&[usize], usize, &[usize], usize)] = &[
            (&[0, 0], 1, &[], 1),
            (&[0, 0], 2, &[], 2),
            (&[3, 3], 2, &[], 2),
            (&[3, 2], 1, &[], 2),
            (&[2, 3], 2, &[], 1),
            (&[5, 1, 1], 1, &[], 2),
            (&[5, 2, 1], 1, &[], 3),
            (&[1, 4, 1], 2, &[], 1),
            // A worker that has ended (its count stays at 0) is not chosen.
            (&[3, 0], 1, &[2], 1),
            (&[3, 0, 1], 1, &[2], 3),
        ];
        for &(open, here, gone, to) in cases {
            assert_eq!(chosen(open, here, gone), to, "{open:?} accepted by {here}");
        }
    }

    /// A worker that ends between being chosen and being handed the connection (its inbox
    /// closes as the connection is made ready to move): the connection is served by the
    /// worker that accepted it, and counted there.
    #[tokio::test]
    async fn a_connection_whose_worker_ends_as_it_is_handed_over_is_served_here() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("proxy.yaml");
        let table = "listen:\n  - addr: 127.0.0.1:0\nupstreams:\n  models: { mock: {}, speaks: native }\nroutes:\n  - { prefix: /api, to: models }\n";
        std::fs::write(&config, table).unwrap();
        let reloader = Arc::new(Reloader::load(&config).unwrap());
        let gate = Arc::new(Gate::new(&reloader.snapshot().table.limits));
        let Admission::Serve(slot) = gate.admit_connection() else {
            panic!("an empty gate admits");
        };
        let drain = Arc::new(Drain::new(2, reloader.metrics()));
        let (balance, mut inboxes) = Balance::new(2);
        let busy = drain.guard(1); // worker 1 serves one: worker 2 is chosen
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (stream, peer) = listener.accept().await.unwrap();
        let (_stop, stop) = watch::channel(false);
        balance.place(1, slot, &drain, |to| {
            assert_eq!(to, 2, "the worker serving fewest is chosen");
            drop(inboxes.pop()); // worker 2 ends
            Accepted {
                stream,
                peer,
                listener: Some(0),
                gate,
                reloader,
                stop,
                drain: drain.guard(to),
            }
        });
        assert_eq!((drain.open_on(1), drain.open_on(2)), (2, 0));
        client
            .write_all(b"GET /api/tags HTTP/1.1\r\nhost: lingo\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut response = String::new();
        let read = client.read_to_string(&mut response);
        // Guards against a hang; never a performance threshold.
        tokio::time::timeout(std::time::Duration::from_secs(20), read)
            .await
            .expect("the connection got a response and closed")
            .unwrap();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        drop(busy);
    }
}
