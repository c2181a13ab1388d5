//! Listeners, the accept loop and graceful shutdown.
//!
//! Each listener accepts plain TCP or TLS (rustls; the certificate is taken from the *current*
//! table for every new connection, so a reloaded certificate applies without a restart) and
//! serves HTTP/1.1 and HTTP/2 through hyper-util's auto builder, with upgrades. Shutdown stops
//! accepting, lets requests in flight finish up to the drain deadline, then returns.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::config::ConfigErrors;
use crate::reload::{Reloader, Triggers};
use crate::service::{self, ConnInfo};

/// Longest a client may take to send its request headers (slow-loris guard).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest a TLS handshake may take.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

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
}

/// A bound, not yet serving, lingo.
pub struct Server {
    reloader: Arc<Reloader>,
    triggers: Triggers,
    listeners: Vec<(usize, TcpListener)>,
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
        for (index, listener) in snapshot.table.listeners.iter().enumerate() {
            let bound =
                TcpListener::bind(listener.addr)
                    .await
                    .map_err(|source| StartError::Bind {
                        addr: listener.addr,
                        source,
                    })?;
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

    /// Serves until `shutdown` completes, then drains.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let watch_task = tokio::spawn(Arc::clone(&self.reloader).watch(self.triggers));
        let graceful = Arc::new(GracefulShutdown::new());
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut accept_tasks = Vec::new();
        for (index, listener) in self.listeners {
            if let Ok(addr) = listener.local_addr() {
                tracing::info!("listening on {addr}");
            }
            let reloader = Arc::clone(&self.reloader);
            accept_tasks.push(tokio::spawn(accept_loop(
                listener,
                index,
                reloader,
                Arc::clone(&graceful),
                stop_rx.clone(),
            )));
        }
        shutdown.await;
        let drain = self.reloader.snapshot().table.limits.drain;
        tracing::info!(
            "shutting down: no new connections; draining for up to {}",
            crate::error::humanize(drain)
        );
        let _ = stop_tx.send(true);
        for task in accept_tasks {
            let _ = task.await;
        }
        watch_task.abort();
        // The accept loops held the only other references, and they have ended.
        if let Ok(graceful) = Arc::try_unwrap(graceful) {
            tokio::select! {
                () = graceful.shutdown() => tracing::info!("all connections drained"),
                () = tokio::time::sleep(drain) => tracing::warn!("drain deadline reached; closing the remaining connections"),
            }
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    index: usize,
    reloader: Arc<Reloader>,
    graceful: Arc<GracefulShutdown>,
    mut stop: watch::Receiver<bool>,
) {
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
        let reloader = Arc::clone(&reloader);
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            serve_connection(stream, peer, index, reloader, watcher).await;
        });
    }
}

/// Runs one connection, TLS or not, to its end.
async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    index: usize,
    reloader: Arc<Reloader>,
    watcher: Watcher,
) {
    let tls = reloader
        .snapshot()
        .table
        .listeners
        .get(index)
        .and_then(|l| l.tls.clone());
    let conn = Arc::new(ConnInfo {
        peer,
        listener: index,
        tls: tls.is_some(),
    });
    let service =
        service_fn(move |req| service::handle(Arc::clone(&reloader), Arc::clone(&conn), req));
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    let result = match tls {
        None => {
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
            watcher.watch(conn.into_owned()).await
        }
        Some(config) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(config);
            let stream =
                match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                    Ok(Ok(stream)) => stream,
                    Ok(Err(err)) => return tracing::debug!(%peer, "TLS handshake failed: {err}"),
                    Err(_) => return tracing::debug!(%peer, "TLS handshake timed out"),
                };
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
            watcher.watch(conn.into_owned()).await
        }
    };
    if let Err(err) = result {
        tracing::debug!(%peer, "connection ended: {err}");
    }
}

/// Runs lingo on a route table until SIGTERM or SIGINT, then drains.
pub async fn serve(config: &Path) -> Result<(), StartError> {
    let server = Server::bind(config).await?;
    server.run(shutdown_signal()).await;
    Ok(())
}

/// Completes on the first SIGTERM or SIGINT (Ctrl-C).
async fn shutdown_signal() {
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
