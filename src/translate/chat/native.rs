//! The native `/api/chat` response, as lingo reads it: one parse per line, borrowing
//! strings.
//!
//! A line is read by [`Scan`] first, which reads a token's line in one pass, and by serde
//! when the scan is not sure (see `translate::scan`); a test walks `Event`'s and `Message`'s
//! fields, so a field added to them is read by the scan too or left to serde on purpose.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::translate::scan::{Scan, Seen};

/// One NDJSON event (or the whole response when not streamed).
#[derive(Debug, Default, Deserialize)]
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
    /// A native error line (`{"error": "..."}`), mid-stream or as the whole response.
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

/// Parses one whole response (or one line).
pub fn parse(bytes: &[u8]) -> Result<Event<'_>, String> {
    let mut event = Event::default();
    parse_into(bytes, &mut event).map(|()| event)
}

/// Parses one line into `event` (a default one): see `translate::parse_json_or_scan`.
#[inline(always)]
pub fn parse_into<'a>(bytes: &'a [u8], event: &mut Event<'a>) -> Result<(), String> {
    crate::translate::parse_json_or_scan(bytes, event, scan_into)
        .map_err(|e| format!("upstream sent something that is not a native chat event: {e}"))
}

/// Reads an event with [`Scan`] (a token's line or a plain response) into `event` (a default
/// one), or returns `None` for serde to read: tool calls, log probabilities and anything
/// unexpected.
fn scan_into<'a>(text: &'a [u8], event: &mut Event<'a>) -> Option<()> {
    let mut seen = Seen::default();
    let mut scan = Scan::new(text);
    scan.object(|key, scan| {
        match key {
            b"message" => event.message = seen.first(0).and_then(|()| opt_message(scan))?,
            b"done" => event.done = seen.first(1).and_then(|()| scan.bool())?,
            b"done_reason" => event.done_reason = seen.first(2).and_then(|()| scan.opt_str())?,
            b"prompt_eval_count" => {
                event.prompt_eval_count = seen.first(3).and_then(|()| scan.u64())?
            }
            b"eval_count" => event.eval_count = seen.first(4).and_then(|()| scan.u64())?,
            b"logprobs" => seen.first(5).and_then(|()| scan.null())?,
            b"error" => event.error = seen.first(6).and_then(|()| scan.opt_str())?,
            _ => scan.skip()?,
        }
        Some(())
    })?;
    scan.end()
}

/// `null`, or a message without tool calls.
fn opt_message<'a>(scan: &mut Scan<'a>) -> Option<Option<Message<'a>>> {
    if scan.is_null() {
        return scan.null().map(|()| None);
    }
    let mut message = Message::default();
    let mut seen = Seen::default();
    scan.object(|key, scan| {
        match key {
            b"content" => message.content = seen.first(0).and_then(|()| scan.str())?,
            b"thinking" => message.thinking = seen.first(1).and_then(|()| scan.opt_str())?,
            b"tool_calls" => return None,
            _ => scan.skip()?,
        }
        Some(())
    })?;
    Some(Some(message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translate::scan::{random_objects, spoilt};

    /// The event the scan reads from `text`, if it reads one.
    fn scan(text: &[u8]) -> Option<Event<'_>> {
        let mut event = Event::default();
        scan_into(text, &mut event).map(|()| event)
    }

    /// What serde reads, as text (`Cow`s compare by content).
    fn serde(text: &str) -> Result<String, String> {
        serde_json::from_str::<Event>(text)
            .map(|e| format!("{e:?}"))
            .map_err(|e| e.to_string())
    }

    /// A line setting each field serde reads, for every field of `Event` and `Message`.
    const SAMPLES: [(&str, &str); 10] = [
        ("message", r#"{"message":{"content":"x"}}"#),
        ("done", r#"{"done":true}"#),
        ("done_reason", r#"{"done_reason":"length"}"#),
        ("prompt_eval_count", r#"{"prompt_eval_count":3}"#),
        ("eval_count", r#"{"eval_count":5}"#),
        ("logprobs", r#"{"logprobs":[{"token":"a","logprob":-0.1}]}"#),
        ("error", r#"{"error":"boom"}"#),
        ("content", r#"{"message":{"content":"x"}}"#),
        ("thinking", r#"{"message":{"content":"","thinking":"t"}}"#),
        (
            "tool_calls",
            r#"{"message":{"tool_calls":[{"function":{"name":"f"}}]}}"#,
        ),
    ];

    /// The fields the scan leaves to serde, and why.
    const LEFT_TO_SERDE: [(&str, &str); 2] = [
        (
            "logprobs",
            "kept as the upstream wrote them; only `null` is scanned",
        ),
        (
            "tool_calls",
            "rare, nested, and kept as written (`arguments`)",
        ),
    ];

    /// Every field serde reads into an event is read by the scan as serde reads it, or is
    /// left to serde on purpose: a field added to `Event` or `Message` fails here until the
    /// scan reads it (or it is listed above with its reason).
    #[test]
    fn every_field_serde_reads_is_scanned_or_left_to_serde() {
        use crate::translate::scan::fields_of;
        let fields: std::collections::BTreeSet<&str> =
            [fields_of::<Event>(), fields_of::<Message>()]
                .concat()
                .into_iter()
                .collect();
        let sampled = SAMPLES.iter().map(|(field, _)| *field).collect();
        assert_eq!(
            fields, sampled,
            "a field of Event or Message without a sample"
        );
        for (field, line) in SAMPLES {
            let serde = serde(line).unwrap();
            assert_ne!(
                serde,
                format!("{:?}", Event::default()),
                "{field}: sets nothing"
            );
            match scan(line.as_bytes()) {
                Some(event) => assert_eq!(format!("{event:?}"), serde, "{field}"),
                None => assert!(
                    LEFT_TO_SERDE.iter().any(|(left, _)| *left == field),
                    "{field} is neither scanned nor left to serde on purpose"
                ),
            }
        }
    }

    /// What real upstreams send, read by the scan exactly as serde reads it.
    #[test]
    fn upstream_lines_are_scanned_as_serde_reads_them() {
        let lines = [
            r#"{"created_at":"2026-01-01T00:00:00Z","done":false,"message":{"content":"Lingo","role":"assistant"},"model":"llama3.2"}"#,
            r#"{"model":"llama3.2","created_at":"2025-07-07T20:22:19.184Z","message":{"role":"assistant","content":"\u003cdiv\u003e\n \"q\" \ud83d\ude00"},"done":false}"#,
            r#"{"model":"qwen3","created_at":"2025-07-07T20:22:19.1Z","message":{"role":"assistant","content":"","thinking":"Hmm"},"done":false}"#,
            r#"{"model":"llama3.2","created_at":"2025-07-07T20:22:19.1Z","message":{"role":"assistant","content":""},"done_reason":"stop","done":true,"total_duration":4883583458,"load_duration":1334875,"prompt_eval_count":26,"prompt_eval_duration":342546000,"eval_count":282,"eval_duration":4535599000}"#,
            r#"{"error":"model \"x\" not found, try pulling it first"}"#,
            r#"{"message":null,"done":true,"done_reason":null,"logprobs":null,"context":[1,2,{"a":[]}]}"#,
            " { \"done\" : true , \"message\" : { } } \n",
        ];
        for line in lines {
            let event = scan(line.as_bytes()).unwrap_or_else(|| panic!("not scanned: {line}"));
            assert_eq!(Ok(format!("{event:?}")), serde(line), "{line}");
        }
    }

    /// Lines with bytes past ASCII, valid UTF-8 or not, anywhere: whatever the scan reads,
    /// serde reads the same, and what it leaves, serde reads (or refuses) as it did.
    #[test]
    fn lines_with_bytes_past_ascii_read_as_serde_reads_them() {
        let lines: [&[u8]; 6] = [
            b"{\"model\":\"caf\xc3\xa9\",\"message\":{\"content\":\"\xe2\x82\xac5\"},\"done\":false}",
            b"{\"model\":\"\xff\",\"message\":{\"content\":\"a\"},\"done\":false}",
            b"{\"message\":{\"content\":\"\xc3\"},\"done\":false}",
            b"{\"message\":{\"role\":\"\xc3\xa9\",\"content\":\"x\"},\"done\":true}",
            b"{\"\xc3\xa9\":1,\"done\":true}",
            b"{\"done\":true}\xff",
        ];
        for line in lines {
            let ours = parse(line).map(|e| format!("{e:?}"));
            let serde = serde_json::from_slice::<Event>(line)
                .map(|e| format!("{e:?}"))
                .map_err(|e| e.to_string());
            assert_eq!(ours.is_ok(), serde.is_ok(), "{line:?}");
            if let (Ok(ours), Ok(serde)) = (&ours, &serde) {
                assert_eq!(ours, serde, "{line:?}");
            }
        }
        assert!(scan(lines[0]).is_some(), "valid UTF-8 is scanned");
        assert!(scan(lines[1]).is_none() && scan(lines[2]).is_none());
        // Generated lines past ASCII, and each spoilt: the scan reads what serde reads.
        let keys = ["message", "done", "done_reason", "model", "caf\u{e9}"];
        let messages = [r#"{"content":"\u{e9}t\u{e9} \u{1f600}","role":"assistant"}"#];
        let (mut scanned, mut spoilt_scanned) = (0, 0);
        for line in random_objects(&keys, &messages, 5_000) {
            for (i, bytes) in spoilt(&line).into_iter().enumerate() {
                let Some(event) = scan(&bytes) else { continue };
                (scanned, spoilt_scanned) = (scanned + 1, spoilt_scanned + usize::from(i == 3));
                let serde = serde_json::from_slice::<Event>(&bytes).map(|e| format!("{e:?}"));
                assert_eq!(
                    Ok(format!("{event:?}")),
                    serde.map_err(|e| e.to_string()),
                    "{bytes:?}"
                );
                assert!(i == 0 || i == 3, "spoilt UTF-8 scanned: {bytes:?}");
            }
        }
        assert!(scanned > 500, "only {scanned} scanned");
        assert_eq!(spoilt_scanned, 0, "a raw control character is refused");
    }

    /// Anything the scan is not sure of goes to serde: tool calls, log probabilities, a field
    /// twice, a number serde would refuse or read otherwise, bytes after the object.
    #[test]
    fn the_unsure_is_left_to_serde() {
        let lines = [
            r#"{"message":{"content":"","tool_calls":[{"function":{"name":"f","arguments":{}}}]},"done":false}"#,
            r#"{"message":{"content":"a"},"logprobs":[{"token":"a","logprob":-0.1}],"done":false}"#,
            r#"{"done":false,"done":true}"#,
            r#"{"message":{"content":"a","content":"b"}}"#,
            r#"{"eval_count":1.0}"#,
            r#"{"eval_count":-1}"#,
            r#"{"eval_count":01}"#,
            r#"{"done":null}"#,
            r#"{"done":true} x"#,
            r#"["not", "an", "object"]"#,
            r#"{"message":{"content":"lone \ud800"}}"#,
            r#"{"d\u006fne":true}"#,
        ];
        for line in lines {
            assert!(scan(line.as_bytes()).is_none(), "{line}");
            // What the scan wrote before it gave up is not what serde then reads.
            let ours = parse(line.as_bytes()).map(|e| format!("{e:?}"));
            let message =
                |e| format!("upstream sent something that is not a native chat event: {e}");
            assert_eq!(ours, serde(line).map_err(message), "{line}");
        }
    }

    /// Thousands of lines built from the pieces upstreams send and the ones they should not:
    /// whatever the scan reads, serde reads the same; the scan reads many of them.
    #[test]
    fn scanned_lines_read_as_serde_reads_them() {
        let keys = [
            "message",
            "done",
            "done_reason",
            "prompt_eval_count",
            "eval_count",
            "logprobs",
            "error",
            "model",
            "created_at",
            "context",
            r"d\u006fne",
        ];
        let messages = [
            r#"{"content":"tok","role":"assistant"}"#,
            r#"{"content":null}"#,
            r#"{"thinking":"t","content":"","images":["aGk="]}"#,
            r#"{"content":"a","tool_calls":[]}"#,
        ];
        let (mut scanned, cases) = (0, 20_000);
        for line in random_objects(&keys, &messages, cases) {
            if let Some(event) = scan(line.as_bytes()) {
                scanned += 1;
                assert_eq!(Ok(format!("{event:?}")), serde(&line), "{line}");
            }
        }
        assert!(
            scanned > cases / 10,
            "only {scanned} of {cases} lines scanned"
        );
    }
}
