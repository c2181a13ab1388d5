//! Micro-benches of the pure translators: what lingo adds per request and per token.
//!
//! `cargo bench --bench translate`. Figures are per operation on this machine; compare
//! them with each other (or with a previous run), not across machines.

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lingo::translate::Meta;
use lingo::translate::chat::{self, ChatStream, RouteDefaults};
use lingo::translate::ndjson::LineFramer;

const REQUEST: &str = r#"{"model":"gpt-4o-mini","stream":true,"temperature":0.7,"max_tokens":256,
"stream_options":{"include_usage":true},"messages":[
{"role":"system","content":"You are a helpful assistant."},
{"role":"user","content":"What is the capital of France? Answer in one word."},
{"role":"assistant","content":"Paris."},
{"role":"user","content":"And of Italy?"}],
"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]}"#;

const TOKEN: &[u8] = br#"{"model":"llama3.2","created_at":"2025-07-07T20:22:19.1Z","message":{"role":"assistant","content":" sky"},"done":false}
"#;

fn meta() -> Meta {
    Meta {
        id: "chatcmpl-bench".into(),
        created: 1_700_000_000,
        model: "gpt-4o-mini".into(),
    }
}

fn request_translation(c: &mut Criterion) {
    let defaults = RouteDefaults::default();
    c.bench_function("chat request -> native body", |b| {
        b.iter(|| {
            let request = chat::request(black_box(REQUEST.as_bytes()), &defaults).unwrap();
            black_box(request.native_body())
        })
    });
}

fn token_reframing(c: &mut Criterion) {
    let mut group = c.benchmark_group("per token");
    group.throughput(Throughput::Elements(1));
    group.bench_function("native line -> SSE frame (framer + translator)", |b| {
        let mut framer = LineFramer::new(1 << 20);
        let mut stream = ChatStream::new(&meta(), 0, false);
        stream.on_line(TOKEN).unwrap();
        b.iter(|| {
            framer.push(black_box(TOKEN));
            let line = framer.next_line().unwrap().unwrap();
            black_box(stream.on_line(line).unwrap())
        })
    });
    group.finish();
}

fn whole_response(c: &mut Criterion) {
    let response = Bytes::from_static(br#"{"model":"llama3.2","created_at":"2025-07-07T20:22:19.1Z","message":{"role":"assistant","content":"The sky is blue because of Rayleigh scattering of sunlight in the atmosphere."},"done":true,"done_reason":"stop","prompt_eval_count":26,"eval_count":18}"#);
    c.bench_function("native response -> chat.completion", |b| {
        b.iter(|| {
            black_box(
                chat::completion(std::slice::from_ref(black_box(&response)), &meta())
                    .unwrap()
                    .0,
            )
        })
    });
}

criterion_group!(
    benches,
    request_translation,
    token_reframing,
    whole_response
);
criterion_main!(benches);
