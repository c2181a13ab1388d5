//! `/v1/embeddings` over a native upstream.
//!
//! All inputs go in one `/api/embed` call. An upstream that only has the older
//! `/api/embeddings` (it answers `/api/embed` with a plain 404, not a model error) gets one
//! call per input, concurrently, and lingo remembers that for the upstream until the next
//! reload.

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};

use super::shared::{bad_gateway, json, read_body, resolve, send_native, upstream_failure, whole};
use crate::base::dialect::Dialect;
use crate::error::ProxyError;
use crate::http::body::Body;
use crate::http::join::join_all;
use crate::proxy::exchange::Exchange;
use crate::table::Upstream;
use crate::translate::chat;
use crate::translate::embeddings::{self, EmbedRequest};
use crate::upstream;

type Answer = Result<Response<Body>, ProxyError>;

/// Serves one embeddings request.
pub async fn handle(call: &Exchange<'_>, req: Request<Incoming>) -> Answer {
    let (parts, body) = req.into_parts();
    let body = read_body(body, call.route.max_body).await?;
    let request = embeddings::request(&body).map_err(super::chat::invalid)?;
    let (index, upstream, model) = resolve(call, &request.model);
    if upstream.speaks != Dialect::Native {
        return Err(super::chat::wrong_upstream(&request.model, upstream));
    }
    let peer = call.snapshot.peer(index);
    if !peer.legacy_embeddings() {
        let client = &call.snapshot.peer(index).client;
        let answer = send_native(
            call,
            upstream,
            client,
            &parts.headers,
            "/api/embed",
            request.embed_body(&model),
        )
        .await?;
        if answer.status() == StatusCode::NOT_FOUND {
            let body = small_body(answer).await;
            if !is_route_missing(&body) {
                let (status, message, code) = chat::upstream_error(404, &body);
                return Err(ProxyError::Upstream {
                    status: StatusCode::from_u16(status).unwrap_or(StatusCode::NOT_FOUND),
                    message: upstream::redact(upstream, &message).into_owned(),
                    code,
                    retry_after: None,
                });
            }
            tracing::info!(upstream = %upstream.name, "no /api/embed: using /api/embeddings from now on");
            peer.learn_legacy_embeddings();
        } else if !answer.status().is_success() {
            return Err(upstream_failure(upstream, answer, chat::upstream_error).await);
        } else {
            let bytes = whole(call, upstream, answer).await?;
            let (vectors, tokens) =
                embeddings::parse_embed(&bytes).map_err(|m| bad_gateway(upstream, m))?;
            if vectors.len() != request.inputs.len() {
                let message = format!(
                    "answered {} embeddings for {} inputs",
                    vectors.len(),
                    request.inputs.len()
                );
                return Err(bad_gateway(upstream, message));
            }
            return Ok(json(embeddings::response(
                &vectors,
                tokens,
                &request.model,
                request.base64,
            )));
        }
    }
    legacy_embeddings(call, index, upstream, &model, &request, &parts.headers).await
}

/// One `/api/embeddings` call per input, concurrently.
async fn legacy_embeddings(
    call: &Exchange<'_>,
    index: usize,
    upstream: &Upstream,
    model: &str,
    request: &EmbedRequest,
    headers: &hyper::HeaderMap,
) -> Answer {
    let client = &call.snapshot.peer(index).client;
    let sends: Vec<std::pin::Pin<Box<dyn std::future::Future<Output = Answer> + Send + '_>>> =
        request
            .inputs
            .iter()
            .map(|input| {
                Box::pin(send_native(
                    call,
                    upstream,
                    client,
                    headers,
                    "/api/embeddings",
                    request.legacy_body(model, input),
                )) as _
            })
            .collect();
    let mut vectors = Vec::with_capacity(request.inputs.len());
    for answer in join_all(sends).await {
        let answer = answer?;
        if !answer.status().is_success() {
            return Err(upstream_failure(upstream, answer, chat::upstream_error).await);
        }
        let bytes = whole(call, upstream, answer).await?;
        vectors.push(embeddings::parse_legacy(&bytes).map_err(|m| bad_gateway(upstream, m))?);
    }
    // The legacy endpoint reports no token counts.
    Ok(json(embeddings::response(
        &vectors,
        0,
        &request.model,
        request.base64,
    )))
}

/// A plain 404 (the server has no such route), as opposed to `{"error": "model ... not found"}`.
fn is_route_missing(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body).map_or(true, |v| v.get("error").is_none())
}

async fn small_body(answer: Response<Body>) -> Bytes {
    let collected = Limited::new(answer.into_body(), 64 * 1024).collect().await;
    collected.map(|c| c.to_bytes()).unwrap_or_default()
}
