//! Model aliases on native pass-through routes.
//!
//! A native request for an alias (`"model": "gpt-4o-mini"`) is sent to the alias's upstream
//! with the upstream's model name, and every `model` in the answer (each NDJSON line of a
//! stream, as it arrives) is the alias again. Requests for other models pass through
//! unchanged. Only the endpoints that name a model read the request body, and only when the
//! table has aliases.

use std::sync::LazyLock;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::CONTENT_LENGTH;
use hyper::{Request, Response};

use super::reframe::Reframe;
use super::shared::read_body;
use crate::base::dialect::Dialect;
use crate::error::ProxyError;
use crate::http::body::Body;
use crate::proxy::exchange::Exchange;
use crate::proxy::run::pass;
use crate::translate::rename::Rename;
use crate::translate::splice::{self, KeyScan};

/// Forwards a native call, resolving a model alias if it names one.
pub async fn handle(call: &Exchange<'_>, req: Request<Body>) -> Result<Response<Body>, ProxyError> {
    let (parts, body) = req.into_parts();
    let body = read_body(body, call.route.max_body).await?;
    let Some((index, alias, model, renamed)) = resolve(call, &body) else {
        return pass::relay(call, Request::from_parts(parts, Full::new(body))).await;
    };
    let upstream = call.snapshot.table.upstream(index);
    if upstream.speaks != Dialect::Native {
        return Err(ProxyError::Invalid {
            message: format!(
                "model `{alias}` is served by a {} upstream, not a native one",
                upstream.speaks
            ),
            param: None,
        });
    }
    let aliased = call.to_upstream(index);
    let response = pass::forward(&aliased, Request::from_parts(parts, Full::new(renamed))).await?;
    let max_line = usize::try_from(call.snapshot.table.limits.max_line).unwrap_or(usize::MAX);
    let (mut parts, body) = response.into_parts();
    parts.headers.remove(CONTENT_LENGTH);
    let rename = Rename::new(&model, &alias);
    Ok(Response::from_parts(
        parts,
        Body::boxed(
            Reframe::new(body, max_line, rename)
                .redacting(upstream)
                .reporting(&call.stats),
        ),
    ))
}

/// `(upstream index, alias, upstream model, rewritten body)` when the body names an alias.
/// Only the model's value changes: it is spliced in place, so everything else reaches the
/// upstream exactly as the client wrote it. The model is `model`, or `name` on `/api/show`
/// (the native server reads `model` first).
fn resolve(call: &Exchange<'_>, body: &[u8]) -> Option<(usize, String, String, Bytes)> {
    static KEYS: LazyLock<KeyScan> = LazyLock::new(|| KeyScan::new(&[br#""model""#, br#""name""#]));
    let (models, literals) = (
        &call.snapshot.table.models,
        &call.snapshot.table.alias_literals,
    );
    if !splice::may_name(body, &KEYS, literals.as_ref(), |model| {
        models.contains_key(model)
    }) {
        return None;
    }
    let found = splice::find(body, &["model", "name"])?;
    let named = found
        .iter()
        .find(|f| f.name == 0)
        .or_else(|| found.iter().find(|f| f.name == 1))?;
    let alias = named.string()?;
    let target = models.get(&alias)?;
    let literal = splice::string_literal(&target.model);
    let renamed = splice::replaced(body, named.range.clone(), &literal).freeze();
    Some((target.upstream, alias, target.model.clone(), renamed))
}
