//! Talking to upstreams: one pooled client per upstream, built with the table.
//!
//! http and https upstreams share one connector type (hyper-rustls over hyper-util's
//! `HttpConnector`, with the upstream's rustls config from the table). HTTP/2 is negotiated by
//! ALPN, or forced (`http2: true`, prior knowledge on plain http). A plain `http://` upstream
//! spoken to in HTTP/1.1 (the sidecar's case) gets lingo's own client (`h1`) and pool
//! (`pool`) instead of hyper-util's client. A second, HTTP/1.1-only connector (hyper's)
//! serves WebSocket upgrades, which cannot ride on HTTP/2.

pub mod backends;
mod connect;
// Its client is re-exported hidden (below) for the fuzz target only: its documentation is
// private documentation, where links to the module's private parts are what they should be.
#[allow(rustdoc::private_intra_doc_links)]
mod h1;
pub mod headers;
pub mod health;
mod pick;
mod pins;
mod pool;
pub mod probe;
pub mod report;
mod unreached;
mod upload;

use std::error::Error as StdError;
use std::pin::Pin;
use std::time::Duration;

use futures_util::FutureExt;
use hyper::Uri;
use hyper::http::uri::{PathAndQuery, Scheme};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use crate::base::{clock, pinned, worker};
use crate::error::{ProxyError, TimeoutKind};
use crate::http::body::{Body, BoxError};
use crate::http::idle::{BodyTimeout, Idle, IdleTimeout};
use crate::http::message::{Request, Response};
use crate::mock::{self, knobs::Knobs};
use crate::table::{Backend, Target, Upstream};
use headers::Forwarding;

/// lingo's HTTP/1.1 client, reachable only for the differential fuzz target (`fuzz/`), which
/// reads the same responses through it and through hyper's.
#[doc(hidden)]
pub use h1::{Conn as H1Conn, Home as H1Home, Outgoing as H1Outgoing};

/// Timed as a whole: the connect timeout covers name lookup, TCP and the TLS handshake.
pub type Connector = connect::Timed<HttpsConnector<HttpConnector>>;

/// The HTTP/2 connection-level receive window towards an upstream. One connection carries
/// every stream to that upstream, and a model server sends many tiny DATA frames (a token
/// each); h2 closes a connection whose small frames, received but not yet read, outgrow half
/// this window ("too_many_data_frames"). When clients read slowly, thousands of streams hold
/// a few such frames each: 32 MiB lets about 64,000 wait (at most 16 MiB of bookkeeping).
const H2_CONNECTION_WINDOW: u32 = 32 * 1024 * 1024;

/// The live side of an [`Upstream`]: its connection pool, or the in-process mock.
pub enum UpstreamClient {
    Http {
        pool: Pool,
        /// HTTP/1.1 only, for WebSocket upgrades.
        ws_connector: Connector,
    },
    Mock(Knobs),
}

/// Pooled connections, per serving thread (`base::worker`): a pooled connection is driven by
/// the runtime that opened it, so a request only takes connections of its own.
pub enum Pool {
    /// Plain `http://`, HTTP/1.1: lingo's own pool.
    Lean(pool::Http1Pool),
    /// TLS (HTTP/2 by ALPN) or HTTP/2 by prior knowledge: hyper-util's client, one per thread.
    Legacy(Box<[Client<Connector, Body>]>),
}

// === impl UpstreamClient ===

impl UpstreamClient {
    /// The client of one of `upstream`'s backends.
    pub fn new(upstream: &Upstream, backend: &Backend) -> Self {
        if let Target::Mock(spec) = &backend.target {
            return UpstreamClient::Mock(Knobs::from_spec(spec).speaking(upstream.speaks));
        }
        let connect = upstream.timeouts.connect;
        let tls = || (*upstream.tls).clone();
        let builder = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls())
            .https_or_http();
        let pooled = if upstream.http2 {
            builder
                .enable_http2()
                .wrap_connector(http_connector(connect))
        } else {
            builder
                .enable_all_versions()
                .wrap_connector(http_connector(connect))
        };
        let ws_connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls())
            .https_or_http()
            .enable_http1()
            .wrap_connector(http_connector(connect));
        let (pooled, ws_connector) = (
            connect::Timed::new(pooled, connect),
            connect::Timed::new(ws_connector, connect),
        );
        let pool = match &backend.target {
            Target::Url(uri) if is_lean(upstream, backend) => {
                Pool::Lean(pool::Http1Pool::new(uri, connect))
            }
            _ => Pool::Legacy(legacy_clients(upstream, &pooled)),
        };
        UpstreamClient::Http { pool, ws_connector }
    }

    /// Whether this client serves `upstream` as one made for it would: only lingo's own pool
    /// (a plain `http://` upstream, HTTP/1.1) to the same address under the same connect
    /// limit, whose connections a reload then keeps (see `runtime::Snapshot::new`).
    /// hyper-util's clients are made again: what their TLS was made from (a CA file read
    /// again) is not compared here.
    pub fn serves_alike(&self, upstream: &Upstream, backend: &Backend) -> bool {
        match (self, &backend.target) {
            (
                UpstreamClient::Http {
                    pool: Pool::Lean(pool),
                    ..
                },
                Target::Url(uri),
            ) => is_lean(upstream, backend) && pool.serves(uri, upstream.timeouts.connect),
            _ => false,
        }
    }

    /// Sends a request to `backend`, its fields and the client's forwarded by `rules`
    /// (`headers::to_upstream`, `Host` the backend's), and waits for the response's head,
    /// within the first-byte limit. The response comes with its hop-by-hop fields left out (`headers::to_client`).
    /// Its body fails with `http::idle::IdleTimeout` when the upstream sends nothing for its
    /// idle limit (lingo's own client times that on the connection's timer; the others'
    /// bodies are wrapped in `http::idle::Idle`).
    ///
    /// Every sending is boxed, so that the state of the way that awaits it stays small;
    /// lingo's own pool's is built in its box (`base::pinned`), only timed and its error
    /// told.
    ///
    /// `req`'s URI is [`request_uri`]'s (or [`forward_uri`]'s): the origin form, which lingo's
    /// own client and the mock take as it is, and hyper-util's client gets in the absolute
    /// form, the backend's scheme and authority before it. The head is written and an idle
    /// connection taken when this is called: await what it returns (dropped unpolled, the
    /// connection is closed).
    pub fn send<'a>(
        &'a self,
        upstream: &'a Upstream,
        backend: &Backend,
        mut req: Request,
        rules: &Forwarding<'_>,
        body_limit: u64,
    ) -> Sending<'a> {
        let rules = &Forwarding {
            host: &backend.host,
            ..*rules
        };
        let (limit, idle) = (upstream.timeouts.first_byte, upstream.timeouts.idle);
        let clients = match self {
            UpstreamClient::Http {
                pool: Pool::Lean(pool),
                ..
            } => {
                // lingo's client writes the request line from the path and query alone, and
                // applies the header rules as it writes the fields.
                // The deadline is timed by the connection (`h1::deadline`).
                return pinned::boxed(|| {
                    let sending = pool.send(req, rules, clock::after(limit), idle);
                    sending.map(move |sent| classify_send_error(upstream, sent, body_limit))
                });
            }
            UpstreamClient::Http {
                pool: Pool::Legacy(clients),
                ..
            } => clients,
            UpstreamClient::Mock(knobs) => {
                headers::to_upstream(req.headers_mut(), rules);
                let sending = send_to_mock(upstream, knobs, req, body_limit);
                return Box::pin(sending.map(move |sent| sent.map(|r| from_upstream(r, idle))));
            }
        };
        headers::to_upstream(req.headers_mut(), rules);
        *req.uri_mut() = absolute(backend, req.uri());
        let req = req.into_hyper();
        let client = &clients[worker::slot() % clients.len()];
        let (req, upload) = upload::noted(req, body_limit);
        let sending = client.request(req).map(move |sent| match sent {
            Ok(response) => Ok(from_upstream(Response::from(response), idle)),
            Err(err) => Err(BoxError::from(err)),
        });
        let timed = tokio::time::timeout_at(clock::after(limit), sending).map(move |sent| {
            let sent = sent.unwrap_or_else(|_| Err(h1::SendError::FirstByte.into()));
            let result = classify_send_error(upstream, sent, body_limit);
            result.map_err(|err| upload.and_then(|u| u.client_error()).unwrap_or(err))
        });
        Box::pin(timed)
    }
}

/// A response from hyper's client or the mock, as lingo's own client hands one on: its
/// hop-by-hop fields left out, its body failing when nothing comes for `idle`.
fn from_upstream<B>(mut response: Response<B>, idle: Duration) -> Response
where
    B: http_body::Body<Data = bytes::Bytes, Error: Into<BoxError>> + Send + 'static,
{
    headers::to_client(response.headers_mut(), false);
    response.map(|body| Body::boxed(Idle::new(body, idle)))
}

/// A sending, boxed (see [`UpstreamClient::send`]).
pub type Sending<'a> = Pin<Box<dyn Future<Output = Result<Response, ProxyError>> + Send + 'a>>;

/// What a timed sending came to: its response, or why there is none.
fn classify_send_error(
    upstream: &Upstream,
    sent: Result<Response, BoxError>,
    body_limit: u64,
) -> Result<Response, ProxyError> {
    match sent {
        Ok(response) => Ok(response),
        Err(err) if matches!(err.downcast_ref(), Some(h1::SendError::FirstByte)) => {
            Err(ProxyError::Timeout {
                upstream: upstream.name.to_string(),
                kind: TimeoutKind::FirstByte,
                limit: upstream.timeouts.first_byte,
            })
        }
        Err(err) => Err(classify(upstream, err.as_ref(), body_limit)),
    }
}

/// hyper-util's pooled clients, one per serving thread.
fn legacy_clients(upstream: &Upstream, connector: &Connector) -> Box<[Client<Connector, Body>]> {
    let mut builder = Client::builder(TokioExecutor::new());
    builder
        .pool_idle_timeout(pool::IDLE)
        .pool_timer(TokioTimer::new())
        .timer(TokioTimer::new())
        .http2_only(upstream.http2)
        .http2_initial_connection_window_size(H2_CONNECTION_WINDOW);
    (0..worker::slots())
        .map(|_| builder.build(connector.clone()))
        .collect()
}

/// The in-process mock, under the same first-byte limit as a real upstream.
async fn send_to_mock(
    upstream: &Upstream,
    knobs: &Knobs,
    req: Request,
    body_limit: u64,
) -> Result<Response, ProxyError> {
    let limit = upstream.timeouts.first_byte;
    match tokio::time::timeout(limit, mock::handle(knobs, req)).await {
        Ok(mock::Handled::Response(response)) => Ok(response),
        // The client's upload failed on its way into the mock, as it would on its way to a
        // real upstream: the same response (413 over the route's limit, else 400).
        Ok(mock::Handled::BadBody(err)) => Err(client_body(err.as_ref(), body_limit)),
        Ok(mock::Handled::Cut) => Err(ProxyError::Unreachable {
            upstream: upstream.name.to_string(),
            reason: mock::MockCut.to_string(),
            detail: String::new(),
        }),
        Err(_) => Err(ProxyError::Timeout {
            upstream: upstream.name.to_string(),
            kind: TimeoutKind::FirstByte,
            limit,
        }),
    }
}

/// A client body that could not be read (`err`, maybe under the error of whoever read it: a
/// translation, the mock, an upstream's client): over the route's `body_limit` (413), silent
/// past `limits.body_timeout` (408), else broken off or malformed (400).
pub fn client_body(err: &(dyn StdError + 'static), body_limit: u64) -> ProxyError {
    let chain = || std::iter::successors(Some(err), |&e| e.source());
    if chain().any(|e| e.is::<http_body_util::LengthLimitError>()) {
        return ProxyError::BodyTooLarge { limit: body_limit };
    }
    match chain().find_map(|e| e.downcast_ref::<BodyTimeout>()) {
        Some(stalled) => ProxyError::BodyTimeout { limit: stalled.0 },
        None => ProxyError::BadBody {
            reason: reason(err),
        },
    }
}

/// The upstream URL's own path prefix (no trailing `/`; empty for the mock): prepended to
/// what lingo sends, and carried by the links the upstream writes, which lingo re-bases.
pub fn base_path(upstream: &Upstream) -> &str {
    &upstream.base_path
}

/// [`request_uri`] for a request passed on with the path and query it came with (`client`'s,
/// when the upstream has no base path): that path is shared with the request's head, not
/// parsed and copied again.
pub fn forward_uri(upstream: &Upstream, path_and_query: &str, client: &Uri) -> Uri {
    let same = client
        .path_and_query()
        .filter(|pq| pq.as_str() == path_and_query && upstream.base_path.is_empty());
    match same {
        Some(pq) => Uri::from(pq.clone()),
        None => request_uri(upstream, path_and_query),
    }
}

/// The URI a request sent with [`UpstreamClient::send`] carries: `path_and_query` under the
/// upstream's base path, in origin form (no scheme and authority copied per request; the
/// backend that sends it adds them if its client needs them).
pub fn request_uri(upstream: &Upstream, path_and_query: &str) -> Uri {
    let base_path = base_path(upstream);
    let origin = if base_path.is_empty() {
        path_and_query.parse::<PathAndQuery>()
    } else {
        format!("{base_path}{path_and_query}").parse()
    };
    origin.map_or_else(|_| Uri::from_static("/"), Uri::from)
}

/// Whether lingo's own client and pool serve `backend`: plain `http://`, in HTTP/1.1.
fn is_lean(upstream: &Upstream, backend: &Backend) -> bool {
    matches!(&backend.target, Target::Url(uri) if uri.scheme() == Some(&Scheme::HTTP) && !upstream.http2)
}

/// `origin` (a [`request_uri`]) on `backend`: its scheme and authority before the path and
/// query (`lingo-mock` for the mock, whose authority only fills `Host`).
pub fn absolute(backend: &Backend, origin: &Uri) -> Uri {
    let mut parts = match &backend.target {
        Target::Url(base) => base.clone().into_parts(),
        Target::Mock(_) => Uri::from_static("http://lingo-mock").into_parts(),
    };
    parts.path_and_query = origin.path_and_query().cloned();
    Uri::from_parts(parts).unwrap_or_else(|_| origin.clone())
}

/// Maps a client error to the error the caller sees. A body that went over its limit while
/// being streamed up is the caller's fault (413), as is one that stalled (408) or broke off
/// or was malformed (400); a connect timeout is a timeout (504); any other failure before
/// a response means the upstream could not be used (502). The whole cause chain is read for
/// each in that order, because the limit error sits *under* hyper's "user body" error.
pub fn classify(
    upstream: &Upstream,
    err: &(dyn StdError + 'static),
    body_limit: u64,
) -> ProxyError {
    let chain = || std::iter::successors(Some(err), |&e| e.source());
    // The body lingo was sending failed: it is the client's, not the upstream's fault.
    let uploading = |e: &(dyn StdError + 'static)| {
        e.is::<http_body_util::LengthLimitError>()
            || e.is::<BodyTimeout>()
            || e.downcast_ref::<hyper::Error>()
                .is_some_and(hyper::Error::is_user)
            || matches!(e.downcast_ref(), Some(h1::SendError::Upload(_)))
    };
    if chain().any(uploading) {
        return client_body(err, body_limit);
    }
    // A response that came but cannot be read: the upstream was reached, and is at fault.
    if let Some(head) = chain().find_map(|e| match e.downcast_ref() {
        Some(h1::SendError::Head(head)) => Some(head),
        _ => None,
    }) {
        return ProxyError::BadResponse {
            upstream: upstream.name.to_string(),
            message: head.to_string(),
        };
    }
    let timed_out = |e: &(dyn StdError + 'static)| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
    };
    if chain().any(timed_out) {
        return ProxyError::Timeout {
            upstream: upstream.name.to_string(),
            kind: TimeoutKind::Connect,
            limit: upstream.timeouts.connect,
        };
    }
    unreachable(upstream, err)
}

/// Maps a failure while reading a response's body (before lingo sent anything of it).
pub fn classify_body_error(upstream: &Upstream, err: &(dyn StdError + 'static)) -> ProxyError {
    match err.downcast_ref::<IdleTimeout>() {
        Some(idle) => ProxyError::Timeout {
            upstream: upstream.name.to_string(),
            kind: TimeoutKind::Idle,
            limit: idle.0,
        },
        None => unreachable(upstream, err),
    }
}

/// `upstream` could not be used: why, in words for the client; the system's text for the log.
fn unreachable(upstream: &Upstream, err: &(dyn StdError + 'static)) -> ProxyError {
    let words = unreached::in_words(err);
    let mut detail = reason(err);
    if detail == words {
        detail.clear();
    }
    ProxyError::Unreachable {
        upstream: upstream.name.to_string(),
        reason: words,
        detail,
    }
}

/// `text` (an upstream's own words, rewritten to the client) without the upstream's key.
pub fn redact<'a>(upstream: &Upstream, text: &'a str) -> std::borrow::Cow<'a, str> {
    match &upstream.auth {
        Some(auth) => auth.key.redact(text),
        None => std::borrow::Cow::Borrowed(text),
    }
}

/// The innermost cause's text: "Connection refused (os error 111)" says more than
/// "client error (Connect)" (for the log; a client is told the cause in words).
pub fn reason(err: &(dyn StdError + 'static)) -> String {
    let mut last = err;
    while let Some(next) = last.source() {
        last = next;
    }
    last.to_string()
}

fn http_connector(connect: Duration) -> HttpConnector {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(connect));
    http
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The upstreams of a table: plain http, http with a base path, https, HTTP/2 by prior
    /// knowledge, the mock.
    fn upstreams() -> Vec<std::sync::Arc<Upstream>> {
        let yaml = "listen: [{ addr: 127.0.0.1:0 }]
upstreams:
  plain: { url: 'http://up:8080', speaks: native }
  based: { url: 'http://up:8080/ollama/', speaks: native }
  tls: { url: 'https://up', speaks: native }
  h2: { url: 'http://up:8080', speaks: native, http2: true }
  mock: { mock: {}, speaks: native }
routes:
  - { prefix: /api, to: plain }
";
        let table = crate::config::load_str(yaml, Path::new("t.yaml")).unwrap();
        table.upstreams
    }

    /// Every request is written in origin form (the base path in it); a backend whose
    /// client needs the absolute form gets its scheme and authority before it; a forwarded
    /// request shares the client's path when it is the one sent on.
    #[test]
    fn requests_are_in_origin_form_and_absolute_where_the_client_needs_it() {
        let ups = upstreams();
        let by = |name: &str| ups.iter().find(|u| &*u.name == name).unwrap();
        let cases = [
            (
                "plain",
                "/api/chat?x=1",
                "/api/chat?x=1",
                "http://up:8080/api/chat?x=1",
            ),
            (
                "based",
                "/api/chat?x=1",
                "/ollama/api/chat?x=1",
                "http://up:8080/ollama/api/chat?x=1",
            ),
            (
                "tls",
                "/api/chat?x=1",
                "/api/chat?x=1",
                "https://up/api/chat?x=1",
            ),
            ("h2", "/api/chat", "/api/chat", "http://up:8080/api/chat"),
            (
                "mock",
                "/api/chat",
                "/api/chat",
                "http://lingo-mock/api/chat",
            ),
        ];
        for (name, pq, origin, whole) in cases {
            let up = by(name);
            assert_eq!(request_uri(up, pq).to_string(), origin, "{name}");
            let at = absolute(&up.backends[0], &request_uri(up, pq));
            assert_eq!(at.to_string(), whole, "{name}");
            let client: Uri = pq.parse().unwrap();
            assert_eq!(forward_uri(up, pq, &client).to_string(), origin, "{name}");
            // The client's path normalised to another: the normalised one is sent.
            let client: Uri = format!("/x/..{pq}").parse().unwrap();
            assert_eq!(forward_uri(up, pq, &client).to_string(), origin, "{name}");
        }
    }
}
