//! Chat-completions request -> native `/api/chat` request.
//!
//! Only what the client set is sent (no injected sampling defaults); every field that is
//! set wrongly is a 400 naming its `param`; fields lingo does not use (`user`, `store`,
//! `logit_bias`, ...) are ignored, as the official API's clients expect.

use serde_json::{Map, Value, json};

/// Most choices one request may ask for: each is a full upstream generation.
pub const MAX_N: u64 = 8;

/// Native options a route sends unless the client sets them (`options:` in the table).
#[derive(Debug, Clone, Default)]
pub struct RouteDefaults {
    pub options: Map<String, Value>,
}

/// A request lingo refuses: 400, naming the parameter at fault.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatError {
    pub message: String,
    pub param: Option<&'static str>,
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

fn err(param: &'static str, message: impl Into<String>) -> ChatError {
    ChatError {
        message: message.into(),
        param: Some(param),
    }
}

/// Translates a chat-completions body.
pub fn request(body: &[u8], defaults: &RouteDefaults) -> Result<ChatRequest, ChatError> {
    let body = parse(body)?;
    let model = match body.get("model") {
        Some(Value::String(m)) if !m.trim().is_empty() => m.clone(),
        _ => return Err(err("model", "you must provide a model parameter")),
    };
    let messages = match body.get("messages") {
        Some(Value::Array(m)) if !m.is_empty() => super::messages::translate(m)?,
        _ => return Err(err("messages", "messages must be a non-empty array")),
    };
    let stream = flag(&body, "stream")?;
    let include_usage = match body.get("stream_options") {
        None | Some(Value::Null) => false,
        Some(Value::Object(o)) => flag(o, "include_usage").map_err(|_| {
            err(
                "stream_options",
                "stream_options.include_usage must be a boolean",
            )
        })?,
        Some(_) => return Err(err("stream_options", "stream_options must be an object")),
    };
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
    let options = options(&body, defaults)?;
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

fn parse(body: &[u8]) -> Result<Map<String, Value>, ChatError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ChatError {
            message: "the request body is empty; send a JSON chat-completions request".into(),
            param: None,
        });
    }
    match serde_json::from_slice(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ChatError {
            message: "the request body must be a JSON object".into(),
            param: None,
        }),
        Err(e) => Err(ChatError {
            message: format!("the request body is not valid JSON: {e}"),
            param: None,
        }),
    }
}

/// A boolean field; absent or null is false.
fn flag(map: &Map<String, Value>, key: &'static str) -> Result<bool, ChatError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(err(key, format!("{key} must be a boolean"))),
    }
}

/// Route defaults, then the client's `options`, then the explicit fields (which win).
fn options(
    body: &Map<String, Value>,
    defaults: &RouteDefaults,
) -> Result<Map<String, Value>, ChatError> {
    let mut options = defaults.options.clone();
    match body.get("options") {
        None | Some(Value::Null) => {}
        Some(Value::Object(client)) => options.extend(client.clone()),
        Some(_) => {
            return Err(err(
                "options",
                "options must be an object of native options",
            ));
        }
    }
    let number = |key: &'static str,
                  range: std::ops::RangeInclusive<f64>|
     -> Result<Option<Value>, ChatError> {
        match body.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_f64() {
                Some(x) if range.contains(&x) => Ok(Some(v.clone())),
                _ => Err(err(
                    key,
                    format!(
                        "{key} must be a number from {} to {}",
                        range.start(),
                        range.end()
                    ),
                )),
            },
        }
    };
    for (key, range) in [
        ("temperature", 0.0..=2.0),
        ("top_p", 0.0..=1.0),
        ("frequency_penalty", -2.0..=2.0),
        ("presence_penalty", -2.0..=2.0),
    ] {
        if let Some(v) = number(key, range)? {
            options.insert(key.into(), v);
        }
    }
    let tokens = ["max_completion_tokens", "max_tokens"]
        .into_iter()
        .find(|k| body.get(*k).is_some_and(|v| !v.is_null()));
    if let Some(key) = tokens {
        match body[key].as_u64() {
            Some(n) if n > 0 => options.insert("num_predict".into(), n.into()),
            _ => {
                return Err(err(
                    if key == "max_tokens" {
                        "max_tokens"
                    } else {
                        "max_completion_tokens"
                    },
                    format!("{key} must be a positive integer"),
                ));
            }
        };
    }
    match body.get("seed") {
        None | Some(Value::Null) => {}
        Some(v) if v.is_i64() || v.is_u64() => {
            options.insert("seed".into(), v.clone());
        }
        Some(_) => return Err(err("seed", "seed must be an integer")),
    }
    if let Some(stop) = stop(body.get("stop"))? {
        options.insert("stop".into(), stop);
    }
    Ok(options)
}

fn stop(value: Option<&Value>) -> Result<Option<Value>, ChatError> {
    let bad = || {
        err(
            "stop",
            "stop must be a string or an array of up to 4 strings",
        )
    };
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(json!([s]))),
        Some(Value::Array(items)) if items.len() <= 4 && items.iter().all(Value::is_string) => {
            Ok(Some(Value::Array(items.clone())))
        }
        Some(_) => Err(bad()),
    }
}

/// `response_format` -> native `format`.
fn format(body: &Map<String, Value>) -> Result<Option<Value>, ChatError> {
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
fn tools(body: &Map<String, Value>) -> Result<Option<Value>, ChatError> {
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
fn think(body: &Map<String, Value>) -> Result<Option<Value>, ChatError> {
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
