//! The native `/api/chat` answer, as lingo reads it: one parse per line, borrowing strings.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

/// One NDJSON event (or the whole non-streamed answer).
#[derive(Debug, Deserialize)]
pub struct Event<'a> {
    #[serde(default, borrow)]
    pub message: Option<Message<'a>>,
    #[serde(default)]
    pub done: bool,
    #[serde(default, borrow)]
    pub done_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    pub prompt_eval_count: u64,
    #[serde(default)]
    pub eval_count: u64,
    #[serde(default, borrow)]
    pub logprobs: Option<&'a RawValue>,
    /// A native error line (`{"error": "..."}`), mid-stream or as an answer.
    #[serde(default, borrow)]
    pub error: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Message<'a> {
    #[serde(default, borrow)]
    pub content: Cow<'a, str>,
    #[serde(default, borrow)]
    pub thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub tool_calls: Vec<ToolCall<'a>>,
}

#[derive(Debug, Deserialize)]
pub struct ToolCall<'a> {
    #[serde(default, borrow)]
    pub id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub function: Function<'a>,
}

#[derive(Debug, Deserialize)]
pub struct Function<'a> {
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    /// Kept as the upstream wrote it (compact, key order preserved).
    #[serde(borrow)]
    pub arguments: Option<&'a RawValue>,
}

/// Parses one line or answer.
pub fn parse(bytes: &[u8]) -> Result<Event<'_>, String> {
    crate::translate::parse_json(bytes)
        .map_err(|e| format!("upstream sent something that is not a native chat event: {e}"))
}
