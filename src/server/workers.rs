//! Thread per core: one single-threaded runtime per worker thread, each accepting on every
//! listener (clones of the same sockets: the kernel hands a new connection to whichever
//! worker accepts first) and serving each connection to its end, on the worker that serves
//! fewest when it was accepted (`balance`).
//!
//! Why: on one work-stealing runtime, the task serving a client connection and the task
//! driving the upstream connection it uses end up on different cores, and every streamed
//! frame is handed between them with a cross-thread wakeup (a syscall each way) and written on
//! its own. Here a connection, its requests and the upstream connections they take (pooled
//! per worker, see `base::worker`) stay on one thread, as in nginx's and pingora's workers.

use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::net::TcpListener;
use tokio::sync::watch;

use super::accept_loop;
use super::balance::{self, Balance, Inbox};
use super::connection::Drain;
use crate::base::worker;
use crate::limits::Gate;
use crate::reload::Reloader;

/// What an accept loop is given, whichever runtime it runs on.
pub struct Accepting {
    /// Each listener: its index in the table (`None` for the admin listener), the socket and
    /// its admission gate (shared by all workers: the limits are the listener's).
    pub listeners: Vec<(Option<usize>, TcpListener, Arc<Gate>)>,
    pub reloader: Arc<Reloader>,
    pub drain: Arc<Drain>,
    /// Becomes `true` when accepting stops.
    pub stop: watch::Receiver<bool>,
    /// Where a worker's new connections may go instead (`None` off the workers).
    pub balance: Option<Arc<Balance>>,
}

impl Accepting {
    /// One accept loop per listener, spawned on the current runtime.
    pub fn spawn_loops(self) -> Vec<tokio::task::JoinHandle<()>> {
        let Accepting {
            listeners,
            reloader,
            drain,
            stop,
            balance,
        } = self;
        let spawn = |(index, listener, gate)| {
            let (reloader, drain) = (Arc::clone(&reloader), Arc::clone(&drain));
            tokio::spawn(accept_loop(
                listener,
                index,
                gate,
                reloader,
                drain,
                stop.clone(),
                balance.clone(),
            ))
        };
        listeners.into_iter().map(spawn).collect()
    }
}

/// Running worker threads.
pub struct Workers {
    threads: Vec<JoinHandle<()>>,
    /// Sending `true` (or dropping it) ends the workers, and with them every connection
    /// still open on them.
    exit: watch::Sender<bool>,
}

/// The number of workers: `LINGO_WORKERS` when set (0 serves on the control runtime's
/// work-stealing threads instead), else one per core.
pub fn count() -> usize {
    std::env::var("LINGO_WORKERS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Starts `n` workers on `accepting`'s listeners.
pub fn spawn(n: usize, accepting: Accepting) -> std::io::Result<Workers> {
    let (exit, exited) = watch::channel(false);
    let mut sockets = Vec::new();
    for (index, listener, gate) in accepting.listeners {
        sockets.push((index, listener.into_std()?, gate));
    }
    let (balance, inboxes) = Balance::new(n);
    let balance = Arc::new(balance);
    let mut threads = Vec::with_capacity(n);
    for (slot, inbox) in (1..=n).zip(inboxes) {
        let mut listeners = Vec::with_capacity(sockets.len());
        for (index, socket, gate) in &sockets {
            listeners.push((*index, socket.try_clone()?, Arc::clone(gate)));
        }
        let (reloader, drain) = (
            Arc::clone(&accepting.reloader),
            Arc::clone(&accepting.drain),
        );
        let (stop, exited) = (accepting.stop.clone(), exited.clone());
        let balance = Arc::clone(&balance);
        // Built here, not on the worker's thread: a runtime that cannot start (no file
        // descriptor left for its event queue) is an error lingo reports at start, not a
        // worker thread that panics while the others serve.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let thread = std::thread::Builder::new()
            .name(format!("lingo-worker-{slot}"))
            .spawn(move || {
                worker::enter(slot);
                let accepting = Accepting {
                    listeners: Vec::new(),
                    reloader,
                    drain,
                    stop,
                    balance: Some(balance),
                };
                runtime.block_on(serve(listeners, accepting, inbox, exited));
            })?;
        threads.push(thread);
    }
    Ok(Workers { threads, exit })
}

/// One worker: its accept loops (`accepting`, on `listeners`), then the connections they
/// started and those other workers hand it, until told to exit.
async fn serve(
    listeners: Vec<(Option<usize>, std::net::TcpListener, Arc<Gate>)>,
    mut accepting: Accepting,
    inbox: Inbox,
    mut exit: watch::Receiver<bool>,
) {
    for (index, socket, gate) in listeners {
        match TcpListener::from_std(socket) {
            Ok(listener) => accepting.listeners.push((index, listener, gate)),
            Err(err) => tracing::error!("a worker cannot listen: {err}"),
        }
    }
    // The loops end when `stop` turns, and with the last of them every worker's inbox; the
    // connections they started run until `exit`.
    drop(accepting.spawn_loops());
    drop(tokio::spawn(balance::receive(inbox)));
    let _ = exit.wait_for(|exit| *exit).await;
}

impl Workers {
    /// Ends the workers (closing what is still open on them) and waits for their threads.
    pub async fn finish(self) {
        let _ = self.exit.send(true);
        let threads = self.threads;
        let _ = tokio::task::spawn_blocking(move || {
            for thread in threads {
                let _ = thread.join();
            }
        })
        .await;
    }
}
