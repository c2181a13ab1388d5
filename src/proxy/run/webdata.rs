//! Web-data v1 clients over a v2-only upstream: the I/O shell around the pure
//! [`crate::translate::webdata`]. The v1 path and body become v2's (or a v1-shaped refusal);
//! the response is read whole, rewritten in v1's shapes with its status kept, and the formats
//! of a started crawl or batch are remembered on the upstream's [`Peer`] so that its status
//! pages, polled on any connection, put json results where the client reads them. A watcher
//! (WebSocket upgrade) is tunnelled to its v2 path, its text frames rewritten the same way.

use std::time::Instant;

use bytes::Bytes;
use hyper::StatusCode;
use hyper::header::{CONTENT_LENGTH, HeaderValue, RETRY_AFTER};

use super::shared::{read_body, send, whole};
use super::{tunnel, webhook_relay};
use crate::error::ProxyError;
use crate::http::body::Body;
use crate::http::message::{Request, Response};
use crate::http::redact::redact_headers;
use crate::mock::webhook::Kind;
use crate::proxy::exchange::Exchange;
use crate::runtime::Peer;
use crate::table::Upstream;
use crate::translate::webdata::{self, Call, Frames, JsonAs, ResponseContext, V1Error};
use crate::upstream;
use crate::webhooks::seal::Shape;

type ResponseResult = Result<Response, ProxyError>;

/// Serves one `/v1/...` call on a route to a v2-only upstream.
pub async fn v1(x: &Exchange<'_>, req: Request) -> ResponseResult {
    let query = req.uri().query().map(str::to_owned);
    let route =
        webdata::route(req.method().as_str(), x.path(), query.as_deref()).map_err(refused)?;
    if x.upgrade {
        return watch(x, &route.path_and_query, req).await;
    }
    let (head, body) = req.into_parts();
    let body = read_body(body, x.route.max_body).await?;
    let translated = webdata::request(route.call, &body).map_err(refused)?;
    let peer = x.snapshot.peer(x.route.upstream);
    let json_as = match (route.call, webdata::status_id(x.path())) {
        (Call::CrawlStatus | Call::BatchStatus, Some(id)) => recall(peer, id),
        _ => translated.json_as,
    };
    let up = translated.body.unwrap_or(body);
    let up = match job_kind(route.call) {
        Some(kind) => webhook_relay::relayed(x, head.headers(), kind, Shape::v1(json_as), up)?,
        None => up,
    };
    let response = send(
        x,
        x.upstream,
        &peer.backends,
        head.method().clone(),
        Some(head.headers()),
        &route.path_and_query,
        up,
    );
    v1_response(x, peer, route.call, json_as, response.await?).await
}

/// The job a call starts, if its webhook may be relayed.
fn job_kind(call: Call) -> Option<Kind> {
    match call {
        Call::Crawl => Some(Kind::Crawl),
        Call::Batch => Some(Kind::BatchScrape),
        Call::Extract => Some(Kind::Extract),
        _ => None,
    }
}

/// The v2 response read whole and rewritten in v1's shapes, its status and fields kept; a
/// started job's formats remembered.
async fn v1_response(
    x: &Exchange<'_>,
    peer: &Peer,
    call: Call,
    json_as: JsonAs,
    response: Response,
) -> ResponseResult {
    let (mut head, body) = response.into_parts();
    let whole = whole(x, x.upstream, body).await?;
    let status = head.status();
    if matches!(call, Call::Crawl | Call::Batch) && status.is_success() {
        remember(peer, &whole, json_as);
    }
    let public_base = x.public_base();
    let at = ResponseContext {
        call,
        json_as,
        public_base: &public_base,
        base_path: upstream::base_path(x.upstream),
    };
    let fields = head.headers_mut();
    retry_after(status, fields, &whole);
    let v1_body = webdata::response(&at, status.as_u16(), &whole).unwrap_or(whole);
    fields.remove(CONTENT_LENGTH);
    let v1_body = if status.is_success() {
        v1_body
    } else {
        redacted(x.upstream, fields, v1_body)
    };
    Ok(Response::from_parts(head, Body::full(v1_body)))
}

/// A v1 crawl watcher: tunnelled to its v2 path, its documents' json results where the job's
/// v1 formats put them.
async fn watch(x: &Exchange<'_>, v2_path: &str, req: Request) -> ResponseResult {
    let peer = x.snapshot.peer(x.route.upstream);
    let json_as = webdata::status_id(x.path()).map_or(JsonAs::Unknown, |id| recall(peer, id));
    let max = usize::try_from(x.snapshot.table.limits.max_response).unwrap_or(usize::MAX);
    tunnel::watcher(&x.at_path(v2_path), req, Frames::new(json_as, max)).await
}

/// A 429 gets the `Retry-After` its message names, unless the upstream sent one.
fn retry_after(status: StatusCode, headers: &mut hyper::HeaderMap, response: &[u8]) {
    if status == StatusCode::TOO_MANY_REQUESTS
        && !headers.contains_key(RETRY_AFTER)
        && let Some(seconds) = webdata::retry_after(response)
    {
        headers.insert(RETRY_AFTER, HeaderValue::from(seconds));
    }
}

/// A v1 request lingo will not send on, told in the v1 shape (`details` included).
fn refused(refusal: V1Error) -> ProxyError {
    ProxyError::Refused {
        status: StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::BAD_REQUEST),
        message: refusal.error,
        code: refusal.code,
        details: refusal.details,
    }
}

/// What a job's start asked for, if this upstream's peer still remembers it.
fn recall(peer: &Peer, id: &str) -> JsonAs {
    match peer.jobs.lock() {
        Ok(jobs) => jobs.recall(id, Instant::now()),
        Err(_) => JsonAs::Unknown,
    }
}

/// Remembers a started job's formats under the id its response gives.
fn remember(peer: &Peer, response: &[u8], json_as: JsonAs) {
    if let (Some(id), Ok(mut jobs)) = (webdata::job_id(response), peer.jobs.lock()) {
        jobs.remember(&id, json_as, Instant::now());
    }
}

/// An error response with the upstream's key kept out of its headers and body, should the
/// upstream echo it.
fn redacted(upstream: &Upstream, headers: &mut hyper::HeaderMap, body: Bytes) -> Bytes {
    let Some(auth) = &upstream.auth else {
        return body;
    };
    redact_headers(headers, &auth.key);
    match std::str::from_utf8(&body) {
        Ok(text) => Bytes::from(upstream::redact(upstream, text).into_owned()),
        Err(_) => body,
    }
}
