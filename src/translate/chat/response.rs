//! Native `/api/chat` answers -> chat-completions answers, whole and streamed.
//!
//! Matches what the official API emits: one `id` and `created` per completion, `role` on the
//! first delta only, tool calls whole in one delta with lingo's own `index` and ids
//! (synthesised when the upstream has none), a closing chunk with an empty delta and the
//! `finish_reason`, and the usage chunk when asked for. `reasoning` comes back both as
//! `reasoning` and `reasoning_content`, the two names clients read.

use bytes::Bytes;
use serde::Serialize;
use serde_json::value::RawValue;

use super::native::{self, Event};
pub use crate::base::usage::{Tally, Usage};
use crate::translate::frames::FrameSink;
use crate::translate::sse::{self, field, str_field, usage_field};
use crate::translate::translation::{FINGERPRINT, Meta, call_id};

impl Usage {
    fn of(event: &Event<'_>) -> Self {
        Usage::new(event.prompt_eval_count, event.eval_count)
    }
}

#[derive(Serialize)]
struct OutCall<'a> {
    index: u32,
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    function: OutFunction<'a>,
}

#[derive(Serialize)]
struct OutFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

/// Tool calls in the chat-completions shape, `index` counted from `*next`; a call without an
/// id gets one derived from the response's (see [`call_id`]).
fn calls<'a>(event: &'a Event<'_>, meta: &Meta, choice: u32, next: &mut u32) -> Vec<OutCall<'a>> {
    let Some(message) = &event.message else {
        return Vec::new();
    };
    message
        .tool_calls
        .iter()
        .map(|call| {
            let index = *next;
            *next += 1;
            let id = match call.id.as_deref() {
                Some(id) if !id.is_empty() => id.to_owned(),
                _ => call_id(meta, choice, index),
            };
            let arguments = call.function.arguments.map_or("{}", RawValue::get);
            OutCall {
                index,
                id,
                kind: "function",
                function: OutFunction {
                    name: &call.function.name,
                    arguments,
                },
            }
        })
        .collect()
}

/// `stop`, `length` or `tool_calls`.
fn finish_reason(done_reason: Option<&str>, saw_tool_calls: bool) -> &'static str {
    match done_reason {
        Some("length") => "length",
        _ if saw_tool_calls => "tool_calls",
        _ => "stop",
    }
}

fn text<'a>(s: &'a Option<std::borrow::Cow<'a, str>>) -> Option<&'a str> {
    s.as_deref().filter(|t| !t.is_empty())
}

// --- whole answers ---

#[derive(Serialize)]
struct Completion<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    system_fingerprint: &'static str,
    choices: Vec<Choice<'a>>,
    usage: Usage,
}

/// A field added here or to [`OutMessage`] is also written by [`Completion::write_plain`]
/// or makes its choice not [plain](Choice::is_plain).
#[derive(Serialize)]
struct Choice<'a> {
    index: u32,
    message: OutMessage<'a>,
    logprobs: Option<Logprobs<'a>>,
    finish_reason: &'static str,
}

#[derive(Serialize)]
struct Logprobs<'a> {
    content: &'a RawValue,
}

#[derive(Serialize)]
struct OutMessage<'a> {
    role: &'static str,
    content: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<OutCall<'a>>,
}

/// The `chat.completion` object for the native answers of the `n` choices, in order, and
/// their summed usage (for lingo's token counters).
pub fn completion(answers: &[Bytes], meta: &Meta) -> Result<(Bytes, Usage), String> {
    let events = answers
        .iter()
        .map(|a| native::parse(a))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(error) = events.iter().find_map(|e| e.error.as_deref()) {
        return Err(format!("upstream error: {error}"));
    }
    let mut usage = Tally::default();
    let mut choices = Vec::with_capacity(events.len());
    for (i, event) in events.iter().enumerate() {
        let mut next = 0;
        let tool_calls = calls(event, meta, i as u32, &mut next);
        let message = event.message.as_ref();
        let thinking = message.and_then(|m| text(&m.thinking));
        choices.push(Choice {
            index: i as u32,
            finish_reason: finish_reason(event.done_reason.as_deref(), !tool_calls.is_empty()),
            logprobs: event.logprobs.map(|content| Logprobs { content }),
            message: OutMessage {
                role: "assistant",
                content: message.map_or("", |m| &m.content),
                reasoning: thinking,
                reasoning_content: thinking,
                tool_calls,
            },
        });
        usage.add(0, Usage::of(event));
    }
    let completion = Completion {
        id: &meta.id,
        object: "chat.completion",
        created: meta.created,
        model: &meta.model,
        system_fingerprint: FINGERPRINT,
        choices,
        usage: usage.total(),
    };
    let room = answers.iter().map(Bytes::len).sum::<usize>() + 512;
    let json = if completion.choices.iter().all(Choice::is_plain) {
        let mut json = Vec::with_capacity(room);
        completion.write_plain(&mut json);
        json
    } else {
        crate::translate::to_json(&completion, room).map_err(|e| e.to_string())?
    };
    Ok((Bytes::from(json), completion.usage))
}

// === impl Completion ===

impl Completion<'_> {
    /// What serde writes for a completion whose choices are all [plain](Choice::is_plain):
    /// the keys as literals and only the texts escaped (see [`ChunkChoice::write_plain`]).
    fn write_plain(&self, out: &mut Vec<u8>) {
        str_field(out, b"{\"id\":", Some(self.id));
        str_field(out, b",\"object\":", Some(self.object));
        field(out, b",\"created\":", &self.created);
        str_field(out, b",\"model\":", Some(self.model));
        str_field(
            out,
            b",\"system_fingerprint\":",
            Some(self.system_fingerprint),
        );
        out.extend_from_slice(b",\"choices\":[");
        for (i, choice) in self.choices.iter().enumerate() {
            let open: &[u8] = if i == 0 { b"{" } else { b",{" };
            out.extend_from_slice(open);
            field(out, b"\"index\":", &choice.index);
            str_field(out, b",\"message\":{\"role\":", Some(choice.message.role));
            str_field(out, b",\"content\":", Some(choice.message.content));
            str_field(
                out,
                b"},\"logprobs\":null,\"finish_reason\":",
                Some(choice.finish_reason),
            );
            out.push(b'}');
        }
        usage_field(out, b"],\"usage\":", &self.usage);
        out.push(b'}');
    }
}

// === impl Choice ===

impl Choice<'_> {
    /// Text only: no reasoning, tool calls or log probabilities.
    fn is_plain(&self) -> bool {
        let m = &self.message;
        m.reasoning.is_none()
            && m.reasoning_content.is_none()
            && m.tool_calls.is_empty()
            && self.logprobs.is_none()
    }
}

// --- streams ---

/// A field added here or to [`Delta`] is also written by [`ChunkChoice::write_plain`] or
/// makes its choice not [plain](ChunkChoice::is_plain).
#[derive(Serialize)]
struct ChunkChoice<'a> {
    index: u32,
    delta: Delta<'a>,
    logprobs: Option<Logprobs<'a>>,
    finish_reason: Option<&'static str>,
}

#[derive(Default, Serialize)]
struct Delta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<OutCall<'a>>,
}

/// Why a stream could not be completed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    #[error("upstream error: {0}")]
    Upstream(String),
    #[error("{0}")]
    Malformed(String),
    #[error("upstream closed the stream before it was done")]
    Incomplete,
}

/// One choice's stream: native NDJSON lines in, SSE frames out (no `[DONE]`: the caller
/// adds it once every choice has ended cleanly).
#[derive(Debug)]
pub struct ChatStream {
    meta: Meta,
    /// Every frame's first bytes ([`sse::chunk_head`]).
    head: Vec<u8>,
    index: u32,
    include_usage: bool,
    first_sent: bool,
    next_call: u32,
    done: bool,
    usage: Option<Usage>,
}

// === impl ChatStream ===

impl ChatStream {
    pub fn new(meta: &Meta, index: u32, include_usage: bool) -> Self {
        ChatStream {
            meta: meta.clone(),
            head: sse::chunk_head(meta, "chat.completion.chunk"),
            index,
            include_usage,
            first_sent: false,
            next_call: 0,
            done: false,
            usage: None,
        }
    }

    /// The frames for one native line.
    pub fn on_line(&mut self, line: &[u8]) -> Result<Vec<Bytes>, StreamError> {
        let mut frames = Vec::new();
        self.frames(line, &mut frames)?;
        Ok(frames)
    }

    /// [`ChatStream::on_line`], its frames written to `frames` (a stream's queue: in place,
    /// no list or frame made per line).
    pub fn frames(&mut self, line: &[u8], frames: &mut impl FrameSink) -> Result<(), StreamError> {
        if self.done {
            return Ok(());
        }
        let mut event = Event::default();
        native::parse_into(line, &mut event).map_err(StreamError::Malformed)?;
        if let Some(error) = event.error {
            return Err(StreamError::Upstream(error.into_owned()));
        }
        let message = event.message.as_ref();
        let content = message.map_or("", |m| &m.content);
        let thinking = message.and_then(|m| text(&m.thinking));
        let tool_calls = calls(&event, &self.meta, self.index, &mut self.next_call);
        let has_news = !content.is_empty()
            || thinking.is_some()
            || !tool_calls.is_empty()
            || event.logprobs.is_some();
        if has_news || !self.first_sent {
            let delta = Delta {
                role: (!self.first_sent).then_some("assistant"),
                content: (!content.is_empty() || !self.first_sent).then_some(content),
                reasoning: thinking,
                reasoning_content: thinking,
                tool_calls,
            };
            self.chunk(delta, None, event.logprobs, frames);
            self.first_sent = true;
        }
        if event.done {
            self.done = true;
            let reason = finish_reason(event.done_reason.as_deref(), self.next_call > 0);
            self.chunk(Delta::default(), Some(reason), None, frames);
            let usage = Usage::of(&event);
            self.usage = Some(usage);
            if self.include_usage {
                frames.write_frame(|out| self.write_frame(&[], Some(Some(usage)), out));
            }
        }
        Ok(())
    }

    /// At the end of the upstream body: an error unless the closing event came.
    pub fn finish(&mut self) -> Result<Vec<Bytes>, StreamError> {
        if self.done {
            Ok(Vec::new())
        } else {
            Err(StreamError::Incomplete)
        }
    }

    /// The length of every frame's first bytes.
    pub(crate) fn head_len(&self) -> usize {
        self.head.len()
    }

    /// The usage the closing event reported (`None` before it).
    pub fn usage(&self) -> Option<Usage> {
        self.usage
    }

    /// One chunk of one choice, written to `frames`.
    fn chunk(
        &self,
        delta: Delta<'_>,
        finish_reason: Option<&'static str>,
        logprobs: Option<&RawValue>,
        frames: &mut impl FrameSink,
    ) {
        let choice = ChunkChoice {
            index: self.index,
            delta,
            logprobs: logprobs.map(|content| Logprobs { content }),
            finish_reason,
        };
        // Lent, not moved into the closure (a 128-byte copy a token).
        let choices = std::slice::from_ref(&choice);
        frames
            .write_frame(|out| self.write_frame(choices, self.include_usage.then_some(None), out));
    }

    /// The chunk with `choices: []` and the usage.
    pub fn usage_chunk(&self, usage: Usage) -> Bytes {
        let mut out = Vec::new();
        self.write_frame(&[], Some(Some(usage)), &mut out);
        crate::translate::frozen(out)
    }

    /// One SSE frame, written onto the end of `out`: the stream's head, then `choices` and,
    /// with `include_usage`, `usage` (`null` on every chunk but the usage chunk, as the
    /// official API). The same bytes as serialising the whole chunk each time.
    fn write_frame(
        &self,
        choices: &[ChunkChoice<'_>],
        usage: Option<Option<Usage>>,
        out: &mut Vec<u8>,
    ) {
        out.reserve(self.head.len() + 192);
        out.extend_from_slice(&self.head);
        if let [choice] = choices
            && choice.is_plain()
        {
            choice.write_plain(out);
        } else {
            field(out, b"", choices);
        }
        match usage {
            Some(Some(usage)) => usage_field(out, b",\"usage\":", &usage),
            Some(None) => out.extend_from_slice(b",\"usage\":null"),
            None => {}
        }
        out.extend_from_slice(b"}\n\n");
    }
}

// === impl ChunkChoice ===

impl ChunkChoice<'_> {
    /// A token's choice: text (and the first chunk's role), nothing else. Nearly every chunk
    /// of a stream is one.
    fn is_plain(&self) -> bool {
        let d = &self.delta;
        d.content.is_some()
            && d.reasoning.is_none()
            && d.reasoning_content.is_none()
            && d.tool_calls.is_empty()
            && self.logprobs.is_none()
    }

    /// `[choice]` as serde writes it, for a [plain](Self::is_plain) choice: the keys as
    /// literals and only the text escaped. serde_json escapes every key byte by byte, which
    /// was most of a chunk's serialising (callgrind: about 800 instructions a token).
    fn write_plain(&self, out: &mut Vec<u8>) {
        field(out, b"[{\"index\":", &self.index);
        out.extend_from_slice(b",\"delta\":{");
        if let Some(role) = self.delta.role {
            str_field(out, b"\"role\":", Some(role));
            out.push(b',');
        }
        str_field(out, b"\"content\":", self.delta.content);
        str_field(
            out,
            b"},\"logprobs\":null,\"finish_reason\":",
            self.finish_reason,
        );
        out.extend_from_slice(b"}]");
    }
}

/// A native error answer (before any byte was sent) as (status, message, code).
pub fn upstream_error(status: u16, body: &[u8]) -> (u16, String, Option<&'static str>) {
    let status = if status >= 400 { status } else { 502 };
    let message = match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(v) => match v.get("error") {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => format!("upstream answered {status} without an error message"),
        },
        Err(_) => {
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            if text.is_empty() {
                format!("upstream answered {status}")
            } else {
                text.chars().take(1000).collect()
            }
        }
    };
    let code = (status == 404 && message.contains("not found")).then_some("model_not_found");
    (status, message, code)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-written plain choice is byte for byte what serde writes for it, escapes and
    /// all.
    #[test]
    fn a_plain_choice_is_written_as_serde_writes_it() {
        let texts = [
            "",
            "Lingo",
            " is",
            "tab\there \"quoted\" \\ /",
            "caf\u{e9} \u{1f600}",
        ];
        let controls = "\u{0}\u{1f}\u{7f}\u{2028}";
        for (i, content) in texts.iter().chain([&controls]).enumerate() {
            for role in [None, Some("assistant")] {
                for finish_reason in [None, Some("stop"), Some("length")] {
                    let choice = ChunkChoice {
                        index: u32::try_from(i).unwrap() * 1000,
                        delta: Delta {
                            role,
                            content: Some(content),
                            ..Delta::default()
                        },
                        logprobs: None,
                        finish_reason,
                    };
                    assert!(choice.is_plain());
                    let mut ours = Vec::new();
                    choice.write_plain(&mut ours);
                    let serde = serde_json::to_vec(&[choice]).unwrap();
                    assert_eq!(
                        String::from_utf8(ours).unwrap(),
                        String::from_utf8(serde).unwrap()
                    );
                }
            }
        }
    }

    /// The hand-written plain completion is byte for byte what serde writes for it.
    #[test]
    fn a_plain_completion_is_written_as_serde_writes_it() {
        let texts = [
            "",
            "Paris.",
            "tab\there \"quoted\" \\ /\n",
            "caf\u{e9} \u{1}\u{1f600}",
        ];
        for n in 1..=3 {
            for text in texts {
                let choice = |i: u32| Choice {
                    index: i,
                    message: OutMessage {
                        role: "assistant",
                        content: text,
                        reasoning: None,
                        reasoning_content: None,
                        tool_calls: Vec::new(),
                    },
                    logprobs: None,
                    finish_reason: ["stop", "length"][i as usize % 2],
                };
                let completion = Completion {
                    id: "chatcmpl-\"x\"",
                    object: "chat.completion",
                    created: 1_700_000_000,
                    model: "gpt-4o-mini",
                    system_fingerprint: FINGERPRINT,
                    choices: (0..n).map(choice).collect(),
                    usage: Usage::new(3, 5),
                };
                assert!(completion.choices.iter().all(Choice::is_plain));
                let mut ours = Vec::new();
                completion.write_plain(&mut ours);
                assert_eq!(
                    String::from_utf8(ours).unwrap(),
                    serde_json::to_string(&completion).unwrap()
                );
            }
        }
    }

    /// A choice with anything besides text (and the first chunk's role) is left to serde.
    #[test]
    fn a_choice_with_more_than_text_is_not_plain() {
        let raw = RawValue::from_string("[]".to_owned()).unwrap();
        let not_plain = [
            Delta::default(),
            Delta {
                content: Some("x"),
                reasoning: Some("y"),
                ..Delta::default()
            },
            Delta {
                content: Some("x"),
                reasoning_content: Some("y"),
                ..Delta::default()
            },
        ];
        for delta in not_plain {
            let choice = ChunkChoice {
                index: 0,
                delta,
                logprobs: None,
                finish_reason: None,
            };
            assert!(!choice.is_plain());
        }
        let with_logprobs = ChunkChoice {
            index: 0,
            delta: Delta {
                content: Some("x"),
                ..Delta::default()
            },
            logprobs: Some(Logprobs { content: &raw }),
            finish_reason: None,
        };
        assert!(!with_logprobs.is_plain());
    }
}
