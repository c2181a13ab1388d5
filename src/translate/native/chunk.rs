//! A chat-completions chunk or whole completion, as lingo reads it: one typed parse per
//! event, borrowing what it can (unknown fields skipped, `null` the same as absent).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::base::usage::Usage;

/// One SSE event (`chat.completion.chunk`, `text_completion`) or a whole response.
#[derive(Debug, Deserialize)]
pub struct Chunk<'a> {
    #[serde(default, borrow)]
    pub choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    pub usage: Option<Counts>,
    /// An error object (or string) instead of a response.
    #[serde(default, borrow)]
    pub error: Option<&'a RawValue>,
}

#[derive(Debug, Deserialize)]
pub struct Choice<'a> {
    #[serde(default)]
    pub index: Option<u64>,
    /// A stream's change (`chat.completion.chunk`).
    #[serde(default, borrow)]
    pub delta: Option<Message<'a>>,
    /// A whole response's message (`chat.completion`).
    #[serde(default, borrow)]
    pub message: Option<Message<'a>>,
    /// A text completion's text.
    #[serde(default, borrow)]
    pub text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub finish_reason: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub logprobs: Option<Logprobs<'a>>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Message<'a> {
    #[serde(default, borrow)]
    pub content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub tool_calls: Option<Vec<Call<'a>>>,
}

/// A tool call, whole (responses) or a fragment of one (streams).
#[derive(Debug, Deserialize)]
pub struct Call<'a> {
    #[serde(default)]
    pub index: Option<u64>,
    #[serde(default, borrow)]
    pub id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub function: Option<Function<'a>>,
}

#[derive(Debug, Deserialize)]
pub struct Function<'a> {
    #[serde(default, borrow)]
    pub name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub arguments: Option<Cow<'a, str>>,
}

#[derive(Debug, Deserialize)]
pub struct Logprobs<'a> {
    /// The token entries, kept as the upstream wrote them.
    #[serde(default, borrow)]
    pub content: Option<&'a RawValue>,
}

/// The official `usage` (missing counts are 0).
#[derive(Debug, Deserialize)]
pub struct Counts {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
}

// === impl Chunk ===

impl<'a> Chunk<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<Self, String> {
        crate::translate::parse_json(bytes)
            .map_err(|e| format!("upstream sent something that is not a completion: {e}"))
    }

    /// The choice of index 0 (or the first without an index): lingo asks for one.
    pub fn choice_zero(&self) -> Option<&Choice<'a>> {
        let choices = self.choices.as_deref()?;
        choices
            .iter()
            .find(|c| c.index == Some(0))
            .or_else(|| choices.iter().find(|c| c.index.is_none()))
    }

    /// The message of an error event or response, if it is one.
    pub fn error(&self) -> Option<String> {
        let raw = self.error?;
        let value: serde_json::Value = serde_json::from_str(raw.get()).ok()?;
        (!value.is_null()).then(|| super::response::error_message(&value))
    }
}

// === impl Message ===

impl Message<'_> {
    /// `reasoning_content`, or `reasoning` (both names are in use).
    pub fn reasoning(&self) -> &str {
        [&self.reasoning_content, &self.reasoning]
            .into_iter()
            .find_map(|r| r.as_deref().filter(|s| !s.is_empty()))
            .unwrap_or("")
    }
}

impl From<&Counts> for Usage {
    fn from(c: &Counts) -> Usage {
        Usage::new(
            c.prompt_tokens.unwrap_or(0),
            c.completion_tokens.unwrap_or(0),
        )
    }
}
