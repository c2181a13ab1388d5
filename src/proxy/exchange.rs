//! One request in flight, as every phase and every run sees it: the table it is served on,
//! its route and upstream, the connection it came on, its ids, the dialect its errors are
//! told in, and what the runs learn for the metrics.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use hyper::header::HeaderValue;

use crate::base::dialect::{self, Dialect};
use crate::base::ids;
use crate::http::message::{HeaderView, Request, text};
use crate::limits::{Activity, Gate};
use crate::observe::RequestStats;
use crate::runtime::Snapshot;
use crate::table::{Route, RouteTable, Upstream};
use crate::upstream::backends::Backends;
use crate::upstream::headers::X_REQUEST_ID;

/// What lingo knows about the connection a request came on.
#[derive(Debug)]
pub struct ConnInfo {
    pub peer: SocketAddr,
    /// The peer's address as `X-Forwarded-For` says it, written once per connection.
    pub client_ip: HeaderValue,
    /// Index of the listener in the table's `listen` list; `None` on the `admin:` listener.
    pub listener: Option<usize>,
    pub tls: bool,
    /// The listener's connection and in-flight pools.
    pub gate: Arc<Gate>,
    /// Whether this connection has requests in flight (for its idle timer).
    pub activity: Arc<Activity>,
}

/// A routed request: everything a run needs, decided before anything is sent upstream.
pub struct Exchange<'a> {
    pub snapshot: &'a Snapshot,
    pub route: &'a Route,
    pub upstream: &'a Upstream,
    pub backends: &'a Backends,
    pub conn: &'a ConnInfo,
    /// The normalised path plus the original query.
    pub path_and_query: String,
    /// Where the path ends in `path_and_query`.
    path_len: usize,
    pub request_id: HeaderValue,
    /// The host the client addressed: an absolute-form target's authority (the `:authority`
    /// on HTTP/2), else its `Host` (`http::framing` has checked both).
    pub client_host: Option<HeaderValue>,
    /// The request is a WebSocket upgrade its route tunnels (`plan::tunnels`).
    pub upgrade: bool,
    /// What the runs learn for the metrics (upstream wait, tokens, a failed stream).
    pub stats: Arc<RequestStats>,
}

/// What is known of a request before it is routed: enough to render an error in the
/// dialect its path implies and to log it.
pub struct Arrival {
    pub request_id: HeaderValue,
    pub stats: Arc<RequestStats>,
    /// The dialect errors are told in: the path's guess until a route decides it.
    pub dialect: Dialect,
}

// === impl Arrival ===

impl Arrival {
    pub fn new(req: &Request) -> Self {
        Arrival {
            request_id: request_id(req.headers()),
            stats: RequestStats::new(),
            dialect: dialect::guess(req.uri().path()),
        }
    }
}

// === impl Exchange ===

impl<'a> Exchange<'a> {
    /// The exchange for `req` routed to `route` on the path `path` (normalised); `upgrade`:
    /// it is a WebSocket upgrade the route tunnels.
    pub fn new(
        snapshot: &'a Snapshot,
        conn: &'a ConnInfo,
        (route, path): (&'a Route, &str),
        req: &Request,
        arrival: &Arrival,
        upgrade: bool,
    ) -> Self {
        let query = req.uri().query();
        let mut path_and_query =
            String::with_capacity(path.len() + query.map_or(0, |q| q.len() + 1));
        path_and_query.push_str(path);
        if let Some(query) = query {
            path_and_query.push('?');
            path_and_query.push_str(query);
        }
        // RFC 9112 §3.2.2: an absolute-form target's authority is the host addressed, the
        // `Host` field ignored (HTTP/2's `:authority` comes the same way); an empty `Host`
        // names none.
        let client_host = match req.uri().authority() {
            Some(authority) => HeaderValue::from_str(authority.as_str()).ok(),
            None => req.headers().host().filter(|host| !host.is_empty()),
        };
        let peer = snapshot.peer(route.upstream);
        Exchange {
            snapshot,
            route,
            upstream: &peer.spec,
            backends: &peer.backends,
            conn,
            path_and_query,
            path_len: path.len(),
            request_id: arrival.request_id.clone(),
            client_host,
            upgrade,
            stats: Arc::clone(&arrival.stats),
        }
    }

    /// `scheme://authority` clients use to reach lingo, for rewriting upstream links; made
    /// only by the runs that rewrite them.
    pub fn public_base(&self) -> String {
        public_base(&self.snapshot.table, self.conn, self.client_host.as_ref())
    }

    /// The normalised path, without the query.
    pub fn path(&self) -> &str {
        &self.path_and_query[..self.path_len]
    }

    /// The same exchange, for another path and query on the same upstream (a web-data v1
    /// call's v2 counterpart).
    pub fn at_path(&self, path_and_query: &str) -> Exchange<'a> {
        let mut x = self.to_upstream(self.route.upstream);
        x.path_len = path_and_query.find('?').unwrap_or(path_and_query.len());
        x.path_and_query = path_and_query.to_owned();
        x
    }

    /// The same exchange, sent to another upstream of the table (a model alias's).
    pub fn to_upstream(&self, index: usize) -> Exchange<'a> {
        let peer = self.snapshot.peer(index);
        Exchange {
            snapshot: self.snapshot,
            route: self.route,
            upstream: &peer.spec,
            backends: &peer.backends,
            conn: self.conn,
            path_and_query: self.path_and_query.clone(),
            path_len: self.path_len,
            request_id: self.request_id.clone(),
            client_host: self.client_host.clone(),
            upgrade: self.upgrade,
            stats: Arc::clone(&self.stats),
        }
    }
}

/// The request id: the client's `X-Request-Id` when it sent a sane one, else a new one.
fn request_id(fields: HeaderView<'_>) -> HeaderValue {
    fields
        .get(&X_REQUEST_ID)
        .filter(|v| !v.is_empty() && v.len() <= 128 && text(v).is_some())
        // Copied, not shared: the client's header is a slice of the connection's read buffer,
        // and the id lives as long as the response (the access line), so sharing it would keep
        // that buffer from being reused while a stream lasts.
        .and_then(|v| HeaderValue::from_bytes(v).ok())
        .unwrap_or_else(new_request_id)
}

/// A new request id, held by the one allocation all its copies share (the request's, the
/// response's and the access line's).
fn new_request_id() -> HeaderValue {
    HeaderValue::from_maybe_shared(Bytes::from_owner(ids::random_id()))
        .expect("hex is a valid header")
}

/// `scheme://authority` of lingo as this client addressed it.
fn public_base(table: &RouteTable, conn: &ConnInfo, client_host: Option<&HeaderValue>) -> String {
    let listener = conn.listener.and_then(|i| table.listeners.get(i));
    if let Some(url) = listener.and_then(|l| l.public_url.as_ref()) {
        return url.to_string().trim_end_matches('/').to_owned();
    }
    let scheme = if conn.tls { "https" } else { "http" };
    match client_host.and_then(|h| h.to_str().ok()) {
        Some(host) => format!("{scheme}://{host}"),
        None => format!(
            "{scheme}://{}",
            listener.map_or_else(String::new, |l| l.addr.to_string())
        ),
    }
}
