//! Chat-completions request -> native `/api/chat` request.
//!
//! Only what the client set is sent (no injected sampling defaults); every field that is
//! set wrongly is a 400 naming its `param`; fields lingo does not use (`user`, `store`,
//! `logit_bias`, ...) are ignored, as the official API's clients expect.

use serde_json::{Map, Value};

use crate::translate::Refusal;
use crate::translate::params::{self, err};

/// Most choices one request may ask for: each is a full upstream generation.
pub const MAX_N: u64 = 8;

/// Native options a route sends unless the client sets them (`options:` in the table).
#[derive(Debug, Clone, Default)]
pub struct RouteDefaults {
    pub options: Map<String, Value>,
}

/// A translated request, before its model is resolved.
#[derive(Debug)]
pub struct ChatRequest {
    /// The model name the client asked for.
    model: String,
    native: Map<String, Value>,
    stream: bool,
    include_usage: bool,
    n: u32,
}

// === impl ChatRequest ===

impl ChatRequest {
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Sets the model the upstream knows (an alias's target).
    pub fn set_model(&mut self, model: &str) {
        self.native.insert("model".into(), model.into());
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
        serde_json::to_vec(&self.native).unwrap_or_default()
    }

    /// The native request (for tests and tools).
    pub fn native(&self) -> &Map<String, Value> {
        &self.native
    }
}

/// Translates a chat-completions body.
pub fn request(body: &[u8], defaults: &RouteDefaults) -> Result<ChatRequest, Refusal> {
    let body = params::object(body)?;
    let model = params::model(&body)?;
    let messages = match body.get("messages") {
        Some(Value::Array(m)) if !m.is_empty() => super::messages::translate(m)?,
        _ => return Err(err("messages", "messages must be a non-empty array")),
    };
    let stream = params::flag(&body, "stream")?;
    let include_usage = params::include_usage(&body)?;
    let n = match body.get("n") {
        None | Some(Value::Null) => 1,
        Some(v) => match v.as_u64() {
            Some(n @ 1..=MAX_N) => n as u32,
            _ => return Err(err("n", format!("n must be an integer from 1 to {MAX_N}"))),
        },
    };

    let mut native = Map::new();
    native.insert("model".into(), model.clone().into());
    native.insert("messages".into(), Value::Array(messages));
    native.insert("stream".into(), stream.into());
    let mut options = params::options(&body, &defaults.options)?;
    // `max_completion_tokens` is the current name; `max_tokens` the older one.
    let limit = match params::token_limit(&body, "max_completion_tokens")? {
        Some(n) => Some(n),
        None => params::token_limit(&body, "max_tokens")?,
    };
    if let Some(n) = limit {
        options.insert("num_predict".into(), n.into());
    }
    if !options.is_empty() {
        native.insert("options".into(), Value::Object(options));
    }
    if let Some(format) = format(&body)? {
        native.insert("format".into(), format);
    }
    if let Some(tools) = tools(&body)? {
        native.insert("tools".into(), tools);
    }
    if let Some(think) = think(&body)? {
        native.insert("think".into(), think);
    }
    for key in ["keep_alive", "logprobs", "top_logprobs"] {
        if let Some(v) = body.get(key).filter(|v| !v.is_null()) {
            native.insert(key.into(), v.clone());
        }
    }
    Ok(ChatRequest {
        model,
        native,
        stream,
        include_usage,
        n,
    })
}

/// `response_format` -> native `format`.
fn format(body: &Map<String, Value>) -> Result<Option<Value>, Refusal> {
    let Some(rf) = body.get("response_format").filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let kind = rf.get("type").and_then(Value::as_str).map(str::trim);
    match kind {
        Some("text") => Ok(None),
        Some("json_object") => Ok(Some("json".into())),
        Some("json_schema") => match rf.pointer("/json_schema/schema") {
            Some(schema @ Value::Object(_)) => Ok(Some(schema.clone())),
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
fn tools(body: &Map<String, Value>) -> Result<Option<Value>, Refusal> {
    let tools = match body.get("tools") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(t)) => t,
        Some(_) => return Err(err("tools", "tools must be an array")),
    };
    let name_of = |t: &Value| {
        t.pointer("/function/name")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    if tools.iter().any(|t| name_of(t).is_none()) {
        return Err(err("tools", "every tool needs function.name"));
    }
    match body.get("tool_choice") {
        None | Some(Value::Null) => Ok(Some(Value::Array(tools.clone()))),
        Some(Value::String(s)) if s == "auto" || s == "required" => {
            Ok(Some(Value::Array(tools.clone())))
        }
        Some(Value::String(s)) if s == "none" => Ok(None),
        Some(choice) => {
            let wanted = choice.pointer("/function/name").and_then(Value::as_str);
            let chosen: Vec<Value> = tools
                .iter()
                .filter(|t| wanted.is_some() && name_of(t).as_deref() == wanted)
                .cloned()
                .collect();
            match (wanted, chosen.is_empty()) {
                (Some(_), false) => Ok(Some(Value::Array(chosen))),
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
fn think(body: &Map<String, Value>) -> Result<Option<Value>, Refusal> {
    if let Some(think) = body.get("think").filter(|v| !v.is_null()) {
        return Ok(Some(think.clone()));
    }
    let (param, effort) = match body.get("reasoning").filter(|v| !v.is_null()) {
        Some(r) => ("reasoning", r.get("effort")),
        None => ("reasoning_effort", body.get("reasoning_effort")),
    };
    let effort = match effort {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(e)) if e.is_empty() => return Ok(None),
        Some(Value::String(e)) => e.as_str(),
        Some(_) => return Err(err(param, "reasoning effort must be a string")),
    };
    Ok(Some(match effort {
        "none" => false.into(),
        "minimal" => "low".into(),
        "low" | "medium" | "high" | "max" => effort.into(),
        "xhigh" | "ultra" => "max".into(),
        other => {
            return Err(err(
                param,
                format!(
                    "invalid reasoning effort `{other}`: use none, minimal, low, medium, high, xhigh or max"
                ),
            ));
        }
    }))
}
