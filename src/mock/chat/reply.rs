//! What a chat-completions mock says: a chat completion or a text completion, whole or as
//! server-sent events made one at a time (see [`Script`]), in the official shapes.
//!
//! Streams open with `role`, then reasoning (`reasoning_content`, when the request set
//! `reasoning_effort`), content, and tool calls in fragments split over several chunks (the
//! `id` and name first, the `arguments` string in pieces after), as the official API streams
//! them; then a closing chunk with an empty delta and the `finish_reason`, the usage chunk
//! when `stream_options.include_usage` asked for it, and `data: [DONE]`.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::mock::stream::Script;
use crate::translate::sse;

/// Unix seconds of the mock's fixed timestamp (`2026-01-01T00:00:00Z`).
pub const CREATED: u64 = 1_767_225_600;

/// How many characters of a call's `arguments` each fragment carries.
const ARGUMENT_PIECE: usize = 8;

/// `/v1/chat/completions` or `/v1/completions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Chat,
    Text,
}

/// One tool call: id, function name, arguments (a JSON text).
pub type Call = (String, String, String);

/// Everything one response says, worked out before the first byte.
pub struct Reply {
    pub kind: Kind,
    pub model: String,
    pub reasoning: Vec<String>,
    pub pieces: Vec<String>,
    pub calls: Vec<Call>,
    pub finish: &'static str,
    pub prompt_tokens: u64,
    pub include_usage: bool,
    /// The tool-call deltas, in order (made from `calls` by [`Reply::with_calls`]).
    fragments: Vec<Value>,
}

// === impl Reply ===

impl Reply {
    pub fn new(kind: Kind, model: &str, pieces: Vec<String>, prompt_tokens: u64) -> Self {
        Reply {
            kind,
            model: model.to_owned(),
            reasoning: Vec::new(),
            pieces,
            calls: Vec::new(),
            finish: "stop",
            prompt_tokens,
            include_usage: false,
            fragments: Vec::new(),
        }
    }

    /// Sets the tool calls, and their fragments.
    pub fn with_calls(mut self, calls: Vec<Call>) -> Self {
        self.fragments = calls
            .iter()
            .enumerate()
            .flat_map(|(i, c)| fragments(i, c))
            .collect();
        self.calls = calls;
        self.finish = "tool_calls";
        self
    }

    fn usage(&self) -> Value {
        let completion = (self.reasoning.len() + self.pieces.len() + self.calls.len()) as u64;
        json!({"prompt_tokens": self.prompt_tokens, "completion_tokens": completion,
            "total_tokens": self.prompt_tokens + completion})
    }

    fn object(&self, chunk: bool) -> &'static str {
        match (self.kind, chunk) {
            (Kind::Chat, true) => "chat.completion.chunk",
            (Kind::Chat, false) => "chat.completion",
            (Kind::Text, _) => "text_completion",
        }
    }

    /// The non-streamed response.
    pub fn whole(&self) -> Value {
        let choice = match self.kind {
            Kind::Chat => {
                let mut message = json!({"role": "assistant", "content": self.pieces.concat()});
                if !self.reasoning.is_empty() {
                    message["reasoning_content"] = self.reasoning.concat().into();
                }
                if !self.calls.is_empty() {
                    message["content"] = Value::Null;
                    message["tool_calls"] = self.calls.iter().map(whole_call).collect();
                }
                json!({"index": 0, "message": message, "logprobs": null, "finish_reason": self.finish})
            }
            Kind::Text => json!({"index": 0, "text": self.pieces.concat(), "logprobs": null,
                "finish_reason": self.finish}),
        };
        let mut response = self.envelope(false, json!([choice]));
        response["usage"] = self.usage();
        response
    }

    fn envelope(&self, chunk: bool, choices: Value) -> Value {
        let mut out = json!({"id": if self.kind == Kind::Chat { "chatcmpl-mock" } else { "cmpl-mock" },
            "object": self.object(chunk), "created": CREATED, "model": self.model,
            "system_fingerprint": "fp_mock", "choices": choices});
        if chunk && self.include_usage {
            out["usage"] = Value::Null;
        }
        out
    }

    /// One chunk of choice 0: `delta` (chat) or `text` (completions).
    fn chunk(&self, delta: Value, finish: Option<&str>) -> Bytes {
        let choice = match self.kind {
            Kind::Chat => {
                json!({"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish})
            }
            Kind::Text => {
                json!({"index": 0, "text": delta.get("content").cloned().unwrap_or("".into()),
                "logprobs": null, "finish_reason": finish})
            }
        };
        sse::data(&self.envelope(true, json!([choice])))
    }

    /// The delta of event `i`: reasoning, then content, then tool-call fragments.
    fn delta(&self, i: usize) -> Value {
        let (r, c) = (self.reasoning.len(), self.pieces.len());
        let mut delta = if i < r {
            json!({"reasoning_content": self.reasoning[i]})
        } else if i < r + c {
            json!({"content": self.pieces[i - r]})
        } else {
            json!({"tool_calls": [self.fragments.get(i - r - c).cloned().unwrap_or_default()]})
        };
        if i == 0 {
            delta["role"] = "assistant".into();
            if delta.get("content").is_none() {
                delta["content"] = if self.calls.is_empty() {
                    "".into()
                } else {
                    Value::Null
                };
            }
        }
        delta
    }
}

/// A call in the whole response's shape.
fn whole_call(call: &Call) -> Value {
    json!({"id": call.0, "type": "function", "function": {"name": call.1, "arguments": call.2}})
}

/// Call `index` as stream fragments: id and name with empty arguments, then the pieces.
fn fragments(index: usize, (id, name, arguments): &Call) -> Vec<Value> {
    let head = json!({"index": index, "id": id, "type": "function",
        "function": {"name": name, "arguments": ""}});
    let chars: Vec<char> = arguments.chars().collect();
    let pieces = chars
        .chunks(ARGUMENT_PIECE)
        .map(|p| json!({"index": index, "function": {"arguments": p.iter().collect::<String>()}}));
    std::iter::once(head).chain(pieces).collect()
}

impl Script for Reply {
    fn token(&mut self, i: u32) -> Bytes {
        self.chunk(self.delta(i as usize), None)
    }

    fn done(&mut self) -> Bytes {
        let mut out = Vec::new();
        if self.len() == 0 {
            let empty = json!({"role": "assistant", "content": ""});
            out.extend_from_slice(&self.chunk(empty, None));
        }
        out.extend_from_slice(&self.chunk(json!({}), Some(self.finish)));
        if self.include_usage {
            let mut usage = self.envelope(true, json!([]));
            usage["usage"] = self.usage();
            out.extend_from_slice(&sse::data(&usage));
        }
        out.extend_from_slice(&sse::done());
        Bytes::from(out)
    }

    fn len(&self) -> u32 {
        let events = self.reasoning.len() + self.pieces.len() + self.fragments.len();
        u32::try_from(events).unwrap_or(u32::MAX)
    }

    fn error(&mut self, n: u32) -> Bytes {
        sse::data(&super::error_body(
            500,
            &format!("mock error after {n} tokens"),
        ))
    }
}
