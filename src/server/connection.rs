//! One accepted connection, from TLS handshake to close.
//!
//! A connection is served until the client closes it, it has been idle (no request in
//! flight) for the idle timeout, or shutdown begins; the last two close it gracefully (HTTP/2
//! GOAWAY, HTTP/1.1 close after the response in progress). One whose request head is slower
//! than the header timeout is dropped (see `limits::activity`). Every open connection holds a
//! [`DrainGuard`] so that shutdown can wait for the last one, and so that new ones go to the
//! worker serving fewest (`balance`) and `/metrics` can say where they are.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::header::{CONNECTION, HeaderValue};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use prometheus_client::metrics::gauge::Gauge;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::{Notify, watch};

use super::protocol::{Graceful, Settings};
use super::sniff::{self, Speaks};
use super::watched::Watched;
use crate::base::clock::Ticking;
use crate::base::dialect;
use crate::http::body::{Body, BoxError};
use crate::http::gated::Gated;
use crate::http::message::Request;
use crate::limits::{Activity, ConnectionSlot, Gate, Quiet, Slot, Timeouts};
use crate::observe::metrics::Metrics;
use crate::proxy::exchange::ConnInfo;
use crate::proxy::pipeline;
use crate::proxy::respond;
use crate::reload::Reloader;

/// Longest a TLS handshake may take.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest an over-the-limit connection is kept while it is told to come back later.
const REFUSE_TIMEOUT: Duration = Duration::from_secs(5);

/// Counts open connections on each serving thread: so that shutdown can wait for the last to
/// finish, a new one goes where fewest are (`balance`) and `/metrics` shows where they are.
#[derive(Debug)]
pub struct Drain {
    closed: Notify,
    /// Open on each thread, by `base::worker::slot`: the metric's own series.
    on: Box<[Gauge]>,
}

/// One open connection's place in the [`Drain`] counts.
pub struct DrainGuard {
    drain: Arc<Drain>,
    worker: usize,
}

/// What a connection task is given besides its socket (a tokio one once it is on the thread
/// that serves it).
pub struct Accepted<S = TcpStream> {
    pub stream: S,
    pub peer: SocketAddr,
    /// Index in the table's `listen` list; `None` for the `admin:` listener.
    pub listener: Option<usize>,
    pub gate: Arc<Gate>,
    pub reloader: Arc<Reloader>,
    pub stop: watch::Receiver<bool>,
    pub drain: DrainGuard,
}

// === impl Drain ===

impl Drain {
    /// Counts for `workers` worker threads (slots 1 to `workers`), or for slot 0 when there
    /// are none; a slot not serving has a count `/metrics` does not show.
    pub fn new(workers: usize, metrics: &Metrics) -> Drain {
        // Slot 0 serves only when there are no workers; with workers it is the control
        // runtime's, which serves nothing.
        let serving = |slot| (slot > 0) == (workers > 0);
        let on = (0..=workers).map(|slot| match serving(slot) {
            true => metrics.connections_on(slot),
            false => Gauge::default(),
        });
        Drain {
            closed: Notify::new(),
            on: on.collect(),
        }
    }

    /// A connection opens, to be served on thread `worker` (its slot).
    pub fn guard(self: &Arc<Self>, worker: usize) -> DrainGuard {
        debug_assert!(worker < self.on.len(), "no count for worker {worker}");
        let worker = worker.min(self.on.len() - 1);
        self.on[worker].inc();
        DrainGuard {
            drain: Arc::clone(self),
            worker,
        }
    }

    /// How many connections are open on thread `worker`.
    pub fn open_on(&self, worker: usize) -> usize {
        let open = self.on.get(worker).map_or(0, Gauge::get);
        usize::try_from(open).unwrap_or(0)
    }

    /// Completes when no connection is open.
    pub async fn wait(&self) {
        loop {
            let closed = self.closed.notified();
            // A connection moved to another count gets its new place before it leaves the
            // old one, so the counts never all read 0 while one is open.
            if self.on.iter().all(|open| open.get() == 0) {
                return;
            }
            closed.await;
        }
    }
}

impl Drop for DrainGuard {
    fn drop(&mut self) {
        self.drain.on[self.worker].dec();
        self.drain.closed.notify_waiters();
    }
}

// === impl Accepted ===

impl<S> Accepted<S> {
    /// The same connection over another kind of socket (a tokio one moved out of this
    /// thread's event loop, or into it).
    pub fn map_stream<T>(
        self,
        f: impl FnOnce(S) -> std::io::Result<T>,
    ) -> std::io::Result<Accepted<T>> {
        Ok(Accepted {
            stream: f(self.stream)?,
            peer: self.peer,
            listener: self.listener,
            gate: self.gate,
            reloader: self.reloader,
            stop: self.stop,
            drain: self.drain,
        })
    }
}

/// Serves one connection, TLS or not, to its end, on a task of its own. `slot` is its place
/// in the listener's connection pool, released when the task ends.
///
/// A plain and a TLS connection get tasks of different types: a task is as large as the
/// largest state its future can be in, for the connection's whole life, and a TLS
/// connection's state is the larger.
pub fn serve(accepted: Accepted, slot: ConnectionSlot) {
    let Accepted {
        stream,
        peer,
        listener,
        gate,
        reloader,
        stop,
        drain,
    } = accepted;
    let snapshot = reloader.snapshot();
    let limits = snapshot.table.limits;
    let tls = listener
        .and_then(|i| snapshot.table.listeners.get(i))
        .and_then(|l| l.tls.clone());
    drop(snapshot);
    let activity = Arc::new(Activity::new());
    let conn = Arc::new(ConnInfo {
        peer,
        client_ip: HeaderValue::try_from(peer.ip().to_string()).expect("an IP is a valid header"),
        listener,
        tls: tls.is_some(),
        gate,
        activity: Arc::clone(&activity),
    });
    let session = Session {
        settings: Settings::new(&limits),
        reloader,
        conn,
        stop,
        peer,
    };
    let timeouts = Timeouts::from(&limits);
    let ended = ending(slot, drain, peer);
    // A connection's task shares one reading of the clock per poll (`base::clock`).
    let Some(config) = tls else {
        tokio::spawn(Ticking::new(async move {
            let mut session = session;
            let mut quiet = pin!(activity.quiet(timeouts));
            let Some(speaks) = first_bytes(&stream, quiet.as_mut(), &mut session.stop).await else {
                return ended(Ok(()));
            };
            let io = Watched::new(stream, Arc::clone(&activity));
            ended(session.run(speaks, io, &activity, quiet).await);
        }));
        return;
    };
    tokio::spawn(Ticking::new(async move {
        let Some(stream) = handshake(config, stream, peer).await else {
            return;
        };
        let speaks = sniff::by_alpn(stream.get_ref().1.alpn_protocol());
        let io = Watched::new(stream, Arc::clone(&activity));
        let quiet = activity.quiet(timeouts);
        ended(session.run(speaks, io, &activity, quiet).await);
    }));
}

/// What a connection's end does: its place in the pool and in the drain count is given back
/// (also when the task is dropped before), and an error is logged.
fn ending(
    slot: ConnectionSlot,
    drain: DrainGuard,
    peer: SocketAddr,
) -> impl FnOnce(Result<(), BoxError>) {
    move |result| {
        drop((slot, drain));
        if let Err(err) = result {
            tracing::debug!(%peer, "connection ended: {err}");
        }
    }
}

/// The TLS handshake, bounded by [`TLS_HANDSHAKE_TIMEOUT`]; `None` (logged) when it failed.
async fn handshake(
    config: Arc<rustls::ServerConfig>,
    stream: TcpStream,
    peer: SocketAddr,
) -> Option<tokio_rustls::server::TlsStream<TcpStream>> {
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(stream)) => Some(stream),
        Ok(Err(err)) => {
            tracing::debug!(%peer, "TLS handshake failed: {err}");
            None
        }
        Err(_) => {
            tracing::debug!(%peer, "TLS handshake timed out");
            None
        }
    }
}

/// The version a plain connection's first bytes say; `None` when it closed, failed, or sent
/// nothing within the header timeout (a new connection is waiting for its first head), or
/// shutdown began.
async fn first_bytes(
    stream: &TcpStream,
    quiet: Pin<&mut impl Future<Output = Quiet>>,
    stop: &mut watch::Receiver<bool>,
) -> Option<Speaks> {
    tokio::select! {
        speaks = sniff::peek(stream) => speaks.ok(),
        _ = quiet => None,
        _ = stop.wait_for(|stop| *stop) => None,
    }
}

/// A connection over the listener's limit: each request on it gets a 503 with
/// `Retry-After` in the dialect its path implies, and the connection is closed. On a `tls:`
/// listener the handshake comes first (a TLS client would read a plain response as garbage),
/// offering HTTP/1.1 only: an HTTP/2 connection would take any number of requests until the
/// timeout instead of closing after one response. Handshake and response together get at most
/// [`REFUSE_TIMEOUT`]. Served by hyper-util's connection (one response, then closed: what it
/// holds meanwhile does not matter).
pub async fn refuse(accepted: Accepted, _slot: Slot) {
    let Accepted {
        stream,
        gate,
        peer,
        listener,
        reloader,
        ..
    } = accepted;
    tracing::warn!(%peer, "connection refused: {}", gate.connections_full());
    let service = service_fn(move |req: hyper::Request<Incoming>| {
        let err = gate.connections_full();
        let mut response = respond::render(&err, dialect::guess(req.uri().path()));
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
        let response = response.into_hyper();
        async move { Ok::<hyper::Response<Body>, Infallible>(response) }
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .keep_alive(false)
        .timer(TokioTimer::new())
        .header_read_timeout(REFUSE_TIMEOUT);
    let tls = listener.and_then(|i| reloader.snapshot().table.listeners.get(i)?.tls.clone());
    let responding = async move {
        match tls {
            None => {
                let _ = builder
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            }
            Some(config) => {
                let mut config = (*config).clone();
                config.alpn_protocols = vec![b"http/1.1".to_vec()];
                let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
                if let Ok(stream) = acceptor.accept(stream).await {
                    let _ = builder
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                }
            }
        }
    };
    let _ = tokio::time::timeout(REFUSE_TIMEOUT, responding).await;
}

/// What serving a connection takes once the version it speaks is known.
struct Session {
    settings: Settings,
    reloader: Arc<Reloader>,
    conn: Arc<ConnInfo>,
    stop: watch::Receiver<bool>,
    peer: SocketAddr,
}

impl Session {
    /// Serves `io` in the version it speaks, to its end (see [`drive`]). An HTTP/2
    /// connection's clock stops timing heads.
    async fn run<I>(
        self,
        speaks: Speaks,
        io: I,
        activity: &Activity,
        quiet: impl Future<Output = Quiet>,
    ) -> Result<(), BoxError>
    where
        I: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    {
        let Session {
            settings,
            reloader,
            conn,
            stop,
            peer,
        } = self;
        match speaks {
            Speaks::Http1 => {
                let service =
                    move |req| pipeline::boxed(Arc::clone(&reloader), Arc::clone(&conn), req);
                let conn = pin!(settings.http1(io, service));
                drive(conn, quiet, stop, peer).await
            }
            // Boxed: an HTTP/2 connection's state is larger than an HTTP/1.1 one's, and
            // unboxed every connection's task would be the size of the larger.
            Speaks::Http2 => {
                activity.speaks_http2();
                let service = service_fn(move |req: hyper::Request<Incoming>| {
                    let req = Request::from(req.map(Body::new));
                    let response = pipeline::boxed(Arc::clone(&reloader), Arc::clone(&conn), req);
                    // hyper writes the map: raw header fields go into it.
                    async move { Ok::<_, Infallible>(response.await.into_hyper()) }
                });
                let serving = async move {
                    let conn = pin!(settings.http2(TokioIo::new(io), service));
                    drive(conn, quiet, stop, peer).await
                };
                Box::pin(serving).await.map_err(Into::into)
            }
        }
    }
}

/// What ends a connection besides its client.
enum Ending {
    Quiet(Quiet),
    Shutdown,
}

/// Polls a connection to its end. When it has been idle too long, or shutdown begins, asks
/// it to close gracefully and keeps polling so that the response in progress is finished; when
/// a request head is too slow to arrive, drops it (nothing is in flight on it). The timer
/// and the shutdown signal are [`Gated`]: most wakes of the task are for the connection.
///
/// The connection comes pinned by the caller: taken by value and pinned here, it would be
/// held twice in the task's state (as the argument and as the pinned local).
async fn drive<C, E>(
    mut conn: Pin<&mut C>,
    quiet: impl Future<Output = Quiet>,
    mut stop: watch::Receiver<bool>,
    peer: SocketAddr,
) -> Result<(), E>
where
    C: Graceful<Output = Result<(), E>>,
{
    let ending = async move {
        tokio::select! {
            quiet = quiet => Ending::Quiet(quiet),
            _ = stop.wait_for(|stop| *stop) => Ending::Shutdown,
        }
    };
    let mut ending = pin!(Gated::new(ending));
    let mut closing = false;
    loop {
        tokio::select! {
            biased;
            result = conn.as_mut() => return result,
            ending = &mut ending, if !closing => {
                if let Ending::Quiet(Quiet::Head) = ending {
                    tracing::debug!(%peer, "closed: a request head took longer than header_timeout");
                    return Ok(());
                }
                closing = true;
                conn.as_mut().close_gracefully();
            }
        }
    }
}
