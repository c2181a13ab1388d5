//! lingo's own endpoints: `/healthz` (alive), `/readyz` (a table is loaded and every
//! upstream is reachable; it also says whether the quota store answers), `/metrics`
//! (Prometheus/OpenMetrics text) and `/quota` (each client's limits: used, left, renewal).
//!
//! With `admin: { addr: ... }` they get a listener of their own and `/readyz` and `/metrics`
//! leave the public listeners (where they would be routed like any other path); `/healthz`
//! stays on both, for load balancers. `admin.require_key` puts `/readyz`, `/metrics` and
//! `/quota` behind a client key.

use std::time::Duration;

use bytes::Bytes;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, StatusCode};
use serde_json::{Map, Value, json};

use crate::auth;
use crate::error::ProxyError;
use crate::http::body::Body;
use crate::http::message::{HeaderView, Response};
use crate::observe::metrics::{self, Metrics};
use crate::quota::Quota;
use crate::runtime::Snapshot;
use crate::table::{Backend, Target};
use crate::upstream::backends::Member;

/// How long `/readyz` waits for an upstream to accept a TCP connection.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// One of lingo's own endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    Healthz,
    Readyz,
    Metrics,
    Quota,
}

// === impl Builtin ===

impl Builtin {
    /// The endpoint a request is for, if lingo responds to it itself on this listener.
    pub fn find(method: &Method, path: &str, on_admin: bool, has_admin: bool) -> Option<Builtin> {
        if !matches!(*method, Method::GET | Method::HEAD) {
            return None;
        }
        let builtin = match path {
            "/healthz" => Builtin::Healthz,
            "/readyz" => Builtin::Readyz,
            "/metrics" => Builtin::Metrics,
            "/quota" => Builtin::Quota,
            _ => return None,
        };
        let here = on_admin || builtin == Builtin::Healthz || !has_admin;
        here.then_some(builtin)
    }

    /// Responds to it; `Err` is a missing or wrong client key when one is required.
    pub async fn respond(
        self,
        snapshot: &Snapshot,
        (metrics, quota): (&Metrics, &Quota),
        headers: HeaderView<'_>,
    ) -> Result<Response, ProxyError> {
        let table = &snapshot.table;
        if self != Builtin::Healthz && table.admin.require_key {
            auth::check(&table.clients, headers, false)?;
        }
        Ok(match self {
            Builtin::Healthz => json(
                StatusCode::OK,
                &json!({"status": "ok", "generation": snapshot.generation}),
            ),
            Builtin::Readyz => readyz(snapshot, quota.store_up()).await,
            Builtin::Quota => json(StatusCode::OK, &quota.usage(&table.clients).await),
            Builtin::Metrics => {
                let mut text = metrics.render();
                let backends = (snapshot.peers().iter()).map(|p| (&*p.spec, &*p.backends));
                let at = text.rfind("# EOF").unwrap_or(text.len());
                text.insert_str(at, &crate::upstream::report::render(backends));
                let mut response = Response::new(Body::full(Bytes::from(text)));
                response.headers_mut().insert(
                    CONTENT_TYPE,
                    HeaderValue::from_static(metrics::CONTENT_TYPE),
                );
                response
            }
        })
    }
}

/// Ready when every upstream can be used: one backend accepts a TCP connection (`mock:` ones
/// always do), or among several, one is in service. 200, or 503 naming the ones that cannot.
/// The quota store's state is told (`quota_store`) but does not make lingo unready: its
/// limits have their fallbacks, and every replica would be taken out at once.
async fn readyz(snapshot: &Snapshot, quota_store: Option<bool>) -> Response {
    let probes = snapshot.peers().iter().map(|peer| async move {
        let upstream = &peer.spec;
        let state = match (&upstream.backends[..], peer.backends.members()) {
            ([one], _) => match &one.target {
                Target::Mock(_) => Ok(()),
                Target::Url(url) => probe(url).await,
            },
            _ if peer.backends.any_in_service() => Ok(()),
            (backends, members) => Err(states(backends, members)),
        };
        (upstream.name.to_string(), state)
    });
    let mut upstreams = Map::new();
    let mut ready = true;
    for (name, state) in
        crate::http::join::join_all(probes.map(|p| Box::pin(p) as _).collect()).await
    {
        let value = match state {
            Ok(()) => Value::from("ok"),
            Err(why) => {
                ready = false;
                Value::from(why)
            }
        };
        upstreams.insert(name, value);
    }
    let (status, word) = if ready {
        (StatusCode::OK, "ready")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready")
    };
    let mut body =
        json!({"status": word, "generation": snapshot.generation, "upstreams": upstreams});
    if let Some(up) = quota_store {
        body["quota_store"] = Value::from(if up {
            "ok"
        } else {
            "unreachable: limits use their fallback (on_store_error)"
        });
    }
    json(status, &body)
}

/// Opens (and drops) a TCP connection to the URL's host and port.
async fn probe(url: &hyper::Uri) -> Result<(), String> {
    let host = url.host().unwrap_or_default().trim_matches(['[', ']']);
    let port = url
        .port_u16()
        .unwrap_or(if url.scheme_str() == Some("https") {
            443
        } else {
            80
        });
    match tokio::time::timeout(PROBE_TIMEOUT, tokio::net::TcpStream::connect((host, port))).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(err)) => Err(format!("unreachable: {err}")),
        Err(_) => Err(format!(
            "unreachable: no connection within {}",
            crate::base::units::format_duration(PROBE_TIMEOUT)
        )),
    }
}

/// Why no backend of an upstream is in service: each one's state.
fn states(backends: &[Backend], members: &[Member]) -> String {
    let each: Vec<String> = (backends.iter().zip(members))
        .map(|(b, m)| format!("{} {}", b.label, m.state.state_word()))
        .collect();
    format!("no backend in service ({})", each.join(", "))
}

fn json(status: StatusCode, value: &Value) -> Response {
    Response::json(status, value.to_string())
}
