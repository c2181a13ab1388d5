//! Listeners, the accept loop and graceful shutdown.
//!
//! Each listener accepts plain TCP or TLS (rustls; the certificate is taken from the *current*
//! table for every new connection, so a reloaded certificate applies without a restart) and
//! serves HTTP/1.1 (with upgrades) with lingo's own connection (`h1`) or HTTP/2 with hyper's,
//! told which of the two a connection speaks before a byte of it is read (`sniff`,
//! `protocol`). Shutdown stops accepting, lets requests in flight finish up to the drain
//! deadline, then returns.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

mod balance;
mod connection;
mod h1;
mod protocol;
mod sniff;
mod watched;
mod workers;

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::config::ConfigErrors;
use crate::limits::{Admission, Gate};
use crate::reload::{Reloader, Triggers};
use balance::Balance;
use connection::{Accepted, Drain};
use workers::Accepting;

/// lingo's HTTP/1.1 server connection, reachable only for the differential fuzz target
/// (`fuzz/`), which serves the same bytes through it and through hyper's.
#[doc(hidden)]
pub use h1::{Limits as H1Limits, connection as h1_connection};

/// Why lingo could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Config(#[from] ConfigErrors),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot start the worker threads: {0}")]
    Workers(std::io::Error),
}

/// A bound, not yet serving, lingo.
pub struct Server {
    reloader: Arc<Reloader>,
    triggers: Triggers,
    /// The table's listeners by index, and `None` for the admin listener.
    listeners: Vec<(Option<usize>, TcpListener)>,
}

// === impl Server ===

impl Server {
    /// Loads the route table and binds its listeners.
    pub async fn bind(config: &Path) -> Result<Self, StartError> {
        let reloader = Arc::new(Reloader::load(config)?);
        let snapshot = reloader.snapshot();
        for warning in &snapshot.table.warnings {
            tracing::warn!("{warning}");
        }
        let mut listeners = Vec::new();
        let public = snapshot.table.listeners.iter().map(|l| l.addr).enumerate();
        let admin = snapshot.table.admin.addr.map(|addr| (None, addr));
        for (index, addr) in public.map(|(i, a)| (Some(i), a)).chain(admin) {
            let bound = crate::http::socket::bind(addr)
                .map_err(|source| StartError::Bind { addr, source })?;
            listeners.push((index, bound));
        }
        let triggers = reloader.triggers();
        Ok(Server {
            reloader,
            triggers,
            listeners,
        })
    }

    /// The addresses actually bound (a port of 0 in the table becomes a real one here).
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.listeners
            .iter()
            .filter_map(|(_, l)| l.local_addr().ok())
            .collect()
    }

    pub fn reloader(&self) -> Arc<Reloader> {
        Arc::clone(&self.reloader)
    }

    /// Serves on the calling runtime until `shutdown` completes, then drains.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<(), StartError> {
        self.run_on(0, shutdown).await
    }

    /// Serves until `shutdown` completes, then drains: on `workers` threads of their own
    /// (see `workers`), or on the calling runtime when `workers` is 0. The reload watcher
    /// and the drain run on the calling runtime.
    pub async fn run_on(
        self,
        workers: usize,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), StartError> {
        let watch_task = tokio::spawn(Arc::clone(&self.reloader).watch(self.triggers));
        let drain = Arc::new(Drain::new(workers, self.reloader.metrics()));
        let (stop_tx, stop_rx) = watch::channel(false);
        let limits = self.reloader.snapshot().table.limits;
        let mut listeners = Vec::new();
        for (index, listener) in self.listeners {
            if let Ok(addr) = listener.local_addr() {
                let what = if index.is_some() { "" } else { " (admin)" };
                tracing::info!("listening on {addr}{what}");
            }
            listeners.push((index, listener, Arc::new(Gate::new(&limits))));
        }
        let accepting = Accepting {
            listeners,
            reloader: Arc::clone(&self.reloader),
            drain: Arc::clone(&drain),
            stop: stop_rx,
            balance: None,
        };
        let serving = match Serving::start(workers, accepting) {
            Ok(serving) => serving,
            Err(err) => {
                watch_task.abort();
                return Err(err);
            }
        };
        shutdown.await;
        let deadline = self.reloader.snapshot().table.limits.drain;
        tracing::info!(
            "shutting down: no new connections; draining for up to {}",
            crate::base::units::format_duration(deadline)
        );
        let _ = stop_tx.send(true);
        let workers = serving.stopped_accepting().await;
        watch_task.abort();
        tokio::select! {
            () = drain.wait() => tracing::info!("all connections drained"),
            () = tokio::time::sleep(deadline) => tracing::warn!("drain deadline reached; closing the remaining connections"),
        }
        if let Some(workers) = workers {
            workers.finish().await;
        }
        self.reloader.quota().send_waiting().await;
        self.reloader.relay().stop();
        Ok(())
    }
}

/// Where the accept loops run.
enum Serving {
    /// On the calling runtime.
    Here(Vec<tokio::task::JoinHandle<()>>),
    Workers(workers::Workers),
}

impl Serving {
    /// Starts the accept loops; a worker thread (or its runtime) that cannot start is an
    /// error lingo stops with, before it serves anything.
    fn start(workers: usize, accepting: Accepting) -> Result<Serving, StartError> {
        if workers > 0 {
            let workers = workers::spawn(workers, accepting).map_err(StartError::Workers)?;
            return Ok(Serving::Workers(workers));
        }
        Ok(Serving::Here(accepting.spawn_loops()))
    }

    /// Waits for the accept loops on this runtime to return; hands back the workers, which
    /// serve their connections until told to finish.
    async fn stopped_accepting(self) -> Option<workers::Workers> {
        match self {
            Serving::Here(tasks) => {
                for task in tasks {
                    let _ = task.await;
                }
                None
            }
            Serving::Workers(workers) => Some(workers),
        }
    }
}

/// Accepts on `listener` until `stop` turns; with a `balance`, a connection to be served
/// goes to another worker when that one serves fewer (one being refused stays here).
pub(super) async fn accept_loop(
    listener: TcpListener,
    index: Option<usize>,
    gate: Arc<Gate>,
    reloader: Arc<Reloader>,
    drain: Arc<Drain>,
    mut stop: watch::Receiver<bool>,
    balance: Option<Arc<Balance>>,
) {
    let here = crate::base::worker::slot();
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(err) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!("accept failed: {err}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stop.changed() => return,
        };
        let _ = stream.set_nodelay(true);
        // The connection, counted on the worker that will serve it.
        let accepted = |worker| Accepted {
            stream,
            peer,
            listener: index,
            gate: Arc::clone(&gate),
            reloader: Arc::clone(&reloader),
            stop: stop.clone(),
            drain: drain.guard(worker),
        };
        match gate.admit_connection() {
            Admission::Serve(slot) => match &balance {
                Some(balance) => balance.place(here, slot, &drain, accepted),
                None => connection::serve(accepted(here), slot),
            },
            Admission::Refuse(slot) => {
                drop(tokio::spawn(connection::refuse(accepted(here), slot)));
            }
            Admission::Drop => continue,
        }
    }
}

/// Runs lingo on a route table until SIGTERM or SIGINT, then drains.
pub async fn serve(config: &Path) -> Result<(), StartError> {
    let workers = workers::count();
    // Before the table is loaded: its upstream pools get one slot per worker.
    crate::base::worker::set_workers(workers);
    let server = Server::bind(config).await?;
    server.run_on(workers, shutdown_signal()).await
}

/// Completes on the first SIGTERM or SIGINT (Ctrl-C): lingo's shutdown, and `lingo mock`'s.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => tracing::info!("SIGTERM received"),
                    _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT received"),
                }
            }
            Err(err) => {
                tracing::warn!("cannot listen for SIGTERM: {err}");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}
