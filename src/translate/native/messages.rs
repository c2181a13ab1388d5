//! Native `messages` -> chat-completions `messages`.
//!
//! `images` (bare base64) become `image_url` parts with `data:` URIs, their MIME type sniffed
//! from the decoded bytes (a native client never says what an image is). Assistant tool calls
//! get string `arguments` and an id (kept, or made by the caller's generator: chat-completions
//! servers match results to calls by id); `thinking` goes back as `reasoning_content`. A tool
//! result keeps its `tool_call_id`, or, as native clients often send only `tool_name`, gets
//! the id of the first without a response call of that name (else the first without a response call).

use serde_json::{Map, Value, json};

use super::NativeError;
use crate::translate::embeddings::decode_bytes;

/// Calls of the latest assistant message not yet followed by a tool result: (id, name).
type Pending = Vec<(String, String)>;

/// Translates every message, in order; `ids` makes a tool-call id when a call has none.
pub fn translate(
    messages: &[Value],
    ids: &mut dyn FnMut() -> String,
) -> Result<Vec<Value>, NativeError> {
    let mut pending = Pending::new();
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| message(i, m, &mut pending, ids))
        .collect()
}

fn message(
    i: usize,
    m: &Value,
    pending: &mut Pending,
    ids: &mut dyn FnMut() -> String,
) -> Result<Value, NativeError> {
    let bad = |what: &str| NativeError::bad(format!("messages[{i}]{what}"));
    let m = m.as_object().ok_or_else(|| bad(" must be an object"))?;
    let role = match m.get("role").and_then(Value::as_str) {
        Some(r @ ("system" | "user" | "assistant" | "tool" | "developer")) => r,
        Some(other) => return Err(bad(&format!(" has an unknown role `{other}`"))),
        None => return Err(bad(" needs a role")),
    };
    let text = match m.get("content") {
        None | Some(Value::Null) => "",
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err(bad(".content must be a string")),
    };
    let mut out = Map::new();
    out.insert("role".into(), role.into());
    out.insert("content".into(), content(i, text, m.get("images"))?);
    match role {
        "assistant" => assistant(i, m, &mut out, pending, ids)?,
        "tool" => tool(m, &mut out, pending),
        _ => {}
    }
    Ok(Value::Object(out))
}

/// The text, or parts when there are images: the text first (if any), then each image.
fn content(i: usize, text: &str, images: Option<&Value>) -> Result<Value, NativeError> {
    let images = match images {
        None | Some(Value::Null) => return Ok(text.into()),
        Some(Value::Array(images)) if images.is_empty() => return Ok(text.into()),
        Some(Value::Array(images)) => images,
        Some(_) => {
            return Err(NativeError::bad(format!(
                "messages[{i}].images must be an array"
            )));
        }
    };
    let mut parts = Vec::with_capacity(images.len() + 1);
    if !text.is_empty() {
        parts.push(json!({"type": "text", "text": text}));
    }
    for (j, image) in images.iter().enumerate() {
        let url = image.as_str().and_then(data_uri).ok_or_else(|| {
            NativeError::bad(format!("messages[{i}].images[{j}] is not a base64 string"))
        })?;
        parts.push(json!({"type": "image_url", "image_url": {"url": url}}));
    }
    Ok(Value::Array(parts))
}

/// `data:<sniffed type>;base64,<the base64 without line breaks>`, if it is base64.
pub fn data_uri(base64: &str) -> Option<String> {
    let bytes = decode_bytes(base64).filter(|b| !b.is_empty())?;
    let clean: String = base64
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    Some(format!("data:{};base64,{clean}", sniff(&bytes)))
}

/// The image type by its magic bytes: png, jpeg, gif, webp, else `application/octet-stream`.
pub fn sniff(bytes: &[u8]) -> &'static str {
    match bytes {
        [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, ..] => "image/png",
        [0xff, 0xd8, 0xff, ..] => "image/jpeg",
        [b'G', b'I', b'F', b'8', b'7' | b'9', b'a', ..] => "image/gif",
        [
            b'R',
            b'I',
            b'F',
            b'F',
            _,
            _,
            _,
            _,
            b'W',
            b'E',
            b'B',
            b'P',
            ..,
        ] => "image/webp",
        _ => "application/octet-stream",
    }
}

/// `thinking` -> `reasoning_content`; `tool_calls` -> the official shape, with ids.
fn assistant(
    i: usize,
    m: &Map<String, Value>,
    out: &mut Map<String, Value>,
    pending: &mut Pending,
    ids: &mut dyn FnMut() -> String,
) -> Result<(), NativeError> {
    if let Some(thinking) = m
        .get("thinking")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    {
        out.insert("reasoning_content".into(), thinking.into());
    }
    let calls = match m.get("tool_calls") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(calls)) if calls.is_empty() => return Ok(()),
        Some(Value::Array(calls)) => calls,
        Some(_) => {
            return Err(NativeError::bad(format!(
                "messages[{i}].tool_calls must be an array"
            )));
        }
    };
    pending.clear();
    let mut converted = Vec::with_capacity(calls.len());
    for (j, call) in calls.iter().enumerate() {
        let name = call.pointer("/function/name").and_then(Value::as_str);
        let name = name.ok_or_else(|| {
            NativeError::bad(format!("messages[{i}].tool_calls[{j}] needs function.name"))
        })?;
        let id = match call.get("id").and_then(Value::as_str) {
            Some(id) if !id.is_empty() => id.to_owned(),
            _ => ids(),
        };
        let arguments = match call.pointer("/function/arguments") {
            None | Some(Value::Null) => "{}".to_owned(),
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
        };
        pending.push((id.clone(), name.to_owned()));
        converted.push(json!({"id": id, "type": "function",
            "function": {"name": name, "arguments": arguments}}));
    }
    // A tool-call turn with no text says so with `null`, as the official API writes it.
    if out.get("content").is_some_and(|c| c == "") {
        out.insert("content".into(), Value::Null);
    }
    out.insert("tool_calls".into(), Value::Array(converted));
    Ok(())
}

/// `tool_call_id` kept or found; `tool_name` -> `name`.
fn tool(m: &Map<String, Value>, out: &mut Map<String, Value>, pending: &mut Pending) {
    let name = m
        .get("tool_name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty());
    let given = m
        .get("tool_call_id")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty());
    let at = match given {
        Some(id) => pending.iter().position(|(p, _)| p == id),
        None => name
            .and_then(|n| pending.iter().position(|(_, p)| p == n))
            .or((!pending.is_empty()).then_some(0)),
    };
    let found = at.map(|at| pending.remove(at).0);
    if let Some(id) = given.map(str::to_owned).or(found) {
        out.insert("tool_call_id".into(), id.into());
    }
    if let Some(name) = name {
        out.insert("name".into(), name.into());
    }
}
