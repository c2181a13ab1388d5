//! The hyper service: one request's life cycle.
//!
//! Snapshot the table once; normalise the path; route; check the client key; refuse what the
//! route forbids; then hand the request to pass-through (or, for a translating route, to its
//! translator). Every error lingo answers itself is rendered in the route's dialect, and
//! every request gets one access-log line when its answer ends.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::header::{CONNECTION, CONTENT_LENGTH, HOST, HeaderValue};
use hyper::{Request, Response};

use crate::admin::Builtin;
use crate::auth;
use crate::base::dialect::{self, Dialect};
use crate::base::ids;
use crate::error::ProxyError;
use crate::http::body::Body;
use crate::http::path;
use crate::limits::{self, Activity, Gate, Held};
use crate::observe::{AccessLog, Ended, Finish, Record, RequestStats};
use crate::proxy::respond;
use crate::proxy::run::{self as inference, pass as passthrough, tunnel as websocket};
use crate::reload::Reloader;
use crate::runtime::Snapshot;
use crate::table::{Route, RouteTable, Upstream};
use crate::translate::{self, Endpoint};
use crate::upstream::UpstreamClient;
use crate::upstream::headers::{self, X_REQUEST_ID};

/// What lingo knows about the connection a request came on.
#[derive(Debug)]
pub struct ConnInfo {
    pub peer: SocketAddr,
    /// Index of the listener in the table's `listen` list; `None` on the `admin:` listener.
    pub listener: Option<usize>,
    pub tls: bool,
    /// The listener's connection and in-flight pools.
    pub gate: Arc<Gate>,
    /// Whether this connection has requests in flight (for its idle timer).
    pub activity: Arc<Activity>,
}

/// Everything a handler needs about the request, decided before forwarding.
pub struct Call<'a> {
    pub snapshot: &'a Snapshot,
    pub route: &'a Route,
    pub upstream: &'a Upstream,
    pub client: &'a UpstreamClient,
    pub conn: &'a ConnInfo,
    /// The normalised path plus the original query.
    pub path_and_query: String,
    pub request_id: HeaderValue,
    /// The `Host` the client addressed (the `:authority` on HTTP/2).
    pub client_host: Option<HeaderValue>,
    /// `scheme://authority` clients use to reach lingo, for rewriting upstream links.
    pub public_base: String,
    /// What the handlers learn for the metrics (upstream wait, tokens).
    pub stats: Arc<RequestStats>,
}

// === impl Call ===

impl<'a> Call<'a> {
    /// The same call, sent to another upstream of the table (a model alias's).
    pub fn to_upstream(&self, index: usize) -> Call<'a> {
        Call {
            snapshot: self.snapshot,
            route: self.route,
            upstream: self.snapshot.table.upstream(index),
            client: &self.snapshot.peer(index).client,
            conn: self.conn,
            path_and_query: self.path_and_query.clone(),
            request_id: self.request_id.clone(),
            client_host: self.client_host.clone(),
            public_base: self.public_base.clone(),
            stats: Arc::clone(&self.stats),
        }
    }
}

/// Serves one request; never fails (errors are answers).
pub async fn handle(
    reloader: Arc<Reloader>,
    conn: Arc<ConnInfo>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let snapshot = reloader.snapshot();
    let metrics = reloader.metrics();
    let request_id = request_id(&req);
    let mut log = AccessLog::new(
        req.method().as_str(),
        req.uri().path(),
        request_id.to_str().unwrap_or("-"),
    );
    let stats = RequestStats::new();
    if let Err(why) = crate::http::framing::check(&req) {
        // The rest of the connection cannot be trusted to be framed the way lingo reads it.
        let mut response = respond::render(
            &ProxyError::BadRequest(why),
            dialect::guess(req.uri().path()),
        );
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
        log.status = 400;
        log.error = Some(why.to_owned());
        return Ok(response.map(|body| Body::new(Ended::new(body, Record::new(log, None)))));
    }
    let (held, refused) = match conn.gate.admit_request(&conn.activity) {
        Ok(held) => (Some(held), None),
        Err(err) => (None, Some(err)),
    };
    let builtin = builtin(&reloader, &conn, &req);
    let result = match (refused, builtin) {
        (_, Some(builtin)) => Box::pin(builtin.answer(&snapshot, metrics, req.headers()))
            .await
            .map_err(|e| (e, dialect::guess(req.uri().path()))),
        // lingo's own endpoints are answered even when the listener is full.
        (Some(err), None) => Err((err, dialect::guess(req.uri().path()))),
        (None, None) if conn.listener.is_none() => Err(not_here(&req)),
        (None, None) => {
            let cx = (&*snapshot, &*conn, request_id.clone(), &stats);
            // Boxed: hyper keeps a slot the size of this future for every connection, for
            // its whole life; the handlers' state is only needed until the answer's head.
            Box::pin(dispatch(cx, req, &mut log)).await
        }
    };
    let mut response = match result {
        Ok(response) => response,
        Err((err, dialect)) => {
            metrics.upstream_error(&err);
            log.error = Some(err.to_string());
            log.dialect.get_or_insert(dialect);
            respond::render(&err, dialect)
        }
    };
    response.headers_mut().insert(X_REQUEST_ID, request_id);
    log.status = response.status().as_u16();
    let finish = Finish::new(Arc::clone(metrics), &log, stats);
    let record = Record::new(log, Some(finish));
    Ok(response.map(|body| Body::new(Held::new(Ended::new(body, record), held))))
}

/// The built-in endpoint this request is for, if any. Whether there is an admin listener is
/// what was bound at startup (a reload cannot add or remove one), not what the table says now.
fn builtin(reloader: &Reloader, conn: &ConnInfo, req: &Request<Incoming>) -> Option<Builtin> {
    let on_admin = conn.listener.is_none();
    Builtin::find(
        req.method(),
        req.uri().path(),
        on_admin,
        reloader.admin_bound(),
    )
}

/// Anything but lingo's own endpoints, asked of the admin listener.
fn not_here(req: &Request<Incoming>) -> (ProxyError, Dialect) {
    let err = ProxyError::NoRoute {
        method: req.method().to_string(),
        path: format!("{} (this is the admin listener)", req.uri().path()),
    };
    (err, Dialect::Chat)
}

/// What a request is dispatched with: its table, connection, id and stats.
type Context<'a> = (
    &'a Snapshot,
    &'a ConnInfo,
    HeaderValue,
    &'a Arc<RequestStats>,
);

async fn dispatch(
    (snapshot, conn, request_id, stats): Context<'_>,
    req: Request<Incoming>,
    log: &mut AccessLog,
) -> Result<Response<Body>, (ProxyError, Dialect)> {
    let table = &snapshot.table;
    let raw_path = req.uri().path();
    let path = path::normalize(raw_path)
        .map_err(|why| (ProxyError::BadPath(why), dialect::guess(raw_path)))?;
    let route = table.find(&path).ok_or_else(|| {
        let err = ProxyError::NoRoute {
            method: req.method().to_string(),
            path: path.to_string(),
        };
        (err, dialect::guess(&path))
    })?;
    let dialect = route.speaks;
    let upstream = table.upstream(route.upstream);
    log.route = Some(route.matcher.to_string());
    log.upstream = Some(upstream.name.clone());
    log.dialect = Some(dialect);

    // Headers over the limits are refused before anything else reads them, the key included.
    limits::check_headers(req.headers(), &table.limits).map_err(|e| (e, dialect))?;
    let upgrade = headers::is_websocket_upgrade(req.headers());
    let client = auth::check(&table.clients, req.headers(), upgrade).map_err(|e| (e, dialect))?;
    log.client = client.map(str::to_owned);
    check_route(route, upstream, &path, &req).map_err(|e| (e, dialect))?;

    let path_len = path.len();
    let path_and_query = match req.uri().query() {
        Some(q) => format!("{path}?{q}"),
        None => path.into_owned(),
    };
    let client_host = req.headers().get(HOST).cloned().or_else(|| {
        let authority = req.uri().authority()?;
        HeaderValue::from_str(authority.as_str()).ok()
    });
    let public_base = public_base(table, conn, client_host.as_ref());
    let call = Call {
        snapshot,
        route,
        upstream,
        client: &snapshot.peer(route.upstream).client,
        conn,
        path_and_query,
        request_id,
        client_host,
        public_base,
        stats: Arc::clone(stats),
    };
    let endpoint = translate::endpoint(
        route.speaks,
        upstream.speaks,
        &call.path_and_query[..path_len],
    );
    let result = match endpoint {
        Some(Endpoint::ChatCompletions) => inference::chat::handle(&call, req).await,
        Some(Endpoint::Completions) => inference::completions::handle(&call, req).await,
        Some(Endpoint::Embeddings) => inference::embeddings::handle(&call, req).await,
        Some(Endpoint::Models) => inference::models::list(&call).await,
        Some(Endpoint::Model) => {
            inference::models::one(&call, &call.path_and_query[..path_len]).await
        }
        None if upgrade => websocket::proxy(&call, req).await,
        None if inference::tags::lists_aliases(&call, &call.path_and_query[..path_len]) => {
            inference::tags::handle(&call, req).await
        }
        None if inference::rename::renames_models(&call, &call.path_and_query[..path_len]) => {
            inference::rename::handle(&call, req).await
        }
        None => passthrough::forward(&call, req).await,
    };
    result.map_err(|e| (e, dialect))
}

/// What the route itself refuses, before anything is sent upstream.
fn check_route(
    route: &Route,
    upstream: &Upstream,
    path: &str,
    req: &Request<Incoming>,
) -> Result<(), ProxyError> {
    if route.translates(upstream)
        && translate::endpoint(route.speaks, upstream.speaks, path).is_none()
    {
        return Err(ProxyError::NoTranslator {
            client: route.speaks,
            upstream: upstream.speaks,
        });
    }
    if upstream.speaks == Dialect::Native
        && !route.allow_model_management
        && is_model_management(path)
    {
        return Err(ProxyError::ModelManagement {
            path: path.to_owned(),
        });
    }
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > route.max_body) {
        return Err(ProxyError::BodyTooLarge {
            limit: route.max_body,
        });
    }
    Ok(())
}

/// The native endpoints that change what the server holds (pull, push, create, copy,
/// delete, blobs). Compared without case and trailing slash, as a lenient upstream router
/// might match them.
pub fn is_model_management(path: &str) -> bool {
    const BLOCKED: [&str; 5] = [
        "/api/pull",
        "/api/push",
        "/api/create",
        "/api/copy",
        "/api/delete",
    ];
    let path = path.trim_end_matches('/').to_ascii_lowercase();
    BLOCKED.contains(&path.as_str()) || path == "/api/blobs" || path.starts_with("/api/blobs/")
}

/// The request id: the client's `X-Request-Id` when it sent a sane one, else a new one.
fn request_id(req: &Request<Incoming>) -> HeaderValue {
    req.headers()
        .get(X_REQUEST_ID)
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.to_str().is_ok())
        .cloned()
        .unwrap_or_else(|| {
            HeaderValue::from_str(&ids::random_hex()).expect("hex is a valid header")
        })
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

#[cfg(test)]
mod tests {
    #[test]
    fn model_management_paths() {
        for (path, blocked) in [
            ("/api/pull", true),
            ("/api/pull/", true),
            ("/API/Delete", true),
            ("/api/blobs/sha256:abc", true),
            ("/api/blobs", true),
            ("/api/chat", false),
            ("/api/pulling", false),
            ("/api/blobsx", false),
            ("/api/tags", false),
        ] {
            assert_eq!(super::is_model_management(path), blocked, "{path}");
        }
    }
}
