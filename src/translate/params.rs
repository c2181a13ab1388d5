//! Request fields the chat-completions endpoints share: the body itself, `model`, flags,
//! native options and the sampling fields. One reading, one message per mistake, so
//! `/v1/chat/completions`, `/v1/completions` and `/v1/embeddings` refuse the same things the
//! same way.

use serde_json::{Map, Value, json};

use super::json::{Json, Object};
use super::translation::InvalidRequest;

/// A 400 naming `param`.
pub fn err(param: &'static str, message: impl Into<String>) -> InvalidRequest {
    InvalidRequest {
        message: message.into(),
        param: Some(param),
    }
}

fn whole_body(message: String) -> InvalidRequest {
    InvalidRequest {
        message,
        param: None,
    }
}

/// The body as a JSON object, borrowing its strings.
pub fn object(body: &[u8]) -> Result<Object<'_>, InvalidRequest> {
    match read(body, Json::read)? {
        Json::Object(o) => Ok(o),
        _ => Err(not_an_object()),
    }
}

/// The body as a `serde_json` object (for the native translators, which keep it).
pub fn value_object(body: &[u8]) -> Result<Map<String, Value>, InvalidRequest> {
    match read(body, super::parse_json)? {
        Value::Object(map) => Ok(map),
        _ => Err(not_an_object()),
    }
}

/// The body read by `parse` (a refusal the client can act on when it is empty or not JSON).
fn read<'a, T>(
    body: &'a [u8],
    parse: impl FnOnce(&'a [u8]) -> serde_json::Result<T>,
) -> Result<T, InvalidRequest> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(whole_body(
            "the request body is empty; send a JSON request".into(),
        ));
    }
    parse(body).map_err(|e| whole_body(format!("the request body is not valid JSON: {e}")))
}

fn not_an_object() -> InvalidRequest {
    whole_body("the request body must be a JSON object".into())
}

/// The required, non-blank `model`.
pub fn model(body: &Object) -> Result<String, InvalidRequest> {
    match body.get("model") {
        Some(Json::Str(m)) if !m.trim().is_empty() => Ok(m.as_ref().to_owned()),
        None | Some(Json::Null | Json::Str(_)) => {
            Err(err("model", "you must provide a model parameter"))
        }
        // Told apart from a missing one: the client sent a model, of the wrong type.
        Some(_) => Err(err("model", "model must be a string")),
    }
}

/// A boolean field; absent or null is false.
pub fn flag(map: &Object, key: &'static str) -> Result<bool, InvalidRequest> {
    match map.get(key) {
        None | Some(Json::Null) => Ok(false),
        Some(Json::Bool(b)) => Ok(*b),
        Some(_) => Err(err(key, format!("{key} must be a boolean"))),
    }
}

/// `stream_options.include_usage`.
pub fn include_usage(body: &Object) -> Result<bool, InvalidRequest> {
    match body.get("stream_options") {
        None | Some(Json::Null) => Ok(false),
        Some(Json::Object(o)) => flag(o, "include_usage").map_err(|_| {
            err(
                "stream_options",
                "stream_options.include_usage must be a boolean",
            )
        }),
        Some(_) => Err(err("stream_options", "stream_options must be an object")),
    }
}

/// Native options: the route's defaults, then the client's `options` (an extension the SDKs
/// send as `extra_body`), then the sampling fields the client set (which win).
pub fn options(
    body: &Object,
    defaults: &Map<String, Value>,
) -> Result<Map<String, Value>, InvalidRequest> {
    let mut options = defaults.clone();
    match body.get("options") {
        None | Some(Json::Null) => {}
        Some(Json::Object(client)) => options.extend(client.to_map()),
        Some(_) => {
            return Err(err(
                "options",
                "options must be an object of native options",
            ));
        }
    }
    for (key, low, high) in [
        ("temperature", 0.0, 2.0),
        ("top_p", 0.0, 1.0),
        ("frequency_penalty", -2.0, 2.0),
        ("presence_penalty", -2.0, 2.0),
    ] {
        match body.get(key) {
            None | Some(Json::Null) => {}
            Some(v) if v.as_f64().is_some_and(|x| (low..=high).contains(&x)) => {
                options.insert(key.into(), v.to_value());
            }
            Some(_) => {
                return Err(err(
                    key,
                    format!("{key} must be a number from {low} to {high}"),
                ));
            }
        }
    }
    match body.get("seed") {
        None | Some(Json::Null) => {}
        Some(v) if v.is_integer() => {
            options.insert("seed".into(), v.to_value());
        }
        Some(_) => return Err(err("seed", "seed must be an integer")),
    }
    match body.get("stop") {
        None | Some(Json::Null) => {}
        Some(Json::Str(s)) => {
            options.insert("stop".into(), json!([s]));
        }
        Some(stop @ Json::Array(items))
            if items.len() <= 4 && items.iter().all(Json::is_string) =>
        {
            options.insert("stop".into(), stop.to_value());
        }
        Some(_) => {
            return Err(err(
                "stop",
                "stop must be a string or an array of up to 4 strings",
            ));
        }
    }
    Ok(options)
}

/// A positive integer token limit (`max_tokens`, `max_completion_tokens`).
pub fn token_limit(body: &Object, key: &'static str) -> Result<Option<u64>, InvalidRequest> {
    match body.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .filter(|n| *n > 0)
            .map(Some)
            .ok_or_else(|| err(key, format!("{key} must be a positive integer"))),
    }
}
