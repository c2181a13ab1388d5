//! Model aliases on native pass-through routes.
//!
//! A native request for an alias (`"model": "gpt-4o-mini"`) is sent to the alias's upstream
//! with the upstream's model name, and every `model` in the answer (each NDJSON line of a
//! stream, as it arrives) is the alias again. Requests for other models pass through
//! unchanged. Only the endpoints that name a model read the request body, and only when the
//! table has aliases.

use std::borrow::Cow;

use bytes::{Bytes, BytesMut};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::CONTENT_LENGTH;
use hyper::{Request, Response};
use serde_json::Value;

use super::read_body;
use super::reframe::{Reframe, Translator};
use crate::body::Body;
use crate::dialect::Dialect;
use crate::error::ProxyError;
use crate::passthrough;
use crate::service::Call;
use crate::translate::chat::Usage;

/// The native endpoints whose body names a model.
const MODEL_PATHS: [&str; 5] = [
    "/api/chat",
    "/api/generate",
    "/api/embed",
    "/api/embeddings",
    "/api/show",
];

/// Whether this call may need an alias resolved.
pub fn renames_models(call: &Call<'_>, path: &str) -> bool {
    call.upstream.speaks == Dialect::Native
        && call.route.speaks == Dialect::Native
        && !call.snapshot.table.models.is_empty()
        && MODEL_PATHS.contains(&path)
}

/// Forwards a native call, resolving a model alias if it names one.
pub async fn handle(call: &Call<'_>, req: Request<Incoming>) -> Result<Response<Body>, ProxyError> {
    let (parts, body) = req.into_parts();
    let body = read_body(body, call.route.max_body).await?;
    let Some((index, alias, model, renamed)) = resolve(call, &body) else {
        return passthrough::forward(call, Request::from_parts(parts, Full::new(body))).await;
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
    let response =
        passthrough::forward(&aliased, Request::from_parts(parts, Full::new(renamed))).await?;
    let max_line = usize::try_from(call.snapshot.table.limits.max_line).unwrap_or(usize::MAX);
    let (mut parts, body) = response.into_parts();
    parts.headers.remove(CONTENT_LENGTH);
    let rename = Rename::new(&model, &alias);
    Ok(Response::from_parts(
        parts,
        Body::new(Reframe::new(body, max_line, rename).redacting(upstream)),
    ))
}

/// The model a native body names (`model`, or `name` on `/api/show`), read without building
/// the rest: most requests name no alias, and those pass on as they came.
#[derive(serde::Deserialize)]
struct Named<'a> {
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
}

/// `(upstream index, alias, upstream model, rewritten body)` when the body names an alias.
fn resolve(call: &Call<'_>, body: &[u8]) -> Option<(usize, String, String, Bytes)> {
    let named: Named<'_> = serde_json::from_slice(body).ok()?;
    let models = &call.snapshot.table.models;
    if !named
        .model
        .or(named.name)
        .is_some_and(|m| models.contains_key(&*m))
    {
        return None;
    }
    let mut request: serde_json::Map<String, Value> = serde_json::from_slice(body).ok()?;
    let key = if request.contains_key("model") {
        "model"
    } else {
        "name"
    };
    let alias = request.get(key)?.as_str()?.to_owned();
    let target = call.snapshot.table.models.get(&alias)?;
    request.insert(key.into(), target.model.clone().into());
    let renamed = Bytes::from(serde_json::to_vec(&request).ok()?);
    Some((target.upstream, alias, target.model.clone(), renamed))
}

/// Puts the alias back into each answer line's `model`.
struct Rename {
    /// `"model":"<upstream model>"` as the upstream writes it (compact JSON).
    from: Vec<u8>,
    to: Vec<u8>,
}

impl Rename {
    fn new(model: &str, alias: &str) -> Self {
        let field = |name: &str| format!("\"model\":{}", Value::from(name)).into_bytes();
        Rename {
            from: field(model),
            to: field(alias),
        }
    }
}

impl Translator for Rename {
    fn on_line(&mut self, line: &[u8]) -> Result<Vec<Bytes>, String> {
        let mut out = BytesMut::with_capacity(line.len() + self.to.len() + 1);
        match line
            .windows(self.from.len())
            .position(|w| w == self.from.as_slice())
        {
            Some(at) => {
                out.extend_from_slice(&line[..at]);
                out.extend_from_slice(&self.to);
                out.extend_from_slice(&line[at + self.from.len()..]);
            }
            None => out.extend_from_slice(line),
        }
        out.extend_from_slice(b"\n");
        Ok(vec![out.freeze()])
    }

    fn finish(&mut self) -> Result<Vec<Bytes>, String> {
        Ok(Vec::new())
    }

    fn error_frame(&self, message: &str) -> Bytes {
        let mut line = serde_json::json!({ "error": message })
            .to_string()
            .into_bytes();
        line.push(b'\n');
        Bytes::from(line)
    }

    fn usage(&self) -> Option<Usage> {
        None
    }
}
