//! Table-driven cases of the chat translators: each request rule, each refusal with its
//! `param`, and whole responses.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::*;
use crate::translate::{InvalidRequest, Meta};

fn translate(body: Value) -> Result<Map<String, Value>, InvalidRequest> {
    let defaults = RouteDefaults {
        options: json!({"num_ctx": 4096, "temperature": 0.5})
            .as_object()
            .unwrap()
            .clone(),
    };
    request(body.to_string().as_bytes(), &defaults).map(|r| r.native().clone())
}

fn with(extra: Value) -> Value {
    let mut body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    body
}

#[test]
fn sampling_and_extensions() {
    let cases = [
        (json!({}), json!({"num_ctx": 4096, "temperature": 0.5})),
        (
            json!({"temperature": 0, "top_p": 0}),
            json!({"num_ctx": 4096, "temperature": 0, "top_p": 0}),
        ),
        (
            json!({"max_tokens": 5}),
            json!({"num_ctx": 4096, "temperature": 0.5, "num_predict": 5}),
        ),
        (
            json!({"max_tokens": 5, "max_completion_tokens": 9}),
            json!({"num_ctx": 4096, "temperature": 0.5, "num_predict": 9}),
        ),
        (
            json!({"stop": "x", "seed": 7}),
            json!({"num_ctx": 4096, "temperature": 0.5, "stop": ["x"], "seed": 7}),
        ),
        (
            json!({"stop": ["x", "y"], "seed": -7}),
            json!({"num_ctx": 4096, "temperature": 0.5, "stop": ["x", "y"], "seed": -7}),
        ),
        (
            json!({"seed": u64::MAX}),
            json!({"num_ctx": 4096, "temperature": 0.5, "seed": u64::MAX}),
        ),
        (
            json!({"frequency_penalty": 1, "presence_penalty": -1}),
            json!({"num_ctx": 4096, "temperature": 0.5, "frequency_penalty": 1, "presence_penalty": -1}),
        ),
        (
            json!({"options": {"num_ctx": 8192, "top_k": 20}, "temperature": 1.5}),
            json!({"num_ctx": 8192, "temperature": 1.5, "top_k": 20}),
        ),
    ];
    for (extra, options) in cases {
        let native = translate(with(extra.clone())).unwrap();
        assert_eq!(native["options"], options, "{extra}");
        assert_eq!(native["stream"], false);
    }
    let native = translate(with(json!({"keep_alive": "5m", "think": "high", "stream": true, "user": "u", "logit_bias": {}, "store": true}))).unwrap();
    assert_eq!(
        (
            native["keep_alive"].clone(),
            native["think"].clone(),
            native["stream"].clone()
        ),
        (json!("5m"), json!("high"), json!(true))
    );
    assert!(native.get("user").is_none() && native.get("store").is_none());
}

#[test]
fn refusals_name_their_param() {
    let cases = [
        (json!({"messages": []}), "messages"),
        // The first mistake is told, in the order the fields were always checked.
        (json!({"messages": [], "n": 0, "stream": "yes"}), "messages"),
        (json!({"messages": [{"role": "x"}], "n": 0}), "messages"),
        (json!({"n": 0, "temperature": 9}), "n"),
        (json!({"model": ""}), "model"),
        (json!({"temperature": 2.5}), "temperature"),
        (json!({"temperature": "hot"}), "temperature"),
        (json!({"top_p": 1.5}), "top_p"),
        (json!({"max_tokens": 0}), "max_tokens"),
        (
            json!({"max_completion_tokens": "many"}),
            "max_completion_tokens",
        ),
        (json!({"stop": ["a", "b", "c", "d", "e"]}), "stop"),
        (json!({"stop": [1]}), "stop"),
        (json!({"seed": 1.5}), "seed"),
        (json!({"n": 0}), "n"),
        (json!({"n": 9}), "n"),
        (json!({"stream": "yes"}), "stream"),
        (
            json!({"stream_options": {"include_usage": 1}}),
            "stream_options",
        ),
        (
            json!({"response_format": {"type": "xml"}}),
            "response_format",
        ),
        (
            json!({"response_format": {"type": "json_schema", "json_schema": {}}}),
            "response_format",
        ),
        (json!({"reasoning_effort": "extreme"}), "reasoning_effort"),
        (json!({"reasoning": {"effort": 3}}), "reasoning"),
        (json!({"tools": {}}), "tools"),
        (
            json!({"tools": [{"type": "function", "function": {"name": "a"}}], "tool_choice": {"type": "function", "function": {"name": "b"}}}),
            "tool_choice",
        ),
        (json!({"options": 3}), "options"),
        (
            json!({"tools": [{"type": "function", "function": {"name": "a"}}], "tool_choice": "sometimes"}),
            "tool_choice",
        ),
    ];
    for (extra, param) in cases {
        let err = translate(with(extra.clone())).unwrap_err();
        assert_eq!(err.param, Some(param), "{extra}: {}", err.message);
        assert!(!err.message.is_empty());
    }
    for body in ["", "{", "[1]"] {
        let err = request(body.as_bytes(), &RouteDefaults::default()).unwrap_err();
        assert_eq!(err.param, None, "{body:?}");
    }
    let missing_model = request(
        br#"{"messages":[{"role":"user","content":"x"}]}"#,
        &RouteDefaults::default(),
    );
    let missing_model = missing_model.unwrap_err();
    assert_eq!(missing_model.param, Some("model"));
    assert_eq!(missing_model.message, "you must provide a model parameter");
    for model in [json!(""), json!(" "), json!(null)] {
        let err = translate(with(json!({ "model": model }))).unwrap_err();
        assert_eq!(err.message, "you must provide a model parameter", "{model}");
    }
    for model in [
        json!(1),
        json!(["gpt-4o-mini"]),
        json!({"id": "x"}),
        json!(true),
    ] {
        let err = translate(with(json!({ "model": model }))).unwrap_err();
        assert_eq!(
            (err.param, &*err.message),
            (Some("model"), "model must be a string")
        );
    }
}

#[test]
fn formats_tools_and_reasoning() {
    let native = translate(with(json!({"response_format": {"type": "json_object"}}))).unwrap();
    assert_eq!(native["format"], "json");
    let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    let native = translate(with(json!({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}}))).unwrap();
    assert_eq!(native["format"], schema);
    assert!(
        translate(with(json!({"response_format": {"type": "text"}})))
            .unwrap()
            .get("format")
            .is_none()
    );

    let tools = json!([{"type": "function", "function": {"name": "a"}}, {"type": "function", "function": {"name": "b"}}]);
    for (choice, names) in [
        (json!(null), vec!["a", "b"]),
        (json!("auto"), vec!["a", "b"]),
        (json!("required"), vec!["a", "b"]),
        (json!("none"), vec![]),
        (
            json!({"type": "function", "function": {"name": "b"}}),
            vec!["b"],
        ),
    ] {
        let native = translate(with(json!({"tools": tools, "tool_choice": choice}))).unwrap();
        let sent: Vec<&str> = native
            .get("tools")
            .and_then(Value::as_array)
            .map_or(vec![], |t| {
                t.iter()
                    .map(|t| t["function"]["name"].as_str().unwrap())
                    .collect()
            });
        assert_eq!(sent, names, "{choice}");
    }
    for (effort, think) in [
        ("none", json!(false)),
        ("minimal", json!("low")),
        ("low", json!("low")),
        ("medium", json!("medium")),
        ("high", json!("high")),
        ("max", json!("max")),
        ("xhigh", json!("max")),
        ("ultra", json!("max")),
    ] {
        assert_eq!(
            translate(with(json!({"reasoning_effort": effort}))).unwrap()["think"],
            think,
            "{effort}"
        );
    }
    assert_eq!(
        translate(with(
            json!({"reasoning": {"effort": "high"}, "reasoning_effort": "low"})
        ))
        .unwrap()["think"],
        "high"
    );
    assert!(
        translate(with(json!({"reasoning_effort": ""})))
            .unwrap()
            .get("think")
            .is_none()
    );
}

/// The native body is written as read: the upstream's model first, then what the client
/// sent in the client's member order (a schema's property order steers a model's output).
#[test]
fn the_native_body_keeps_the_clients_order() {
    let body = br#"{"messages":[{"content":"hi","role":"user"}],"model":"m","stream":false,
        "response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object",
        "properties":{"zeta":{"type":"string"},"alpha":{"type":"number"}}}}},
        "tools":[{"type":"function","function":{"name":"f","parameters":{"b":1,"a":2}}}],
        "model":"m\u00e9"}"#;
    let mut request = request(body, &RouteDefaults::default()).unwrap();
    assert_eq!(
        request.model(),
        "m\u{e9}",
        "a repeated key reads as its last value"
    );
    request.set_model("up\"stream");
    let native = String::from_utf8(request.native_body()).unwrap();
    assert_eq!(
        native,
        concat!(
            r#"{"model":"up\"stream","messages":[{"role":"user","content":"hi"}],"stream":false,"#,
            r#""format":{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"number"}}},"#,
            r#""tools":[{"type":"function","function":{"name":"f","parameters":{"b":1,"a":2}}}]}"#
        )
    );
}

#[test]
fn messages_become_one_native_message_each() {
    let messages = json!([
        {"role": "developer", "content": "rules"},
        {"role": "user", "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "data:image/PNG;base64,iVBO\nRw=="}},
            {"type": "image_url", "image_url": "Data:image/gif;base64,R0lG"},
            {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}},
            {"type": "text", "text": "here"}
        ]},
        {"role": "assistant", "content": null, "reasoning_content": "hmm", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"x\":1}"}},
            {"id": "call_2", "type": "function", "function": {"name": "g", "arguments": ""}}
        ]},
        {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "42"}]},
        {"role": "assistant", "content": "done"}
    ]);
    let native = translate(json!({"model": "m", "messages": messages})).unwrap();
    assert_eq!(
        native["messages"],
        json!([
            {"role": "system", "content": "rules"},
            {"role": "user", "content": "look\nhere", "images": ["iVBORw==", "R0lG", "UklG"]},
            {"role": "assistant", "content": "", "thinking": "hmm", "tool_calls": [
                {"id": "call_1", "function": {"index": 0, "name": "f", "arguments": {"x": 1}}},
                {"id": "call_2", "function": {"index": 1, "name": "g", "arguments": {}}}
            ]},
            {"role": "tool", "content": "42", "tool_call_id": "call_2", "tool_name": "g"},
            {"role": "assistant", "content": "done"}
        ])
    );
}

#[test]
fn images_are_standard_base64() {
    let image = |data: &str| {
        let url = format!("data:image/png;base64,{data}");
        translate(
            json!({"model": "m", "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": url}}]}]}),
        )
        .map(|native| native["messages"][0]["images"][0].clone())
    };
    assert_eq!(image("ab+/").unwrap(), "ab+/");
    assert_eq!(image("ab==").unwrap(), "ab==");
    for bad in ["abc", "====", "a===", "ab!/", "ab-_"] {
        assert!(image(bad).is_err(), "{bad}");
    }
    let url = translate(
        json!({"model": "m", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "HTTPS://example.com/a.png"}}]}]}),
    )
    .unwrap_err();
    assert!(url.message.contains("not fetched"), "{}", url.message);
}

#[test]
fn bad_messages_are_refused() {
    let part = |p: Value| json!({"model": "m", "messages": [{"role": "user", "content": [p]}]});
    let cases = [
        json!({"model": "m", "messages": [{"role": "wizard", "content": "x"}]}),
        json!({"model": "m", "messages": [{"content": "x"}]}),
        json!({"model": "m", "messages": ["x"]}),
        json!({"model": "m", "messages": [{"role": "user", "content": 5}]}),
        part(json!({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}})),
        part(json!({"type": "image_url", "image_url": {"url": "data:text/plain;base64,QQ=="}})),
        part(
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,not base64!"}}),
        ),
        part(json!({"type": "file", "file": {}})),
        part(json!({"type": "text", "text": 5})),
        json!({"model": "m", "messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "[1]"}}]}]}),
    ];
    for body in cases {
        let err = translate(body.clone()).unwrap_err();
        assert_eq!(err.param, Some("messages"), "{body}: {}", err.message);
    }
}

#[test]
fn whole_responses() {
    let meta = Meta {
        id: "chatcmpl-x".into(),
        created: 1,
        model: "alias".into(),
    };
    let responses = [
        Bytes::from_static(br#"{"model":"m","message":{"role":"assistant","content":"Hi","thinking":"t"},"done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":2}"#),
        Bytes::from_static(br#"{"model":"m","message":{"role":"assistant","content":"","tool_calls":[{"function":{"index":0,"name":"f","arguments":{"b":1,"a":2}}}]},"done":true,"done_reason":"length"}"#),
    ];
    let out: Value = serde_json::from_slice(&completion(&responses, &meta).unwrap().0).unwrap();
    assert_eq!(out["model"], "alias");
    assert_eq!(
        out["choices"][0]["message"],
        json!({"role": "assistant", "content": "Hi", "reasoning": "t", "reasoning_content": "t"})
    );
    assert_eq!(out["choices"][0]["finish_reason"], "stop");
    let call = &out["choices"][1]["message"]["tool_calls"][0];
    assert_eq!(
        call["function"]["arguments"], r#"{"b":1,"a":2}"#,
        "compact, upstream key order"
    );
    assert_eq!(call["index"], 0);
    assert_eq!(out["choices"][1]["finish_reason"], "length");
    assert_eq!(
        out["usage"],
        json!({"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5})
    );
    assert!(
        completion(&[Bytes::from_static(br#"{"error":"boom"}"#)], &meta)
            .unwrap_err()
            .contains("boom")
    );
    // An upstream id is kept; an empty one is replaced like a missing one.
    let ids = [
        Bytes::from_static(br#"{"message":{"role":"assistant","content":"","tool_calls":[{"id":"up_1","function":{"name":"f","arguments":{}}},{"id":"","function":{"name":"g","arguments":{}}}]},"done":true}"#),
    ];
    let out: Value = serde_json::from_slice(&completion(&ids, &meta).unwrap().0).unwrap();
    let calls = &out["choices"][0]["message"]["tool_calls"];
    assert_eq!(calls[0]["id"], "up_1");
    let derived = calls[1]["id"].as_str().unwrap();
    assert!(
        derived.starts_with("call_") && derived.len() == 29,
        "{derived}"
    );
}

#[test]
fn upstream_errors_keep_status_and_message() {
    type Case<'a> = (u16, &'a [u8], (u16, &'a str, Option<&'a str>));
    let cases: [Case; 7] = [
        (
            404,
            br#"{"error":"model 'x' not found"}"#,
            (404, "model 'x' not found", Some("model_not_found")),
        ),
        (
            400,
            br#"{"error":"invalid think value"}"#,
            (400, "invalid think value", None),
        ),
        (503, b"server busy", (503, "server busy", None)),
        (404, b"404 page missing", (404, "404 page missing", None)),
        (
            500,
            br#"{"error":"blob not found"}"#,
            (500, "blob not found", None),
        ),
        (500, b"", (500, "upstream responded with 500", None)),
        (
            200,
            br#"{"x":1}"#,
            (
                502,
                "upstream responded with 502 without an error message",
                None,
            ),
        ),
    ];
    for (status, body, (want_status, want_message, want_code)) in cases {
        let (s, m, c) = upstream_error(status, body);
        assert_eq!((s, m.as_str(), c), (want_status, want_message, want_code));
    }
}

/// The chat translation as the driver sees it, through its traits.
#[test]
fn through_the_driver_traits() {
    use crate::translate::{LineTranslator, Translation};
    let meta = || Meta {
        id: "chatcmpl-x".into(),
        created: 1,
        model: "alias".into(),
    };
    let body = with(json!({"stream": true, "n": 2, "stream_options": {"include_usage": true}}));
    let defaults = RouteDefaults {
        options: Map::new(),
    };
    let mut t = Chat::new(
        request(body.to_string().as_bytes(), &defaults).unwrap(),
        meta(),
    );
    assert!(t.streams());
    let calls = t.calls("up");
    assert_eq!(calls.len(), 2);
    let sent: Value = serde_json::from_slice(&calls[1].body).unwrap();
    assert_eq!((calls[1].path, &sent["model"]), ("/api/chat", &json!("up")));

    let usage = Usage::new(3, 4);
    let frames = |f: Vec<Bytes>| -> Vec<String> {
        f.iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect()
    };
    // Several choices: one usage chunk for all, at the end; one: none from the closing.
    let closing = frames(t.closing(Some(usage), 2));
    assert_eq!(closing.len(), 2, "{closing:?}");
    assert!(closing[0].contains(r#""total_tokens":7"#), "{closing:?}");
    assert_eq!(closing[1], "data: [DONE]\n\n");
    assert_eq!(frames(t.closing(Some(usage), 1)), ["data: [DONE]\n\n"]);
    assert_eq!(frames(t.closing(None, 2)), ["data: [DONE]\n\n"]);

    // Each choice's stream: its own usage only when it is the only one.
    let done = br#"{"message":{"role":"assistant","content":"b"},"done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":4}"#;
    let mut alone = t.stream(0, 1);
    let first = LineTranslator::on_line(
        &mut alone,
        br#"{"message":{"role":"assistant","content":"a"},"done":false}"#,
    )
    .unwrap();
    assert!(!first.is_empty() && first.iter().all(|f| !f.is_empty()));
    let last = frames(LineTranslator::on_line(&mut alone, done).unwrap());
    assert!(
        last.iter().any(|f| f.contains(r#""total_tokens":7"#)),
        "{last:?}"
    );
    assert_eq!(LineTranslator::finish(&mut alone), Ok(vec![]));
    assert_eq!(LineTranslator::usage(&alone), Some(usage));
    let mut one_of_two = t.stream(1, 2);
    let last = frames(LineTranslator::on_line(&mut one_of_two, done).unwrap());
    assert!(!last.iter().any(|f| f.contains("total_tokens")), "{last:?}");
    let mut cut = t.stream(0, 1);
    LineTranslator::on_line(&mut cut, br#"{"message":{"content":"a"},"done":false}"#).unwrap();
    assert!(LineTranslator::finish(&mut cut).is_err());

    let (whole, counted) = t.whole(&[Bytes::from_static(done)]).unwrap();
    assert_eq!(counted, usage);
    assert!(!whole.is_empty());
    assert_eq!(
        t.upstream_error(404, br#"{"error":"model 'x' not found"}"#),
        (404, "model 'x' not found".into(), Some("model_not_found"))
    );
}
