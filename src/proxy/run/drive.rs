//! The one I/O shell of every translation (see [`Translation`]).
//!
//! Read the client's body, let the endpoint's pure translator read it, resolve the model
//! alias, send the upstream requests concurrently and check their responses before anything
//! is sent to the client (an upstream error keeps its status); then re-frame each response's
//! stream as it arrives ([`Reframe`], merged by [`Merged`]), or read them whole and let the
//! translator assemble the response.

use std::sync::Arc;
use std::time::UNIX_EPOCH;

use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};

use super::reframe::{Closing, Merged, Reframe};
use super::shared::{bad_gateway, json, read_body, resolve, send_native, upstream_failure, whole};
use crate::base::dialect::Dialect;
use crate::base::{clock, ids};
use crate::error::ProxyError;
use crate::http::body::Body;
use crate::http::join::join_all;
use crate::http::message::{HeaderView, Request, Response};
use crate::proxy::exchange::Exchange;
use crate::table::Upstream;
use crate::translate::InvalidRequest;
use crate::translate::chat::{self, Chat, RouteDefaults};
use crate::translate::completions::{self, Completions};
use crate::translate::{Meta, Translation, UpstreamCall};

type ResponseResult = Result<Response, ProxyError>;

/// Serves `/v1/chat/completions`.
pub async fn chat(x: &Exchange<'_>, req: Request) -> ResponseResult {
    let (head, body) = req.into_parts();
    let body = read_body(body, x.route.max_body).await?;
    let defaults = RouteDefaults {
        options: x.route.options.clone(),
    };
    let request = chat::request(&body, &defaults).map_err(invalid)?;
    let meta = meta("chatcmpl", request.model());
    run(x, head.headers(), Chat::new(request, meta)).await
}

/// Serves `/v1/completions`.
pub async fn completions(x: &Exchange<'_>, req: Request) -> ResponseResult {
    let (head, body) = req.into_parts();
    let body = read_body(body, x.route.max_body).await?;
    let request = completions::request(&body, &x.route.options).map_err(invalid)?;
    let meta = meta("cmpl", &request.model);
    run(x, head.headers(), Completions::new(request, meta)).await
}

/// Runs a translation: its upstream requests, then its streamed or whole response.
pub async fn run<T: Translation>(
    x: &Exchange<'_>,
    headers: HeaderView<'_>,
    mut t: T,
) -> ResponseResult {
    let (index, upstream, model) = target(x, t.model(), T::UPSTREAM)?;
    let calls = t.calls(&model);
    let responses = send_all(x, index, headers, calls).await;
    let responses = checked(x, upstream, responses, &t).await?;
    if t.streams() {
        return Ok(streaming(
            streamed(x, upstream, t, responses),
            T::STREAM_TYPE,
        ));
    }
    assemble(x, upstream, &t, responses).await
}

/// Where the client's model goes: the alias's upstream and its name there, or the route's;
/// refused when that upstream does not speak `needs` (the translation's upstream dialect).
pub fn target<'a>(
    x: &'a Exchange<'_>,
    model: &str,
    needs: Dialect,
) -> Result<(usize, &'a Upstream, String), ProxyError> {
    let (index, upstream, upstream_model) = resolve(x, model);
    if upstream.speaks != needs {
        return Err(ProxyError::Invalid {
            message: format!(
                "model `{model}` is served by a {} upstream; this route needs a {needs} one",
                upstream.speaks
            ),
            param: Some("model".into()),
        });
    }
    Ok((index, upstream, upstream_model))
}

/// Sends every upstream request at once; the responses' heads, in order.
pub async fn send_all(
    x: &Exchange<'_>,
    index: usize,
    headers: HeaderView<'_>,
    calls: Vec<UpstreamCall>,
) -> Vec<ResponseResult> {
    let peer = x.snapshot.peer(index);
    let send = |call: UpstreamCall| {
        send_native(x, &peer.spec, &peer.backends, headers, call.path, call.body)
    };
    // One call (all but `n` > 1, a prompt batch, the legacy embeddings' one per input) is
    // awaited as it is, without a box and `join_all`'s lists.
    let calls = match <[UpstreamCall; 1]>::try_from(calls) {
        Ok([call]) => return vec![send(call).await],
        Err(calls) => calls,
    };
    let sends = calls
        .into_iter()
        .map(|call| {
            Box::pin(send(call))
                as std::pin::Pin<Box<dyn Future<Output = ResponseResult> + Send + '_>>
        })
        .collect();
    join_all(sends).await
}

/// The responses' bodies, if every one of them is a success; else the first failure,
/// rewritten. A success's fields are not read: its head is let go here, not when a stream
/// ends.
pub async fn checked<T: Translation>(
    x: &Exchange<'_>,
    upstream: &Upstream,
    responses: Vec<ResponseResult>,
    t: &T,
) -> Result<Vec<Body>, ProxyError> {
    let mut ok = Vec::with_capacity(responses.len());
    for response in responses {
        let response = response?;
        if !response.status().is_success() {
            let in_dialect = |status, body: &[u8]| t.upstream_error(status, body);
            return Err(upstream_failure(&x.stats, upstream, response, in_dialect).await);
        }
        ok.push(response.into_body());
    }
    Ok(ok)
}

/// The responses' streams re-framed as they arrive, merged, then the translation's closing.
fn streamed<T: Translation>(
    x: &Exchange<'_>,
    upstream: &Upstream,
    t: T,
    responses: Vec<Body>,
) -> Body {
    let max_line = usize::try_from(x.snapshot.table.limits.max_line).unwrap_or(usize::MAX);
    let count = responses.len();
    let streams = responses
        .into_iter()
        .enumerate()
        .map(|(i, response)| {
            Reframe::new(response, max_line, t.stream(i, count)).redacting(upstream)
        })
        .collect();
    let closing: Closing = Box::new(move |usage| t.closing(usage, count));
    Body::boxed(Merged::new(streams, closing, Arc::clone(&x.stats)))
}

/// The whole responses read, the whole response assembled, its usage counted.
pub async fn assemble<T: Translation>(
    x: &Exchange<'_>,
    upstream: &Upstream,
    t: &T,
    responses: Vec<Body>,
) -> ResponseResult {
    let mut wholes = Vec::with_capacity(responses.len());
    for response in responses {
        wholes.push(whole(x, upstream, response).await?);
    }
    let (body, usage) = t.whole(&wholes).map_err(|m| bad_gateway(upstream, m))?;
    x.stats.used(usage);
    Ok(json(body))
}

/// What every chunk of one response shares: a fresh id, now, the client's model name.
fn meta(prefix: &str, model: &str) -> Meta {
    Meta {
        id: ids::prefixed(prefix),
        created: clock::wall()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        model: model.to_owned(),
    }
}

/// A client request lingo refuses: 400, naming the parameter at fault.
pub fn invalid(err: InvalidRequest) -> ProxyError {
    ProxyError::Invalid {
        message: err.message,
        param: err.param.map(Into::into),
    }
}

/// A streamed response: server-sent events, or NDJSON lines for native clients.
pub fn streaming(body: Body, content_type: &'static str) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
