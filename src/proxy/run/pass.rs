//! Pass-through: the request goes up and the answer comes back unchanged, streamed both ways.
//!
//! Only headers change (see `upstream::headers`). The request body is streamed up under the
//! route's size limit; the answer is streamed down under the upstream's idle limit, frame by
//! frame as hyper reads it. A web-data JSON answer is read whole, once, to re-base its API links
//! onto lingo's address (`rewrite`); an error answer of an upstream that has a key is streamed
//! with the key redacted (`redact`), should the upstream echo it.

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Limited};
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Request, Response, Version};

use crate::error::ProxyError;
use crate::http::body::{Body, BoxError, Prepend, materialize};
use crate::http::redact::{Redacting, redact_headers};
use crate::proxy::exchange::Exchange;
use crate::table::Upstream;
use crate::translate::links;
use crate::upstream::{self, headers};

/// Forwards `req` to the call's upstream and streams the answer back, its fields in its map.
///
/// This and [`relay`] return `exchange`'s future itself: an `async` wrapper would be one
/// more state as large, copied once more when the request starts.
pub fn forward<'a, B>(
    call: &'a Exchange<'_>,
    req: Request<B>,
) -> impl Future<Output = Result<Response<Body>, ProxyError>> + Send + 'a
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    exchange(call, req, false)
}

/// [`forward`], for a caller that hands the answer on as it is: its fields may stay as read
/// (`http::h1::raw`) until the client's connection writes them, whoever reads or edits them
/// first making them into the map.
pub fn relay<'a, B>(
    call: &'a Exchange<'_>,
    req: Request<B>,
) -> impl Future<Output = Result<Response<Body>, ProxyError>> + Send + 'a
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    exchange(call, req, true)
}

/// Not an `async fn`, for the reason `pipeline::handle` is not one.
#[allow(clippy::manual_async_fn)] // on purpose: see the doc
fn exchange<'a, B>(
    call: &'a Exchange<'_>,
    req: Request<B>,
    raw: bool,
) -> impl Future<Output = Result<Response<Body>, ProxyError>> + Send + 'a
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    async move {
        // Fields kept as read are written by lingo's HTTP/1.1 connection; hyper's HTTP/2 one
        // would need them made into a map after all.
        let raw = raw && req.version() != Version::HTTP_2;
        let request = upward(call, req);
        let mut rules = forwarding(call, false);
        let web_data = call.upstream.speaks.is_web_data();
        // Links can only be re-based, and an echoed key redacted, in an answer lingo can read.
        rules.identity = web_data || call.upstream.auth.is_some();
        rules.raw_answer = raw && !web_data;
        // The client's own fields, kept as read, go up with its request.
        rules.raw_fields = call.raw_fields;
        let waiting = call.stats.waiting();
        let response = call
            .client
            .send(call.upstream, request, &rules, call.route.max_body)
            .await;
        drop(waiting);
        let mut response = response?;
        let failed = response.status().is_client_error() || response.status().is_server_error();
        if failed && call.upstream.auth.is_some() {
            materialize(&mut response); // redacted below
        }
        // Its body is idle-timed by the sending (`UpstreamClient::send`).
        let (mut parts, body) = response.into_parts();
        headers::to_client(&mut parts.headers, false);
        if let Some(auth) = &call.upstream.auth
            && failed
        {
            // Redacting can change the length.
            parts.headers.remove(CONTENT_LENGTH);
            redact_headers(&mut parts.headers, &auth.key);
            let body = Body::boxed(Redacting::new(body, &auth.key));
            return Ok(Response::from_parts(parts, body));
        }
        if call.upstream.speaks.is_web_data() && is_json(&parts.headers) {
            // Boxed (web-data JSON answers only): its state would otherwise be in every
            // pass-through's, and `rename::handle`'s, which awaits one for every native call
            // on a table with aliases, past mimalloc's 1 KiB fast path.
            let rebase = Box::pin(rebase_answer(call, &mut parts.headers, body));
            let body = rebase.await?;
            return Ok(Response::from_parts(parts, body));
        }
        Ok(Response::from_parts(parts, body))
    }
}

/// The request as it goes up: its URI for the upstream's client (`upstream::forward_uri`),
/// the body under the route's size limit.
/// Its fields are rewritten by the header rules (`headers::Forwarding`) on the way.
fn upward<B>(call: &Exchange<'_>, req: Request<B>) -> Request<Body>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let (mut parts, body) = req.into_parts();
    parts.uri = upstream::forward_uri(call.upstream, &call.path_and_query, &parts.uri);
    // The client's HTTP version is its hop's business; the pool picks the upstream's.
    parts.version = Version::HTTP_11;
    // The body is framed by what is sent, not by what the client declared (the rules drop
    // its `Content-Length`): the length of a body that knows it (the client's own, unchanged,
    // or one rewritten on the way, such as an alias) is written, one that does not is chunked.
    let limit = usize::try_from(call.route.max_body).unwrap_or(usize::MAX);
    Request::from_parts(parts, Body::new(Limited::new(body, limit)))
}

/// The header facts for this call.
pub fn forwarding<'a>(call: &'a Exchange<'_>, upgrade: bool) -> headers::Forwarding<'a> {
    headers::Forwarding {
        host: &call.upstream.host,
        client_ip: &call.conn.client_ip,
        proto: if call.conn.tls { "https" } else { "http" },
        client_host: call.client_host.as_ref(),
        request_id: &call.request_id,
        auth: call.upstream.auth.as_ref(),
        upgrade,
        identity: false,
        json: false,
        raw_answer: false,
        raw_fields: None,
    }
}

fn is_json(headers: &hyper::HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        })
}

/// Reads a JSON answer (up to `limits.max_answer`; the API's own status pages stop at
/// 10 MiB) and re-bases its links onto the address the client used. An answer over the cap
/// is passed on as read so far plus the rest, unchanged (and logged).
async fn rebase_answer<B>(
    call: &Exchange<'_>,
    headers: &mut hyper::HeaderMap,
    body: B,
) -> Result<Body, ProxyError>
where
    B: http_body::Body<Data = Bytes, Error = BoxError> + Send + Unpin + 'static,
{
    let cap = usize::try_from(call.snapshot.table.limits.max_answer).unwrap_or(usize::MAX);
    // Reading is the upstream's time; re-basing, lingo's.
    let waiting = call.stats.waiting();
    let read = read_up_to(call.upstream, body, cap).await;
    drop(waiting);
    let whole = match read? {
        Read::Whole(whole) => whole,
        Read::Over(body) => {
            tracing::warn!(
                "web-data answer over limits.max_answer ({cap} bytes): links not re-based"
            );
            return Ok(body);
        }
    };
    let base_path = upstream::base_path(call.upstream);
    match links::rebase_links(&whole, &call.public_base(), base_path) {
        Some(pieces) => {
            headers.remove(CONTENT_LENGTH);
            Ok(Body::pieces(pieces))
        }
        None => Ok(Body::full(whole)),
    }
}

/// An answer read up to a cap.
enum Read {
    /// All of it.
    Whole(Bytes),
    /// More than the cap: what was read, then the rest, unchanged.
    Over(Body),
}

async fn read_up_to<B>(upstream: &Upstream, mut body: B, cap: usize) -> Result<Read, ProxyError>
where
    B: http_body::Body<Data = Bytes, Error = BoxError> + Send + Unpin + 'static,
{
    let mut buf = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| upstream::classify_body_error(upstream, e.as_ref()))?;
        if let Ok(data) = frame.into_data() {
            buf.extend_from_slice(&data);
        }
        if buf.len() > cap {
            return Ok(Read::Over(Body::new(Prepend::new(buf.freeze(), body))));
        }
    }
    Ok(Read::Whole(buf.freeze()))
}
