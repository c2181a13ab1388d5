//! `/v1/models` and `/v1/models/{id}` over a native upstream.

use bytes::Bytes;
use hyper::Method;
use serde_json::json;

use super::shared::{bad_gateway, json, resolve, send, upstream_failure, whole};
use crate::error::ProxyError;
use crate::http::message::Response;
use crate::proxy::exchange::Exchange;
use crate::translate::{chat, models};

type ResponseResult = Result<Response, ProxyError>;

/// The route upstream's models, then the table's aliases.
pub async fn list(call: &Exchange<'_>) -> ResponseResult {
    let (upstream, client) = (
        call.upstream,
        &call.snapshot.peer(call.route.upstream).backends,
    );
    let response = send(
        call,
        upstream,
        client,
        Method::GET,
        None,
        "/api/tags",
        Bytes::new(),
    );
    let response = response.await?;
    if !response.status().is_success() {
        return Err(upstream_failure(&call.stats, upstream, response, chat::upstream_error).await);
    }
    let tags = whole(call, upstream, response.into_body()).await?;
    let table = &call.snapshot.table;
    let mut aliases: Vec<(&str, &str)> = table
        .models
        .iter()
        .map(|(a, m)| (a.as_str(), m.model.as_str()))
        .collect();
    aliases.sort_unstable();
    let body =
        models::list(&tags, &aliases, &table.owned_by).map_err(|m| bad_gateway(upstream, m))?;
    Ok(json(body))
}

/// One model (`path` is `/v1/models/<id>`; the id may contain `/`).
pub async fn one(call: &Exchange<'_>, path: &str) -> ResponseResult {
    let id = percent_decode(path.trim_start_matches("/v1/models/"));
    let (index, upstream, model) = resolve(call, &id);
    let client = &call.snapshot.peer(index).backends;
    let body = Bytes::from(json!({"model": model}).to_string());
    let response = send(
        call,
        upstream,
        client,
        Method::POST,
        None,
        "/api/show",
        body,
    )
    .await?;
    if !response.status().is_success() {
        return Err(upstream_failure(&call.stats, upstream, response, chat::upstream_error).await);
    }
    let show = whole(call, upstream, response.into_body()).await?;
    let body = models::one(&id, &show, &call.snapshot.table.owned_by)
        .map_err(|m| bad_gateway(upstream, m))?;
    Ok(json(body))
}

/// Decodes `%XX` escapes (model ids such as `llama3.2%3A3b`); a bad escape stays as it is.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
