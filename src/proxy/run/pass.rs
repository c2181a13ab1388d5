//! Pass-through: the request goes up and the response comes back unchanged, streamed both
//! ways.
//!
//! Only headers change (see `upstream::headers`). The request body is streamed up under the
//! route's size limit; the response is streamed down under the upstream's idle limit, frame
//! by frame as it is read. A web-data JSON response is read whole, once, to re-base its API
//! links onto lingo's address (`rebase`); an error response of an upstream that has a key is
//! streamed with the key redacted (`Redacting`), should the upstream echo it.

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Limited};
use hyper::Version;
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE};

use crate::error::ProxyError;
use crate::http::body::{Body, BoxError, Prepend};
use crate::http::message::{HeaderView, Request, Response};
use crate::http::redact::{Redacting, redact_headers};
use crate::proxy::exchange::Exchange;
use crate::table::Upstream;
use crate::translate::links;
use crate::upstream::{self, headers};

/// Forwards `req` to the call's upstream and streams the response back, its fields in its
/// map.
///
/// This and [`forward_raw`] return `exchange`'s future itself: an `async` wrapper would be one
/// more state as large, copied once more when the request starts.
pub fn forward<'a, B>(
    call: &'a Exchange<'_>,
    req: Request<B>,
) -> impl Future<Output = Result<Response, ProxyError>> + Send + 'a
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    exchange(call, req, false)
}

/// [`forward`], for a caller that hands the response on as it is: its fields may stay as
/// read (`http::h1::raw`) until the client's connection writes them.
pub fn forward_raw<'a, B>(
    call: &'a Exchange<'_>,
    req: Request<B>,
) -> impl Future<Output = Result<Response, ProxyError>> + Send + 'a
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
    as_read: bool,
) -> impl Future<Output = Result<Response, ProxyError>> + Send + 'a
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    async move {
        // Raw header fields are written by lingo's HTTP/1.1 connection; hyper's HTTP/2 one
        // would need them made into a map after all.
        let as_read = as_read && req.version() != Version::HTTP_2;
        let web_data = call.upstream.speaks.is_web_data();
        let waiting = call.stats.waiting();
        let sending = {
            // The client's fields go up by the header rules; they are needed only while the
            // request's head is written.
            let (mut head, body) = req.into_parts();
            let client = head.take_headers();
            let request = upward(call, head, body);
            let mut rules = forwarding(call, false);
            // Links can only be re-based, and an echoed key redacted, in a response lingo
            // can read.
            rules.identity = web_data || call.upstream.auth.is_some();
            rules.raw_response = as_read && !web_data;
            rules.client = Some(HeaderView::from(&client));
            let (upstream, limit) = (call.upstream, call.route.max_body);
            call.backends.send(upstream, request, &rules, limit)
        };
        let response = sending.await;
        drop(waiting);
        // Its body is idle-timed, and its hop-by-hop fields left out, by the sending.
        let response = response?;
        let status = response.status();
        if let Some(auth) = &call.upstream.auth
            && (status.is_client_error() || status.is_server_error())
        {
            let (mut head, body) = response.into_parts();
            let fields = head.headers_mut();
            // Redacting can change the length.
            fields.remove(CONTENT_LENGTH);
            redact_headers(fields, &auth.key);
            let body = Body::boxed(Redacting::new(body, &auth.key));
            return Ok(Response::from_parts(head, body));
        }
        if web_data && is_json(response.headers()) {
            // Boxed (web-data JSON responses only): its state would otherwise be in every
            // pass-through's, and `rename::handle`'s, which awaits one for every native call
            // on a table with aliases.
            let (mut head, body) = response.into_parts();
            let rebase = Box::pin(rebase(call, head.headers_mut(), body));
            let body = rebase.await?;
            return Ok(Response::from_parts(head, body));
        }
        Ok(response)
    }
}

/// The request as it goes up: the client's `head` (its fields taken out: the header rules
/// forward them, `headers::Forwarding::client`) with its URI for the upstream's client
/// (`upstream::forward_uri`), the body under the route's size limit.
fn upward<B>(call: &Exchange<'_>, mut head: Request<()>, body: B) -> Request
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let uri = upstream::forward_uri(call.upstream, &call.path_and_query, head.uri());
    *head.uri_mut() = uri;
    // The client's HTTP version is its hop's business; the pool picks the upstream's.
    *head.version_mut() = Version::HTTP_11;
    // The body is framed by what is sent, not by what the client declared (the rules drop
    // its `Content-Length`): the length of a body that knows it (the client's own, unchanged,
    // or one rewritten on the way, such as an alias) is written, one that does not is chunked.
    let limit = usize::try_from(call.route.max_body).unwrap_or(usize::MAX);
    Request::from_parts(head, Body::new(Limited::new(body, limit)))
}

/// The header facts for this call.
pub fn forwarding<'a>(call: &'a Exchange<'_>, upgrade: bool) -> headers::Forwarding<'a> {
    headers::Forwarding {
        host: &call.upstream.backends[0].host,
        client_ip: &call.conn.client_ip,
        proto: if call.conn.tls { "https" } else { "http" },
        client_host: call.client_host.as_ref(),
        request_id: &call.request_id,
        auth: call.upstream.auth.as_ref(),
        upgrade,
        identity: false,
        json: false,
        raw_response: false,
        client: None,
    }
}

fn is_json(headers: HeaderView<'_>) -> bool {
    headers
        .get(&CONTENT_TYPE)
        .and_then(crate::http::message::text)
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        })
}

/// Reads a JSON response (up to `limits.max_response`; the API's own status pages stop at
/// 10 MiB) and re-bases its links onto the address the client used. A response over the cap
/// is passed on as read so far plus the rest, unchanged (and logged).
async fn rebase<B>(
    call: &Exchange<'_>,
    headers: &mut hyper::HeaderMap,
    body: B,
) -> Result<Body, ProxyError>
where
    B: http_body::Body<Data = Bytes, Error = BoxError> + Send + Unpin + 'static,
{
    let cap = usize::try_from(call.snapshot.table.limits.max_response).unwrap_or(usize::MAX);
    // Reading is the upstream's time; re-basing, lingo's.
    let waiting = call.stats.waiting();
    let read = read_up_to(call.upstream, body, cap).await;
    drop(waiting);
    let whole = match read? {
        Read::Whole(whole) => whole,
        Read::Over(body) => {
            tracing::warn!(
                "web-data response over limits.max_response ({cap} bytes): links not re-based"
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

/// A response's body read up to a cap.
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
