//! The connection for the HTTP version a client speaks, set up from the table's limits:
//! lingo's own for HTTP/1.1 (`h1`), hyper's for HTTP/2.
//!
//! lingo knows the version before a byte is read (`sniff`), so it does not use hyper-util's
//! auto builder, whose upgradeable connection reads the first 24 bytes itself to look for
//! HTTP/2's preface and hands them back as a prefix (a read more per connection, and with
//! hyper's HTTP/1.1 reader a read buffer doubled for the connection's life).

use std::error::Error as StdError;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use hyper::body::{Body, Incoming};
use hyper::rt::{Read, Write};
use hyper::server::conn::http2;
use hyper::service::HttpService;
use hyper_util::rt::TokioTimer;
use tokio::io::{AsyncRead, AsyncWrite};

use super::h1;
use crate::base::clock::Ticking;
use crate::table::Limits;

/// The part of the table's limits that the connection enforces itself. Small and `Copy`: a
/// connection's task holds it until the version is known, and hyper's (larger) builders are
/// made then and dropped once the connection is made.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    max_headers: usize,
    max_buf_size: usize,
    max_header_list_size: u32,
    body_timeout: Duration,
}

/// A connection that can be asked to finish the response in progress and close (HTTP/1.1:
/// close after it; HTTP/2: GOAWAY).
pub trait Graceful: Future {
    fn close_gracefully(self: Pin<&mut Self>);
}

type BoxError = Box<dyn StdError + Send + Sync>;

// === impl Settings ===

impl Settings {
    /// The connection's own header limits are a looser backstop (twice the table's) so that requests
    /// just over the table's limits reach `limits::check_headers` and are refused in the
    /// caller's dialect.
    pub fn new(limits: &Limits) -> Self {
        let header_bytes = usize::try_from(limits.max_header_bytes).unwrap_or(usize::MAX);
        Settings {
            max_headers: limits.max_headers.saturating_mul(2),
            max_buf_size: header_bytes.saturating_mul(2).max(8192),
            max_header_list_size: u32::try_from(header_bytes.saturating_mul(2)).unwrap_or(u32::MAX),
            body_timeout: limits.body_timeout,
        }
    }

    /// An HTTP/1.1 connection (lingo's own, see `h1`), with upgrades. `header_timeout` is
    /// timed by the connection's `Activity` (`limits::activity`).
    pub fn http1<I, S, F>(
        self,
        io: I,
        service: S,
    ) -> h1::Connection<impl Future<Output = Result<(), BoxError>>>
    where
        I: AsyncRead + AsyncWrite + Send + Unpin + 'static,
        S: FnMut(crate::http::message::Request) -> F,
        F: Future<Output = crate::http::message::Response>,
    {
        let limits = h1::Limits {
            max_fields: self.max_headers,
            max_head: self.max_buf_size,
            body_timeout: self.body_timeout,
        };
        h1::connection(io, service, limits)
    }

    /// An HTTP/2 connection. Dead peers are found by pings; idle live ones by the idle timer.
    pub fn http2<I, S, B>(self, io: I, service: S) -> http2::Connection<I, S, Streams>
    where
        S: HttpService<Incoming, ResBody = B>,
        S::Error: Into<BoxError>,
        I: Read + Write + Unpin,
        B: Body + 'static,
        B::Error: Into<BoxError>,
        Streams: hyper::rt::bounds::Http2ServerConnExec<S::Future, B>,
    {
        http2::Builder::new(Streams)
            .timer(TokioTimer::new())
            .max_header_list_size(self.max_header_list_size)
            .keep_alive_interval(Duration::from_secs(30))
            .keep_alive_timeout(Duration::from_secs(20))
            .serve_connection(io, service)
    }
}

/// Spawns an HTTP/2 connection's streams, each a task whose polls share one reading of the
/// clock (`base::clock`), as an HTTP/1.1 connection's task's do.
#[derive(Clone, Copy, Debug)]
pub struct Streams;

impl<F> hyper::rt::Executor<F> for Streams
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, fut: F) {
        drop(tokio::spawn(Ticking::new(fut)));
    }
}

// === impl Graceful ===

impl<F: Future<Output = Result<(), BoxError>>> Graceful for h1::Connection<F> {
    fn close_gracefully(self: Pin<&mut Self>) {
        h1::Connection::close_gracefully(self);
    }
}

impl<I, S, B> Graceful for http2::Connection<I, S, Streams>
where
    S: HttpService<Incoming, ResBody = B>,
    S::Error: Into<BoxError>,
    I: Read + Write + Unpin,
    B: Body + 'static,
    B::Error: Into<BoxError>,
    Streams: hyper::rt::bounds::Http2ServerConnExec<S::Future, B>,
{
    fn close_gracefully(self: Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}
