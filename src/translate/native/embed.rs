//! `/api/embed` and the legacy `/api/embeddings` -> `/v1/embeddings` (`encoding_format:
//! "float"` always: native clients read numbers), and the responses back.
//!
//! `/api/embed` sends `input` (a string or an array of strings) and `dimensions`; the legacy
//! endpoint's `prompt` is the one `input`. Ignored: `truncate` (a chat-completions server
//! truncates or refuses by its own rule), `options` and `keep_alive`. An empty input (`""`,
//! `[]`) embeds nothing, as natively: [`Translated::load_only`] is set and the shell responds with
//! [`empty`] without asking the upstream.

use std::time::Duration;

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::params;
use super::response::nanos;
use super::{EMBEDDINGS_PATH, NativeError, Translated};
use crate::base::usage::Usage;
use crate::translate::embeddings::decode_base64;

/// Translates an `/api/embed` body.
pub fn request(body: &[u8]) -> Result<Translated, NativeError> {
    let (body, model) = params::object(body)?;
    let input = match body.get("input") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| NativeError::bad("invalid input type"))?,
        _ => return Err(NativeError::bad("invalid input type")),
    };
    let empty = input.iter().all(String::is_empty);
    let mut out = upstream(&model, json!(input));
    match body.get("dimensions") {
        None | Some(Value::Null) => {}
        Some(d) if d.as_u64().is_some_and(|d| d > 0) => {
            out.insert("dimensions".into(), d.clone());
        }
        Some(_) => return Err(NativeError::bad("dimensions must be a positive integer")),
    }
    Ok(translated(model, out, empty))
}

/// Translates a legacy `/api/embeddings` body (`prompt`: one string).
pub fn legacy_request(body: &[u8]) -> Result<Translated, NativeError> {
    let (body, model) = params::object(body)?;
    let prompt = match body.get("prompt") {
        None | Some(Value::Null) => "",
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err(NativeError::bad("prompt must be a string")),
    };
    let out = upstream(&model, prompt.into());
    Ok(translated(model, out, prompt.is_empty()))
}

fn upstream(model: &str, input: Value) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("model".into(), model.into());
    out.insert("input".into(), input);
    out.insert("encoding_format".into(), "float".into());
    out
}

fn translated(model: String, body: Map<String, Value>, empty: bool) -> Translated {
    Translated {
        path: EMBEDDINGS_PATH,
        model,
        body,
        stream: false,
        dropped: Vec::new(),
        load_only: empty,
    }
}

/// The vectors of a `/v1/embeddings` response in input order (by `index`; base64 vectors are
/// read too, should the upstream ignore `encoding_format`), and its usage.
pub fn vectors(body: &[u8]) -> Result<(Vec<Vec<f32>>, Usage), String> {
    let unexpected =
        |what: &str| format!("upstream sent an unexpected embeddings response: {what}");
    let response: Value = serde_json::from_slice(body).map_err(|e| unexpected(&e.to_string()))?;
    let data = response
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| unexpected("no data"))?;
    let mut items = Vec::with_capacity(data.len());
    for (at, item) in data.iter().enumerate() {
        let index = item
            .get("index")
            .and_then(Value::as_u64)
            .unwrap_or(at as u64);
        let vector = match item.get("embedding") {
            Some(Value::Array(v)) => v.iter().map(|x| x.as_f64().map(|x| x as f32)).collect(),
            Some(Value::String(b64)) => decode_base64(b64),
            _ => None,
        };
        items.push((
            index,
            vector.ok_or_else(|| unexpected("an embedding is not a vector"))?,
        ));
    }
    items.sort_by_key(|(index, _)| *index);
    let usage = response
        .get("usage")
        .map(super::response::usage_of)
        .unwrap_or_default();
    Ok((items.into_iter().map(|(_, v)| v).collect(), usage))
}

/// The `/api/embed` response: `model` (the client's name), `embeddings`, durations and
/// `prompt_eval_count` (the upstream's `prompt_tokens`; left out when 0, as natively).
pub fn response(body: &[u8], model: &str, elapsed: Duration) -> Result<(Bytes, Usage), String> {
    let (embeddings, usage) = vectors(body)?;
    let mut out = json!({"model": model, "embeddings": embeddings,
        "total_duration": nanos(elapsed), "load_duration": 0});
    if usage.prompt_tokens > 0 {
        out["prompt_eval_count"] = usage.prompt_tokens.into();
    }
    Ok((Bytes::from(out.to_string()), usage))
}

/// The legacy `/api/embeddings` response: `{"embedding": [...]}` (the first vector).
pub fn legacy_response(body: &[u8]) -> Result<(Bytes, Usage), String> {
    let (embeddings, usage) = vectors(body)?;
    let first = embeddings.into_iter().next().unwrap_or_default();
    Ok((
        Bytes::from(json!({ "embedding": first }).to_string()),
        usage,
    ))
}

/// The response to an empty input: `{"model", "embeddings": []}` (`/api/embed`) or
/// `{"embedding": []}` (legacy).
pub fn empty(model: &str, legacy: bool) -> Bytes {
    let out = if legacy {
        json!({"embedding": []})
    } else {
        json!({"model": model, "embeddings": []})
    };
    Bytes::from(out.to_string())
}
