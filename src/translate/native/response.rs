//! Native response lines: what a chat-completions response (a chunk, or a whole completion)
//! becomes for a native client, and the whole (`stream: false`) response.

use std::time::Duration;

use bytes::Bytes;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::chunk::{self, Choice, Chunk};
use crate::base::usage::Usage;

/// What every line of one native response shares.
#[derive(Debug, Clone)]
pub struct Meta {
    /// The model name the client asked for (an alias stays an alias).
    pub model: String,
    /// `/api/chat` (`message`) or `/api/generate` (`response`) lines.
    pub output: Output,
}

/// Which native endpoint the lines are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    Chat,
    Generate,
}

/// The time of a line, from the caller's clock: the translators read none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// RFC 3339, UTC (`2026-01-01T00:00:00.123456789Z`).
    pub created_at: String,
    /// Since the request arrived.
    pub elapsed: Duration,
}

/// What one line says: text, reasoning, whole tool calls (native shape) and the log
/// probabilities of its tokens (the entries of the official `logprobs.content`, whose
/// `token`/`logprob`/`bytes`/`top_logprobs` shape the native `logprobs` shares).
#[derive(Debug, Default)]
pub struct Piece<'a> {
    pub content: &'a str,
    pub thinking: &'a str,
    pub tool_calls: Vec<Value>,
    pub logprobs: Option<&'a RawValue>,
}

// === impl Piece ===

impl<'a> Piece<'a> {
    /// Text, reasoning and log probabilities of a choice and its delta or message (a text
    /// completion's choice has only `text`).
    pub fn of(choice: &'a Choice<'_>, message: Option<&'a chunk::Message<'_>>) -> Self {
        let content = message.and_then(|m| m.content.as_deref());
        let logprobs = choice.logprobs.as_ref().and_then(|l| l.content);
        Piece {
            content: content.or(choice.text.as_deref()).unwrap_or(""),
            thinking: message.map_or("", chunk::Message::reasoning),
            tool_calls: Vec::new(),
            logprobs: logprobs.filter(|l| l.get().trim() != "[]"),
        }
    }

    /// Whether it says anything a native client would see.
    pub fn is_empty(&self) -> bool {
        self.content.is_empty()
            && self.thinking.is_empty()
            && self.tool_calls.is_empty()
            && self.logprobs.is_none()
    }
}

/// The closing line's facts: `done_reason`, token counts and durations (nanoseconds).
#[derive(Debug, Serialize)]
pub struct End {
    pub done_reason: String,
    pub total_duration: u64,
    pub load_duration: u64,
    /// Each count and duration below is left out when zero, as the native server does.
    #[serde(skip_serializing_if = "is_zero")]
    pub prompt_eval_count: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub prompt_eval_duration: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub eval_count: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub eval_duration: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Serialize)]
struct Line<'a> {
    model: &'a str,
    created_at: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<Message<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<&'a str>,
    #[serde(skip_serializing_if = "<[Value]>::is_empty")]
    tool_calls: &'a [Value],
    done: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    logprobs: Option<&'a RawValue>,
    #[serde(flatten)]
    end: Option<&'a End>,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<&'a str>,
    #[serde(skip_serializing_if = "<[Value]>::is_empty")]
    tool_calls: &'a [Value],
}

/// Nanoseconds, saturating.
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

// === impl Meta ===

impl Meta {
    /// One native line: compact JSON and `\n`. `/api/chat` puts the text in `message`;
    /// `/api/generate` in `response`, with `thinking` beside it.
    pub fn line(&self, stamp: &Stamp, piece: &Piece, end: Option<&End>) -> Bytes {
        let thinking = Some(piece.thinking).filter(|t| !t.is_empty());
        let chat = self.output == Output::Chat;
        let line = Line {
            model: &self.model,
            created_at: &stamp.created_at,
            message: chat.then_some(Message {
                role: "assistant",
                content: piece.content,
                thinking,
                tool_calls: &piece.tool_calls,
            }),
            response: (!chat).then_some(piece.content),
            thinking: thinking.filter(|_| !chat),
            tool_calls: if chat { &[] } else { &piece.tool_calls },
            done: end.is_some(),
            logprobs: piece.logprobs,
            end,
        };
        let mut out = serde_json::to_vec(&line).unwrap_or_default();
        out.push(b'\n');
        Bytes::from(out)
    }

    /// The response to a request with nothing to generate (no messages, an empty prompt): the
    /// native server loads the model and says `done_reason: "load"`.
    pub fn load_response(&self, stamp: &Stamp) -> Bytes {
        let end = End::new("load".into(), stamp.elapsed, None, Usage::default());
        self.line(stamp, &Piece::default(), Some(&end))
    }
}

// === impl End ===

impl End {
    /// `first` is when the first generated piece arrived (the rest is generation time); a
    /// whole response has none, and all its time counts as generation.
    pub fn new(
        done_reason: String,
        total: Duration,
        first: Option<Duration>,
        usage: Usage,
    ) -> Self {
        let first = first.unwrap_or_default().min(total);
        End {
            done_reason,
            total_duration: nanos(total),
            load_duration: 0,
            prompt_eval_count: usage.prompt_tokens,
            prompt_eval_duration: nanos(first),
            eval_count: usage.completion_tokens,
            eval_duration: nanos(total - first),
        }
    }
}

/// Native `done_reason` of a `finish_reason`: `length` stays; `stop`, `tool_calls` and the
/// legacy `function_call` are `stop` (what a native server reports after tool calls); none is
/// `stop`; anything else (`content_filter`, ...) is passed on as it is.
pub fn done_reason(finish_reason: Option<&str>) -> String {
    match finish_reason {
        Some("length") => "length".into(),
        None | Some("stop" | "tool_calls" | "function_call") => "stop".into(),
        Some(other) => other.into(),
    }
}

/// A whole tool call in the native shape: `arguments` (a JSON string) as an object (`""` is
/// `{}`), `index` in `function`, `id` left out when the upstream sent none.
pub fn native_call(index: usize, id: &str, name: &str, arguments: &str) -> Result<Value, String> {
    let arguments = match arguments.trim() {
        "" => Value::Object(Map::new()),
        text => match serde_json::from_str::<Value>(text) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                return Err(format!(
                    "upstream sent tool call `{name}` with arguments that are not a JSON object"
                ));
            }
        },
    };
    let mut call = json!({"function": {"index": index, "name": name, "arguments": arguments}});
    if !id.is_empty() {
        call["id"] = id.into();
    }
    Ok(call)
}

/// The token counts of an official `usage` object (missing counts are 0).
pub fn usage_of(usage: &Value) -> Usage {
    let count = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
    Usage::new(count("prompt_tokens"), count("completion_tokens"))
}

/// A whole (`stream: false`) chat completion or text completion as one native object, and
/// its usage (for lingo's token counters). An `{"error": ...}` body is an `Err`.
pub fn whole(body: &[u8], meta: &Meta, stamp: &Stamp) -> Result<(Bytes, Usage), String> {
    let response = Chunk::parse(body)?;
    if let Some(error) = response.error() {
        return Err(format!("upstream error: {error}"));
    }
    let choice = response
        .choice_zero()
        .ok_or("upstream sent a completion without choices")?;
    let message = choice.message.as_ref().or(choice.delta.as_ref());
    let mut piece = Piece::of(choice, message);
    let calls = message.and_then(|m| m.tool_calls.as_deref()).unwrap_or(&[]);
    for (i, call) in calls.iter().enumerate() {
        let function = call.function.as_ref();
        let name = function.and_then(|f| f.name.as_deref()).unwrap_or("");
        let arguments = function.and_then(|f| f.arguments.as_deref()).unwrap_or("");
        let id = call.id.as_deref().unwrap_or("");
        piece.tool_calls.push(native_call(i, id, name, arguments)?);
    }
    let usage = response.usage.as_ref().map(Usage::from).unwrap_or_default();
    let reason = done_reason(choice.finish_reason.as_deref());
    let end = End::new(reason, stamp.elapsed, None, usage);
    let mut line = meta.line(stamp, &piece, Some(&end));
    line.truncate(line.len() - 1);
    Ok((line, usage))
}

/// The message of an error object: `{"message": ...}`, or a string, or its JSON.
pub fn error_message(error: &Value) -> String {
    match error {
        Value::String(s) => s.clone(),
        e => match e.get("message").and_then(Value::as_str) {
            Some(m) => m.to_owned(),
            None => e.to_string(),
        },
    }
}
