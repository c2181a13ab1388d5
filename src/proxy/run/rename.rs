//! Model aliases on native pass-through routes.
//!
//! A native request for an alias (`"model": "gpt-4o-mini"`) is sent to the alias's upstream
//! with the upstream's model name, and every `model` in the response (each NDJSON line of a
//! stream, as it arrives) is the alias again. Requests for other models pass through
//! unchanged. Only the endpoints that name a model read the request body, and only when the
//! table has aliases.

use std::sync::LazyLock;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::CONTENT_LENGTH;

use super::reframe::Reframe;
use super::shared::read_body;
use crate::base::dialect::Dialect;
use crate::error::ProxyError;
use crate::http::body::Body;
use crate::http::message::{Request, Response};
use crate::proxy::exchange::Exchange;
use crate::proxy::run::pass;
use crate::table::Upstream;
use crate::translate::rename::Rename;
use crate::translate::splice::{self, KeyScan};

/// Forwards a native call, resolving a model alias if it names one.
///
/// Not an `async fn`, for the reason `pipeline::handle` is not one; the request stays whole
/// (its body taken, then replaced) for the same reason: it would be held as passed and again
/// as split.
#[allow(clippy::manual_async_fn)] // on purpose: see the doc
pub fn handle<'a>(
    call: &'a Exchange<'_>,
    mut req: Request,
) -> impl Future<Output = Result<Response, ProxyError>> + Send + 'a {
    async move {
        let body = read_body(std::mem::take(req.body_mut()), call.route.max_body).await?;
        let Some((index, alias, model, renamed)) = resolve(call, &body) else {
            return pass::forward_raw(call, req.map(|_| Full::new(body))).await;
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
        let req = req.map(|_| Full::new(renamed));
        // Boxed: its state would otherwise be in every native call's on a table with
        // aliases, to serve the ones that name one.
        let response = Box::pin(pass::forward(&aliased, req)).await?;
        Ok(renaming(call, upstream, response, (&alias, &model)))
    }
}

/// The response of `upstream` to a request for `alias` (sent as `model`), every `model` in it
/// the alias again.
fn renaming(
    call: &Exchange<'_>,
    upstream: &Upstream,
    response: Response,
    (alias, model): (&str, &str),
) -> Response {
    let max_line = usize::try_from(call.snapshot.table.limits.max_line).unwrap_or(usize::MAX);
    let (mut head, body) = response.into_parts();
    head.headers_mut().remove(CONTENT_LENGTH);
    let rename = Rename::new(model, alias);
    let body = Reframe::new(body, max_line, rename)
        .redacting(upstream)
        .reporting(&call.stats);
    Response::from_parts(head, Body::boxed(body))
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
