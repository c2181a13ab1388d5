//! hyper's connection for the HTTP version a client speaks, set up from the table's limits.
//!
//! lingo knows the version before hyper reads a byte (`sniff`), so it drives hyper's own
//! HTTP/1.1 and HTTP/2 connections, not hyper-util's auto builder. That builder's upgradeable
//! connection (which WebSocket tunnels need) ignores `http1_only`: it reads the first 24 bytes
//! itself to look for HTTP/2's preface and hands them back as a prefix, and hyper's next read
//! then doubles its 8 KiB read buffer to make room beside them, for the connection's life
//! (heaptrack: 16 KiB of an HTTP/1.1 client stream's 44). It also costs a read per
//! connection.

use std::error::Error as StdError;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use hyper::body::{Body, Incoming};
use hyper::rt::{Read, Write};
use hyper::server::conn::{http1, http2};
use hyper::service::HttpService;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use crate::table::Limits;

/// The part of the table's limits that hyper enforces itself. Small and `Copy`: a connection's
/// task holds it until the version is known, and hyper's builders (an HTTP/2 one is about
/// 300 bytes) are made then and dropped once the connection is made.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    max_headers: usize,
    max_buf_size: usize,
    max_header_list_size: u32,
}

/// A hyper connection that can be asked to finish the answer in progress and close (HTTP/1.1:
/// close after it; HTTP/2: GOAWAY).
pub trait Graceful: Future<Output = hyper::Result<()>> {
    fn close_gracefully(self: Pin<&mut Self>);
}

type BoxError = Box<dyn StdError + Send + Sync>;

// === impl Settings ===

impl Settings {
    /// hyper's own header limits are a looser backstop (twice the table's) so that requests
    /// just over the table's limits reach `limits::check_headers` and are refused in the
    /// caller's dialect.
    pub fn new(limits: &Limits) -> Self {
        let header_bytes = usize::try_from(limits.max_header_bytes).unwrap_or(usize::MAX);
        Settings {
            max_headers: limits.max_headers.saturating_mul(2),
            max_buf_size: header_bytes.saturating_mul(2).max(8192),
            max_header_list_size: u32::try_from(header_bytes.saturating_mul(2)).unwrap_or(u32::MAX),
        }
    }

    /// An HTTP/1.1 connection, with upgrades (WebSocket tunnels). `header_timeout` is timed
    /// by the connection's `Activity` (`limits::activity`), not by hyper.
    pub fn http1<I, S, B>(self, io: I, service: S) -> http1::UpgradeableConnection<I, S>
    where
        S: HttpService<Incoming, ResBody = B>,
        S::Error: Into<BoxError>,
        I: Read + Write + Unpin + Send + 'static,
        B: Body + 'static,
        B::Error: Into<BoxError>,
    {
        http1::Builder::new()
            .header_read_timeout(None)
            .max_headers(self.max_headers)
            .max_buf_size(self.max_buf_size)
            .serve_connection(io, service)
            .with_upgrades()
    }

    /// An HTTP/2 connection. Dead peers are found by pings; idle live ones by the idle timer.
    pub fn http2<I, S, B>(self, io: I, service: S) -> http2::Connection<I, S, TokioExecutor>
    where
        S: HttpService<Incoming, ResBody = B>,
        S::Error: Into<BoxError>,
        I: Read + Write + Unpin,
        B: Body + 'static,
        B::Error: Into<BoxError>,
        TokioExecutor: hyper::rt::bounds::Http2ServerConnExec<S::Future, B>,
    {
        http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .max_header_list_size(self.max_header_list_size)
            .keep_alive_interval(Duration::from_secs(30))
            .keep_alive_timeout(Duration::from_secs(20))
            .serve_connection(io, service)
    }
}

// === impl Graceful ===

impl<I, S, B> Graceful for http1::UpgradeableConnection<I, S>
where
    S: HttpService<Incoming, ResBody = B>,
    S::Error: Into<BoxError>,
    I: Read + Write + Unpin + Send + 'static,
    B: Body + 'static,
    B::Error: Into<BoxError>,
{
    fn close_gracefully(self: Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

impl<I, S, B> Graceful for http2::Connection<I, S, TokioExecutor>
where
    S: HttpService<Incoming, ResBody = B>,
    S::Error: Into<BoxError>,
    I: Read + Write + Unpin,
    B: Body + 'static,
    B::Error: Into<BoxError>,
    TokioExecutor: hyper::rt::bounds::Http2ServerConnExec<S::Future, B>,
{
    fn close_gracefully(self: Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::path::Path;
    use std::sync::{Arc, Mutex};
    use std::task::{Context, Poll};

    use http_body_util::Empty;
    use hyper::Response;
    use hyper::body::Bytes;
    use hyper::rt::ReadBufCursor;
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    use super::*;

    /// A connection that notes how much room each of hyper's reads offers.
    struct Noted {
        io: TokioIo<DuplexStream>,
        offered: Arc<Mutex<Vec<usize>>>,
    }

    impl Read for Noted {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: ReadBufCursor<'_>,
        ) -> Poll<io::Result<()>> {
            self.offered.lock().unwrap().push(buf.remaining());
            Pin::new(&mut self.io).poll_read(cx, buf)
        }
    }

    impl Write for Noted {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            Pin::new(&mut self.io).poll_write(cx, buf)
        }
        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.io).poll_flush(cx)
        }
        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.io).poll_shutdown(cx)
        }
    }

    /// The regression this module exists for: hyper-util's upgradeable auto connection first
    /// read 24 bytes alone, and the read after it doubled hyper's buffer for good.
    #[tokio::test]
    async fn an_http1_connection_reads_its_first_request_whole_into_one_buffer() {
        let text =
            "listen:\n  - addr: 127.0.0.1:0\nupstreams:\n  m: { mock: {}, speaks: native }\n";
        let table = crate::config::load_str(text, Path::new("proxy.yaml")).unwrap();
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        let offered = Arc::new(Mutex::new(Vec::new()));
        let io = Noted {
            io: TokioIo::new(server),
            offered: Arc::clone(&offered),
        };
        let service = service_fn(|_req| async {
            Ok::<_, std::convert::Infallible>(Response::new(Empty::<Bytes>::new()))
        });
        let conn = Settings::new(&table.limits).http1(io, service);
        let served = tokio::spawn(conn);
        let request = "GET /healthz HTTP/1.1\r\nhost: lingo\r\nconnection: close\r\n\r\n";
        client.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        client.read_to_string(&mut answer).await.unwrap();
        served.await.unwrap().unwrap();
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        let offered = offered.lock().unwrap().clone();
        assert!(
            offered.first().is_some_and(|&room| room >= 8192),
            "the first read must offer hyper's whole buffer: {offered:?}"
        );
        assert!(
            offered.iter().all(|&room| room <= 8192),
            "the read buffer grew: {offered:?}"
        );
    }
}
