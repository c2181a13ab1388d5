//! `/v1/embeddings` over a native upstream, through the translation driver.
//!
//! All inputs go in one `/api/embed` call. An upstream that only has the older
//! `/api/embeddings` (it responds to `/api/embed` with a plain 404, not a model error) gets one
//! call per input, concurrently, and lingo remembers that for the upstream until the next
//! reload.

use hyper::StatusCode;

use super::drive::{assemble, checked, invalid, send_all, target};
use super::shared::{error_body, read_body, translate_upstream_error};
use crate::error::ProxyError;
use crate::http::body::Body;
use crate::http::message::{Request, Response};
use crate::proxy::exchange::Exchange;
use crate::table::Upstream;
use crate::translate::Translation;
use crate::translate::embeddings::{self, Embeddings};

type ResponseResult = Result<Response, ProxyError>;

/// Serves one embeddings request.
pub async fn handle(x: &Exchange<'_>, req: Request) -> ResponseResult {
    let (head, body) = req.into_parts();
    let body = read_body(body, x.route.max_body).await?;
    let mut t = Embeddings::new(embeddings::request(&body).map_err(invalid)?);
    let (index, upstream, model) = target(x, t.model(), Embeddings::UPSTREAM)?;
    let peer = x.snapshot.peer(index);
    if !peer.legacy_embeddings() {
        let responses = send_all(x, index, head.headers(), t.calls(&model)).await;
        if let Some(responses) = unless_missing(x, upstream, responses, &t).await? {
            return assemble(x, upstream, &t, responses).await;
        }
        tracing::info!(upstream = %upstream.name, "no /api/embed: using /api/embeddings from now on");
        peer.learn_legacy_embeddings();
    }
    t = t.legacy();
    let responses = send_all(x, index, head.headers(), t.calls(&model)).await;
    let responses = checked(x, upstream, responses, &t).await?;
    assemble(x, upstream, &t, responses).await
}

/// The `/api/embed` responses' bodies, unless the upstream says it has no such endpoint (`None`): a
/// plain 404, as opposed to `{"error": "model ... not found"}`.
async fn unless_missing(
    x: &Exchange<'_>,
    upstream: &Upstream,
    mut responses: Vec<ResponseResult>,
    t: &Embeddings,
) -> Result<Option<Vec<Body>>, ProxyError> {
    let Some(Ok(response)) = responses.pop_if(|a| a.as_ref().is_ok_and(is_not_found)) else {
        return checked(x, upstream, responses, t).await.map(Some);
    };
    let body = error_body(&x.stats, response).await;
    let plain = serde_json::from_slice::<serde_json::Value>(&body)
        .map_or(true, |v| v.get("error").is_none());
    if plain {
        return Ok(None);
    }
    Err(translate_upstream_error(
        upstream,
        404,
        &body,
        None,
        |s, b| t.upstream_error(s, b),
    ))
}

fn is_not_found(response: &Response) -> bool {
    response.status() == StatusCode::NOT_FOUND
}
