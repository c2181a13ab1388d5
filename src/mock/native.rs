//! The mock's native dialect: `/api/chat`, `/api/generate`, `/api/embed(dings)`,
//! `/api/tags`, `/api/show`, framed as the real server frames them.
//!
//! Responses are deterministic: the same request and knobs give the same bytes, except that
//! no timestamps vary either (a fixed `created_at`), so load tests compare like with like.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::knobs::Knobs;
use super::stream::{Drip, Ending, Script};
use super::{Handled, respond_error, respond_json};
use crate::base::ids::{FNV_OFFSET, digest, fnv1a};
use crate::http::body::Body;

/// Fixed timestamp of every event.
pub(super) const CREATED_AT: &str = "2026-01-01T00:00:00Z";
/// When `/api/ps` says a loaded model will be unloaded.
const EXPIRES_AT: &str = "2026-01-01T00:05:00Z";

/// The models `/api/tags` lists: the target of the shipped table's alias (`gpt-4o-mini` ->
/// `llama3.2:3b`, also what the README's native examples ask for) and an embedding model, so
/// the default demo's `/v1/models` and `/api/tags` show each alias beside its target. Sizes
/// and counts are close to the real models' in their usual quantisations. (The mock responds to
/// every model name; these are only what it says it has.)
pub(super) const MODELS: [Listed; 2] = [
    Listed {
        name: "llama3.2:3b",
        family: "llama",
        parameter_size: "3.2B",
        quantization_level: "Q4_K_M",
        size: 2_019_393_189,
        parameter_count: 3_212_749_888,
        context_length: 131_072,
        embedding_length: 3072,
        head_count: 24,
        capabilities: &["completion", "tools"],
    },
    Listed {
        name: "all-minilm:latest",
        family: "bert",
        parameter_size: "23M",
        quantization_level: "F16",
        size: 45_960_996,
        parameter_count: 22_565_376,
        context_length: 512,
        embedding_length: 384,
        head_count: 12,
        capabilities: &["embedding"],
    },
];

/// The words mock responses are made of.
const WORDS: [&str; 12] = [
    "Lingo", "is", "a", "mock", "answer", "streamed", "one", "token", "at", "a", "time", "here",
];

/// Chat or generate: the two streaming endpoints differ only in where the text goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Chat,
    Generate,
}

/// A model the mock lists, and what it says of it.
pub(super) struct Listed {
    pub(super) name: &'static str,
    family: &'static str,
    parameter_size: &'static str,
    quantization_level: &'static str,
    /// Bytes on disk.
    size: u64,
    parameter_count: u64,
    context_length: u64,
    embedding_length: u64,
    head_count: u64,
    capabilities: &'static [&'static str],
}

/// What to say, worked out from the request before the first byte.
struct Reply {
    kind: Kind,
    model: String,
    pieces: Vec<String>,
    tool_calls: Option<Value>,
    done_reason: &'static str,
    prompt_tokens: u64,
}

pub fn chat(request: &Value, knobs: &Knobs, model: &str) -> Handled {
    stream_or_whole(Kind::Chat, request, knobs, model)
}

pub fn generate(request: &Value, knobs: &Knobs, model: &str) -> Handled {
    stream_or_whole(Kind::Generate, request, knobs, model)
}

fn stream_or_whole(kind: Kind, request: &Value, knobs: &Knobs, model: &str) -> Handled {
    if model.is_empty() {
        return respond_error(400, "model is required", false);
    }
    if model.starts_with("missing") {
        return respond_error(404, &format!("model '{model}' not found"), false);
    }
    let reply = Reply::new(kind, request, knobs, model);
    let stream = request
        .get("stream")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let ending = match (knobs.error_after, knobs.cut_after) {
        (Some(n), _) => Ending::ErrorAfter(n),
        (None, Some(n)) => Ending::CutAfter(n),
        (None, None) => Ending::Done,
    };
    if stream {
        let body = Body::new(Drip::new(reply, knobs.token_delay, ending));
        return Handled::ok("application/x-ndjson", body);
    }
    match ending {
        Ending::Done => respond_json(200, &reply.whole()),
        Ending::ErrorAfter(n) => respond_error(500, &format!("mock error after {n} tokens"), false),
        Ending::CutAfter(_) => Handled::cut(),
    }
}

// === impl Reply ===

impl Reply {
    fn new(kind: Kind, request: &Value, knobs: &Knobs, model: &str) -> Self {
        let format = request.get("format").filter(|f| !f.is_null());
        let tools = request
            .get("tools")
            .and_then(Value::as_array)
            .filter(|t| !t.is_empty());
        let limit = request
            .pointer("/options/num_predict")
            .and_then(Value::as_i64)
            .filter(|n| *n >= 0)
            .map(|n| n as usize);
        let (mut pieces, tool_calls) = match (tools, format) {
            (Some(tools), _) if kind == Kind::Chat => (Vec::new(), Some(tool_call(&tools[0]))),
            (_, Some(format)) => (json_pieces(format), None),
            _ => (word_pieces(knobs.tokens), None),
        };
        let mut done_reason = "stop";
        if let Some(limit) = limit.filter(|l| *l < pieces.len()) {
            pieces.truncate(limit);
            done_reason = "length";
        }
        Reply {
            kind,
            model: model.to_owned(),
            pieces,
            tool_calls,
            done_reason,
            prompt_tokens: prompt_tokens(request),
        }
    }

    fn event(&self, text: &str, done: bool) -> Map<String, Value> {
        let mut event = Map::new();
        event.insert("model".into(), self.model.clone().into());
        event.insert("created_at".into(), CREATED_AT.into());
        match self.kind {
            Kind::Chat => {
                let mut message = json!({"role": "assistant", "content": text});
                if done && let Some(calls) = &self.tool_calls {
                    message["tool_calls"] = calls.clone();
                }
                event.insert("message".into(), message);
            }
            Kind::Generate => {
                event.insert("response".into(), text.into());
            }
        }
        event.insert("done".into(), done.into());
        if done {
            let eval = self
                .pieces
                .len()
                .max(usize::from(self.tool_calls.is_some()));
            event.insert("done_reason".into(), self.done_reason.into());
            event.insert("total_duration".into(), 1_000_000.into());
            event.insert("load_duration".into(), 1000.into());
            event.insert("prompt_eval_count".into(), self.prompt_tokens.into());
            event.insert("eval_count".into(), eval.into());
            if self.kind == Kind::Generate {
                event.insert("context".into(), json!([1, 2, 3]));
            }
        }
        event
    }

    /// The non-streamed response: the closing event with all the text.
    fn whole(&self) -> Value {
        Value::Object(self.event(&self.pieces.concat(), true))
    }
}

impl Script for Reply {
    fn token(&mut self, i: u32) -> Bytes {
        let text = self.pieces.get(i as usize).map_or("", String::as_str);
        line(self.event(text, false))
    }

    fn done(&mut self) -> Bytes {
        line(self.event("", true))
    }

    fn len(&self) -> u32 {
        u32::try_from(self.pieces.len()).unwrap_or(u32::MAX)
    }
}

fn line(event: Map<String, Value>) -> Bytes {
    let mut bytes = serde_json::to_vec(&event).unwrap_or_default();
    bytes.push(b'\n');
    Bytes::from(bytes)
}

pub(super) fn word_pieces(tokens: u32) -> Vec<String> {
    (0..tokens as usize)
        .map(|i| {
            let word = WORDS[i % WORDS.len()];
            if i == 0 {
                word.to_owned()
            } else {
                format!(" {word}")
            }
        })
        .collect()
}

/// JSON content for a `format` request, in pieces of a few characters.
pub(super) fn json_pieces(format: &Value) -> Vec<String> {
    let value = match format {
        Value::Object(schema) => sample(&Value::Object(schema.clone())),
        _ => json!({"answer": "mock"}),
    };
    let text = value.to_string();
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(4).map(|c| c.iter().collect()).collect()
}

/// A value that fits a JSON schema's `type`s (objects get every property).
fn sample(schema: &Value) -> Value {
    match schema.get("type").and_then(Value::as_str) {
        Some("object") | None if schema.get("properties").is_some() => {
            let props = schema["properties"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            Value::Object(props.iter().map(|(k, s)| (k.clone(), sample(s))).collect())
        }
        Some("string") => "mock".into(),
        Some("integer" | "number") => 0.into(),
        Some("boolean") => true.into(),
        Some("array") => json!([]),
        Some("null") => Value::Null,
        _ => json!({}),
    }
}

/// One call of the first tool, with every required argument filled in.
fn tool_call(tool: &Value) -> Value {
    let name = tool["function"]["name"].as_str().unwrap_or("tool");
    let arguments = arguments(tool);
    json!([{"id": "call_mock0000", "function": {"index": 0, "name": name, "arguments": arguments}}])
}

/// Arguments for a call of `tool`: every required parameter, filled in by its type.
pub(super) fn arguments(tool: &Value) -> Value {
    let Some(params) = tool["function"].get("parameters") else {
        return json!({});
    };
    let required: Vec<&str> = params["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    match sample(params) {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(k, _)| required.contains(&k.as_str()))
                .collect(),
        ),
        other => other,
    }
}

/// Whitespace-separated words in the prompt: a stand-in for a tokenizer.
pub(super) fn prompt_tokens(request: &Value) -> u64 {
    let count = |v: &Value| {
        v.as_str()
            .map_or(0, |s| s.split_whitespace().count() as u64)
    };
    let messages = request["messages"]
        .as_array()
        .map_or(0, |m| m.iter().map(|m| count(&m["content"])).sum());
    messages + count(&request["prompt"]) + count(&request["system"])
}

/// `/api/embed`: one L2-normalised vector per input.
pub fn embed(request: &Value, knobs: &Knobs, model: &str) -> Handled {
    if model.starts_with("missing") {
        return respond_error(404, &format!("model '{model}' not found"), false);
    }
    let inputs: Vec<&str> = match &request["input"] {
        Value::String(s) if s.is_empty() => Vec::new(),
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) if items.iter().all(Value::is_string) => {
            items.iter().filter_map(Value::as_str).collect()
        }
        _ => return respond_error(400, "invalid input type", false),
    };
    let size = match request["dimensions"].as_u64() {
        Some(d) if d > 0 && d < u64::from(knobs.embedding_size) => d as usize,
        _ => knobs.embedding_size as usize,
    };
    let embeddings: Vec<Vec<f32>> = inputs.iter().map(|t| vector(t, size, true)).collect();
    let tokens: usize = inputs.iter().map(|t| t.split_whitespace().count()).sum();
    respond_json(
        200,
        &json!({"model": model, "embeddings": embeddings, "prompt_eval_count": tokens}),
    )
}

/// `/api/embeddings` (legacy): one unnormalised vector for `prompt`.
pub fn embeddings(request: &Value, knobs: &Knobs, model: &str) -> Handled {
    let prompt = request["prompt"].as_str().unwrap_or("");
    let embedding = if prompt.is_empty() {
        Vec::new()
    } else {
        vector(prompt, knobs.embedding_size as usize, false)
    };
    let _ = model;
    respond_json(200, &json!({"embedding": embedding}))
}

/// A deterministic vector for `text` (FNV-1a seeded xorshift).
pub(super) fn vector(text: &str, size: usize, normalise: bool) -> Vec<f32> {
    let mut state = fnv1a(FNV_OFFSET, text.as_bytes());
    let mut v: Vec<f32> = (0..size)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 2001) as f32 / 1000.0 - 1.0
        })
        .collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if normalise && norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// `/api/tags`: the models the mock pretends to have.
pub fn tags() -> Handled {
    let models: Vec<Value> = MODELS.iter().map(Listed::entry).collect();
    respond_json(200, &json!({ "models": models }))
}

/// `/api/ps`: the models `loaded` names, each as `/api/tags` lists it (or as the first listed
/// model, renamed), with how much of it is in video memory and when it will be unloaded.
pub fn ps(loaded: &[String]) -> Handled {
    let models: Vec<Value> = loaded
        .iter()
        .map(|name| {
            let mut entry = listed(name).entry();
            entry["name"] = json!(name);
            entry["model"] = json!(name);
            entry["size_vram"] = entry["size"].clone();
            entry["expires_at"] = json!(EXPIRES_AT);
            if let Some(fields) = entry.as_object_mut() {
                fields.remove("modified_at");
            }
            entry
        })
        .collect();
    respond_json(200, &json!({ "models": models }))
}

/// The listed model `name` names (`llama3.2:3b`, or `all-minilm` for `all-minilm:latest`),
/// else the first listed model, which is what the mock serves any other name as.
fn listed(name: &str) -> &'static Listed {
    MODELS
        .iter()
        .find(|m| m.name == name || m.name.strip_suffix(":latest") == Some(name))
        .unwrap_or(&MODELS[0])
}

/// `/api/show`: details of any model, except names starting with `missing`. A listed model
/// (`llama3.2:3b`, or `all-minilm` for `all-minilm:latest`) is described as listed; any other
/// name as the first listed model, which is what the mock serves it as.
pub fn show(request: &Value) -> Handled {
    let name = request["model"]
        .as_str()
        .or(request["name"].as_str())
        .unwrap_or("");
    if name.is_empty() {
        return respond_error(400, "model is required", false);
    }
    if name.starts_with("missing") {
        return respond_error(404, &format!("model '{name}' not found"), false);
    }
    respond_json(200, &listed(name).show(name))
}

// === impl Listed ===

impl Listed {
    /// The `/api/tags` entry.
    fn entry(&self) -> Value {
        json!({
            "name": self.name, "model": self.name, "modified_at": CREATED_AT,
            "size": self.size, "digest": digest(self.name), "details": self.details(),
        })
    }

    /// The `/api/show` response, for a request that named it `name`.
    fn show(&self, name: &str) -> Value {
        let arch = self.family;
        json!({
            "model": name,
            "modified_at": CREATED_AT,
            "modelfile": format!("# Modelfile generated by the lingo mock\nFROM {}\n", self.name),
            "parameters": "",
            "template": "{{ .Prompt }}",
            "system": "",
            "details": self.details(),
            "model_info": {
                "general.architecture": arch,
                "general.basename": self.name.split(':').next().unwrap_or(self.name),
                "general.parameter_count": self.parameter_count,
                format!("{arch}.context_length"): self.context_length,
                format!("{arch}.embedding_length"): self.embedding_length,
                format!("{arch}.attention.head_count"): self.head_count,
            },
            "capabilities": self.capabilities,
        })
    }

    /// The model details object, every field the real server writes.
    fn details(&self) -> Value {
        json!({
            "parent_model": "", "format": "gguf", "family": self.family,
            "families": [self.family], "parameter_size": self.parameter_size,
            "quantization_level": self.quantization_level,
        })
    }
}
