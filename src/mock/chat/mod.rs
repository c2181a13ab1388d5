//! The mock's chat-completions dialect: `/v1/chat/completions`, `/v1/completions`,
//! `/v1/embeddings`, `/v1/models` and `/v1/models/{id}` in the official shapes, with the
//! native mock's words, vectors, models and knobs (`tokens`, `token_delay`, `error_after`,
//! `cut_after`, `status`, ...). Errors are the official error object, mid-stream as a
//! `data: {"error": ...}` event with no `[DONE]` after it.
//!
//! What a request gets: `tools` -> one call per tool (up to two), split over chunks;
//! `response_format` `json_object`/`json_schema` -> JSON content; else `tokens` words.
//! `reasoning_effort` (other than `none`) -> three words of `reasoning_content` first.
//! `max_completion_tokens`/`max_tokens` under the words -> cut there, `finish_reason:
//! length` (`/v1/completions`: `max_tokens` defaults to 16, as the official API).

mod reply;

use hyper::Method;
use serde_json::{Value, json};

use super::knobs::Knobs;
use super::native::{self, MODELS};
use super::stream::{Drip, Ending};
use super::{Handled, respond_json};
use crate::http::body::Body;
use crate::translate::embeddings::encode_base64;
use reply::{CREATED, Call, Kind, Reply};

/// The official error object: `invalid_request_error` for 4xx, `server_error` for 5xx.
pub fn error_body(status: u16, message: &str) -> Value {
    let kind = if status < 500 {
        "invalid_request_error"
    } else {
        "server_error"
    };
    let code = (status == 404 && message.contains("does not exist")).then_some("model_not_found");
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

/// An error response in the official shape.
pub fn error(status: u16, message: &str) -> Handled {
    respond_json(status, &error_body(status, message))
}

/// Serves one request on a chat-completions mock.
pub fn route(method: &Method, path: &str, request: &Value, knobs: &Knobs, model: &str) -> Handled {
    let needs_model = path != "/v1/models" && !path.starts_with("/v1/models/");
    if needs_model && model.is_empty() {
        return error(400, "you must provide a model parameter");
    }
    if model.starts_with("missing") {
        return error(404, &missing(model));
    }
    match (method, path) {
        (&Method::POST, "/v1/chat/completions") => chat(request, knobs, model),
        (&Method::POST, "/v1/completions") => text(request, knobs, model),
        (&Method::POST, "/v1/embeddings") => embeddings(request, knobs, model),
        (&Method::GET, "/v1/models") => models(),
        (&Method::GET, p) if p.starts_with("/v1/models/") => one_model(&p["/v1/models/".len()..]),
        _ => error(404, &format!("Invalid URL ({method} {path})")),
    }
}

fn missing(model: &str) -> String {
    format!("The model `{model}` does not exist or you do not have access to it.")
}

fn chat(request: &Value, knobs: &Knobs, model: &str) -> Handled {
    if request["messages"].as_array().is_none_or(Vec::is_empty) {
        return error(400, "messages must be a non-empty array");
    }
    let format = match request
        .pointer("/response_format/type")
        .and_then(Value::as_str)
    {
        Some("json_object") => Some(json!("json")),
        Some("json_schema") => {
            let schema = request.pointer("/response_format/json_schema/schema");
            Some(schema.cloned().unwrap_or(json!("json")))
        }
        _ => None,
    };
    let pieces = match &format {
        Some(format) => native::json_pieces(format),
        None => native::word_pieces(knobs.tokens),
    };
    let mut reply = Reply::new(Kind::Chat, model, pieces, native::prompt_tokens(request));
    let tools = request["tools"].as_array().map_or(&[][..], Vec::as_slice);
    if !tools.is_empty() {
        reply.pieces.clear();
        reply = reply.with_calls(tools.iter().take(2).enumerate().map(call).collect());
    }
    let effort = request["reasoning_effort"]
        .as_str()
        .filter(|e| *e != "none");
    if effort.is_some() {
        reply.reasoning = native::word_pieces(3);
    }
    let limit = request["max_completion_tokens"]
        .as_u64()
        .or(request["max_tokens"].as_u64());
    respond(reply, request, knobs, limit)
}

/// Tool call `i` of `tool`: the native mock's arguments, as a JSON string.
fn call((i, tool): (usize, &Value)) -> Call {
    let name = tool
        .pointer("/function/name")
        .and_then(Value::as_str)
        .unwrap_or("tool");
    (
        format!("call_mock{i:04}"),
        name.to_owned(),
        native::arguments(tool).to_string(),
    )
}

fn text(request: &Value, knobs: &Knobs, model: &str) -> Handled {
    let prompt_ok = match &request["prompt"] {
        Value::String(_) => true,
        Value::Array(p) => !p.is_empty() && p.iter().all(Value::is_string),
        _ => false,
    };
    if !prompt_ok {
        return error(400, "prompt must be a string or an array of strings");
    }
    let prompt_tokens = match &request["prompt"] {
        Value::Array(p) => p
            .iter()
            .map(|p| native::prompt_tokens(&json!({"prompt": p})))
            .sum(),
        _ => native::prompt_tokens(request),
    };
    let reply = Reply::new(
        Kind::Text,
        model,
        native::word_pieces(knobs.tokens),
        prompt_tokens,
    );
    let limit = request["max_tokens"].as_u64().or(Some(16));
    respond(reply, request, knobs, limit)
}

/// Cuts the words at `limit`, then streams or responds whole, as the knobs say.
fn respond(mut reply: Reply, request: &Value, knobs: &Knobs, limit: Option<u64>) -> Handled {
    if let Some(limit) = limit
        .map(|l| l as usize)
        .filter(|l| *l < reply.pieces.len())
    {
        reply.pieces.truncate(limit);
        reply.finish = "length";
    }
    reply.include_usage = request.pointer("/stream_options/include_usage") == Some(&json!(true));
    let ending = match (knobs.error_after, knobs.cut_after) {
        (Some(n), _) => Ending::ErrorAfter(n),
        (None, Some(n)) => Ending::CutAfter(n),
        (None, None) => Ending::Done,
    };
    if request["stream"].as_bool().unwrap_or(false) {
        let body = Body::new(Drip::new(reply, knobs.token_delay, ending));
        return Handled::ok("text/event-stream", body);
    }
    match ending {
        Ending::Done => respond_json(200, &reply.whole()),
        Ending::ErrorAfter(n) => error(500, &format!("mock error after {n} tokens")),
        Ending::CutAfter(_) => Handled::cut(),
    }
}

fn embeddings(request: &Value, knobs: &Knobs, model: &str) -> Handled {
    let inputs: Vec<&str> = match &request["input"] {
        Value::String(s) if !s.is_empty() => vec![s.as_str()],
        Value::Array(items)
            if !items.is_empty()
                && items
                    .iter()
                    .all(|i| i.as_str().is_some_and(|s| !s.is_empty())) =>
        {
            items.iter().filter_map(Value::as_str).collect()
        }
        _ => {
            return error(
                400,
                "input must be a non-empty string or array of non-empty strings",
            );
        }
    };
    let size = match request["dimensions"].as_u64() {
        Some(d) if d > 0 && d < u64::from(knobs.embedding_size) => d as usize,
        _ => knobs.embedding_size as usize,
    };
    let base64 = match request["encoding_format"].as_str() {
        None | Some("float") => false,
        Some("base64") => true,
        Some(other) => {
            return error(
                400,
                &format!("encoding_format must be float or base64, not {other}"),
            );
        }
    };
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, text)| {
            let v = native::vector(text, size, true);
            let embedding = if base64 {
                json!(encode_base64(&v))
            } else {
                json!(v)
            };
            json!({"object": "embedding", "index": index, "embedding": embedding})
        })
        .collect();
    let tokens: usize = inputs.iter().map(|t| t.split_whitespace().count()).sum();
    respond_json(
        200,
        &json!({"object": "list", "data": data, "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}),
    )
}

fn model_entry(id: &str) -> Value {
    json!({"id": id, "object": "model", "created": CREATED, "owned_by": "lingo-mock"})
}

/// `/v1/models`: the models the native mock lists.
fn models() -> Handled {
    let data: Vec<Value> = MODELS.iter().map(|m| model_entry(m.name)).collect();
    respond_json(200, &json!({"object": "list", "data": data}))
}

/// `/v1/models/{id}`: any id (it may contain `/`) but those starting with `missing`.
fn one_model(id: &str) -> Handled {
    if id.starts_with("missing") {
        return error(404, &missing(id));
    }
    respond_json(200, &model_entry(id))
}

#[cfg(test)]
mod tests;
