//! Chat-completions `messages` -> native `messages`.
//!
//! One client message is one native message: text parts are joined with a newline, images
//! (any `data:image/*;base64,` URL, any case) and `input_audio` become that message's
//! `images`. `content: null` is `""`; `developer` is sent as `system`; assistant tool-call
//! arguments (a JSON string) become objects; a tool result keeps its `tool_call_id` and
//! gets the name of the call it answers.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use crate::translate::Refusal;

fn bad(message: String) -> Refusal {
    Refusal {
        message,
        param: Some("messages"),
    }
}

/// Translates every message, in order.
pub fn translate(messages: &[Value]) -> Result<Vec<Value>, Refusal> {
    let names = tool_call_names(messages);
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| message(i, m, &names))
        .collect()
}

/// Tool-call id -> function name, over the whole conversation (a later call wins).
fn tool_call_names(messages: &[Value]) -> HashMap<&str, &str> {
    messages
        .iter()
        .filter_map(|m| m.get("tool_calls").and_then(Value::as_array))
        .flatten()
        .filter_map(|c| {
            Some((
                c.get("id")?.as_str()?,
                c.pointer("/function/name")?.as_str()?,
            ))
        })
        .collect()
}

fn message(i: usize, m: &Value, names: &HashMap<&str, &str>) -> Result<Value, Refusal> {
    let Some(m) = m.as_object() else {
        return Err(bad(format!("messages[{i}] must be an object")));
    };
    let role = match m.get("role").and_then(Value::as_str) {
        Some("system" | "developer") => "system",
        Some(r @ ("user" | "assistant" | "tool")) => r,
        Some(other) => return Err(bad(format!("messages[{i}] has an unknown role `{other}`"))),
        None => return Err(bad(format!("messages[{i}] needs a role"))),
    };
    let (content, images) = content(i, m.get("content"))?;
    let mut out = Map::new();
    out.insert("role".into(), role.into());
    out.insert("content".into(), content.into());
    if !images.is_empty() {
        out.insert("images".into(), images.into());
    }
    if role == "assistant" {
        let thinking = ["reasoning", "reasoning_content"]
            .iter()
            .find_map(|k| m.get(*k)?.as_str());
        if let Some(thinking) = thinking.filter(|t| !t.is_empty()) {
            out.insert("thinking".into(), thinking.into());
        }
        if let Some(calls) = m.get("tool_calls").filter(|c| !c.is_null()) {
            out.insert("tool_calls".into(), tool_calls(i, calls)?);
        }
    }
    if role == "tool" {
        let id = m.get("tool_call_id").and_then(Value::as_str);
        if let Some(id) = id {
            out.insert("tool_call_id".into(), id.into());
        }
        let name = m
            .get("name")
            .and_then(Value::as_str)
            .or_else(|| names.get(id?).copied());
        if let Some(name) = name {
            out.insert("tool_name".into(), name.into());
        }
    }
    Ok(Value::Object(out))
}

/// The text and the images of a message's `content`.
fn content(i: usize, content: Option<&Value>) -> Result<(String, Vec<String>), Refusal> {
    let parts = match content {
        None | Some(Value::Null) => return Ok((String::new(), Vec::new())),
        Some(Value::String(s)) => return Ok((s.clone(), Vec::new())),
        Some(Value::Array(parts)) => parts,
        Some(_) => {
            return Err(bad(format!(
                "messages[{i}].content must be a string or an array of parts"
            )));
        }
    };
    let mut texts = Vec::new();
    let mut images = Vec::new();
    for (j, part) in parts.iter().enumerate() {
        let at = || format!("messages[{i}].content[{j}]");
        match part.get("type").and_then(Value::as_str) {
            Some("text") => match part.get("text") {
                Some(Value::String(t)) => texts.push(t.as_str()),
                _ => {
                    return Err(bad(format!(
                        "{} is a text part without a text string",
                        at()
                    )));
                }
            },
            Some("image_url") => {
                let url = part
                    .pointer("/image_url/url")
                    .or_else(|| part.get("image_url"))
                    .and_then(Value::as_str);
                let url =
                    url.ok_or_else(|| bad(format!("{} is an image_url part without a url", at())))?;
                images.push(image(&at(), url)?);
            }
            Some("input_audio") => {
                let data = part.pointer("/input_audio/data").and_then(Value::as_str);
                let data = data
                    .ok_or_else(|| bad(format!("{} is an input_audio part without data", at())))?;
                images.push(base64(&at(), data)?);
            }
            Some(other) => {
                return Err(bad(format!(
                    "{} has an unsupported part type `{other}`",
                    at()
                )));
            }
            None => return Err(bad(format!("{} needs a type", at()))),
        }
    }
    Ok((texts.join("\n"), images))
}

/// The bare base64 of a `data:image/...;base64,` URL.
fn image(at: &str, url: &str) -> Result<String, Refusal> {
    let lower = url.get(..12).unwrap_or(url).to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return Err(bad(format!(
            "{at}: image URLs are not fetched on this route; send the image as a data: URL (data:image/png;base64,...)"
        )));
    }
    let rest = url.get(5..).filter(|_| lower.starts_with("data:"));
    let (mime, payload) = rest.and_then(|r| r.split_once(',')).ok_or_else(|| {
        bad(format!(
            "{at}: an image must be a data:image/...;base64, URL"
        ))
    })?;
    let mime = mime.to_ascii_lowercase();
    if !(mime.starts_with("image/") && mime.ends_with(";base64")) {
        return Err(bad(format!(
            "{at}: an image must be a data:image/...;base64, URL, not data:{mime}"
        )));
    }
    base64(at, payload)
}

/// `data` with line breaks removed, if it is standard base64.
fn base64(at: &str, data: &str) -> Result<String, Refusal> {
    let clean: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let valid = !clean.is_empty()
        && clean.len().is_multiple_of(4)
        && clean
            .trim_end_matches('=')
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
        && clean.len() - clean.trim_end_matches('=').len() <= 2;
    if !valid {
        return Err(bad(format!("{at}: the data is not valid base64")));
    }
    Ok(clean)
}

/// Assistant tool calls -> native: arguments string -> object (`""`/`"null"` -> `{}`).
fn tool_calls(i: usize, calls: &Value) -> Result<Value, Refusal> {
    let calls = calls
        .as_array()
        .ok_or_else(|| bad(format!("messages[{i}].tool_calls must be an array")))?;
    let mut out = Vec::with_capacity(calls.len());
    for (index, call) in calls.iter().enumerate() {
        let name = call.pointer("/function/name").and_then(Value::as_str);
        let name = name.ok_or_else(|| {
            bad(format!(
                "messages[{i}].tool_calls[{index}] needs function.name"
            ))
        })?;
        let arguments = match call.pointer("/function/arguments") {
            None | Some(Value::Null) => json!({}),
            Some(Value::String(s)) if s.trim().is_empty() || s.trim() == "null" => json!({}),
            Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                Ok(v @ Value::Object(_)) => v,
                _ => {
                    return Err(bad(format!(
                        "messages[{i}].tool_calls[{index}].function.arguments is not a JSON object"
                    )));
                }
            },
            Some(v @ Value::Object(_)) => v.clone(),
            Some(_) => {
                return Err(bad(format!(
                    "messages[{i}].tool_calls[{index}].function.arguments must be a JSON string"
                )));
            }
        };
        let mut native =
            json!({"function": {"index": index, "name": name, "arguments": arguments}});
        if let Some(id) = call.get("id").and_then(Value::as_str) {
            native["id"] = id.into();
        }
        out.push(native);
    }
    Ok(Value::Array(out))
}
