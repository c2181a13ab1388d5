//! Chat-completions `messages` -> native `messages`.
//!
//! One client message is one native message: text parts are joined with a newline, images
//! (any `data:image/*;base64,` URL, any case) and `input_audio` become that message's
//! `images`. `content: null` is `""`; `developer` is sent as `system`; assistant tool-call
//! arguments (a JSON string) become objects; a tool result keeps its `tool_call_id` and
//! gets the name of the call it responds to.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Serialize;

use crate::translate::InvalidRequest;
use crate::translate::json::{Json, Object};

/// One native message, borrowing from the client's.
#[derive(Serialize)]
pub struct NativeMessage<'a> {
    role: &'static str,
    content: Cow<'a, str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    images: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Vec<NativeCall<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_name: Option<&'a str>,
}

#[derive(Serialize)]
struct NativeCall<'a> {
    function: NativeFunction<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
}

#[derive(Serialize)]
struct NativeFunction<'a> {
    index: usize,
    name: &'a str,
    arguments: Json<'a>,
}

fn bad(message: String) -> InvalidRequest {
    InvalidRequest {
        message,
        param: Some("messages"),
    }
}

/// Translates every message, in order.
pub fn translate<'a>(messages: &'a [Json<'a>]) -> Result<Vec<NativeMessage<'a>>, InvalidRequest> {
    let names = tool_call_names(messages);
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| message(i, m, &names))
        .collect()
}

/// Tool-call id -> function name, over the whole conversation (a later call wins).
fn tool_call_names<'a>(messages: &'a [Json<'a>]) -> HashMap<&'a str, &'a str> {
    messages
        .iter()
        .filter_map(|m| m.get("tool_calls").and_then(Json::as_array))
        .flatten()
        .filter_map(|c| {
            Some((
                c.get("id")?.as_str()?,
                c.pointer("/function/name")?.as_str()?,
            ))
        })
        .collect()
}

fn message<'a>(
    i: usize,
    m: &'a Json<'a>,
    names: &HashMap<&'a str, &'a str>,
) -> Result<NativeMessage<'a>, InvalidRequest> {
    let Some(m) = m.as_object() else {
        return Err(bad(format!("messages[{i}] must be an object")));
    };
    let role = match m.get("role").and_then(Json::as_str) {
        Some("system" | "developer") => "system",
        Some("user") => "user",
        Some("assistant") => "assistant",
        Some("tool") => "tool",
        Some(other) => return Err(bad(format!("messages[{i}] has an unknown role `{other}`"))),
        None => return Err(bad(format!("messages[{i}] needs a role"))),
    };
    let (content, images) = content(i, m.get("content"))?;
    let mut out = NativeMessage {
        role,
        content,
        images,
        thinking: None,
        tool_calls: None,
        tool_call_id: None,
        tool_name: None,
    };
    match role {
        "assistant" => assistant(i, m, &mut out)?,
        "tool" => tool(m, names, &mut out),
        _ => {}
    }
    Ok(out)
}

/// An assistant's thinking and tool calls.
fn assistant<'a>(
    i: usize,
    m: &'a Object<'a>,
    out: &mut NativeMessage<'a>,
) -> Result<(), InvalidRequest> {
    let thinking = ["reasoning", "reasoning_content"]
        .iter()
        .find_map(|k| m.get(k)?.as_str());
    out.thinking = thinking.filter(|t| !t.is_empty());
    if let Some(calls) = m.get("tool_calls").filter(|c| !c.is_null()) {
        out.tool_calls = Some(tool_calls(i, calls)?);
    }
    Ok(())
}

/// A tool result's call id, and the name of the call it responds to.
fn tool<'a>(m: &'a Object<'a>, names: &HashMap<&'a str, &'a str>, out: &mut NativeMessage<'a>) {
    let id = m.get("tool_call_id").and_then(Json::as_str);
    out.tool_call_id = id;
    out.tool_name = m
        .get("name")
        .and_then(Json::as_str)
        .or_else(|| names.get(id?).copied());
}

/// The text and the images of a message's `content`.
fn content<'a>(
    i: usize,
    content: Option<&'a Json<'a>>,
) -> Result<(Cow<'a, str>, Vec<String>), InvalidRequest> {
    let parts = match content {
        None | Some(Json::Null) => return Ok((Cow::Borrowed(""), Vec::new())),
        Some(Json::Str(s)) => return Ok((Cow::Borrowed(s), Vec::new())),
        Some(Json::Array(parts)) => parts,
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
        match part.get("type").and_then(Json::as_str) {
            Some("text") => match part.get("text") {
                Some(Json::Str(t)) => texts.push(t.as_ref()),
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
                    .and_then(Json::as_str);
                let url =
                    url.ok_or_else(|| bad(format!("{} is an image_url part without a url", at())))?;
                images.push(image(&at(), url)?);
            }
            Some("input_audio") => {
                let data = part.pointer("/input_audio/data").and_then(Json::as_str);
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
    Ok((Cow::Owned(texts.join("\n")), images))
}

/// The bare base64 of a `data:image/...;base64,` URL.
fn image(at: &str, url: &str) -> Result<String, InvalidRequest> {
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
fn base64(at: &str, data: &str) -> Result<String, InvalidRequest> {
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
fn tool_calls<'a>(i: usize, calls: &'a Json<'a>) -> Result<Vec<NativeCall<'a>>, InvalidRequest> {
    let calls = calls
        .as_array()
        .ok_or_else(|| bad(format!("messages[{i}].tool_calls must be an array")))?;
    let mut out = Vec::with_capacity(calls.len());
    for (index, call) in calls.iter().enumerate() {
        let name = call.pointer("/function/name").and_then(Json::as_str);
        let name = name.ok_or_else(|| {
            bad(format!(
                "messages[{i}].tool_calls[{index}] needs function.name"
            ))
        })?;
        let arguments = arguments(call.pointer("/function/arguments")).map_err(|problem| {
            bad(format!(
                "messages[{i}].tool_calls[{index}].function.arguments {problem}"
            ))
        })?;
        out.push(NativeCall {
            function: NativeFunction {
                index,
                name,
                arguments,
            },
            id: call.get("id").and_then(Json::as_str),
        });
    }
    Ok(out)
}

/// A call's arguments as an object: a JSON string of one (as the API sends them), or one;
/// else what is wrong with them.
fn arguments<'a>(arguments: Option<&'a Json<'a>>) -> Result<Json<'a>, &'static str> {
    let empty = || Json::Object(Object::default());
    match arguments {
        None | Some(Json::Null) => Ok(empty()),
        Some(Json::Str(s)) if s.trim().is_empty() || s.trim() == "null" => Ok(empty()),
        Some(Json::Str(s)) => match crate::translate::parse_json(s.as_bytes()) {
            Ok(object @ Json::Object(_)) => Ok(object),
            _ => Err("is not a JSON object"),
        },
        Some(object @ Json::Object(_)) => Ok(object.clone()),
        Some(_) => Err("must be a JSON string"),
    }
}
