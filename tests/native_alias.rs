//! Model aliases on native pass-through routes, as real clients write JSON: spaced or
//! compact, with numbers and escapes lingo must not touch, aliases longer and shorter than
//! the upstream's names. The forwarded request must be framed by the bytes sent (a stale
//! `Content-Length` makes the upstream wait for bytes that never come), carry the client's
//! body byte for byte but for the model, and every `model` of the response must be the alias
//! again however the upstream spaces its JSON.

mod support;

use hyper::Method;
use serde_json::Value;
use support::*;

/// Alias -> upstream model, one much longer and one much shorter than its alias.
const ALIASES: [(&str, &str); 2] = [
    ("short", "a-much-longer-upstream-model:70b"),
    ("a-very-long-alias-name-for-tests", "m:1b"),
];

/// An upstream that responds to each endpoint in the native shape, spacing its JSON the way
/// some servers do (`"model" : "x"`), naming the model it was asked for.
async fn spaced_backend() -> Backend {
    Backend::start(|seen| async move {
        let request: Value = serde_json::from_slice(&seen.body).unwrap_or(Value::Null);
        let model = request["model"]
            .as_str()
            .or(request["name"].as_str())
            .unwrap_or("?")
            .to_owned();
        let stream = request["stream"].as_bool().unwrap_or(true);
        let path = seen.uri.split('?').next().unwrap_or("").to_owned();
        let body = match path.as_str() {
            "/api/chat" if stream => format!(
                "{{\"model\" : \"{model}\", \"message\" : {{\"role\":\"assistant\",\"content\":\"a\"}}, \"done\" : false}}\n\
                 {{ \"model\": \"{model}\", \"message\" : {{\"role\":\"assistant\",\"content\":\"\"}}, \"done\" : true, \"eval_count\": 1 }}\n"
            ),
            "/api/chat" => format!(
                "{{\"model\" : \"{model}\", \"message\" : {{\"role\":\"assistant\",\"content\":\"a\"}}, \"done\" : true}}"
            ),
            "/api/generate" => {
                format!("{{\"model\" :\"{model}\",\"response\":\"a\",\"done\":true}}")
            }
            "/api/embed" => format!("{{\"model\":  \"{model}\", \"embeddings\": [[0.5]]}}"),
            "/api/embeddings" => "{\"embedding\": [0.5]}".to_owned(),
            "/api/show" => "{\"details\": {\"family\": \"llama\"}, \"model_info\": {}}".to_owned(),
            _ => "{}".to_owned(),
        };
        json_response(200, &body)
    })
    .await
}

async fn lingo_for(backend: &Backend) -> Lingo {
    let models: String = ALIASES
        .iter()
        .map(|(alias, model)| format!("  {alias}: {{ upstream: models, model: \"{model}\" }}\n"))
        .collect();
    Lingo::start(&table(&format!(
        "upstreams:\n  models:\n    url: {}\n    speaks: native\n    timeouts: {{ first_byte: 5s }}\n\
         models:\n{models}\
         routes:\n  - {{ prefix: /api, to: models }}\n",
        backend.url()
    )))
    .await
}

/// Bodies as clients write them: `{model}` stands for the alias's JSON string.
const BODIES: [(&str, &str); 8] = [
    (
        "/api/chat",
        r#"{"model":{model},"stream":false,"messages":[{"role":"user","content":"hi"}]}"#,
    ),
    (
        "/api/chat",
        r#"{"model": {model}, "stream": false, "options": {"seed": 12345678901234567890, "temperature": 1e0}, "messages": [{"role": "user", "content": "caf\u00e9 \ud83d\ude00 \"q\""}], "unknown_field": [1.50, -0.0]}"#,
    ),
    (
        "/api/chat",
        r#"{ "messages" : [ { "role" : "user" , "content" : "hi" } ] , "model" : {model} }"#,
    ),
    (
        "/api/generate",
        r#"{"model": {model}, "prompt": "x", "stream": false, "keep_alive": "5m"}"#,
    ),
    ("/api/embed", r#"{"model": {model}, "input": ["a", "b"]}"#),
    ("/api/embeddings", r#"{"model": {model}, "prompt": "a"}"#),
    ("/api/show", r#"{"name": {model}, "verbose": false}"#),
    ("/api/show", r#"{"model": {model}}"#),
];

#[tokio::test]
async fn aliased_bodies_arrive_byte_for_byte_but_for_the_model() {
    let backend = spaced_backend().await;
    let lingo = lingo_for(&backend).await;
    for (alias, model) in ALIASES {
        for (path, template) in BODIES {
            let sent = template.replace("{model}", &format!("\"{alias}\""));
            let response = send(request(Method::POST, &lingo.url(path), &[], &sent)).await;
            assert_eq!(response.status, 200, "{path} {sent}: {}", response.body);

            let seen = backend.last();
            let expected = template.replace("{model}", &format!("\"{model}\""));
            assert_eq!(
                String::from_utf8_lossy(&seen.body),
                expected,
                "{path}: only the model changes"
            );
            let length = seen
                .headers
                .get("content-length")
                .map(|v| v.to_str().unwrap());
            assert_eq!(
                length,
                Some(expected.len().to_string().as_str()),
                "{path}: the framing is the forwarded body's"
            );
            if path != "/api/embeddings" && path != "/api/show" {
                for line in response.body.lines() {
                    let line: Value = serde_json::from_str(line).unwrap();
                    assert_eq!(line["model"], alias, "{path}: {line}");
                }
            }
            assert!(!response.body.contains(model), "{path}: {}", response.body);
        }
    }
}

#[tokio::test]
async fn every_streamed_line_names_the_alias_whatever_the_spacing() {
    let backend = spaced_backend().await;
    let lingo = lingo_for(&backend).await;
    for (alias, model) in ALIASES {
        let sent =
            format!(r#"{{"model": "{alias}", "messages": [{{"role": "user", "content": "hi"}}]}}"#);
        let response = send(request(Method::POST, &lingo.url("/api/chat"), &[], &sent)).await;
        assert_eq!(response.status, 200, "{}", response.body);
        let lines: Vec<Value> = response
            .body
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{}", response.body);
        assert!(
            lines.iter().all(|l| l["model"] == alias),
            "{}",
            response.body
        );
        assert!(lines[1]["done"].as_bool().unwrap());
        assert!(!response.body.contains(model));
    }
}

/// Another model's name in the response, or the upstream model's name inside the content, is
/// not the response's `model` field and stays as it is.
#[tokio::test]
async fn only_the_responses_own_model_field_is_renamed() {
    let backend = Backend::start(|_| async {
        json_response(
            200,
            r#"{"model":"other","message":{"role":"assistant","content":"I am \"model\":\"m:1b\""},"done":true}"#,
        )
    })
    .await;
    let lingo = lingo_for(&backend).await;
    let sent = r#"{"model":"a-very-long-alias-name-for-tests","stream":false,"messages":[]}"#;
    let response = send(request(Method::POST, &lingo.url("/api/chat"), &[], sent)).await;
    assert_eq!(
        response.body.trim_end(),
        r#"{"model":"other","message":{"role":"assistant","content":"I am \"model\":\"m:1b\""},"done":true}"#
    );
}

/// Names that are not aliases pass through untouched, whatever their spacing.
#[tokio::test]
async fn other_models_pass_byte_for_byte() {
    let backend = spaced_backend().await;
    let lingo = lingo_for(&backend).await;
    let sent = r#"{ "model" : "qwen3" , "stream" : false, "n": 1e3 }"#;
    let response = send(request(
        Method::POST,
        &lingo.url("/api/generate"),
        &[],
        sent,
    ))
    .await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(backend.last().body, sent.as_bytes());
}
