//! `/api/tags`, `/api/show`, `/api/ps` and `/api/version` for native clients of a
//! chat-completions upstream, from `/v1/models` and `/v1/models/{id}`; the bodies are made by
//! [`crate::translate::native::models`].

use bytes::Bytes;
use hyper::Method;
use serde_json::Value;

use super::shared::{bad_gateway, json, read_body, resolve, send, upstream_failure, whole};
use crate::base::dialect::{Dialect, paths};
use crate::error::ProxyError;
use crate::http::message::{Request, Response};
use crate::proxy::exchange::Exchange;
use crate::table::Upstream;
use crate::translate::native::{self, models};

type ResponseResult = Result<Response, ProxyError>;

/// The route upstream's `/v1/models` as `/api/tags`, then the table's aliases on
/// chat-completions upstreams (in name order; each described by its target's entry when the
/// route's upstream lists it, else by an empty one).
pub async fn tags(x: &Exchange<'_>) -> ResponseResult {
    let list = get(x, x.route.upstream, x.upstream, paths::MODELS).await?;
    let table = &x.snapshot.table;
    let mut aliases: Vec<(&str, &str)> = table
        .models
        .iter()
        .filter(|(_, m)| table.upstream(m.upstream).speaks == Dialect::Chat)
        .map(|(a, m)| (a.as_str(), m.model.as_str()))
        .collect();
    aliases.sort_unstable();
    let body = models::tags(&list, &aliases).map_err(|m| bad_gateway(x.upstream, m))?;
    Ok(json(body))
}

/// `POST /api/show` (`model`, or the older `name`): the model's `/v1/models/{id}` on the
/// upstream its name (an alias, maybe) resolves to, described under the client's name.
pub async fn show(x: &Exchange<'_>, req: Request) -> ResponseResult {
    let body = read_body(req.into_body(), x.route.max_body).await?;
    let name = model_name(&body)?;
    let (index, upstream, model) = resolve(x, &name);
    if upstream.speaks != Dialect::Chat {
        return Err(ProxyError::Invalid {
            message: format!("model `{name}` is served by a {} upstream", upstream.speaks),
            param: None,
        });
    }
    let path = format!("{}/{}", paths::MODELS, path_escape(&model));
    let response = get(x, index, upstream, &path).await?;
    let body = models::show(&name, &response).map_err(|m| bad_gateway(upstream, m))?;
    Ok(json(body))
}

/// `/api/ps`: no model is known to be loaded (a chat-completions server does not say).
pub fn ps() -> ResponseResult {
    Ok(json(models::ps()))
}

/// `/api/version`: the native API version lingo translates.
pub fn version() -> ResponseResult {
    Ok(json(models::version()))
}

/// A `GET` to a chat-completions upstream, its response read whole; an error response rewritten
/// in the native shape with its status.
async fn get(
    x: &Exchange<'_>,
    index: usize,
    upstream: &Upstream,
    path: &str,
) -> Result<Bytes, ProxyError> {
    let client = &x.snapshot.peer(index).backends;
    let response = send(x, upstream, client, Method::GET, None, path, Bytes::new()).await?;
    if !response.status().is_success() {
        let in_dialect = |status, body: &[u8]| {
            let (status, message) = native::upstream_message(status, body);
            (status, message, None)
        };
        return Err(upstream_failure(&x.stats, upstream, response, in_dialect).await);
    }
    whole(x, upstream, response.into_body()).await
}

/// The model an `/api/show` body names (`model`, else `name`), or a native 400.
fn model_name(body: &[u8]) -> Result<String, ProxyError> {
    let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let name = ["model", "name"]
        .iter()
        .find_map(|k| value.get(k).and_then(Value::as_str))
        .filter(|n| !n.trim().is_empty());
    name.map(str::to_owned).ok_or_else(|| ProxyError::Invalid {
        message: "model is required".into(),
        param: Some("model".into()),
    })
}

/// A model id as a path: `/` kept (ids such as `org/model` are addressed that way), every
/// byte a path cannot carry as it is `%XX`-escaped.
fn path_escape(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/:@".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_escaped_for_the_path() {
        assert_eq!(super::path_escape("org/m:3b"), "org/m:3b");
        assert_eq!(super::path_escape("a b?c"), "a%20b%3Fc");
    }
}
