//! Native `/api/chat` responses -> chat-completions responses, whole and streamed.
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
use crate::translate::sse::{self, field, usage_field};
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

// --- whole responses ---

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

/// A field added here or to [`OutMessage`] is also written by [`Choice::write_plain`] or
/// makes its choice not [plain](Choice::is_plain) (both name every field).
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

/// The `chat.completion` object for the native responses of the `n` choices, in order, and
/// their summed usage (for lingo's token counters).
pub fn completion(responses: &[Bytes], meta: &Meta) -> Result<(Bytes, Usage), String> {
    let events = responses
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
    let room = responses.iter().map(Bytes::len).sum::<usize>() + 512;
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
    /// What serde writes for a completion whose choices are all [plain](Choice::is_plain),
    /// its keys as literals (see `translate::sse`). Every field is named here, so that one
    /// added to the struct is written here too, or makes its choice not plain.
    fn write_plain(&self, out: &mut Vec<u8>) {
        let Completion {
            id,
            object,
            created,
            model,
            system_fingerprint,
            choices,
            usage,
        } = self;
        field(out, b"{\"id\":", id);
        field(out, b",\"object\":", object);
        field(out, b",\"created\":", created);
        field(out, b",\"model\":", model);
        field(out, b",\"system_fingerprint\":", system_fingerprint);
        out.extend_from_slice(b",\"choices\":[");
        for (i, choice) in choices.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            choice.write_plain(out);
        }
        usage_field(out, b"],\"usage\":", usage);
        out.push(b'}');
    }
}

// === impl Choice ===

impl Choice<'_> {
    /// Text only: no reasoning, tool calls or log probabilities.
    fn is_plain(&self) -> bool {
        let Choice {
            index: _,
            message,
            logprobs,
            finish_reason: _,
        } = self;
        let OutMessage {
            role: _,
            content: _,
            reasoning,
            reasoning_content,
            tool_calls,
        } = message;
        reasoning.is_none()
            && reasoning_content.is_none()
            && tool_calls.is_empty()
            && logprobs.is_none()
    }

    /// A [plain](Self::is_plain) choice, as serde writes it.
    fn write_plain(&self, out: &mut Vec<u8>) {
        let Choice {
            index,
            message,
            logprobs: _,
            finish_reason,
        } = self;
        field(out, b"{\"index\":", index);
        field(out, b",\"message\":{\"role\":", message.role);
        field(out, b",\"content\":", message.content);
        field(
            out,
            b"},\"logprobs\":null,\"finish_reason\":",
            finish_reason,
        );
        out.push(b'}');
    }
}

// --- streams ---

/// A field added here or to [`Delta`] is also written by [`ChunkChoice::write_plain`] or
/// makes its choice not [plain](ChunkChoice::is_plain) (both name every field).
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
        // Lent to the closure, not moved into it: it is written once, where it is.
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
        let ChunkChoice {
            index: _,
            delta,
            logprobs,
            finish_reason: _,
        } = self;
        let Delta {
            role: _,
            content,
            reasoning,
            reasoning_content,
            tool_calls,
        } = delta;
        content.is_some()
            && reasoning.is_none()
            && reasoning_content.is_none()
            && tool_calls.is_empty()
            && logprobs.is_none()
    }

    /// `[choice]` as serde writes it, for a [plain](Self::is_plain) choice, its keys as
    /// literals (see `translate::sse`). Every field is named here or in `is_plain`, so that
    /// one added to the struct is written, or makes the choice not plain.
    fn write_plain(&self, out: &mut Vec<u8>) {
        let ChunkChoice {
            index,
            delta,
            logprobs: _,
            finish_reason,
        } = self;
        field(out, b"[{\"index\":", index);
        out.extend_from_slice(b",\"delta\":{");
        if let Some(role) = delta.role {
            field(out, b"\"role\":", role);
            out.push(b',');
        }
        field(out, b"\"content\":", &delta.content);
        field(
            out,
            b"},\"logprobs\":null,\"finish_reason\":",
            finish_reason,
        );
        out.extend_from_slice(b"}]");
    }
}

/// A native error response (before any byte was sent) as (status, message, code).
pub fn upstream_error(status: u16, body: &[u8]) -> (u16, String, Option<&'static str>) {
    let status = if status >= 400 { status } else { 502 };
    let message = match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(v) => match v.get("error") {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => format!("upstream responded with {status} without an error message"),
        },
        Err(_) => {
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            if text.is_empty() {
                format!("upstream responded with {status}")
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

    const TEXTS: [&str; 6] = [
        "",
        "Lingo",
        "tab\there \"quoted\" \\ /\n",
        "caf\u{e9} \u{1f600}",
        "\u{0}\u{1f}\u{7f}\u{2028}",
        "</script>",
    ];

    /// One of `options`, picked by `next`.
    fn one<T: Clone>(next: &mut impl FnMut(usize) -> usize, options: &[T]) -> T {
        options[next(options.len())].clone()
    }

    fn raw() -> Box<RawValue> {
        RawValue::from_string(r#"[{"token":"a","logprob":-0.1}]"#.to_owned()).unwrap()
    }

    fn calls(next: &mut impl FnMut(usize) -> usize) -> Vec<OutCall<'static>> {
        let call = OutCall {
            index: 0,
            id: "call_1".into(),
            kind: "function",
            function: OutFunction {
                name: "f",
                arguments: "{}",
            },
        };
        if next(2) == 0 { Vec::new() } else { vec![call] }
    }

    /// Chunk choices with every field of `ChunkChoice` and `Delta` set each way it can be
    /// (the struct literals name every field: one added to the structs must be given values
    /// here): a plain one is written byte for byte as serde writes it, escapes and all.
    #[test]
    fn every_field_of_a_chunk_choice_is_written_or_makes_it_not_plain() {
        let raw = raw();
        let mut next = crate::base::picks::picker(0x51f1_5eed);
        let (mut plain, mut other) = (0, 0);
        for _ in 0..4_000 {
            let choice = ChunkChoice {
                index: one(&mut next, &[0, 7, 1000]),
                delta: Delta {
                    role: one(&mut next, &[None, Some("assistant")]),
                    content: (next(4) > 0).then(|| TEXTS[next(TEXTS.len())]),
                    reasoning: one(&mut next, &[None, Some("r")]),
                    reasoning_content: one(&mut next, &[None, Some("\"r\"")]),
                    tool_calls: calls(&mut next),
                },
                logprobs: (next(2) == 0).then_some(Logprobs { content: &raw }),
                finish_reason: one(&mut next, &[None, Some("stop"), Some("length")]),
            };
            if !choice.is_plain() {
                other += 1;
                continue;
            }
            plain += 1;
            let mut ours = Vec::new();
            choice.write_plain(&mut ours);
            let serde = serde_json::to_string(&[choice]).unwrap();
            assert_eq!(String::from_utf8(ours).unwrap(), serde);
        }
        assert!(plain > 100 && other > 100, "{plain} plain, {other} not");
    }

    /// Completions with every field of `Completion`, `Choice` and `OutMessage` set each way
    /// it can be (the struct literals name every field): one whose choices are all plain is
    /// written byte for byte as serde writes it.
    #[test]
    fn every_field_of_a_completion_is_written_or_makes_it_not_plain() {
        let raw = raw();
        let mut next = crate::base::picks::picker(0xc0_ffee);
        let (mut plain, mut other) = (0, 0);
        for _ in 0..2_000 {
            let (model, count) = (TEXTS[next(TEXTS.len())], 1 + next(3) as u32);
            let mut choice = |index| Choice {
                index,
                message: OutMessage {
                    role: "assistant",
                    content: TEXTS[next(TEXTS.len())],
                    reasoning: one(&mut next, &[None, None, Some("r")]),
                    reasoning_content: one(&mut next, &[None, None, Some("r")]),
                    tool_calls: if next(3) == 0 {
                        calls(&mut next)
                    } else {
                        Vec::new()
                    },
                },
                logprobs: (next(3) == 0).then_some(Logprobs { content: &raw }),
                finish_reason: ["stop", "length", "tool_calls"][index as usize % 3],
            };
            let choices = (0..count).map(&mut choice).collect();
            let completion = Completion {
                id: "chatcmpl-\"x\"",
                object: "chat.completion",
                created: 1_700_000_000,
                model,
                system_fingerprint: FINGERPRINT,
                choices,
                usage: Usage::new(3, 5),
            };
            if !completion.choices.iter().all(Choice::is_plain) {
                other += 1;
                continue;
            }
            plain += 1;
            let mut ours = Vec::new();
            completion.write_plain(&mut ours);
            let serde = serde_json::to_string(&completion).unwrap();
            assert_eq!(String::from_utf8(ours).unwrap(), serde);
        }
        assert!(plain > 100 && other > 100, "{plain} plain, {other} not");
    }

    /// Whatever a chunk holds, its frame is what serde writes for the whole chunk: the
    /// stream's head, its choices, and `usage` when asked for.
    #[test]
    fn a_frame_is_the_whole_chunk_as_serde_writes_it() {
        let meta = Meta {
            id: "chatcmpl-t".into(),
            created: 1,
            model: "m\"x".into(),
        };
        let raw = raw();
        for include_usage in [false, true] {
            let stream = ChatStream::new(&meta, 2, include_usage);
            for (content, logprobs) in [(Some("hi"), None), (Some("x"), Some(&*raw))] {
                let choice = ChunkChoice {
                    index: 2,
                    delta: Delta {
                        content,
                        ..Delta::default()
                    },
                    logprobs: logprobs.map(|content| Logprobs { content }),
                    finish_reason: None,
                };
                let mut ours = Vec::new();
                let usage = include_usage.then_some(None);
                stream.write_frame(std::slice::from_ref(&choice), usage, &mut ours);
                let mut whole = serde_json::json!({
                    "id": meta.id, "object": "chat.completion.chunk", "created": meta.created,
                    "model": meta.model, "system_fingerprint": FINGERPRINT,
                    "choices": [choice],
                });
                if include_usage {
                    whole["usage"] = serde_json::Value::Null;
                }
                let ours = String::from_utf8(ours).unwrap();
                let json = ours
                    .strip_prefix("data: ")
                    .unwrap()
                    .strip_suffix("\n\n")
                    .unwrap();
                let read: serde_json::Value = serde_json::from_str(json).unwrap();
                assert_eq!(read, whole, "{ours}");
            }
        }
    }
}
