//! Chat-completions request -> native `/api/chat` request.
//!
//! Only what the client set is sent (no injected sampling defaults); every field that is
//! set wrongly is a 400 naming its `param`; fields lingo does not use (`user`, `store`,
//! `logit_bias`, ...) are ignored, as the official API's clients expect.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value};

use super::messages::{self, NativeMessage};
use crate::translate::InvalidRequest;
use crate::translate::json::{Json, Object};
use crate::translate::params::{self, err};

/// Most choices one request may ask for: each is a full upstream generation.
pub const MAX_N: u64 = 8;

/// Native options a route sends unless the client sets them (`options:` in the table).
#[derive(Debug, Clone, Default)]
pub struct RouteDefaults {
    pub options: Map<String, Value>,
}

/// A translated request, before its model is resolved.
///
/// The native request is written once, as it is read, but for its `model`: that is known
/// only once the alias is resolved, and goes first ([`ChatRequest::native_body`]).
#[derive(Debug)]
pub struct ChatRequest {
    /// The model name the client asked for.
    model: String,
    /// The model the upstream knows, the client's until [`ChatRequest::set_model`].
    upstream_model: String,
    /// The native request but its model: `{"messages":...}`.
    rest: Vec<u8>,
    stream: bool,
    include_usage: bool,
    n: u32,
}

/// The native `/api/chat` request but its model, borrowing from the client's.
#[derive(Serialize)]
struct Native<'a> {
    messages: Vec<NativeMessage<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Map::is_empty")]
    options: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<Cow<'a, Json<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Vec<&'a Json<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    think: Option<Cow<'a, Json<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    keep_alive: Option<&'a Json<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    logprobs: Option<&'a Json<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_logprobs: Option<&'a Json<'a>>,
}

// === impl ChatRequest ===

impl ChatRequest {
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Sets the model the upstream knows (an alias's target).
    pub fn set_model(&mut self, model: &str) {
        model.clone_into(&mut self.upstream_model);
    }

    pub fn stream(&self) -> bool {
        self.stream
    }

    pub fn include_usage(&self) -> bool {
        self.include_usage
    }

    pub fn n(&self) -> u32 {
        self.n
    }

    /// The native request as JSON.
    pub fn native_body(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(self.rest.len() + self.upstream_model.len() + 16);
        body.extend_from_slice(b"{\"model\":");
        // Writing a `str` into a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut body, &self.upstream_model);
        body.push(b',');
        body.extend_from_slice(self.rest.get(1..).unwrap_or_default());
        body
    }

    /// The native request (for tests and tools).
    pub fn native(&self) -> Map<String, Value> {
        serde_json::from_slice(&self.native_body()).unwrap_or_default()
    }
}

/// Translates a chat-completions body.
pub fn request(body: &[u8], defaults: &RouteDefaults) -> Result<ChatRequest, InvalidRequest> {
    // The native request is about the client's size: room for it made once.
    let room = body.len() + 64;
    let body = params::object(body)?;
    let model = params::model(&body)?;
    let messages = match body.get("messages") {
        Some(Json::Array(m)) if !m.is_empty() => messages::translate(m)?,
        _ => return Err(err("messages", "messages must be a non-empty array")),
    };
    let stream = params::flag(&body, "stream")?;
    let include_usage = params::include_usage(&body)?;
    let n = match body.get("n") {
        None | Some(Json::Null) => 1,
        Some(v) => match v.as_u64() {
            Some(n @ 1..=MAX_N) => n as u32,
            _ => return Err(err("n", format!("n must be an integer from 1 to {MAX_N}"))),
        },
    };
    let native = native(&body, messages, stream, defaults)?;
    Ok(ChatRequest {
        upstream_model: model.clone(),
        model,
        // Writing borrowed JSON into a `Vec` cannot fail.
        rest: crate::translate::to_json(&native, room).unwrap_or_default(),
        stream,
        include_usage,
        n,
    })
}

/// The rest of the native request, checked in the order the fields were always checked
/// (the first mistake is the one told).
fn native<'a>(
    body: &'a Object<'a>,
    messages: Vec<NativeMessage<'a>>,
    stream: bool,
    defaults: &RouteDefaults,
) -> Result<Native<'a>, InvalidRequest> {
    let mut options = params::options(body, &defaults.options)?;
    // `max_completion_tokens` is the current name; `max_tokens` the older one.
    let limit = match params::token_limit(body, "max_completion_tokens")? {
        Some(n) => Some(n),
        None => params::token_limit(body, "max_tokens")?,
    };
    if let Some(n) = limit {
        options.insert("num_predict".into(), n.into());
    }
    let set = |key| body.get(key).filter(|v| !v.is_null());
    Ok(Native {
        messages,
        stream,
        options,
        format: format(body)?,
        tools: tools(body)?,
        think: think(body)?,
        keep_alive: set("keep_alive"),
        logprobs: set("logprobs"),
        top_logprobs: set("top_logprobs"),
    })
}

/// `response_format` -> native `format`.
fn format<'a>(body: &'a Object<'a>) -> Result<Option<Cow<'a, Json<'a>>>, InvalidRequest> {
    let Some(rf) = body.get("response_format").filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let kind = rf.get("type").and_then(Json::as_str).map(str::trim);
    match kind {
        Some("text") => Ok(None),
        Some("json_object") => Ok(Some(Cow::Owned(Json::Str("json".into())))),
        Some("json_schema") => match rf.pointer("/json_schema/schema") {
            Some(schema @ Json::Object(_)) => Ok(Some(Cow::Borrowed(schema))),
            _ => Err(err(
                "response_format",
                "response_format json_schema needs json_schema.schema (an object)",
            )),
        },
        _ => Err(err(
            "response_format",
            "response_format.type must be text, json_object or json_schema",
        )),
    }
}

/// `tools` as they are, filtered by `tool_choice`.
fn tools<'a>(body: &'a Object<'a>) -> Result<Option<Vec<&'a Json<'a>>>, InvalidRequest> {
    let tools = match body.get("tools") {
        None | Some(Json::Null) => return Ok(None),
        Some(Json::Array(t)) => t,
        Some(_) => return Err(err("tools", "tools must be an array")),
    };
    let name_of = |t: &'a Json<'a>| t.pointer("/function/name").and_then(Json::as_str);
    if tools.iter().any(|t| name_of(t).is_none()) {
        return Err(err("tools", "every tool needs function.name"));
    }
    match body.get("tool_choice") {
        None | Some(Json::Null) => Ok(Some(tools.iter().collect())),
        Some(Json::Str(s)) if s == "auto" || s == "required" => Ok(Some(tools.iter().collect())),
        Some(Json::Str(s)) if s == "none" => Ok(None),
        Some(choice) => {
            let wanted = choice.pointer("/function/name").and_then(Json::as_str);
            let chosen: Vec<&Json> = tools
                .iter()
                .filter(|t| wanted.is_some() && name_of(t) == wanted)
                .collect();
            match (wanted, chosen.is_empty()) {
                (Some(_), false) => Ok(Some(chosen)),
                (Some(name), true) => Err(err(
                    "tool_choice",
                    format!("tool_choice names `{name}`, which is not in tools"),
                )),
                (None, _) => Err(err(
                    "tool_choice",
                    "tool_choice must be none, auto, required or {\"type\":\"function\",\"function\":{\"name\":...}}",
                )),
            }
        }
    }
}

/// `reasoning.effort` / `reasoning_effort` -> `think`; an explicit `think` wins.
fn think<'a>(body: &'a Object<'a>) -> Result<Option<Cow<'a, Json<'a>>>, InvalidRequest> {
    if let Some(think) = body.get("think").filter(|v| !v.is_null()) {
        return Ok(Some(Cow::Borrowed(think)));
    }
    let (param, effort) = match body.get("reasoning").filter(|v| !v.is_null()) {
        Some(r) => ("reasoning", r.get("effort")),
        None => ("reasoning_effort", body.get("reasoning_effort")),
    };
    let effort = match effort {
        None | Some(Json::Null) => return Ok(None),
        Some(Json::Str(e)) if e.is_empty() => return Ok(None),
        Some(Json::Str(e)) => e.as_ref(),
        Some(_) => return Err(err(param, "reasoning effort must be a string")),
    };
    let level = |l: &'static str| Json::Str(Cow::Borrowed(l));
    Ok(Some(Cow::Owned(match effort {
        "none" => Json::Bool(false),
        "minimal" => level("low"),
        "low" => level("low"),
        "medium" => level("medium"),
        "high" => level("high"),
        "max" | "xhigh" | "ultra" => level("max"),
        other => {
            return Err(err(
                param,
                format!(
                    "invalid reasoning effort `{other}`: use none, minimal, low, medium, high, xhigh or max"
                ),
            ));
        }
    })))
}
