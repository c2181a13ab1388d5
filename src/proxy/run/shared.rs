//! What the runs share: reading the client's body, resolving a model alias, sending one
//! request upstream with the pass-through header rules, reading a response whole, and
//! re-telling an upstream's error.

use bytes::Bytes;
use hyper::header::{HeaderValue, RETRY_AFTER};
use hyper::{Method, StatusCode, Version};

use crate::error::ProxyError;
use crate::http::body::{Body, read_all};
use crate::http::message::{HeaderView, Request, Response};
use crate::observe::RequestStats;
use crate::proxy::exchange::Exchange;
use crate::proxy::run::pass::forwarding;
use crate::table::Upstream;
use crate::upstream::{self, backends::Backends};

/// Reads the whole client body, refusing it past `limit` (413), or when it stalls (408).
pub async fn read_body(body: Body, limit: u64) -> Result<Bytes, ProxyError> {
    let read = read_all(body, usize::try_from(limit).unwrap_or(usize::MAX)).await;
    read.map_err(|err| upstream::client_body(err.as_ref(), limit))
}

/// Where a client-facing model name goes: an alias picks the upstream and its model name;
/// any other name goes to the route's upstream unchanged.
pub fn resolve<'a>(call: &'a Exchange<'_>, model: &str) -> (usize, &'a Upstream, String) {
    let table = &call.snapshot.table;
    match table.models.get(model) {
        Some(alias) => (
            alias.upstream,
            table.upstream(alias.upstream),
            alias.model.clone(),
        ),
        None => (call.route.upstream, call.upstream, model.to_owned()),
    }
}

/// Sends one native JSON request (`POST path`) to an upstream, with the same header rules as
/// pass-through (the client's end-to-end headers, forwarding headers, request id, the
/// upstream's key instead of the client's). `client_fields` are the client's fields that go
/// along, none for a request the client's fields have no part in. The response's body is
/// under the upstream's idle limit.
pub async fn send_native(
    call: &Exchange<'_>,
    upstream: &Upstream,
    client: &Backends,
    client_fields: HeaderView<'_>,
    path: &str,
    body: Bytes,
) -> Result<Response, ProxyError> {
    let client_fields = Some(client_fields);
    send(
        call,
        upstream,
        client,
        Method::POST,
        client_fields,
        path,
        body,
    )
    .await
}

/// Sends one native request with the pass-through header rules; see [`send_native`]. Most
/// callers read only the response's status and body, so its fields may stay as read
/// (`Forwarding::raw_response`).
pub async fn send(
    call: &Exchange<'_>,
    upstream: &Upstream,
    client: &Backends,
    method: Method,
    client_fields: Option<HeaderView<'_>>,
    path: &str,
    body: Bytes,
) -> Result<Response, ProxyError> {
    let mut rules = forwarding(call, false);
    rules.auth = upstream.auth.as_ref();
    rules.host = &upstream.backends[0].host;
    // The client's end-to-end fields travel on, but those of its own body: the body is
    // lingo's JSON; and lingo reads what comes back, so a CDN in front of the upstream must
    // not compress it.
    rules.json = true;
    rules.identity = true;
    rules.raw_response = true;
    rules.client = client_fields;
    let mut request = Request::new(Body::full(body));
    *request.method_mut() = method;
    *request.uri_mut() = upstream::request_uri(upstream, path);
    *request.version_mut() = Version::HTTP_11;
    let waiting = call.stats.waiting();
    // Its body is idle-timed by the sending (`UpstreamClient::send`).
    let response = client.send(upstream, request, &rules, u64::MAX).await;
    drop(waiting);
    response
}

/// Turns a native error response (any non-2xx) into the error the client sees.
pub async fn upstream_failure(
    stats: &RequestStats,
    upstream: &Upstream,
    response: Response,
    in_dialect: impl Fn(u16, &[u8]) -> (u16, String, Option<&'static str>),
) -> ProxyError {
    let status = response.status().as_u16();
    let retry_after = response.headers().value(&RETRY_AFTER);
    let body = error_body(stats, response).await;
    translate_upstream_error(upstream, status, &body, retry_after, in_dialect)
}

/// An error response's body: small, so read whole, but bounded (64 KiB) so that a broken
/// upstream cannot make lingo read forever. The time it takes is the upstream's.
pub async fn error_body(stats: &RequestStats, response: Response) -> Bytes {
    let waiting = stats.waiting();
    let body = read_all(response.into_body(), 64 * 1024).await;
    drop(waiting);
    body.unwrap_or_default()
}

/// An upstream's error response rewritten in the client's dialect, the upstream's key kept
/// out.
pub fn translate_upstream_error(
    upstream: &Upstream,
    status: u16,
    body: &[u8],
    retry_after: Option<HeaderValue>,
    in_dialect: impl Fn(u16, &[u8]) -> (u16, String, Option<&'static str>),
) -> ProxyError {
    let (status, message, code) = in_dialect(status, body);
    ProxyError::Upstream {
        status: StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY),
        message: upstream::redact(upstream, &message).into_owned(),
        code,
        retry_after,
    }
}

/// Reads a whole upstream response's `body`: one in memory, at most `limits.max_response` of
/// it (an upstream that never stops must not grow lingo without bound); the idle limit
/// applies. The time it takes is the upstream's, not lingo's.
pub async fn whole(
    call: &Exchange<'_>,
    upstream: &Upstream,
    body: Body,
) -> Result<Bytes, ProxyError> {
    let limit = call.snapshot.table.limits.max_response;
    let waiting = call.stats.waiting();
    let read = read_all(body, usize::try_from(limit).unwrap_or(usize::MAX)).await;
    drop(waiting);
    read.map_err(|e| {
        if e.is::<http_body_util::LengthLimitError>() {
            let message = format!("the response is over limits.max_response ({limit} bytes)");
            return bad_gateway(upstream, message);
        }
        upstream::classify_body_error(upstream, e.as_ref())
    })
}

/// An upstream response lingo could not read as what it should be.
pub fn bad_gateway(upstream: &Upstream, message: String) -> ProxyError {
    ProxyError::BadResponse {
        upstream: upstream.name.to_string(),
        message: upstream::redact(upstream, &message).into_owned(),
    }
}

/// A JSON response (200).
pub fn json(body: Bytes) -> Response {
    Response::json(StatusCode::OK, body)
}
