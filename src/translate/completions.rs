//! `/v1/completions` <-> native `/api/generate`.
//!
//! A prompt array is a batch: one native request per prompt, returned as choices in prompt
//! order. `max_tokens` defaults to 16 (the official API's default); sampling fields are sent
//! only when set; `echo` puts the prompt in front of the text.
//!
//! A native line is read by a [`Scan`] first and a stream's chunk is written in place, keys
//! as literals (see `translate::scan` and `translate::sse`: both are most of a streamed
//! translation's work when left to serde); tests walk `Event`'s fields and compare each
//! frame with serde's `text_completion` object, so a field added to either is handled too.

use std::borrow::Cow;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::frames::{FrameSink, Frames};
use super::json::Json;
use super::ndjson::LineFramer;
use super::params::{self, err};
use super::scan::{Scan, Seen};
use super::sse::{self, field, usage_field};
use super::translation::InvalidRequest;
use super::translation::{FINGERPRINT, LineTranslator, Meta, Translation, UpstreamCall};
use crate::base::dialect::Dialect;
use crate::base::usage::{Tally, Usage};

/// The official API's default completion length.
pub const DEFAULT_MAX_TOKENS: u64 = 16;

/// A translated completions request: one native body per prompt.
#[derive(Debug)]
pub struct CompletionRequest {
    pub model: String,
    pub prompts: Vec<String>,
    pub stream: bool,
    pub include_usage: bool,
    pub echo: bool,
    /// Everything but `model` and `prompt`.
    native: Map<String, Value>,
}

impl CompletionRequest {
    /// The `/api/generate` body for prompt `i`, for the upstream's `model`.
    pub fn native_body(&self, model: &str, i: usize) -> Bytes {
        let mut native = self.native.clone();
        native.insert("model".into(), model.into());
        native.insert("prompt".into(), self.prompts[i].clone().into());
        Bytes::from(serde_json::to_vec(&native).unwrap_or_default())
    }
}

/// Reads a completions request.
pub fn request(
    body: &[u8],
    defaults: &Map<String, Value>,
) -> Result<CompletionRequest, InvalidRequest> {
    let body = params::object(body)?;
    let model = params::model(&body)?;
    let bad_prompt = || {
        err(
            "prompt",
            "prompt must be a string or a non-empty array of strings",
        )
    };
    let prompts = match body.get("prompt") {
        Some(Json::Str(p)) => vec![p.as_ref().to_owned()],
        Some(Json::Array(items)) if !items.is_empty() && items.len() <= 64 => items
            .iter()
            .map(|p| p.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(bad_prompt)?,
        _ => return Err(bad_prompt()),
    };
    for key in ["n", "best_of"] {
        if body
            .get(key)
            .is_some_and(|v| !v.is_null() && v.as_u64() != Some(1))
        {
            return Err(err(
                if key == "n" { "n" } else { "best_of" },
                format!(
                    "{key} other than 1 is not supported on completions; send the prompt several times"
                ),
            ));
        }
    }
    let stream = params::flag(&body, "stream")?;
    let echo = params::flag(&body, "echo")?;
    let include_usage = params::include_usage(&body)?;
    let mut options = params::options(&body, defaults)?;
    let max_tokens = params::token_limit(&body, "max_tokens")?.unwrap_or(DEFAULT_MAX_TOKENS);
    options.insert("num_predict".into(), max_tokens.into());
    let mut native = Map::new();
    native.insert("stream".into(), stream.into());
    native.insert("options".into(), Value::Object(options));
    for key in ["suffix", "keep_alive", "think"] {
        if let Some(v) = body.get(key).filter(|v| !v.is_null()) {
            if key == "suffix" && !v.is_string() {
                return Err(err("suffix", "suffix must be a string"));
            }
            native.insert(key.into(), v.to_value());
        }
    }
    Ok(CompletionRequest {
        model,
        prompts,
        stream,
        include_usage,
        echo,
        native,
    })
}

/// One native `/api/generate` event (or the whole response).
#[derive(Debug, Default, Deserialize)]
struct Event<'a> {
    #[serde(default, borrow)]
    response: Cow<'a, str>,
    #[serde(default)]
    done: bool,
    #[serde(default, borrow)]
    done_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    prompt_eval_count: u64,
    #[serde(default)]
    eval_count: u64,
    #[serde(default, borrow)]
    error: Option<Cow<'a, str>>,
}

fn parse(bytes: &[u8]) -> Result<Event<'_>, String> {
    let mut event = Event::default();
    parse_into(bytes, &mut event).map(|()| event)
}

/// Parses one line into `event` (a default one): see `translate::parse_json_or_scan`.
#[inline(always)]
fn parse_into<'a>(bytes: &'a [u8], event: &mut Event<'a>) -> Result<(), String> {
    crate::translate::parse_json_or_scan(bytes, event, scan_into)
        .map_err(|e| format!("upstream sent something that is not a native generate event: {e}"))
}

/// Reads an event with [`Scan`] into `event` (a default one), or returns `None` for serde to
/// read (see `chat::native::scan_into`).
fn scan_into<'a>(text: &'a [u8], event: &mut Event<'a>) -> Option<()> {
    let mut seen = Seen::default();
    let mut scan = Scan::new(text);
    scan.object(|key, scan| {
        match key {
            b"response" => event.response = seen.first(0).and_then(|()| scan.str())?,
            b"done" => event.done = seen.first(1).and_then(|()| scan.bool())?,
            b"done_reason" => event.done_reason = seen.first(2).and_then(|()| scan.opt_str())?,
            b"prompt_eval_count" => {
                event.prompt_eval_count = seen.first(3).and_then(|()| scan.u64())?;
            }
            b"eval_count" => event.eval_count = seen.first(4).and_then(|()| scan.u64())?,
            b"error" => event.error = seen.first(5).and_then(|()| scan.opt_str())?,
            _ => scan.skip()?,
        }
        Some(())
    })?;
    scan.end()
}

fn finish_reason(done_reason: Option<&str>) -> &'static str {
    if done_reason == Some("length") {
        "length"
    } else {
        "stop"
    }
}

fn usage(event: &Event<'_>) -> Usage {
    Usage::new(event.prompt_eval_count, event.eval_count)
}

#[derive(Serialize)]
struct Out<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    system_fingerprint: &'static str,
    choices: Vec<OutChoice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Usage>,
}

/// A field added here is also written by [`OutChoice::write`] (which names every field).
#[derive(Serialize)]
struct OutChoice<'a> {
    text: Cow<'a, str>,
    index: u32,
    logprobs: Option<()>,
    finish_reason: Option<&'static str>,
}

fn envelope<'a>(meta: &'a Meta, choices: Vec<OutChoice<'a>>, usage: Option<Usage>) -> Out<'a> {
    Out {
        id: &meta.id,
        object: "text_completion",
        created: meta.created,
        model: &meta.model,
        system_fingerprint: FINGERPRINT,
        choices,
        usage,
    }
}

/// The `text_completion` response for the whole native responses, one per prompt, and their
/// summed usage.
pub fn completion(
    responses: &[Bytes],
    request: &CompletionRequest,
    meta: &Meta,
) -> Result<(Bytes, Usage), String> {
    let mut total = Tally::default();
    let mut choices = Vec::with_capacity(responses.len());
    for (i, upstream) in responses.iter().enumerate() {
        let event = parse(upstream)?;
        if let Some(error) = &event.error {
            return Err(format!("upstream error: {error}"));
        }
        total.add(i, usage(&event));
        let text = if request.echo {
            format!("{}{}", request.prompts[i], event.response)
        } else {
            event.response.into_owned()
        };
        choices.push(OutChoice {
            text: Cow::Owned(text),
            index: i as u32,
            logprobs: None,
            finish_reason: Some(finish_reason(event.done_reason.as_deref())),
        });
    }
    let usage = total.total();
    let room = responses.iter().map(Bytes::len).sum::<usize>() + 512;
    super::to_json(&envelope(meta, choices, Some(usage)), room)
        .map(|json| (Bytes::from(json), usage))
        .map_err(|e| e.to_string())
}

/// One prompt's stream: native NDJSON lines in, `text_completion` SSE chunks out, written
/// in place ([`FrameSink`]) from a head made once per stream, as chat's streams are.
#[derive(Debug)]
pub struct CompletionStream {
    /// Every frame's first bytes ([`sse::chunk_head`]).
    head: Vec<u8>,
    index: u32,
    include_usage: bool,
    /// The prompt, sent in front of the first piece when `echo` was asked for.
    echo: Option<String>,
    done: bool,
    usage: Option<Usage>,
}

impl CompletionStream {
    pub fn new(meta: &Meta, index: u32, include_usage: bool, echo: Option<String>) -> Self {
        CompletionStream {
            head: sse::chunk_head(meta, "text_completion"),
            index,
            include_usage,
            echo,
            done: false,
            usage: None,
        }
    }

    /// The frames for one native line.
    pub fn on_line(&mut self, line: &[u8]) -> Result<Vec<Bytes>, String> {
        let mut frames = Vec::new();
        self.frames(line, &mut frames)?;
        Ok(frames)
    }

    /// [`CompletionStream::on_line`], its frames written to `frames` (a stream's queue: in
    /// place, no list or frame made per line).
    pub fn frames(&mut self, line: &[u8], frames: &mut impl FrameSink) -> Result<(), String> {
        if self.done {
            return Ok(());
        }
        let mut event = Event::default();
        parse_into(line, &mut event)?;
        if let Some(error) = event.error {
            return Err(format!("upstream error: {error}"));
        }
        let usage = usage(&event);
        let mut text = event.response;
        if let Some(prompt) = self.echo.take() {
            text = Cow::Owned(format!("{prompt}{text}"));
        }
        if !text.is_empty() || event.done {
            let choice = OutChoice {
                text,
                index: self.index,
                logprobs: None,
                finish_reason: event
                    .done
                    .then(|| finish_reason(event.done_reason.as_deref())),
            };
            frames.write_frame(|out| self.write_frame(Some(&choice), None, out));
        }
        if event.done {
            self.done = true;
            self.usage = Some(usage);
            if self.include_usage {
                frames.write_frame(|out| self.write_frame(None, Some(usage), out));
            }
        }
        Ok(())
    }

    /// At the end of the upstream body: an error unless the closing event came.
    pub fn finish(&mut self) -> Result<Vec<Bytes>, String> {
        if self.done {
            Ok(Vec::new())
        } else {
            Err("upstream closed the stream before it was done".into())
        }
    }

    /// Which prompt of the batch this stream responses.
    pub fn prompt(&self) -> usize {
        self.index as usize
    }

    pub fn usage(&self) -> Option<Usage> {
        self.usage
    }

    /// The chunk with `choices: []` and the usage.
    pub fn usage_chunk(&self, usage: Usage) -> Bytes {
        let mut out = Vec::new();
        self.write_frame(None, Some(usage), &mut out);
        super::frozen(out)
    }

    /// One SSE frame, written onto the end of `out`: the stream's head, the choice (or
    /// `[]`) and the usage if given (no zero-filled usage on every chunk, unlike the native
    /// server's own endpoint). The same bytes as serialising the whole chunk each time.
    fn write_frame(&self, choice: Option<&OutChoice<'_>>, usage: Option<Usage>, out: &mut Vec<u8>) {
        let text = choice.map_or(0, |c| c.text.len());
        out.reserve(self.head.len() + text + 128);
        out.extend_from_slice(&self.head);
        match choice {
            Some(choice) => choice.write(out),
            None => out.extend_from_slice(b"[]"),
        }
        if let Some(usage) = usage {
            usage_field(out, b",\"usage\":", &usage);
        }
        out.extend_from_slice(b"}\n\n");
    }
}

// === impl OutChoice ===

impl OutChoice<'_> {
    /// `[choice]` as serde writes it, its keys as literals (see `translate::sse`). Every
    /// field is named here, so that one added to the struct is written here too.
    fn write(&self, out: &mut Vec<u8>) {
        let OutChoice {
            text,
            index,
            logprobs,
            finish_reason,
        } = self;
        field(out, b"[{\"text\":", text);
        field(out, b",\"index\":", index);
        field(out, b",\"logprobs\":", logprobs);
        field(out, b",\"finish_reason\":", finish_reason);
        out.extend_from_slice(b"}]");
    }
}

/// A completions request as a [`Translation`]: one `/api/generate` per prompt, each response's
/// stream through a [`CompletionStream`], one usage chunk for a batch, then `data: [DONE]`.
pub struct Completions {
    request: CompletionRequest,
    meta: Meta,
}

impl Completions {
    pub fn new(request: CompletionRequest, meta: Meta) -> Self {
        Completions { request, meta }
    }
}

impl Translation for Completions {
    type Stream = CompletionStream;

    fn model(&self) -> &str {
        &self.request.model
    }

    fn streams(&self) -> bool {
        self.request.stream
    }

    fn calls(&mut self, model: &str) -> Vec<UpstreamCall> {
        (0..self.request.prompts.len())
            .map(|i| UpstreamCall {
                path: "/api/generate",
                body: self.request.native_body(model, i),
            })
            .collect()
    }

    fn stream(&self, i: usize, count: usize) -> CompletionStream {
        let echo = self.request.echo.then(|| self.request.prompts[i].clone());
        let own_usage = count == 1 && self.request.include_usage;
        CompletionStream::new(&self.meta, i as u32, own_usage, echo)
    }

    fn closing(&self, usage: Option<Usage>, count: usize) -> Vec<Bytes> {
        let mut frames = Vec::with_capacity(2);
        if let Some(usage) = usage.filter(|_| count > 1 && self.request.include_usage) {
            frames.push(CompletionStream::new(&self.meta, 0, true, None).usage_chunk(usage));
        }
        frames.push(sse::done());
        frames
    }

    fn whole(&self, responses: &[Bytes]) -> Result<(Bytes, Usage), String> {
        completion(responses, &self.request, &self.meta)
    }

    fn upstream_error(&self, status: u16, body: &[u8]) -> (u16, String, Option<&'static str>) {
        super::chat::upstream_error(status, body)
    }
}

impl LineTranslator for CompletionStream {
    fn on_line(&mut self, line: &[u8]) -> Result<Vec<Bytes>, String> {
        CompletionStream::on_line(self, line)
    }

    fn frames(&mut self, line: &[u8], queue: &mut Frames) -> Result<(), String> {
        CompletionStream::frames(self, line, queue)
    }

    fn room(&self, framer: &LineFramer) -> usize {
        sse::room(self.head.len(), framer)
    }

    fn finish(&mut self) -> Result<Vec<Bytes>, String> {
        CompletionStream::finish(self)
    }

    fn dialect(&self) -> Dialect {
        Dialect::Chat
    }

    fn usage(&self) -> Option<Usage> {
        CompletionStream::usage(self)
    }

    fn prompt(&self) -> usize {
        CompletionStream::prompt(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translate::scan::{fields_of, random_objects, spoilt};
    use serde_json::json;
    use std::collections::BTreeSet;

    /// The event the scan reads from `text`, if it reads one.
    fn scan(text: &[u8]) -> Option<Event<'_>> {
        let mut event = Event::default();
        scan_into(text, &mut event).map(|()| event)
    }

    /// Every field serde reads into an event is read by the scan as serde reads it: a field
    /// added to `Event` fails here until the scan reads it.
    #[test]
    fn every_field_serde_reads_is_scanned() {
        let samples = [
            ("response", r#"{"response":"x"}"#),
            ("done", r#"{"done":true}"#),
            ("done_reason", r#"{"done_reason":"length"}"#),
            ("prompt_eval_count", r#"{"prompt_eval_count":3}"#),
            ("eval_count", r#"{"eval_count":5}"#),
            ("error", r#"{"error":"boom"}"#),
        ];
        let fields: BTreeSet<&str> = fields_of::<Event>().iter().copied().collect();
        let sampled = samples.iter().map(|(field, _)| *field).collect();
        assert_eq!(fields, sampled, "a field of Event without a sample");
        for (field, line) in samples {
            let serde = format!("{:?}", serde_json::from_str::<Event>(line).unwrap());
            assert_ne!(
                serde,
                format!("{:?}", Event::default()),
                "{field}: sets nothing"
            );
            let event = scan(line.as_bytes()).unwrap_or_else(|| panic!("{field} not scanned"));
            assert_eq!(format!("{event:?}"), serde, "{field}");
        }
    }

    /// A stream's frames are what serde writes for the whole `text_completion` object,
    /// whatever the choice holds, with and without usage.
    #[test]
    fn a_frame_is_the_whole_object_as_serde_writes_it() {
        let meta = Meta {
            id: "cmpl-t".into(),
            created: 7,
            model: "m\"\u{e9}".into(),
        };
        let stream = CompletionStream::new(&meta, 1, true, None);
        for text in ["", "tok", "a\"b\\\n\u{1}\u{1f600}"] {
            for finish_reason in [None, Some("stop")] {
                for usage in [None, Some(Usage::new(2, 3))] {
                    let choice = || OutChoice {
                        text: Cow::Borrowed(text),
                        index: 1,
                        logprobs: None,
                        finish_reason,
                    };
                    let mut ours = Vec::new();
                    stream.write_frame(Some(&choice()), usage, &mut ours);
                    let serde = sse::data(&envelope(&meta, vec![choice()], usage));
                    assert_eq!(String::from_utf8(ours).unwrap(), serde);
                }
            }
        }
        let mut ours = Vec::new();
        stream.write_frame(None, Some(Usage::new(2, 3)), &mut ours);
        let serde = sse::data(&envelope(&meta, Vec::new(), Some(Usage::new(2, 3))));
        assert_eq!(String::from_utf8(ours).unwrap(), serde);
    }

    /// Generate lines: what the scan reads (real lines always), serde reads the same.
    #[test]
    fn scanned_lines_read_as_serde_reads_them() {
        let serde = |text: &str| serde_json::from_str::<Event>(text).map(|e| format!("{e:?}"));
        let real = [
            r#"{"model":"llama3.2","created_at":"2025-07-07T20:22:19.1Z","response":" sky\n","done":false}"#,
            r#"{"model":"llama3.2","created_at":"2025-07-07T20:22:19.1Z","response":"","done":true,"done_reason":"stop","context":[128006,9125,128007],"total_duration":4883583458,"prompt_eval_count":26,"eval_count":282}"#,
        ];
        for line in real {
            let event = scan(line.as_bytes()).unwrap_or_else(|| panic!("not scanned: {line}"));
            assert_eq!(format!("{event:?}"), serde(line).unwrap());
        }
        let keys = [
            "response",
            "done",
            "done_reason",
            "prompt_eval_count",
            "eval_count",
            "error",
            "model",
            "context",
            "thinking",
        ];
        let (mut scanned, cases) = (0, 20_000);
        for line in random_objects(&keys, &[], cases) {
            if let Some(event) = scan(line.as_bytes()) {
                scanned += 1;
                assert_eq!(format!("{event:?}"), serde(&line).unwrap(), "{line}");
            }
            // Spoilt bytes (not UTF-8, or a raw control character) are never scanned.
            for bytes in spoilt(&line).into_iter().skip(1) {
                assert!(scan(&bytes).is_none(), "{bytes:?}");
            }
        }
        assert!(
            scanned > cases / 10,
            "only {scanned} of {cases} lines scanned"
        );
    }

    fn native(body: Value) -> Result<Value, InvalidRequest> {
        let r = request(body.to_string().as_bytes(), &Map::new())?;
        Ok(serde_json::from_slice(&r.native_body("up", 0)).unwrap())
    }

    #[test]
    fn requests() {
        assert_eq!(
            native(json!({"model": "m", "prompt": "Hi", "suffix": "end", "temperature": 0.5, "top_p": 0, "stop": "\n", "user": "u"})).unwrap(),
            json!({"model": "up", "prompt": "Hi", "suffix": "end", "stream": false,
                   "options": {"num_predict": 16, "temperature": 0.5, "top_p": 0, "stop": ["\n"]}})
        );
        let batch = request(
            br#"{"model":"m","prompt":["a","b"],"max_tokens":5,"stream":true}"#,
            &Map::new(),
        )
        .unwrap();
        assert_eq!(batch.prompts, ["a", "b"]);
        let second: Value = serde_json::from_slice(&batch.native_body("up", 1)).unwrap();
        assert_eq!(
            (
                second["prompt"].clone(),
                second["options"]["num_predict"].clone(),
                second["stream"].clone()
            ),
            (json!("b"), json!(5), json!(true))
        );
        for (body, param) in [
            (json!({"prompt": "x"}), "model"),
            (json!({"model": "m"}), "prompt"),
            (json!({"model": "m", "prompt": []}), "prompt"),
            (json!({"model": "m", "prompt": [1]}), "prompt"),
            (
                json!({"model": "m", "prompt": "x", "temperature": 9}),
                "temperature",
            ),
            (
                json!({"model": "m", "prompt": "x", "max_tokens": 0}),
                "max_tokens",
            ),
            (json!({"model": "m", "prompt": "x", "n": 2}), "n"),
            (
                json!({"model": "m", "prompt": "x", "best_of": 3}),
                "best_of",
            ),
            (json!({"model": "m", "prompt": "x", "echo": "yes"}), "echo"),
            (json!({"model": "m", "prompt": "x", "suffix": 5}), "suffix"),
        ] {
            assert_eq!(
                native(body.clone()).unwrap_err().param,
                Some(param),
                "{body}"
            );
        }
    }

    #[test]
    fn one_choice_and_native_extras_are_accepted() {
        // `n` and `best_of` of 1 (or null) are what every client sends by default; `suffix`
        // must be a string, the other extras go as they are.
        let sent = native(json!({"model": "m", "prompt": "x", "n": 1, "best_of": null,
            "suffix": "s", "keep_alive": 300, "think": false}))
        .unwrap();
        assert_eq!(
            (&sent["suffix"], &sent["keep_alive"], &sent["think"]),
            (&json!("s"), &json!(300), &json!(false))
        );
        assert!(native(json!({"model": "m", "prompt": "x", "n": null, "best_of": 1})).is_ok());
    }

    /// The completions translation as the driver sees it, through its traits.
    #[test]
    fn through_the_driver_traits() {
        let meta = Meta {
            id: "cmpl-x".into(),
            created: 1,
            model: "m".into(),
        };
        let body = br#"{"model":"m","prompt":["a","b"],"stream":true,"stream_options":{"include_usage":true}}"#;
        let mut t = Completions::new(request(body, &Map::new()).unwrap(), meta);
        assert_eq!(t.model(), "m");
        assert!(t.streams());
        let calls = t.calls("up");
        assert_eq!(calls.len(), 2);
        let second: Value = serde_json::from_slice(&calls[1].body).unwrap();
        assert_eq!(
            (calls[1].path, &second["prompt"]),
            ("/api/generate", &json!("b"))
        );
        let usage = Usage::new(3, 4);
        let closing = t.closing(Some(usage), 2);
        assert_eq!(closing.len(), 2);
        assert!(
            std::str::from_utf8(&closing[0])
                .unwrap()
                .contains(r#""total_tokens":7"#)
        );
        assert_eq!(t.closing(Some(usage), 1).len(), 1);
        // Each prompt's stream knows its prompt; a lone prompt reports its own usage.
        let done = br#"{"response":"x","done":true,"prompt_eval_count":3,"eval_count":4}"#;
        let mut second = t.stream(1, 2);
        assert_eq!(LineTranslator::prompt(&second), 1);
        let frames = LineTranslator::on_line(&mut second, done).unwrap();
        assert!(!frames.iter().any(|f| f.windows(5).any(|w| w == b"total")));
        assert_eq!(LineTranslator::usage(&second), Some(usage));
        let mut alone = t.stream(0, 1);
        let frames = LineTranslator::on_line(&mut alone, done).unwrap();
        assert!(frames.iter().any(|f| f.windows(5).any(|w| w == b"total")));
        let whole = t.whole(&[Bytes::from_static(done), Bytes::from_static(done)]);
        assert_eq!(whole.unwrap().1, Usage::new(6, 8));
    }

    /// The hand-written choice is byte for byte what serde writes for it, escapes and all,
    /// and so is every frame: written in place, or made whole.
    #[test]
    fn chunks_are_written_as_serde_writes_them() {
        let texts = [
            "",
            "Lingo",
            "tab\there \"quoted\" \\ /\n",
            "caf\u{e9} \u{0}\u{1f}\u{7f}\u{2028}\u{1f600}",
        ];
        for (i, text) in texts.iter().enumerate() {
            for finish_reason in [None, Some("stop"), Some("length")] {
                let choice = OutChoice {
                    text: Cow::Borrowed(text),
                    index: u32::try_from(i).unwrap() * 1000,
                    logprobs: None,
                    finish_reason,
                };
                let mut ours = Vec::new();
                choice.write(&mut ours);
                let serde = serde_json::to_vec(&[&choice]).unwrap();
                assert_eq!(
                    String::from_utf8(ours).unwrap(),
                    String::from_utf8(serde).unwrap()
                );
            }
        }
        let meta = Meta {
            id: "cmpl-\"x\"".into(),
            created: 7,
            model: "m\u{e9}".into(),
        };
        let lines: [&[u8]; 3] = [
            br#"{"response":"a\"b","done":false}"#,
            br#"{"response":"","done":false}"#,
            br#"{"response":"c","done":true,"done_reason":"length","prompt_eval_count":2,"eval_count":3}"#,
        ];
        let mut made = CompletionStream::new(&meta, 2, true, Some("P".into()));
        let mut written = CompletionStream::new(&meta, 2, true, Some("P".into()));
        let mut queue = Frames::default();
        let mut whole = Vec::new();
        for line in lines {
            whole.extend(made.on_line(line).unwrap());
            LineTranslator::frames(&mut written, line, &mut queue).unwrap();
        }
        let expected: Vec<u8> = [
            envelope(
                &meta,
                vec![OutChoice {
                    text: "Pa\"b".into(),
                    index: 2,
                    logprobs: None,
                    finish_reason: None,
                }],
                None,
            ),
            envelope(
                &meta,
                vec![OutChoice {
                    text: "c".into(),
                    index: 2,
                    logprobs: None,
                    finish_reason: Some("length"),
                }],
                None,
            ),
            envelope(&meta, Vec::new(), Some(Usage::new(2, 3))),
        ]
        .iter()
        .flat_map(|chunk| sse::data(chunk).to_vec())
        .collect();
        assert_eq!(whole.len(), 3, "the empty piece makes no frame");
        assert_eq!(
            String::from_utf8(whole.concat()).unwrap(),
            String::from_utf8(expected.clone()).unwrap()
        );
        assert_eq!(
            queue.take().unwrap(),
            expected,
            "written in place: one frame"
        );
    }

    #[test]
    fn responses_and_streams() {
        let meta = Meta {
            id: "cmpl-x".into(),
            created: 1,
            model: "m".into(),
        };
        let req = request(br#"{"model":"m","prompt":"Say:","echo":true}"#, &Map::new()).unwrap();
        let whole = completion(&[Bytes::from_static(br#"{"response":" hi","done":true,"done_reason":"length","prompt_eval_count":2,"eval_count":1}"#)], &req, &meta).unwrap();
        let whole: Value = serde_json::from_slice(&whole.0).unwrap();
        assert_eq!(
            whole["choices"][0],
            json!({"text": "Say: hi", "index": 0, "logprobs": null, "finish_reason": "length"})
        );
        assert_eq!(
            whole["usage"],
            json!({"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3})
        );
        assert_eq!(whole["object"], "text_completion");

        let mut stream = CompletionStream::new(&meta, 0, true, None);
        let first = stream.on_line(br#"{"response":"a","done":false}"#).unwrap();
        assert_eq!(first.len(), 1);
        let chunk: Value = serde_json::from_slice(&first[0][6..first[0].len() - 2]).unwrap();
        assert!(
            chunk.get("usage").is_none(),
            "no zero-filled usage on every chunk"
        );
        assert_eq!(chunk["choices"][0]["finish_reason"], Value::Null);
        let last = stream
            .on_line(br#"{"response":"","done":true,"done_reason":"stop","eval_count":1}"#)
            .unwrap();
        assert_eq!(last.len(), 2, "the finish chunk and the usage chunk");
        assert!(
            std::str::from_utf8(&last[1])
                .unwrap()
                .contains(r#""choices":[]"#)
        );
        assert!(stream.finish().unwrap().is_empty());
        let mut cut = CompletionStream::new(&meta, 0, false, None);
        cut.on_line(br#"{"response":"a","done":false}"#).unwrap();
        assert!(cut.finish().is_err());
        // The same through the driver's trait: a stream cut before its last line is an error
        // (the client gets an error frame, not `[DONE]`), one that ended adds nothing.
        let mut cut = CompletionStream::new(&meta, 0, false, None);
        LineTranslator::on_line(&mut cut, br#"{"response":"a","done":false}"#).unwrap();
        assert!(LineTranslator::finish(&mut cut).is_err());
        let mut ended = CompletionStream::new(&meta, 0, false, None);
        LineTranslator::on_line(&mut ended, br#"{"response":"a","done":true}"#).unwrap();
        assert_eq!(LineTranslator::finish(&mut ended), Ok(vec![]));
        assert!(
            CompletionStream::new(&meta, 0, false, None)
                .on_line(br#"{"error":"boom"}"#)
                .is_err()
        );
    }
}
