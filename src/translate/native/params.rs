//! What `/api/chat` and `/api/generate` share on the way up: `options`, `format`, `think`,
//! `logprobs`, and the common reading of the body (`model`, `stream`).
//!
//! A chat-completions server has no `options` object: the sampling options it knows are
//! top-level fields. The native-only ones are sent as extra top-level fields or not, by an
//! [`Extras`] policy, since an upstream that does not know them either ignores them (vLLM,
//! the llama.cpp server) or refuses the request (the official API).

use serde_json::{Map, Value};

use super::NativeError;

/// What to do with a native option a chat-completions upstream may not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extras {
    /// Send the sampling extras ([`EXTRA_OPTIONS`]) as top-level fields; drop (and report)
    /// the options no chat-completions server takes per request (`num_ctx`, `num_gpu`, ...).
    Pass,
    /// Drop every native-only option, reporting their names so the shell can log them.
    Drop,
    /// Refuse a request that sets any native-only option: a 400 naming it.
    Refuse,
}

/// Native options with an official chat-completions field of the same name and meaning.
const STANDARD_OPTIONS: [&str; 5] = [
    "temperature",
    "top_p",
    "seed",
    "frequency_penalty",
    "presence_penalty",
];

/// Native sampling options that OpenAI-compatible servers take as extra top-level fields,
/// and the name each is sent under: vLLM takes `top_k`, `min_p` and `repetition_penalty`;
/// the llama.cpp server takes `top_k`, `min_p`, `typical_p`, `repeat_last_n`, `mirostat`,
/// `mirostat_tau` and `mirostat_eta`. `repeat_penalty` goes as `repetition_penalty` (vLLM's
/// name). No other option is ever sent: the rest are load-time settings (`num_ctx`,
/// `num_batch`, `num_gpu`, `main_gpu`, `use_mmap`, `num_thread`, `num_keep`, ...) that a
/// chat-completions request cannot carry.
pub const EXTRA_OPTIONS: [(&str, &str); 8] = [
    ("top_k", "top_k"),
    ("min_p", "min_p"),
    ("typical_p", "typical_p"),
    ("repeat_penalty", "repetition_penalty"),
    ("repeat_last_n", "repeat_last_n"),
    ("mirostat", "mirostat"),
    ("mirostat_tau", "mirostat_tau"),
    ("mirostat_eta", "mirostat_eta"),
];

/// The body as a JSON object (read as every translator reads it), and its required `model`.
pub fn object(body: &[u8]) -> Result<(Map<String, Value>, String), NativeError> {
    let map =
        crate::translate::params::value_object(body).map_err(|e| NativeError::bad(e.message))?;
    match map.get("model") {
        Some(Value::String(m)) if !m.trim().is_empty() => {
            let model = m.clone();
            Ok((map, model))
        }
        None | Some(Value::Null | Value::String(_)) => Err(NativeError::bad("model is required")),
        // Told apart from a missing one: the client sent a model, of the wrong type.
        Some(_) => Err(NativeError::bad("model must be a string")),
    }
}

/// Native `stream`: absent or null is **true**.
pub fn stream(body: &Map<String, Value>) -> Result<bool, NativeError> {
    match body.get("stream") {
        None | Some(Value::Null) => Ok(true),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(NativeError::bad("stream must be a boolean")),
    }
}

/// Writes `stream` (and `stream_options.include_usage` when streaming: the final native line
/// needs the token counts) into the upstream request.
pub fn set_stream(out: &mut Map<String, Value>, stream: bool) {
    out.insert("stream".into(), stream.into());
    if stream {
        out.insert(
            "stream_options".into(),
            serde_json::json!({"include_usage": true}),
        );
    }
}

/// `options` -> top-level fields of `out`; returns the names of the options left out.
pub fn options(
    body: &Map<String, Value>,
    out: &mut Map<String, Value>,
    extras: Extras,
) -> Result<Vec<String>, NativeError> {
    let options = match body.get("options") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(o)) => o,
        Some(_) => return Err(NativeError::bad("options must be an object")),
    };
    let mut dropped = Vec::new();
    for (key, value) in options.iter().filter(|(_, v)| !v.is_null()) {
        let extra = EXTRA_OPTIONS.iter().find(|(k, _)| k == key);
        match (key.as_str(), extra, extras) {
            ("num_predict", ..) => max_tokens(value, out)?,
            ("stop", ..) => stop(value, out)?,
            (k, ..) if STANDARD_OPTIONS.contains(&k) => out.insert(k.into(), number(k, value)?),
            (_, Some((_, name)), Extras::Pass) => out.insert((*name).into(), number(key, value)?),
            (k, _, Extras::Refuse) => return Err(refused(k)),
            _ => {
                dropped.push(key.clone());
                None
            }
        };
    }
    Ok(dropped)
}

fn refused(option: &str) -> NativeError {
    NativeError::bad(format!(
        "option \"{option}\" is not supported by this route's chat-completions upstream"
    ))
}

fn number(key: &str, value: &Value) -> Result<Value, NativeError> {
    match value {
        Value::Number(_) => Ok(value.clone()),
        _ => Err(NativeError::bad(format!(
            "option \"{key}\" must be a number"
        ))),
    }
}

/// `num_predict` -> `max_tokens`; -1 (no limit) and -2 (fill the context) send none.
fn max_tokens(value: &Value, out: &mut Map<String, Value>) -> Result<Option<Value>, NativeError> {
    match value.as_i64() {
        Some(n) if n > 0 => Ok(out.insert("max_tokens".into(), n.into())),
        Some(_) => Ok(None),
        None => Err(NativeError::bad(
            "option \"num_predict\" must be an integer",
        )),
    }
}

/// `stop`: an array of strings (a lone string is taken as one).
fn stop(value: &Value, out: &mut Map<String, Value>) -> Result<Option<Value>, NativeError> {
    match value {
        Value::String(s) => Ok(out.insert("stop".into(), vec![s.clone()].into())),
        Value::Array(items) if items.iter().all(Value::is_string) => {
            Ok(out.insert("stop".into(), value.clone()))
        }
        _ => Err(NativeError::bad(
            "option \"stop\" must be an array of strings",
        )),
    }
}

/// `format`: `"json"` -> `json_object`; a schema -> `json_schema` named `response`, the
/// schema verbatim; absent, null or `""` -> none.
pub fn format(body: &Map<String, Value>) -> Result<Option<Value>, NativeError> {
    match body.get("format") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) if s == "json" => {
            Ok(Some(serde_json::json!({"type": "json_object"})))
        }
        Some(schema @ Value::Object(_)) => Ok(Some(serde_json::json!({
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": schema},
        }))),
        Some(_) => Err(NativeError::bad(
            "format must be \"json\" or a JSON schema object",
        )),
    }
}

/// `think` -> `reasoning_effort`. `true` is `medium` (the official API's default effort);
/// `false` sends nothing, because `reasoning_effort: "none"` is refused by upstreams and
/// models that do not reason, where native `think: false` is always safe; `low`, `medium`,
/// `high` pass; `max` (native only) is `high`, the highest effort every reasoning upstream
/// takes.
pub fn think(body: &Map<String, Value>) -> Result<Option<&'static str>, NativeError> {
    match body.get("think") {
        None | Some(Value::Null | Value::Bool(false)) => Ok(None),
        Some(Value::Bool(true)) => Ok(Some("medium")),
        Some(Value::String(s)) => match s.as_str() {
            "low" => Ok(Some("low")),
            "medium" => Ok(Some("medium")),
            "high" | "max" => Ok(Some("high")),
            other => Err(NativeError::bad(format!(
                "invalid think value: \"{other}\" (must be true, false, \"low\", \"medium\", \"high\" or \"max\")"
            ))),
        },
        Some(_) => Err(NativeError::bad("think must be a boolean or a string")),
    }
}

/// `logprobs` and `top_logprobs` mean the same in both dialects.
pub fn logprobs(body: &Map<String, Value>, out: &mut Map<String, Value>) {
    for key in ["logprobs", "top_logprobs"] {
        if let Some(v) = body.get(key).filter(|v| !v.is_null()) {
            out.insert(key.into(), v.clone());
        }
    }
}
