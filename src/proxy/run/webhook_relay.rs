//! Jobs started on an upstream whose webhooks lingo relays (`webhooks.relay: true`): the
//! request's `webhook` is pointed at lingo's receiver ([`crate::webhooks::rewrite`]) before
//! it goes up; everything else is pass-through. A web-data v1 job on a v2-only upstream is
//! rewritten the same way by its translation ([`relayed`], with the v1 shape).

use bytes::Bytes;
use http_body_util::Full;
use hyper::StatusCode;

use super::pass;
use super::shared::read_body;
use crate::auth;
use crate::error::ProxyError;
use crate::http::message::{HeaderView, Request, Response};
use crate::mock::webhook::Kind;
use crate::proxy::exchange::Exchange;
use crate::webhooks::rewrite::{self, Origin};
use crate::webhooks::seal::Shape;

/// Starts a job with its webhook relayed.
pub async fn job(x: &Exchange<'_>, mut req: Request) -> Result<Response, ProxyError> {
    let body = read_body(std::mem::take(req.body_mut()), x.route.max_body).await?;
    let Some(kind) = rewrite::job_kind(x.path()) else {
        return pass::forward(x, req.map(|_| Full::new(body))).await;
    };
    let body = relayed(x, req.headers(), kind, Shape::Same, body)?;
    pass::forward(x, req.map(|_| Full::new(body))).await
}

/// Whether `x` starts a job whose webhook is relayed: a POST to a job path on an upstream
/// with `webhooks.relay: true`.
pub fn relays(x: &Exchange<'_>, method: &hyper::Method) -> bool {
    let relay_on = x.upstream.webhooks.as_ref().is_some_and(|w| w.relay);
    relay_on && method == hyper::Method::POST && rewrite::job_kind(x.path()).is_some()
}

/// The job body of `kind` with its webhook pointed at lingo's receiver, its events to be
/// delivered in `shape`; as it was when the upstream's webhooks are not relayed or it has
/// no webhook. A webhook lingo will not relay is refused (400, the API's schema issue).
pub fn relayed(
    x: &Exchange<'_>,
    headers: HeaderView<'_>,
    kind: Kind,
    shape: Shape,
    body: Bytes,
) -> Result<Bytes, ProxyError> {
    let relay = x.snapshot.webhooks.of(&x.upstream.name);
    let Some(relay) = relay.filter(|r| r.spec.relay) else {
        return Ok(body);
    };
    let clients = &x.snapshot.table.clients;
    // The key was checked when the request was authenticated: this finds its name again.
    let client = (auth::check(clients, headers, false).ok().flatten()).map(|c| c.name.as_str());
    let receiver = match &relay.spec.receiver {
        Some(base) => base.to_string().trim_end_matches('/').to_owned(),
        None => x.public_base(),
    };
    let at = Origin {
        route: &x.route.label,
        client,
        shape,
        receiver: &receiver,
    };
    match rewrite::rewrite(&body, kind, relay, &at) {
        Ok(Some(rewritten)) => Ok(rewritten),
        Ok(None) => Ok(body),
        Err(issue) => Err(ProxyError::Refused {
            status: StatusCode::BAD_REQUEST,
            message: "Bad Request".into(),
            code: Some("BAD_REQUEST"),
            details: vec![issue],
        }),
    }
}
