//! Hostile input, as properties: whatever bytes a client or an upstream sends, the pure parts
//! of lingo (the NDJSON framer, the SSE frames and re-framer, the request translators, path
//! normalisation, the route-table loader, key redaction) response with a value or an error,
//! never a panic, and keep the invariants the rest of lingo relies on.
//!
//! Case counts are modest (256 per property) so that the file runs in seconds in debug; the
//! cargo-fuzz targets in `fuzz/` run the same code paths for as long as one likes.

#[path = "support/hostile.rs"]
mod hostile;

use std::path::Path;

use bytes::Bytes;
use hostile::{
    frame_payload, framed, path_properties, redaction_properties, reframe, stream_shape,
    without_call_ids,
};
use lingo::translate::Meta;
use lingo::translate::chat::{self, ChatStream, RouteDefaults};
use lingo::translate::completions::{self, CompletionStream};
use lingo::translate::embeddings;
use lingo::translate::ndjson::{FrameError, LineFramer};
use lingo::translate::sse;
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{Map, Value, json};

fn config() -> Config {
    Config {
        cases: 256,
        // Shrunk failures are printed; no regression files are written into the tree.
        failure_persistence: None,
        ..Config::default()
    }
}

// === strategies ===

/// Bytes that look like an NDJSON stream often enough to matter: newlines, `\r`, blanks.
fn ndjson_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        4 => any::<u8>(),
        2 => Just(b'\n'),
        1 => Just(b'\r'),
        1 => Just(b' '),
        1 => Just(b'\t'),
        3 => prop::sample::select(b"{}\":,abc".to_vec()),
    ];
    prop::collection::vec(byte, 0..600)
}

/// Cut points into a buffer of `len` bytes (sorted, may repeat: empty chunks happen too).
fn split(data: &[u8], cuts: &[prop::sample::Index]) -> Vec<Bytes> {
    let mut at: Vec<usize> = cuts.iter().map(|i| i.index(data.len() + 1)).collect();
    at.sort_unstable();
    let mut chunks = Vec::with_capacity(at.len() + 1);
    let mut from = 0;
    for to in at {
        chunks.push(Bytes::copy_from_slice(&data[from..to]));
        from = to;
    }
    chunks.push(Bytes::copy_from_slice(&data[from..]));
    chunks
}

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from), // NaN and infinities become null
        any::<String>().prop_map(Value::from),
        prop::sample::select(vec![
            "",
            "user",
            "assistant",
            "system",
            "developer",
            "tool",
            "text",
            "image_url",
            "input_audio",
            "json_object",
            "json_schema",
            "auto",
            "none",
            "required",
            "base64",
            "float",
            "null",
            "data:image/png;base64,AAAA",
            "data:IMAGE/x;BASE64,QQ==",
            "http://x/y.png",
            "data:image/png;base64,é",
            "data:é",
            "AAAA",
            "high",
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Keys the translators read, and some they do not.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "model", "messages", "role", "content", "type", "text", "image_url", "url",
            "input_audio", "data", "tool_calls", "function", "name", "arguments", "id",
            "tool_call_id", "reasoning", "reasoning_content", "stream", "stream_options",
            "include_usage", "n", "temperature", "top_p", "frequency_penalty",
            "presence_penalty", "seed", "stop", "max_tokens", "max_completion_tokens",
            "response_format", "json_schema", "schema", "tools", "tool_choice", "think",
            "reasoning_effort", "effort", "keep_alive", "logprobs", "top_logprobs", "options",
            "prompt", "echo", "best_of", "suffix", "input", "dimensions", "encoding_format",
            "truncate",
        ])
        .prop_map(str::to_owned),
        1 => any::<String>(),
    ]
}

/// A request body shaped like one of the three endpoints', with arbitrary values.
fn request_object() -> impl Strategy<Value = Value> {
    let message = (
        prop::sample::select(vec![
            "user",
            "assistant",
            "system",
            "developer",
            "tool",
            "x",
        ]),
        json_value(),
        prop::option::of(json_value()),
    )
        .prop_map(|(role, content, extra)| {
            let mut m = json!({"role": role, "content": content});
            if let Some(Value::Object(extra)) = extra {
                m.as_object_mut().unwrap().extend(extra);
            }
            m
        });
    (
        prop::option::of(prop_oneof![
            any::<String>().prop_map(Value::from),
            json_value()
        ]),
        prop::collection::vec(message, 0..4),
        prop::collection::btree_map(key(), json_value(), 0..8),
    )
        .prop_map(|(model, messages, rest)| {
            let mut body: Map<String, Value> = rest.into_iter().collect();
            if let Some(model) = model {
                body.insert("model".into(), model);
            }
            body.entry("messages").or_insert(Value::Array(messages));
            Value::Object(body)
        })
}

/// One native event, as an upstream might send it (counts over the whole `u64` range).
fn native_event(max_count: u64) -> impl Strategy<Value = Value> {
    (
        any::<bool>(),
        prop::option::of(prop::sample::select(vec!["stop", "length", "load", ""])),
        0..=max_count,
        0..=max_count,
        any::<String>(),
        prop::option::of(any::<String>()),
        prop::collection::vec((prop::option::of("[a-z0-9_]{0,8}"), ".{0,8}"), 0..3),
        prop::option::of(json_value()),
    )
        .prop_map(
            |(done, reason, prompt, eval, content, thinking, calls, error)| {
                let calls: Vec<Value> = calls
                    .into_iter()
                    .map(|(id, name)| json!({"id": id, "function": {"name": name, "arguments": {"a": 1}}}))
                    .collect();
                let mut e = json!({
                    "message": {"role": "assistant", "content": content, "thinking": thinking, "tool_calls": calls},
                    "response": "piece",
                    "done": done,
                    "prompt_eval_count": prompt,
                    "eval_count": eval,
                });
                if let Some(reason) = reason {
                    e["done_reason"] = reason.into();
                }
                if let Some(Value::String(error)) = error {
                    e["error"] = error.into();
                }
                e
            },
        )
}

// === helpers ===

/// What `LineFramer` must produce for `data`, written from the contract rather than the
/// code: every `\n`-terminated line trimmed of trailing `\r`, blanks and tabs, empty lines
/// skipped, and the first line whose raw length (or the unterminated rest's) is over `max`
/// ends everything with an error.
fn model_lines(data: &[u8], max: usize) -> Vec<Result<Vec<u8>, FrameError>> {
    let mut out = Vec::new();
    let mut segments: Vec<&[u8]> = data.split(|b| *b == b'\n').collect();
    let rest = segments.pop().unwrap_or_default();
    let trim = |s: &[u8]| {
        let end = s
            .iter()
            .rposition(|b| !matches!(b, b'\r' | b' ' | b'\t'))
            .map_or(0, |p| p + 1);
        s[..end].to_vec()
    };
    for segment in segments.into_iter().chain([rest]) {
        if segment.len() > max {
            out.push(Err(FrameError::LineTooLong { limit: max }));
            return out;
        }
        let line = trim(segment);
        if !line.is_empty() {
            out.push(Ok(line));
        }
    }
    out
}

fn chat_meta() -> Meta {
    Meta {
        id: "chatcmpl-prop".into(),
        created: 1_700_000_000,
        model: "m".into(),
    }
}

fn completion_meta() -> Meta {
    Meta {
        id: "cmpl-prop".into(),
        created: 1_700_000_000,
        model: "m".into(),
    }
}

fn reframe_chat(chunks: Vec<Bytes>, max_line: usize) -> Vec<Bytes> {
    reframe(chunks, max_line, ChatStream::new(&chat_meta(), 0, true))
}

fn reframe_completions(chunks: Vec<Bytes>, max_line: usize) -> Vec<Bytes> {
    let stream = CompletionStream::new(&completion_meta(), 0, true, Some("echo".into()));
    reframe(chunks, max_line, stream)
}

/// The payloads of a stream's frames, tool-call ids blanked.
fn payloads(frames: &[Bytes]) -> Result<Vec<Value>, TestCaseError> {
    frames
        .iter()
        .map(|f| assert_one_frame(f).map(without_call_ids))
        .collect()
}

/// A re-framed stream is well-formed SSE, and ends with `[DONE]` xor an error frame.
fn assert_stream_shape(frames: &[Bytes]) -> Result<(), TestCaseError> {
    stream_shape(&payloads(frames)?).map_err(TestCaseError::fail)
}

fn assert_one_frame(frame: &[u8]) -> Result<Value, TestCaseError> {
    frame_payload(frame).map_err(TestCaseError::fail)
}

fn path_string() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => Just("/"),
        3 => Just("."),
        2 => Just(".."),
        1 => Just("\\"),
        2 => prop::sample::select(vec![
            "%2e", "%2E", "%2f", "%2F", "%5c", "%5C", "%25", "%252e", "%00", "%7f", "%zz", "%2",
            "%", "%70", "%41", "%3A", "%c3%a9", "%20", "%2d", "%7e",
        ]),
        3 => prop::sample::select(vec!["api", "pull", "v1", "chat", "a", "x-y", "~", "é", " ", "\t", "?", "#"]),
    ];
    (any::<bool>(), prop::collection::vec(piece, 0..16)).prop_map(|(slash, pieces)| {
        let mut s = String::from(if slash { "/" } else { "" });
        s.extend(pieces);
        s
    })
}

fn check_normalised(raw: &str) -> Result<(), TestCaseError> {
    path_properties(raw).map_err(TestCaseError::fail)
}

const TABLE: &str = include_str!("../proxy.yaml");

/// A valid table using every section (clients, auth, aliases, limits, timeouts, options).
const RICH_TABLE: &str = "\
listen:
  - addr: 127.0.0.1:0
    public_url: https://proxy.example.com
clients:
  - { name: dev, key: { env: DEV_KEY } }
  - { name: ci, key: { value: ci-key } }
upstreams:
  models:
    url: http://127.0.0.1:11434/base
    speaks: native
    timeouts: { connect: 1s, first_byte: 30s, idle: 2m }
  cloud:
    url: https://api.example.com
    speaks: web-data
    auth: { header: Authorization, bearer: { env: CLOUD_KEY } }
  mock:
    mock: { tokens: 3, token_delay: 0ms }
    speaks: native
models:
  gpt-4o-mini: { upstream: models, model: \"llama3.2:3b\" }
  small: { upstream: mock, model: tiny }
routes:
  - { path: /v1/chat/completions, speaks: chat-completions, to: models, options: { num_ctx: 4096 } }
  - { path: /v1/embeddings, speaks: chat-completions, to: models, max_body: 1MiB }
  - { prefix: /api, to: models, allow_model_management: true }
  - { prefix: /v1, to: cloud }
owned_by: lingo
limits: { max_body: 10MiB, drain: 5s, max_line: 64KiB }
";

fn load(text: &str) -> Result<lingo::table::RouteTable, lingo::config::ConfigErrors> {
    // A source in a directory with no files: `file:` secrets and TLS paths do not resolve.
    let source = Path::new("/nonexistent-lingo-proptest/proxy.yaml");
    lingo::config::load_str_with_env(text, source, &|name| {
        (name.len() < 16).then(|| format!("secret-of-{name}"))
    })
}

/// One edit of a table's text.
#[derive(Debug, Clone)]
enum Edit {
    Delete(prop::sample::Index, usize),
    Insert(prop::sample::Index, String),
    DuplicateLine(prop::sample::Index),
    SwapLines(prop::sample::Index, prop::sample::Index),
    ReplaceByte(prop::sample::Index, u8),
}

fn edit() -> impl Strategy<Value = Edit> {
    let token = prop_oneof![
        prop::sample::select(vec![
            ":",
            " ",
            "\n",
            "  ",
            "- ",
            "{",
            "}",
            "[",
            "]",
            "\"",
            "'",
            "#",
            "&a",
            "*a",
            "<<: *a",
            "!!str",
            "~",
            "null",
            "0",
            "-1",
            "18446744073709551616",
            "1e999",
            "0ms",
            "99999h",
            "1KiB",
            "999999999999TiB",
            "to: nowhere",
            "speaks: klingon",
            "prefix: /",
            "path: ",
            "addr: [::1]:0",
            "addr: 999.1.1.1:80",
            "url: ftp://x",
            "url: http://",
            "url: http://[",
            "env: ''",
            "file: /dev/null",
            "value: \"\"",
            "mock: {}",
            "tls: {cert: a, key: b}",
            "\t",
            "\r\n",
            "é",
            "\u{feff}",
            "---\n",
            "...\n",
            "? ",
            "|\n  x",
            ">-\n  y",
        ])
        .prop_map(str::to_owned),
        any::<String>(),
    ];
    prop_oneof![
        any::<prop::sample::Index>()
            .prop_flat_map(|i| (Just(i), 1usize..40))
            .prop_map(|(i, n)| Edit::Delete(i, n)),
        (any::<prop::sample::Index>(), token).prop_map(|(i, t)| Edit::Insert(i, t)),
        any::<prop::sample::Index>().prop_map(Edit::DuplicateLine),
        (any::<prop::sample::Index>(), any::<prop::sample::Index>())
            .prop_map(|(a, b)| Edit::SwapLines(a, b)),
        (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, b)| Edit::ReplaceByte(i, b)),
    ]
}

fn apply(text: &str, edit: &Edit) -> String {
    let mut bytes = text.as_bytes().to_vec();
    match edit {
        Edit::Delete(at, n) => {
            let at = at.index(bytes.len() + 1);
            let end = (at + n).min(bytes.len());
            bytes.drain(at..end);
        }
        Edit::Insert(at, token) => {
            let at = at.index(bytes.len() + 1);
            bytes.splice(at..at, token.bytes());
        }
        Edit::DuplicateLine(at) | Edit::SwapLines(at, _) => {
            let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
            if lines.is_empty() {
                return text.to_owned();
            }
            let i = at.index(lines.len());
            match edit {
                Edit::SwapLines(_, other) => {
                    let j = other.index(lines.len());
                    lines.swap(i, j);
                }
                _ => {
                    let line = lines[i].clone();
                    lines.insert(i, line);
                }
            }
            return lines.join("\n");
        }
        Edit::ReplaceByte(at, b) => {
            if !bytes.is_empty() {
                let at = at.index(bytes.len());
                bytes[at] = *b;
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The tables the mutations start from are valid, so an edit is what breaks them.
#[test]
fn unmutated_tables_load() {
    for text in [TABLE, RICH_TABLE] {
        if let Err(e) = load(text) {
            panic!("{e}");
        }
    }
}

// === properties ===

proptest! {
    #![proptest_config(config())]

    /// Any split of any bytes gives the lines (and the error) of the whole, which are the
    /// contract's lines.
    #[test]
    fn framer_lines_do_not_depend_on_chunking(
        data in ndjson_bytes(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
        max in prop_oneof![1usize..16, 16usize..1024],
    ) {
        let want = model_lines(&data, max);
        prop_assert_eq!(framed(&[Bytes::copy_from_slice(&data)], max), want.clone(), "whole");
        prop_assert_eq!(framed(&split(&data, &cuts), max), want.clone(), "split");
        let bytewise: Vec<Bytes> = data.iter().map(|b| Bytes::copy_from_slice(&[*b])).collect();
        prop_assert_eq!(framed(&bytewise, max), want, "byte by byte");
    }

    /// The key is taken out of an error response wherever its chunks split it: any split gives
    /// the response with each occurrence (leftmost first) replaced, and no key survives.
    #[test]
    fn redaction_does_not_depend_on_chunking(
        key in prop::collection::vec(prop::sample::select(b"ab".to_vec()), 1..6),
        data in prop::collection::vec(prop::sample::select(b"abc".to_vec()), 0..300),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let pieces = split(&data, &cuts);
        prop_assert_eq!(redaction_properties(&key, &data, &pieces), Ok(()));
    }

    /// A line that never ends is an error as soon as it passes the cap, however it trickles
    /// in: the framer never waits (and buffers) for a newline past the cap.
    #[test]
    fn framer_refuses_an_endless_line_at_the_cap(
        max in 1usize..512,
        chunk_lens in prop::collection::vec(1usize..64, 1..200),
        fill in any::<u8>().prop_filter("not a newline", |b| *b != b'\n'),
    ) {
        let mut framer = LineFramer::new(max);
        let mut buffered = 0usize;
        for len in chunk_lens {
            framer.push(&vec![fill; len]);
            buffered += len;
            match framer.next_line() {
                None => prop_assert!(buffered <= max, "{buffered} bytes buffered past a cap of {max}"),
                Some(Err(FrameError::LineTooLong { limit })) => {
                    prop_assert_eq!(limit, max);
                    prop_assert!(buffered > max, "refused at {buffered} under a cap of {max}");
                    return Ok(());
                }
                Some(Ok(line)) => prop_assert!(false, "a line without a newline: {line:?}"),
            }
        }
        prop_assert!(buffered <= max);
    }

    /// Every frame is one `data:` line of JSON that gives the value back.
    #[test]
    fn sse_data_frames_round_trip(value in json_value()) {
        let frame = sse::data(&value);
        assert_one_frame(&frame)?;
        // Compared as text: serde_json's float parsing is not exact without `float_roundtrip`.
        prop_assert_eq!(frame, format!("data: {value}\n\n"));
    }

    /// An error frame carries any message, whatever bytes it holds, in one frame.
    #[test]
    fn sse_error_frames_carry_any_message(message in any::<String>(), kind in any::<String>(), code in any::<String>()) {
        let v = assert_one_frame(&sse::error_frame(&message, &kind, &code))?;
        prop_assert_eq!(&v["error"]["message"], &Value::from(message.clone()));
        prop_assert_eq!(&v["error"]["type"], &Value::from(kind));
        prop_assert_eq!(&v["error"]["code"], &Value::from(code));
        let v = assert_one_frame(&lingo::proxy::respond::stream_error(lingo::base::dialect::Dialect::Chat, &message))?;
        prop_assert_eq!(&v["error"]["message"], &Value::from(message));
    }

    /// Arbitrary upstream bytes, re-framed as lingo serves them: well-formed SSE that ends
    /// with `[DONE]` or one error frame, the same however the bytes were chunked.
    #[test]
    fn reframed_garbage_is_well_formed_and_chunking_blind(
        data in ndjson_bytes(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        max in prop_oneof![1usize..32, Just(1usize << 20)],
    ) {
        let whole = reframe_chat(vec![Bytes::copy_from_slice(&data)], max);
        assert_stream_shape(&whole)?;
        prop_assert_eq!(
            payloads(&reframe_chat(split(&data, &cuts), max))?,
            payloads(&whole)?
        );
        let whole = reframe_completions(vec![Bytes::copy_from_slice(&data)], max);
        assert_stream_shape(&whole)?;
        prop_assert_eq!(
            payloads(&reframe_completions(split(&data, &cuts), max))?,
            payloads(&whole)?
        );
    }

    /// Plausible native events (token counts up to `u32::MAX`) in, well-formed SSE out;
    /// `[DONE]` exactly when a `done` event came and no error did.
    #[test]
    fn reframed_native_events(
        events in prop::collection::vec(native_event(u64::from(u32::MAX)), 0..6),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let mut ndjson = Vec::new();
        for e in &events {
            ndjson.extend(serde_json::to_vec(e).unwrap());
            ndjson.push(b'\n');
        }
        let clean = events
            .iter()
            .take_while(|e| e.get("error").is_none())
            .any(|e| e["done"] == true);
        for frames in [
            reframe_chat(split(&ndjson, &cuts), 1 << 20),
            reframe_completions(split(&ndjson, &cuts), 1 << 20),
        ] {
            assert_stream_shape(&frames)?;
            let done = frames.last().is_some_and(|f| f.as_ref() == b"data: [DONE]\n\n");
            prop_assert_eq!(done, clean, "{:?}", events);
        }
    }

    /// Arbitrary bytes never panic a request translator; what they accept translates to a
    /// native JSON object naming a model.
    #[test]
    fn request_translators_take_any_bytes(body in prop_oneof![
        prop::collection::vec(any::<u8>(), 0..256),
        ndjson_bytes(),
    ]) {
        check_requests(&body)?;
    }

    /// Arbitrary JSON never panics a request translator.
    #[test]
    fn request_translators_take_any_json(value in json_value()) {
        check_requests(&serde_json::to_vec(&value).unwrap())?;
    }

    /// Request-shaped JSON with arbitrary values reaches deep into each translator.
    #[test]
    fn request_translators_take_request_shaped_json(value in request_object()) {
        check_requests(&serde_json::to_vec(&value).unwrap())?;
    }

    /// Whatever `normalize` accepts holds no dot segment, empty segment, encoded slash,
    /// backslash or control byte (before or after one more decoding), and normalising it
    /// again changes nothing.
    #[test]
    fn path_normalisation_is_safe_and_idempotent(raw in path_string()) {
        check_normalised(&raw)?;
    }

    #[test]
    fn path_normalisation_of_any_string(raw in any::<String>().prop_map(|s| format!("/{s}"))) {
        check_normalised(&raw)?;
    }

    /// Arbitrary text never panics the route-table loader.
    #[test]
    fn config_loader_takes_any_text(text in prop_oneof![
        any::<String>(),
        prop::collection::vec(
            prop::sample::select(vec![
                "listen:", "routes:", "upstreams:", "models:", "clients:", "limits:", "\n",
                "  ", "- ", "addr: 127.0.0.1:0", "{", "}", "[", "]", ": ", "url: http://x",
                "speaks: native", "prefix: /api", "to: a", "a:", "&x ", "*x", "<<: *x", "#",
            ]),
            0..60,
        ).prop_map(|v| v.concat()),
    ]) {
        let _ = load(&text);
    }

    /// A valid table with a few edits never panics the loader, and an error names a place.
    #[test]
    fn config_loader_takes_mutated_tables(
        rich in any::<bool>(),
        edits in prop::collection::vec(edit(), 1..4),
    ) {
        let mut text = if rich { RICH_TABLE } else { TABLE }.to_owned();
        for e in &edits {
            text = apply(&text, e);
        }
        if let Err(errors) = load(&text) {
            prop_assert!(!errors.0.is_empty(), "an error with no reason");
            for e in &errors.0 {
                prop_assert!(!e.message.trim().is_empty());
            }
        }
    }
}

fn check_requests(body: &[u8]) -> Result<(), TestCaseError> {
    match chat::request(body, &RouteDefaults::default()) {
        Ok(mut request) => {
            prop_assert!(!request.model().trim().is_empty());
            prop_assert!((1..=chat::MAX_N).contains(&u64::from(request.n())));
            request.set_model("upstream-model");
            let native: Value = serde_json::from_slice(&request.native_body())
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&native["model"], "upstream-model");
            prop_assert!(native["messages"].as_array().is_some_and(|m| !m.is_empty()));
        }
        Err(e) => prop_assert!(!e.message.is_empty()),
    }
    match completions::request(body, &Map::new()) {
        Ok(request) => {
            prop_assert!(!request.prompts.is_empty());
            for i in 0..request.prompts.len() {
                let native: Value = serde_json::from_slice(&request.native_body("m", i))
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(&native["prompt"], &Value::from(request.prompts[i].clone()));
            }
        }
        Err(e) => prop_assert!(!e.message.is_empty()),
    }
    match embeddings::request(body) {
        Ok(request) => {
            prop_assert!(!request.inputs.is_empty());
            let native: Value = serde_json::from_slice(&request.embed_body("m"))
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(
                native["input"].as_array().map(Vec::len),
                Some(request.inputs.len())
            );
            for input in &request.inputs {
                prop_assert!(
                    serde_json::from_slice::<Value>(&request.legacy_body("m", input)).is_ok()
                );
            }
        }
        Err(e) => prop_assert!(!e.message.is_empty()),
    }
    Ok(())
}

// === bugs found ===

/// Token counts come from the upstream and are added without a check: in a debug build (the
/// one the tests run) a count near `u64::MAX` panics the stream; in release it wraps.
#[test]
fn huge_token_counts_do_not_panic_the_stream() {
    for line in [
        r#"{"message":{"content":"x"},"done":true,"prompt_eval_count":18446744073709551615,"eval_count":1}"#,
        r#"{"response":"x","done":true,"prompt_eval_count":18446744073709551615,"eval_count":1}"#,
    ] {
        let chat = std::panic::catch_unwind(|| {
            ChatStream::new(&chat_meta(), 0, true).on_line(line.as_bytes())
        });
        assert!(chat.is_ok(), "ChatStream::on_line panicked on {line}");
        let completion = std::panic::catch_unwind(|| {
            CompletionStream::new(&completion_meta(), 0, true, None).on_line(line.as_bytes())
        });
        assert!(
            completion.is_ok(),
            "CompletionStream::on_line panicked on {line}"
        );
    }
}

proptest! {
    #![proptest_config(config())]

    /// The same as `reframed_native_events`, over the whole `u64` range of token counts.
    #[test]
        fn reframed_native_events_with_any_counts(
        events in prop::collection::vec(native_event(u64::MAX), 1..4),
    ) {
        let mut ndjson = Vec::new();
        for e in &events {
            ndjson.extend(serde_json::to_vec(e).unwrap());
            ndjson.push(b'\n');
        }
        assert_stream_shape(&reframe_chat(vec![Bytes::from(ndjson.clone())], 1 << 20))?;
        assert_stream_shape(&reframe_completions(vec![Bytes::from(ndjson)], 1 << 20))?;
    }
}
