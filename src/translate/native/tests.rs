//! Table-driven tests of every native -> chat-completions mapping and back.

use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::base::usage::Usage;
use crate::translate::chat::StreamError;

fn ids() -> impl FnMut() -> String {
    let mut n = 0;
    move || {
        n += 1;
        format!("call_made{n}")
    }
}

fn chat_json(body: Value, extras: Extras) -> Result<Value, NativeError> {
    let t = chat::request(body.to_string().as_bytes(), extras, &mut ids())?;
    Ok(Value::Object(t.json().clone()))
}

const PNG: &str = "iVBORw0KGgoAAAANSUhEUg==";

#[test]
fn chat_requests() {
    let cases: Vec<(Value, Value)> = vec![
        (
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                "stream": true, "stream_options": {"include_usage": true}}),
        ),
        (
            json!({"model": "m", "stream": false, "keep_alive": "5m", "format": "json", "think": true,
                "messages": [{"role": "user", "content": "see", "images": [PNG]}],
                "options": {"num_predict": 5, "temperature": 0.2, "top_p": 0.9, "seed": 7,
                    "stop": ["x"], "frequency_penalty": 0.1, "presence_penalty": 0.3}}),
            json!({"model": "m", "stream": false, "response_format": {"type": "json_object"},
                "reasoning_effort": "medium", "max_tokens": 5, "temperature": 0.2, "top_p": 0.9,
                "seed": 7, "stop": ["x"], "frequency_penalty": 0.1, "presence_penalty": 0.3,
                "messages": [{"role": "user", "content": [{"type": "text", "text": "see"},
                    {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}}]}]}),
        ),
        (
            json!({"model": "m", "stream": false, "format": {"type": "object"}, "think": false,
                "tools": [{"type": "function", "function": {"name": "f"}}],
                "options": {"num_predict": -1}, "logprobs": true, "top_logprobs": 2,
                "messages": [
                    {"role": "assistant", "content": "", "thinking": "hm",
                     "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}},
                                    {"id": "call_x", "function": {"name": "g", "arguments": {}}}]},
                    {"role": "tool", "content": "2", "tool_name": "g"},
                    {"role": "tool", "content": "1", "tool_name": "f"}]}),
            json!({"model": "m", "stream": false, "logprobs": true, "top_logprobs": 2,
                "response_format": {"type": "json_schema", "json_schema": {"name": "response", "schema": {"type": "object"}}},
                "tools": [{"type": "function", "function": {"name": "f"}}],
                "messages": [
                    {"role": "assistant", "content": null, "reasoning_content": "hm", "tool_calls": [
                        {"id": "call_made1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}},
                        {"id": "call_x", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
                    {"role": "tool", "content": "2", "tool_call_id": "call_x", "name": "g"},
                    {"role": "tool", "content": "1", "tool_call_id": "call_made1", "name": "f"}]}),
        ),
    ];
    for (native, want) in cases {
        assert_eq!(
            chat_json(native.clone(), Extras::Pass).unwrap(),
            want,
            "{native}"
        );
    }
}

#[test]
fn think_and_format() {
    let effort = |think: Value| {
        let body = json!({"model": "m", "messages": [], "think": think});
        chat_json(body, Extras::Pass).map(|v| v.get("reasoning_effort").cloned())
    };
    for (think, want) in [
        (json!(true), Some(json!("medium"))),
        (json!(false), None),
        (json!(null), None),
        (json!("low"), Some(json!("low"))),
        (json!("medium"), Some(json!("medium"))),
        (json!("high"), Some(json!("high"))),
        (json!("max"), Some(json!("high"))),
    ] {
        assert_eq!(effort(think.clone()).unwrap(), want, "{think}");
    }
    assert!(
        effort(json!("extreme"))
            .unwrap_err()
            .message
            .contains("invalid think value")
    );
    let format = |f: Value| {
        chat_json(json!({"model": "m", "format": f}), Extras::Pass)
            .map(|v| v.get("response_format").cloned())
    };
    assert_eq!(format(json!("")).unwrap(), None);
    assert_eq!(
        format(json!("json")).unwrap(),
        Some(json!({"type": "json_object"}))
    );
    assert!(format(json!("yaml")).is_err());
}

#[test]
fn extras_policy() {
    let body = json!({"model": "m", "messages": [], "options":
        {"top_k": 4, "min_p": 0.1, "repeat_penalty": 1.1, "num_ctx": 8192, "temperature": 1}});
    let t = chat::request(body.to_string().as_bytes(), Extras::Pass, &mut ids()).unwrap();
    let j = t.json();
    assert_eq!(
        (&j["top_k"], &j["min_p"], &j["repetition_penalty"]),
        (&json!(4), &json!(0.1), &json!(1.1))
    );
    assert_eq!(
        (j.get("num_ctx"), t.dropped()),
        (None, &["num_ctx".to_owned()][..])
    );
    let t = chat::request(body.to_string().as_bytes(), Extras::Drop, &mut ids()).unwrap();
    assert_eq!(t.dropped(), ["min_p", "num_ctx", "repeat_penalty", "top_k"]);
    assert_eq!(t.json()["temperature"], json!(1));
    assert!(t.json().get("top_k").is_none());
    let refusal =
        chat::request(body.to_string().as_bytes(), Extras::Refuse, &mut ids()).unwrap_err();
    assert_eq!(refusal.status, 400);
    assert!(refusal.message.contains("\"min_p\""), "{}", refusal.message);
    assert_eq!(params::EXTRA_OPTIONS.len(), 8);
}

#[test]
fn chat_refusals() {
    for (body, says) in [
        ("", "the request body is empty"),
        ("[]", "must be a JSON object"),
        ("{", "not valid JSON"),
        (r#"{"messages":[]}"#, "model is required"),
        (r#"{"model":" ","messages":[]}"#, "model is required"),
        (r#"{"model":1,"messages":[]}"#, "model must be a string"),
        (
            r#"{"model":"m","messages":{}}"#,
            "messages must be an array",
        ),
        (
            r#"{"model":"m","messages":[{"content":"x"}]}"#,
            "needs a role",
        ),
        (
            r#"{"model":"m","messages":[{"role":"robot"}]}"#,
            "unknown role",
        ),
        (
            r#"{"model":"m","messages":[{"role":"user","content":[]}]}"#,
            "content must be a string",
        ),
        (
            r#"{"model":"m","messages":[{"role":"user","images":["!!"]}]}"#,
            "images[0] is not a base64",
        ),
        (
            r#"{"model":"m","messages":[{"role":"assistant","tool_calls":[{}]}]}"#,
            "needs function.name",
        ),
        (
            r#"{"model":"m","stream":"yes"}"#,
            "stream must be a boolean",
        ),
        (
            r#"{"model":"m","options":{"temperature":"hot"}}"#,
            "\"temperature\" must be a number",
        ),
        (
            r#"{"model":"m","options":{"stop":[1]}}"#,
            "\"stop\" must be",
        ),
        (
            r#"{"model":"m","options":{"num_predict":1.5}}"#,
            "\"num_predict\" must be an integer",
        ),
    ] {
        let refusal = chat::request(body.as_bytes(), Extras::Pass, &mut ids()).unwrap_err();
        assert!(
            refusal.message.contains(says),
            "{body}: {}",
            refusal.message
        );
        assert_eq!(
            refusal.body(),
            format!("{{\"error\":{}}}", json!(refusal.message))
        );
    }
    let load = chat::request(br#"{"model":"m"}"#, Extras::Pass, &mut ids()).unwrap();
    assert!(load.load_only() && load.stream() && load.path() == CHAT_PATH);
}

#[test]
fn images_are_sniffed() {
    let b64 = crate::translate::embeddings::encode_bytes;
    for (bytes, mime) in [
        (&b"\x89PNG\r\n\x1a\n...."[..], "image/png"),
        (b"\xff\xd8\xff\xe0", "image/jpeg"),
        (b"GIF89a..", "image/gif"),
        (b"GIF87a..", "image/gif"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"),
        (b"RIFF\x00\x00\x00\x00WAVE", "application/octet-stream"),
        (b"hello", "application/octet-stream"),
    ] {
        assert_eq!(sniff(bytes), mime);
        assert_eq!(
            data_uri(&b64(bytes)),
            Some(format!("data:{mime};base64,{}", b64(bytes)))
        );
    }
    assert_eq!(
        data_uri("iVBO\nRw0KGgo="),
        Some("data:image/png;base64,iVBORw0KGgo=".into())
    );
    assert_eq!(data_uri(""), None);
}

#[test]
fn generate_requests() {
    let gen_json = |body: Value| {
        generate::request(body.to_string().as_bytes(), Extras::Pass)
            .map(|t| (t.path(), Value::Object(t.json().clone()), t.load_only()))
    };
    let (path, body, load) = gen_json(json!({"model": "m", "prompt": "hi", "system": "be brief",
        "images": [PNG], "options": {"num_predict": 3}, "think": "low", "stream": false}))
    .unwrap();
    assert_eq!((path, load), (CHAT_PATH, false));
    assert_eq!(
        body,
        json!({"model": "m", "stream": false, "max_tokens": 3, "reasoning_effort": "low",
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": [
            {"type": "text", "text": "hi"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}}]}]})
    );
    for native in [
        json!({"model": "m", "prompt": "def f(", "suffix": "return 1"}),
        json!({"model": "m", "prompt": "def f(", "raw": true}),
    ] {
        let (path, body, _) = gen_json(native.clone()).unwrap();
        assert_eq!(path, COMPLETIONS_PATH);
        assert_eq!(body["prompt"], "def f(");
        assert_eq!(body.get("suffix"), native.get("suffix"));
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
    }
    assert!(gen_json(json!({"model": "m", "prompt": ""})).unwrap().2);
    assert!(gen_json(json!({"model": "m", "prompt": "x", "context": []})).is_ok());
    for (body, says) in [
        (
            json!({"model": "m", "prompt": "x", "context": [1, 2]}),
            "context is not supported",
        ),
        (
            json!({"model": "m", "prompt": "x", "template": "{{ .Prompt }}"}),
            "template is not supported",
        ),
        (
            json!({"model": "m", "prompt": "x", "raw": true, "system": "s"}),
            "system is not supported",
        ),
        (
            json!({"model": "m", "prompt": "x", "suffix": "y", "images": [PNG]}),
            "images is not supported",
        ),
        (
            json!({"model": "m", "prompt": "x", "raw": true, "format": "json"}),
            "format is not supported",
        ),
        (
            json!({"model": "m", "prompt": 3}),
            "prompt must be a string",
        ),
    ] {
        let refusal = gen_json(body.clone()).unwrap_err();
        assert!(
            refusal.message.contains(says),
            "{body}: {}",
            refusal.message
        );
    }
}

fn stamp(ms: u64) -> Stamp {
    Stamp {
        created_at: "2026-01-01T00:00:00Z".into(),
        elapsed: Duration::from_millis(ms),
    }
}

fn stream(output: Output) -> NativeStream {
    let mut ms = 0;
    let meta = Meta {
        model: "alias".into(),
        output,
    };
    NativeStream::new(
        meta,
        Box::new(move || {
            ms += 100;
            stamp(ms)
        }),
    )
}

fn run(s: &mut NativeStream, lines: &[&str]) -> Result<Vec<Value>, StreamError> {
    let mut out = Vec::new();
    for line in lines {
        out.extend(s.on_line(line.as_bytes())?);
    }
    out.extend(s.finish()?);
    Ok(out
        .iter()
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect())
}

#[test]
fn streams_assemble_tool_calls_per_index() {
    let mut s = stream(Output::Chat);
    let lines = [
        ": keep-alive",
        r#"data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}"#,
        r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":""}}]}}]}"#,
        r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"x\":"}}]}}]}"#,
        r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}"#,
        r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"g","arguments":"{}"}}]}}]}"#,
        r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        r#"data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":9,"total_tokens":14}}"#,
        "data: [DONE]",
    ];
    let out = run(&mut s, &lines).unwrap();
    assert_eq!(out.len(), 3, "{out:?}");
    assert_eq!(
        out[0]["message"]["tool_calls"],
        json!([{"id": "call_a", "function": {"index": 0, "name": "f", "arguments": {"x": 1}}}])
    );
    assert_eq!(
        out[1]["message"]["tool_calls"],
        json!([{"id": "call_b", "function": {"index": 1, "name": "g", "arguments": {}}}])
    );
    assert_eq!(
        out[2],
        json!({"model": "alias", "created_at": "2026-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop",
        "total_duration": 300_000_000, "load_duration": 0, "prompt_eval_count": 5,
        "prompt_eval_duration": 100_000_000, "eval_count": 9, "eval_duration": 200_000_000})
    );
    assert_eq!(s.usage(), Some(Usage::new(5, 9)));
}

#[test]
fn streams_end_cleanly_or_fail() {
    let text = r#"data: {"choices":[{"index":0,"delta":{"content":"Hi","reasoning":"r"}}]}"#;
    let finish = r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#;
    let out = run(&mut stream(Output::Generate), &[text, finish]).unwrap();
    assert_eq!(out[0]["response"], "Hi");
    assert_eq!(out[0]["thinking"], "r");
    assert_eq!(
        (&out[1]["done"], &out[1]["done_reason"]),
        (&json!(true), &json!("length"))
    );
    let mut cut = stream(Output::Chat);
    assert_eq!(run(&mut cut, &[text]).unwrap_err(), StreamError::Incomplete);
    assert_eq!(cut.usage(), None);
    let err = r#"data: {"error":{"message":"overloaded","type":"server_error"}}"#;
    assert_eq!(
        run(&mut stream(Output::Chat), &[text, err]).unwrap_err(),
        StreamError::Upstream("overloaded".into())
    );
    assert!(matches!(
        run(&mut stream(Output::Chat), &["data: {"]),
        Err(StreamError::Malformed(_))
    ));
    let bad_args = r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"[1]"}}]},"finish_reason":"stop"}]}"#;
    assert!(matches!(
        run(&mut stream(Output::Chat), &[bad_args]),
        Err(StreamError::Malformed(_))
    ));
    let logprobs = r#"data: {"choices":[{"index":0,"delta":{"content":""},"logprobs":{"content":[{"token":"a","logprob":-0.1,"bytes":[97],"top_logprobs":[]}]}}]}"#;
    let out = run(&mut stream(Output::Chat), &[logprobs, finish]).unwrap();
    assert_eq!(
        out[0]["logprobs"],
        json!([{"token": "a", "logprob": -0.1, "bytes": [97], "top_logprobs": []}])
    );
    assert_eq!(out[0]["message"]["content"], "");
    let completions = r#"data: {"choices":[{"index":0,"text":"def","finish_reason":null}]}"#;
    let out = run(
        &mut stream(Output::Generate),
        &[completions, finish, "data: [DONE]", text],
    )
    .unwrap();
    assert_eq!((out.len(), &out[0]["response"]), (2, &json!("def")));
    assert_eq!(
        stream(Output::Chat).error_frame("boom"),
        "{\"error\":\"boom\"}\n"
    );
}

#[test]
fn whole_responses() {
    let meta = Meta {
        model: "alias".into(),
        output: Output::Chat,
    };
    let body = json!({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "reasoning_content": "think",
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":\"b\"}"}}]}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}});
    let (bytes, usage) = whole(body.to_string().as_bytes(), &meta, &stamp(50)).unwrap();
    assert_eq!(usage, Usage::new(3, 4));
    assert_eq!(
        serde_json::from_slice::<Value>(&bytes).unwrap(),
        json!({"model": "alias",
        "created_at": "2026-01-01T00:00:00Z", "done": true, "done_reason": "stop",
        "message": {"role": "assistant", "content": "", "thinking": "think",
            "tool_calls": [{"id": "call_1", "function": {"index": 0, "name": "f", "arguments": {"a": "b"}}}]},
        "total_duration": 50_000_000, "load_duration": 0, "prompt_eval_count": 3, "eval_count": 4,
        "eval_duration": 50_000_000})
    );
    let meta = Meta {
        model: "m".into(),
        output: Output::Generate,
    };
    let text = json!({"choices": [{"index": 0, "text": "abc", "finish_reason": "length"}]});
    let out: Value = serde_json::from_slice(
        &whole(text.to_string().as_bytes(), &meta, &stamp(1))
            .unwrap()
            .0,
    )
    .unwrap();
    assert_eq!(
        (&out["response"], &out["done_reason"]),
        (&json!("abc"), &json!("length"))
    );
    assert!(out.get("message").is_none() && out.get("prompt_eval_count").is_none());
    assert!(
        whole(br#"{"error":{"message":"no"}}"#, &meta, &stamp(1))
            .unwrap_err()
            .contains("no")
    );
    assert!(whole(br#"{"choices":[]}"#, &meta, &stamp(1)).is_err());
    let load: Value = serde_json::from_slice(&meta.load_response(&stamp(2))).unwrap();
    assert_eq!(
        (&load["done_reason"], &load["response"]),
        (&json!("load"), &json!(""))
    );
}

#[test]
fn done_reasons() {
    for (finish, done) in [
        (None, "stop"),
        (Some("stop"), "stop"),
        (Some("tool_calls"), "stop"),
        (Some("function_call"), "stop"),
        (Some("length"), "length"),
        (Some("content_filter"), "content_filter"),
    ] {
        assert_eq!(done_reason(finish), done);
    }
}

#[test]
fn embeddings() {
    let t = embed::request(
        br#"{"model":"e","input":["a","b"],"dimensions":2,"truncate":false,"keep_alive":"1m"}"#,
    )
    .unwrap();
    assert_eq!(
        (t.path(), t.stream(), t.load_only()),
        (EMBEDDINGS_PATH, false, false)
    );
    assert_eq!(
        Value::Object(t.json().clone()),
        json!({"model": "e", "input": ["a", "b"], "dimensions": 2, "encoding_format": "float"})
    );
    let t = embed::legacy_request(br#"{"model":"e","prompt":"a"}"#).unwrap();
    assert_eq!(
        Value::Object(t.json().clone()),
        json!({"model": "e", "input": "a", "encoding_format": "float"})
    );
    assert!(
        embed::request(br#"{"model":"e","input":""}"#)
            .unwrap()
            .load_only()
    );
    assert!(
        embed::legacy_request(br#"{"model":"e"}"#)
            .unwrap()
            .load_only()
    );
    for body in [
        r#"{"model":"e","input":[1]}"#,
        r#"{"model":"e"}"#,
        r#"{"model":"e","input":"a","dimensions":0}"#,
    ] {
        assert!(embed::request(body.as_bytes()).is_err(), "{body}");
    }
    let response = br#"{"object":"list","data":[{"object":"embedding","index":1,"embedding":"AACAPw=="},{"object":"embedding","index":0,"embedding":[0.5,0.25]}],"usage":{"prompt_tokens":4,"total_tokens":4}}"#;
    let (bytes, usage) = embed::response(response, "alias", Duration::from_millis(2)).unwrap();
    assert_eq!(usage.prompt_tokens, 4);
    assert_eq!(
        serde_json::from_slice::<Value>(&bytes).unwrap(),
        json!({"model": "alias",
        "embeddings": [[0.5, 0.25], [1.0]], "total_duration": 2_000_000, "load_duration": 0, "prompt_eval_count": 4})
    );
    assert_eq!(
        embed::legacy_response(response).unwrap().0,
        "{\"embedding\":[0.5,0.25]}"
    );
    assert!(embed::response(b"{}", "m", Duration::ZERO).is_err());
    assert_eq!(embed::empty("m", false), r#"{"embeddings":[],"model":"m"}"#);
    assert_eq!(embed::empty("m", true), r#"{"embedding":[]}"#);
}

#[test]
fn models() {
    let list = br#"{"object":"list","data":[{"id":"llama3.2:3b-instruct-q4_K_M","object":"model","created":1721680408,"owned_by":"me"},{"id":"gpt-4o-mini","object":"model","created":0,"owned_by":"x"}]}"#;
    let tags: Value = serde_json::from_slice(
        &models::tags(list, &[("fast", "gpt-4o-mini"), ("gone", "nope")]).unwrap(),
    )
    .unwrap();
    let m = &tags["models"];
    assert_eq!(m.as_array().unwrap().len(), 4);
    assert_eq!(
        m[0],
        json!({"name": "llama3.2:3b-instruct-q4_K_M", "model": "llama3.2:3b-instruct-q4_K_M",
        "modified_at": "2024-07-22T20:33:28Z", "size": 0, "digest": crate::base::ids::digest("llama3.2:3b-instruct-q4_K_M"),
        "details": {"parent_model": "", "format": "", "family": "llama", "families": ["llama"],
            "parameter_size": "3B", "quantization_level": "Q4_K_M"}})
    );
    assert_eq!(m[0]["digest"].as_str().unwrap().len(), 64);
    assert_eq!(
        (&m[2]["name"], &m[2]["digest"], &m[2]["modified_at"]),
        (
            &json!("fast"),
            &m[1]["digest"],
            &json!("1970-01-01T00:00:00Z")
        )
    );
    assert_eq!(
        (&m[3]["name"], &m[3]["size"], &m[3]["digest"]),
        (&json!("gone"), &json!(0), &json!(""))
    );
    assert_eq!(
        models::tags(br#"{"data":null}"#, &[]).unwrap(),
        r#"{"models":[]}"#
    );
    assert!(models::tags(b"[", &[]).is_err());
    let show: Value = serde_json::from_slice(
        &models::show(
            "alias",
            br#"{"id":"Qwen/Qwen2.5-7B-Instruct","created":86400}"#,
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        (&show["model"], &show["modified_at"]),
        (&json!("alias"), &json!("1970-01-02T00:00:00Z"))
    );
    assert_eq!(
        (
            &show["details"]["family"],
            &show["details"]["parameter_size"]
        ),
        (&json!("qwen"), &json!("7B"))
    );
    for key in [
        "template",
        "system",
        "license",
        "modelfile",
        "parameters",
        "model_info",
        "capabilities",
    ] {
        assert!(show.get(key).is_some(), "{key}");
    }
    assert!(models::show("x", b"{}").is_err());
    assert_eq!(models::version(), r#"{"version":"0.12.0"}"#);
    assert_eq!(models::ps(), r#"{"models":[]}"#);
}

#[test]
fn errors() {
    for (status, body, want_status, message) in [
        (
            404,
            r#"{"error":{"message":"The model `x` does not exist","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#,
            404,
            "The model `x` does not exist",
        ),
        (400, r#"{"error":"plain"}"#, 400, "plain"),
        (429, r#"{"message":"slow down"}"#, 429, "slow down"),
        (500, "upstream exploded", 500, "upstream exploded"),
        (503, "", 503, "upstream responded with 503"),
        (
            500,
            r#"{"error":null,"message":null}"#,
            500,
            "upstream responded with 500 without an error message",
        ),
        (
            200,
            "{}",
            502,
            "upstream responded with 502 without an error message",
        ),
    ] {
        let (got_status, got) = upstream_error(status, body.as_bytes());
        assert_eq!(
            (got_status, got),
            (want_status, error_body(message)),
            "{body}"
        );
    }
}

/// Empty lists are left out, as a native server treats them as absent; empty ids are
/// replaced like missing ones. (Cases found by mutation testing.)
#[test]
fn empty_lists_and_ids() {
    let sent = chat_json(
        json!({"model": "m", "tools": [], "messages": [
            {"role": "user", "content": "hi", "images": []},
            {"role": "assistant", "content": "ok", "tool_calls": []},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "", "function": {"name": "f", "arguments": {}}}]},
            {"role": "tool", "content": "1"}]}),
        Extras::Pass,
    )
    .unwrap();
    assert!(sent.get("tools").is_none(), "{sent}");
    let messages = &sent["messages"];
    assert_eq!(messages[0]["content"], "hi");
    assert!(messages[1].get("tool_calls").is_none(), "{sent}");
    assert_eq!(messages[2]["tool_calls"][0]["id"], "call_made1");
    // A tool result without a name or an id responds to the oldest pending call.
    assert_eq!(messages[3]["tool_call_id"], "call_made1");
}

#[test]
fn tool_results_find_their_call() {
    let calls = json!([{"id": "call_a", "function": {"name": "f", "arguments": {}}},
                       {"id": "call_b", "function": {"name": "g", "arguments": {}}}]);
    let sent = chat_json(
        json!({"model": "m", "messages": [
            {"role": "assistant", "content": "", "tool_calls": calls},
            {"role": "tool", "content": "2", "tool_call_id": "call_b"},
            {"role": "tool", "content": "1", "tool_call_id": ""}]}),
        Extras::Pass,
    )
    .unwrap();
    assert_eq!(sent["messages"][1]["tool_call_id"], "call_b");
    assert_eq!(sent["messages"][2]["tool_call_id"], "call_a");
}

#[test]
fn option_edges() {
    let options = |o: Value| {
        chat_json(
            json!({"model": "m", "options": o, "messages": []}),
            Extras::Pass,
        )
    };
    let sent = options(json!({"num_predict": 1, "stop": "x"})).unwrap();
    assert_eq!(
        (&sent["max_tokens"], &sent["stop"]),
        (&json!(1), &json!(["x"]))
    );
    assert!(
        options(json!({"num_predict": 0}))
            .unwrap()
            .get("max_tokens")
            .is_none()
    );
    for model in [json!(" "), json!(""), json!(3)] {
        assert!(chat_json(json!({"model": model, "messages": []}), Extras::Pass).is_err());
    }
}

#[test]
fn a_prompt_without_images_is_generated() {
    let t = generate::request(br#"{"model":"m","prompt":"hi"}"#, Extras::Pass).unwrap();
    assert!(!t.load_only());
    let t = generate::request(br#"{"model":"m","prompt":""}"#, Extras::Pass).unwrap();
    assert!(t.load_only());
}

#[test]
fn responses_end_without_a_newline_and_leave_zero_counts_out() {
    let meta = Meta {
        model: "alias".into(),
        output: Output::Chat,
    };
    let body = json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "hi"}}]});
    let (bytes, _) = whole(body.to_string().as_bytes(), &meta, &stamp(5)).unwrap();
    assert_eq!(bytes.last(), Some(&b'}'));
    let (bytes, _) = embed::response(
        br#"{"data":[{"index":0,"embedding":[1]}],"usage":{"prompt_tokens":0}}"#,
        "m",
        Duration::ZERO,
    )
    .unwrap();
    let out: Value = serde_json::from_slice(&bytes).unwrap();
    assert!(out.get("prompt_eval_count").is_none(), "{out}");
}

#[test]
fn unindexed_fragments_start_a_call_when_they_carry_an_id() {
    let mut s = stream(Output::Chat);
    let out = run(
        &mut s,
        &[
            r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_a","function":{"name":"f","arguments":"{\"x\":"}}]}}]}"#,
            r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"1}"}}]}}]}"#,
            r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_b","function":{"name":"g","arguments":"{}"}}]}}]}"#,
            r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":2,"completion_tokens":3,"total_tokens":5}}"#,
            "data: [DONE]",
        ],
    )
    .unwrap();
    let calls: Vec<&Value> = out
        .iter()
        .flat_map(|l| l["message"]["tool_calls"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(calls.len(), 2, "{out:?}");
    assert_eq!(calls[0]["function"]["arguments"], json!({"x": 1}));
    assert_eq!(calls[1]["function"]["name"], "g");
    assert_eq!(calls[1]["function"]["index"], 1);
    // Through the driver's trait: the usage once ended; a cut stream is an error.
    use crate::translate::LineTranslator;
    assert_eq!(LineTranslator::usage(&s), Some(Usage::new(2, 3)));
    let mut cut = stream(Output::Chat);
    LineTranslator::on_line(
        &mut cut,
        br#"data: {"choices":[{"index":0,"delta":{"content":"a"}}]}"#,
    )
    .unwrap();
    assert!(LineTranslator::finish(&mut cut).is_err());
    let mut ended = stream(Output::Chat);
    LineTranslator::on_line(
        &mut ended,
        br#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
    )
    .unwrap();
    LineTranslator::on_line(&mut ended, b"data: [DONE]").unwrap();
    let closing = LineTranslator::finish(&mut ended).unwrap();
    assert!(closing.iter().all(|f| !f.is_empty()), "{closing:?}");
}
