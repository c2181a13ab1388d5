//! One request's life, top-down: admit -> route -> authenticate -> plan -> run -> respond.
//!
//! [`handle`] is the service every connection calls. The table is snapshotted once; the
//! request's header fields are read through `Request::headers` (`http::message`), wherever
//! its connection kept them; the request becomes an [`Exchange`] once routed; a [`Plan`] says
//! once what it will be; a client with limits has its likely cost reserved first
//! ([`limited`]); one of [`run`]'s modules runs it; and [`respond`] alone turns an error into
//! a response, in the dialect the route (or, before routing, the path) implies. Every request
//! gets one record (the access line and its metrics) when its response ends, and a limited
//! client's reservation is settled then.

use std::borrow::Cow;
use std::pin::Pin;
use std::sync::Arc;

use super::exchange::{Arrival, ConnInfo, Exchange};
use super::plan::{self, Plan};
use super::{limited, respond, run};
use crate::admin::Builtin;
use crate::auth;
use crate::base::dialect::{self, Dialect};
use crate::base::pinned;
use crate::error::ProxyError;
use crate::http::body::Body;
use crate::http::message::{Request, Response};
use crate::http::{framing, path};
use crate::limits::{self, Held};
use crate::observe::{AccessLog, Ended, Finish, Record};
use crate::quota;
use crate::reload::Reloader;
use crate::runtime::Snapshot;
use crate::table::{ClientKey, Route};
use crate::upstream::headers;
use crate::webhooks;

/// [`handle`], boxed: what a connection is given. Boxed, the request's state is freed at its
/// response's head, and a connection's task holds a pointer for it, not the whole state for
/// the connection's life.
pub fn boxed(
    reloader: Arc<Reloader>,
    conn: Arc<ConnInfo>,
    req: Request,
) -> Pin<Box<impl Future<Output = Response> + Send>> {
    pinned::boxed(|| handle(reloader, conn, req))
}

/// Serves one request; never fails (errors are responses).
///
/// Not an `async fn`, whose state would hold each argument twice (as passed, and the local it
/// is moved to).
#[allow(clippy::manual_async_fn)] // on purpose: see the doc
pub fn handle(
    reloader: Arc<Reloader>,
    conn: Arc<ConnInfo>,
    req: Request,
) -> impl Future<Output = Response> + Send {
    async move {
        let (head, body) = {
            let mut arrival = Arrival::new(&req);
            let mut log = AccessLog::new(req.method(), req.uri(), &arrival.request_id);
            if let Err(why) = framing::check(req.version(), req.uri(), req.headers()) {
                let response = respond::unframed(why, &arrival, &mut log);
                let record = Record::new(log, None);
                return response.map(|body| Body::boxed(Ended::new(body, record)));
            }
            // Admitted or not, lingo's own endpoints are served (a full listener still says
            // so).
            let (held, refused) = match conn.gate.admit_request(&conn.activity) {
                Ok(held) => (Some(held), None),
                Err(err) => (None, Some(err)),
            };
            let snapshot = reloader.snapshot();
            let served = (&*reloader, &*snapshot, &*conn, &req);
            // A limited client's `x-ratelimit-*` fields and reservation.
            let mut limits = None;
            // Decided by the phases, done here (see `phases`).
            let result = match phases(served, refused, &mut arrival, &mut log) {
                Ok(Next::Builtin(builtin)) => {
                    let served = (&**reloader.metrics(), reloader.quota());
                    let responding = builtin.respond(&snapshot, served, req.headers());
                    Box::pin(responding).await
                }
                Ok(Next::Run(plan, exchange, None)) => run::run(plan, &exchange, req).await,
                Ok(Next::Run(plan, exchange, Some(client))) => {
                    let running = limited::run(reloader.quota(), client, plan, &exchange, req);
                    let (result, admitted) = Box::pin(running).await;
                    limits = Some(admitted);
                    result
                }
                Ok(Next::Webhooks(endpoint)) => {
                    Box::pin(endpoint.respond(reloader.relay(), req)).await
                }
                Err(err) => Err(err),
            };
            let metrics = reloader.metrics();
            let mut response = respond::finish(result, metrics, &arrival, &mut log);
            let reservation = limited::answer(limits, &mut response);
            let answered = (response.status().as_u16(), arrival.dialect);
            let stats = Arc::clone(&arrival.stats);
            let finish = Finish::new(Arc::clone(metrics), &log, arrival.stats);
            let record = Record::new(log, Some(finish));
            let (head, body) = response.into_parts();
            let body = quota::settling(body, reservation, answered, &stats);
            let make = || Held::new(Ended::new(body, record), held);
            (head, Body::built(make))
        };
        Response::from_parts(head, body)
    }
}

/// A request (borrowed for the phases alone: its run takes it) and what it is served with.
type Served<'a, 'r> = (&'a Reloader, &'a Snapshot, &'a ConnInfo, &'r Request);

/// What the phases decided a request is: one of lingo's own endpoints (the webhook relay's
/// among them), or a routed request and how to run it (which takes the request).
enum Next<'a> {
    Builtin(Builtin),
    Webhooks(webhooks::Endpoint),
    /// With the client, when it has limits.
    Run(Plan, Exchange<'a>, Option<&'a ClientKey>),
}

/// The phases after admission: lingo's own endpoints, then route -> authenticate -> plan.
/// An error is the response; `arrival.dialect` says how to tell it.
///
/// They only decide, and [`handle`] does what they decided: it holds the request, and an
/// `async` phase given it would hold it too (as passed, and again as moved).
fn phases<'a>(
    (reloader, snapshot, conn, req): Served<'a, '_>,
    refused: Option<ProxyError>,
    arrival: &mut Arrival,
    log: &mut AccessLog,
) -> Result<Next<'a>, ProxyError> {
    let on_admin = conn.listener.is_none();
    let path = req.uri().path();
    if let Some(builtin) = Builtin::find(req.method(), path, on_admin, reloader.admin_bound()) {
        return Ok(Next::Builtin(builtin));
    }
    if let Some(refused) = refused {
        return Err(refused);
    }
    if let Some(endpoint) = webhooks::Endpoint::find(req.method(), path, on_admin, req.headers()) {
        arrival.dialect = Dialect::WebData;
        let table = &snapshot.table;
        if endpoint.is_admin() && table.admin.require_key {
            let client = auth::check(&table.clients, req.headers(), false)?;
            log.client = client.map(|c| c.name.clone());
        }
        return Ok(Next::Webhooks(endpoint));
    }
    if on_admin {
        arrival.dialect = Dialect::Chat;
        return Err(ProxyError::NoRoute {
            method: req.method().to_string(),
            path: format!("{path} (this is the admin listener)"),
        });
    }
    let (route, path) = route(snapshot, req, arrival, log)?;
    let (upgrade, client) = authenticate(snapshot, req, (route, &path), log)?;
    let exchange = Exchange::new(snapshot, conn, (route, &path), req, arrival, upgrade);
    let plan = Plan::decide(&exchange, req)?;
    let limited = client.filter(|c| !c.quota.is_empty());
    Ok(Next::Run(plan, exchange, limited))
}

/// Normalises the path and finds its route; from here on errors are told in its dialect.
/// The path is the request's own when normalising left it as it was.
fn route<'s, 'r>(
    snapshot: &'s Snapshot,
    req: &'r Request,
    arrival: &mut Arrival,
    log: &mut AccessLog,
) -> Result<(&'s Route, Cow<'r, str>), ProxyError> {
    let path = path::normalize(req.uri().path()).map_err(ProxyError::BadPath)?;
    let Some(route) = snapshot.table.find(&path) else {
        arrival.dialect = dialect::guess(&path);
        return Err(ProxyError::NoRoute {
            method: req.method().to_string(),
            path: path.into_owned(),
        });
    };
    arrival.dialect = route.speaks;
    log.route = Some(Arc::clone(&route.label));
    log.upstream = Some(Arc::clone(&snapshot.table.upstream(route.upstream).name));
    log.dialect = Some(route.speaks);
    Ok((route, path))
}

/// Checks the header limits (before anything else reads the headers, the key included) and
/// the client key; the log names the client, which is returned. Says whether the request is a WebSocket
/// upgrade `route` tunnels at `path` (decided once, here, for the key check, which then
/// reads the key offered as a subprotocol too, and the plan); one asked for with a body is
/// refused (`plan::upgrade`).
fn authenticate<'s>(
    snapshot: &'s Snapshot,
    req: &Request,
    (route, path): (&Route, &str),
    log: &mut AccessLog,
) -> Result<(bool, Option<&'s ClientKey>), ProxyError> {
    let table = &snapshot.table;
    let fields = req.headers();
    limits::check_headers(fields, &table.limits)?;
    let upgrade = headers::is_websocket_upgrade(req.method(), fields)
        && plan::upgrade(req, route, table.upstream(route.upstream), path)?;
    let client = auth::check(&table.clients, fields, upgrade)?;
    log.client = client.map(|c| c.name.clone());
    Ok((upgrade, client))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future `f` returns, read from its type: nothing is called.
    fn future_size<A, B, C, F: Future>(_: impl FnOnce(A, B, C) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// A request's state, boxed once a request ([`boxed`]), fits in a block mimalloc serves
    /// from its fast path (at most 1 KiB): what [`handle`] and `run::run` are shaped for.
    #[test]
    fn a_requests_state_fits_a_small_block() {
        let size = future_size(handle);
        assert!(size <= 1024, "a request's state is {size} bytes");
    }
}
