//! A request of a client with limits: its likely cost estimated (its body read first when a
//! limit counts tokens or credits, or is for one model), reserved, and only then run. The pipeline writes the
//! `x-ratelimit-*` fields into the answer and settles the reservation as the answer ends
//! (`quota::settling`).

use hyper::Method;
use hyper::header::ACCEPT_ENCODING;

use super::exchange::Exchange;
use super::plan::Plan;
use super::run::{self, shared::read_body};
use crate::error::ProxyError;
use crate::http::body::Body;
use crate::http::message::{Request, Response};
use crate::quota::{Estimate, Quota, RateHeaders, Reservation};
use crate::table::ClientKey;

/// What a limited request's answer carries, and what it settles; boxed, so that a request's
/// state stays small (`pipeline`'s test).
pub type Admitted = Box<(RateHeaders, Option<Reservation>)>;

/// Admits `req` of `client` against its limits and runs it when there is room.
pub async fn run(
    quota: &Quota,
    client: &ClientKey,
    plan: Plan,
    x: &Exchange<'_>,
    req: Request,
) -> (Result<Response, ProxyError>, Admitted) {
    let label = &*x.route.label;
    let (mut req, (estimate, model)) = if Quota::needs_body(client, label) && has_body(&req, x) {
        let (head, body) = req.into_parts();
        let body = match read_body(body, x.route.max_body).await {
            Ok(body) => body,
            Err(err) => return (Err(err), Box::new((RateHeaders::default(), None))),
        };
        let read = Estimate::of(x.route.speaks, x.path(), &body);
        (Request::from_parts(head, Body::full(body)), read)
    } else {
        (req, (Estimate::NOTHING, None))
    };
    let admitted = quota
        .admit(client, (label, model.as_deref()), estimate)
        .await;
    match admitted.outcome {
        Ok(reservation) => {
            let translated = matches!(plan, Plan::Translate(_));
            let reservation = reservation.map(|r| if translated { r.translated() } else { r });
            if reservation.as_ref().is_some_and(Reservation::reads_answer) {
                // Its usage is read in the answer as it passes: not compressed.
                uncompressed(&mut req);
            }
            let result = run::run(plan, x, req).await;
            (result, Box::new((admitted.headers, reservation)))
        }
        Err(refused) => (Err(refused), Box::new((admitted.headers, None))),
    }
}

/// Writes a limited request's `x-ratelimit-*` fields into its `response`; the reservation its
/// answer settles.
pub fn answer(admitted: Option<Admitted>, response: &mut Response) -> Option<Reservation> {
    let (fields, reservation) = *admitted?;
    fields.write(response);
    reservation
}

/// Asks the upstream for an answer that is not compressed.
fn uncompressed(req: &mut Request) {
    if req.headers().get(&ACCEPT_ENCODING).is_some() {
        req.headers_mut().remove(ACCEPT_ENCODING);
    }
}

/// Whether the request sends a body worth estimating (not a WebSocket upgrade's stream).
fn has_body(req: &Request, x: &Exchange<'_>) -> bool {
    !x.upgrade && matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH)
}
