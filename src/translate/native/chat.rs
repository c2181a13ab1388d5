//! `/api/chat` -> `/v1/chat/completions`, and the response back: `super::stream` (a
//! `NativeStream` of `/api/chat` lines) or `super::response` (`stream: false`).
//!
//! Sent: `model`, `messages` (images as `data:` parts, tool calls with string arguments and
//! ids, `thinking` as `reasoning_content`, tool results with their call's id), `stream` (native default true;
//! with `stream_options.include_usage` when streaming), `tools` as they are (the shapes
//! coincide), `format` -> `response_format`, `think` -> `reasoning_effort`, `options` ->
//! top-level sampling fields (the extras by the [`Extras`] policy), `logprobs` and
//! `top_logprobs`. Ignored: `keep_alive`, `truncate`, `shift` (no chat-completions meaning).

use serde_json::{Map, Value};

use super::params::{self, Extras};
use super::{CHAT_PATH, NativeError, Translated, messages};

/// Translates an `/api/chat` body; `ids` makes ids for history tool calls that have none.
pub fn request(
    body: &[u8],
    extras: Extras,
    ids: &mut dyn FnMut() -> String,
) -> Result<Translated, NativeError> {
    let (body, model) = params::object(body)?;
    let messages = match body.get("messages") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(m)) => messages::translate(m, ids)?,
        Some(_) => return Err(NativeError::bad("messages must be an array")),
    };
    let stream = params::stream(&body)?;
    let mut out = Map::new();
    out.insert("model".into(), model.clone().into());
    let load_only = messages.is_empty();
    out.insert("messages".into(), Value::Array(messages));
    params::set_stream(&mut out, stream);
    match body.get("tools") {
        None | Some(Value::Null) => {}
        Some(Value::Array(tools)) if tools.is_empty() => {}
        Some(tools @ Value::Array(_)) => {
            out.insert("tools".into(), tools.clone());
        }
        Some(_) => return Err(NativeError::bad("tools must be an array")),
    }
    common(&body, &mut out)?;
    let dropped = params::options(&body, &mut out, extras)?;
    Ok(Translated {
        path: CHAT_PATH,
        model,
        body: out,
        stream,
        dropped,
        load_only,
    })
}

/// `format`, `think` and `logprobs`: what `/api/chat` and a chat-bound `/api/generate` share.
pub(super) fn common(
    body: &Map<String, Value>,
    out: &mut Map<String, Value>,
) -> Result<(), NativeError> {
    if let Some(format) = params::format(body)? {
        out.insert("response_format".into(), format);
    }
    if let Some(effort) = params::think(body)? {
        out.insert("reasoning_effort".into(), effort.into());
    }
    params::logprobs(body, out);
    Ok(())
}
