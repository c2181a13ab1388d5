//! Test harness: lingo and fake upstreams on ephemeral loopback ports, and a small client.
//!
//! Everything talks over real sockets. `Lingo::start` runs the real server in-process from a
//! route table written to a temporary directory; `Backend::start` runs a scripted upstream
//! that records what it received.

#![allow(dead_code)]

pub mod assert;
pub mod hyper_headers;
pub mod pki;
pub mod receiver;
pub mod recording;
pub mod redis_server;
pub mod relay;

// Not every test file uses every helper.
#[allow(unused_imports)]
pub use assert::*;
#[allow(unused_imports)]
pub use hyper_headers::HyperHeaders;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{HeaderMap, Method, Request, Response, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use lingo::http::body::Body;
use lingo::reload::Reloader;
use lingo::server::Server;

/// A running in-process lingo.
pub struct Lingo {
    pub addr: SocketAddr,
    /// Every bound address: the table's listeners in order, then the admin listener.
    pub addrs: Vec<SocketAddr>,
    pub reloader: Arc<Reloader>,
    pub dir: tempfile::TempDir,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Lingo {
    /// Starts lingo on `yaml` (which should listen on `127.0.0.1:0`), serving on the test's
    /// runtime.
    pub async fn start(yaml: &str) -> Lingo {
        Lingo::start_on(yaml, 0).await
    }

    /// The same, serving on `workers` threads of their own, as the binary does.
    pub async fn start_on(yaml: &str, workers: usize) -> Lingo {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("proxy.yaml");
        std::fs::write(&path, yaml).unwrap();
        let server = Server::bind(&path)
            .await
            .unwrap_or_else(|e| panic!("lingo failed to start:\n{e}"));
        let addrs = server.local_addrs();
        let addr = addrs[0];
        let reloader = server.reloader();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stopped.await;
            };
            if let Err(e) = server.run_on(workers, shutdown).await {
                panic!("lingo stopped serving: {e}");
            }
        });
        Lingo {
            addr,
            addrs,
            reloader,
            dir,
            stop: Some(stop),
            task,
        }
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("proxy.yaml")
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Stops accepting, drains, and waits for the server to return.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }
}

/// What a fake upstream saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub version: hyper::Version,
    pub method: Method,
    pub uri: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// A fake upstream running a handler per request, recording each request.
pub struct Backend {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

type Handler = Arc<
    dyn Fn(Seen) -> std::pin::Pin<Box<dyn Future<Output = Response<Body>> + Send>> + Send + Sync,
>;

impl Backend {
    /// Starts a backend whose handler gets the whole request (body read) and responses.
    pub async fn start<F, Fut>(handler: F) -> Backend
    where
        F: Fn(Seen) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<Body>> + Send + 'static,
    {
        Backend::start_with(None, handler).await
    }

    /// The same over TLS with `config` (HTTP/1.1 and HTTP/2 by ALPN as the config offers).
    pub async fn start_tls<F, Fut>(config: Arc<rustls::ServerConfig>, handler: F) -> Backend
    where
        F: Fn(Seen) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<Body>> + Send + 'static,
    {
        Backend::start_with(Some(tokio_rustls::TlsAcceptor::from(config)), handler).await
    }

    /// Serves HTTP/1.1 and HTTP/2 (prior knowledge on plain TCP), with upgrades.
    async fn start_with<F, Fut>(tls: Option<tokio_rustls::TlsAcceptor>, handler: F) -> Backend
    where
        F: Fn(Seen) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<Body>> + Send + 'static,
    {
        let handler: Handler = Arc::new(move |seen| Box::pin(handler(seen)));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let handler = Arc::clone(&handler);
                let record = Arc::clone(&record);
                let tls = tls.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |mut req: Request<Incoming>| {
                        let handler = Arc::clone(&handler);
                        let record = Arc::clone(&record);
                        async move {
                            let headers = std::mem::take(req.fields_mut());
                            let (parts, body) = req.into_parts();
                            let body = body
                                .collect()
                                .await
                                .map(|c| c.to_bytes())
                                .unwrap_or_default();
                            let seen = Seen {
                                version: parts.version,
                                method: parts.method,
                                uri: parts.uri.to_string(),
                                headers,
                                body,
                            };
                            record.lock().unwrap().push(seen.clone());
                            Ok::<_, Infallible>(handler(seen).await)
                        }
                    });
                    let builder = auto::Builder::new(TokioExecutor::new());
                    let _ = match tls {
                        None => {
                            builder
                                .serve_connection_with_upgrades(TokioIo::new(stream), service)
                                .await
                        }
                        Some(acceptor) => {
                            let Ok(stream) = acceptor.accept(stream).await else {
                                return;
                            };
                            builder
                                .serve_connection_with_upgrades(TokioIo::new(stream), service)
                                .await
                        }
                    };
                });
            }
        });
        Backend { addr, seen }
    }

    /// A backend responding to every request with `status` and a JSON `body`.
    pub async fn json(status: u16, body: &'static str) -> Backend {
        Backend::start(move |_| async move { json_response(status, body) }).await
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    pub fn last(&self) -> Seen {
        self.requests().pop().expect("the backend saw no request")
    }
}

pub fn json_response(status: u16, body: &str) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::full(Bytes::copy_from_slice(body.as_bytes())))
        .unwrap()
}

/// An address nothing listens on: a socket bound to it that never listens (a connection is
/// refused), kept bound for the rest of the test process, so that no other test's listener,
/// running in parallel, can be given the same port (a port bound and released could be, and
/// a test expecting a refusal would then wait on whatever listens there).
pub async fn closed_port() -> SocketAddr {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = socket.local_addr().unwrap();
    std::mem::forget(socket);
    addr
}

/// A plain-HTTP client for tests.
pub fn client() -> Client<HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new()).build_http()
}

/// A finished response.
#[derive(Debug)]
pub struct WholeResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl WholeResponse {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// Sends a request and reads the whole response.
pub async fn send(req: Request<Full<Bytes>>) -> WholeResponse {
    let mut response = client().request(req).await.expect("request failed");
    let headers = std::mem::take(response.fields_mut());
    let (parts, body) = response.into_parts();
    let body = body.collect().await.expect("body failed").to_bytes();
    WholeResponse {
        status: parts.status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

pub async fn get(url: &str) -> WholeResponse {
    send(request(Method::GET, url, &[], "")).await
}

pub fn request(
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Request<Full<Bytes>> {
    let mut builder = Request::builder().method(method).uri(url);
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    builder
        .body(Full::new(Bytes::copy_from_slice(body.as_bytes())))
        .unwrap()
}

/// The smallest chat completion request (model `m`, one user message "hi").
pub fn chat_body(stream: bool) -> String {
    serde_json::json!({"model": "m", "stream": stream, "messages": [{"role": "user", "content": "hi"}]})
        .to_string()
}

/// [`chat_body`] posted to lingo's `/v1/chat/completions`, without a client key.
pub async fn chat(lingo: &Lingo, stream: bool) -> WholeResponse {
    let url = lingo.url("/v1/chat/completions");
    send(request(Method::POST, &url, &[], &chat_body(stream))).await
}

/// A route table listening on an ephemeral port, with `rest` appended.
pub fn table(rest: &str) -> String {
    format!("listen:\n  - addr: 127.0.0.1:0\n{rest}")
}

/// A backend whose responses stream exactly the chunks the test sends on the returned
/// channel, when it sends them (NDJSON content type); the response ends when the sender is
/// dropped. Used to prove that lingo forwards each chunk before the next exists.
pub async fn scripted_backend() -> (Backend, tokio::sync::mpsc::UnboundedSender<Bytes>) {
    use http_body_util::channel::Channel;
    let (lines_tx, lines_rx) = tokio::sync::mpsc::unbounded_channel::<Bytes>();
    let lines_rx = Arc::new(tokio::sync::Mutex::new(lines_rx));
    let backend = Backend::start(move |_| {
        let lines_rx = Arc::clone(&lines_rx);
        async move {
            let (mut tx, body) = Channel::<Bytes, lingo::http::body::BoxError>::new(1);
            tokio::spawn(async move {
                let mut rx = lines_rx.lock().await;
                while let Some(line) = rx.recv().await {
                    if tx.send_data(line).await.is_err() {
                        break;
                    }
                }
            });
            Response::builder()
                .header("content-type", "application/x-ndjson")
                .body(Body::new(body))
                .unwrap()
        }
    })
    .await;
    (backend, lines_tx)
}

/// Whether a test that needs an outside tool (an SDK, an interpreter) can run. When it cannot,
/// it says so on the test's real stderr, which `cargo test` shows without `--nocapture` (a skip
/// must not look like a pass), and under `CI` it fails: CI is where the tool must be there.
pub fn can_run(what: &str, how_to_get_it: &str) -> bool {
    use std::io::Write;
    let ci = std::env::var_os("CI").is_some();
    assert!(!ci, "{what} is missing and CI is set: {how_to_get_it}");
    // Straight to the process's stderr: the test harness captures `eprintln!`, not this.
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: {what} is not available ({how_to_get_it}); this test checked nothing"
    );
    false
}

/// The value of one sample in a `/metrics` text (`name{labels}` as written there).
pub fn metric(text: &str, name_and_labels: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(name_and_labels)?.strip_prefix(' '))
        .map(|value| value.parse().unwrap())
}

/// The first request's duration and lingo's overhead on `route` (`route="...",upstream="..."`)
/// once it is recorded: the sums of the two histograms, in seconds.
pub async fn one_request_times(lingo: &Lingo, route: &str) -> (f64, f64) {
    let count = format!("lingo_request_duration_seconds_count{{{route}}}");
    let text = metrics_when(lingo, |text| metric(text, &count) == Some(1.0)).await;
    let sum = |name: &str| metric(&text, &format!("lingo_{name}_seconds_sum{{{route}}}")).unwrap();
    (sum("request_duration"), sum("overhead"))
}

/// `/metrics` once `ready` holds for it (a response is recorded on the server a moment after
/// the client has read its end); fails the test if it never does.
pub async fn metrics_when(lingo: &Lingo, ready: impl Fn(&str) -> bool) -> String {
    for _ in 0..500 {
        let text = get(&lingo.url("/metrics")).await.body;
        if ready(&text) {
            return text;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("metrics never reached the expected state");
}

/// Writes `request` on `stream` and reads until the end of the response's head (within 20 s),
/// which it returns; what follows the head stays unread.
pub async fn head_of(stream: &mut tokio::net::TcpStream, request: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let read = tokio::time::timeout(std::time::Duration::from_secs(20), stream.read(&mut buf));
        let n = read.await.expect("a response").unwrap();
        assert!(n > 0, "closed: {}", String::from_utf8_lossy(&head));
        head.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// The address a log line says lingo (not its admin listener) listens on, however the line
/// is formatted (see [`listener_in`]).
pub fn listening_on(line: &str) -> Option<SocketAddr> {
    listener_in(line).and_then(|(addr, admin)| (!admin).then_some(addr))
}

/// The address a log line says a listener of lingo's is on, and whether it is the admin
/// listener, however the line is formatted: the address is the text after `listening on `,
/// up to the first character an address does not have.
pub fn listener_in(line: &str) -> Option<(SocketAddr, bool)> {
    let rest = line.split("listening on ").nth(1)?;
    let end = rest
        .find(|c: char| !(c.is_ascii_hexdigit() || matches!(c, '.' | ':' | '[' | ']')))
        .unwrap_or(rest.len());
    let admin = rest[end..]
        .trim_start_matches('"')
        .trim_start()
        .starts_with("(admin)");
    Some((rest[..end].parse().ok()?, admin))
}

/// lingo's mock on a port of its own, with `knobs` (the mock's `key=value,...`): its URL.
pub async fn mock_with(knobs: &str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let mut defaults = lingo::mock::knobs::Knobs::from_spec(&lingo::table::MockSpec::default());
    defaults.apply(knobs).unwrap();
    tokio::spawn(lingo::mock::serve_on(listener, defaults));
    url
}
