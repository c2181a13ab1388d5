//! One usage rule for every response made of several upstream responses: every prompt of a batch
//! counts once, the `n` choices of one prompt count that prompt once, every completion counts.
//! The streamed usage chunk, the whole response's `usage` and the token counters agree.

mod support;

use hyper::Method;
use serde_json::{Value, json};
use support::*;

/// The mock counts a prompt's words as its prompt tokens.
async fn lingo() -> Lingo {
    Lingo::start(&table(
        "clients:\n  - { name: team, key: { value: k-team } }\n\
         upstreams:\n  models:\n    mock: { tokens: 3 }\n    speaks: native\n\
         routes:\n  - { prefix: /v1, speaks: chat-completions, to: models }\n",
    ))
    .await
}

const KEY: (&str, &str) = ("authorization", "Bearer k-team");

async fn post(lingo: &Lingo, path: &str, body: &Value) -> WholeResponse {
    send(request(
        Method::POST,
        &lingo.url(path),
        &[KEY],
        &body.to_string(),
    ))
    .await
}

/// The usage of a whole response and of the same request streamed with `include_usage`.
async fn both(lingo: &Lingo, path: &str, body: Value) -> (Value, Value) {
    let mut whole = body.clone();
    whole["stream"] = json!(false);
    let whole = post(lingo, path, &whole).await;
    assert_eq!(whole.status, 200, "{}", whole.body);
    let mut streamed = body;
    streamed["stream"] = json!(true);
    streamed["stream_options"] = json!({"include_usage": true});
    let streamed = post(lingo, path, &streamed).await;
    assert_eq!(streamed.status, 200, "{}", streamed.body);
    let usage: Vec<Value> = events(&streamed.body)
        .into_iter()
        .filter(|e| !e["usage"].is_null())
        .map(|e| e["usage"].clone())
        .collect();
    assert_eq!(usage.len(), 1, "one usage chunk: {}", streamed.body);
    (whole.json()["usage"].clone(), usage[0].clone())
}

#[tokio::test]
async fn streamed_usage_equals_whole_usage() {
    let lingo = lingo().await;
    let chat = |n: u32| json!({"model": "m", "n": n, "messages": [{"role": "user", "content": "one two three"}]});
    let batch = json!({"model": "m", "prompt": ["a b c", "a b c d"], "max_tokens": 3});
    let cases = [
        ("/v1/chat/completions", chat(1), (3, 3)),
        // n = 3 choices of one 3-token prompt: the prompt once, 3 x 3 completion tokens.
        ("/v1/chat/completions", chat(3), (3, 9)),
        (
            "/v1/completions",
            json!({"model": "m", "prompt": "a b c"}),
            (3, 3),
        ),
        // A batch of a 3-token and a 4-token prompt: both prompts.
        ("/v1/completions", batch, (7, 6)),
    ];
    for (path, body, (prompt, completion)) in cases {
        let (whole, streamed) = both(&lingo, path, body.clone()).await;
        let want = json!({"prompt_tokens": prompt, "completion_tokens": completion,
                          "total_tokens": prompt + completion});
        assert_eq!(whole, want, "{path} {body}");
        assert_eq!(streamed, want, "{path} {body} streamed");
    }
}

#[tokio::test]
async fn the_token_counters_follow_the_same_rule() {
    let lingo = lingo().await;
    let batch = json!({"model": "m", "prompt": ["a b c", "a b c d"], "max_tokens": 3,
                       "stream": true});
    let response = post(&lingo, "/v1/completions", &batch).await;
    assert!(
        response.body.ends_with("data: [DONE]\n\n"),
        "{}",
        response.body
    );
    let tokens = |dir: &str| {
        format!(r#"lingo_tokens_total{{route="prefix /v1",client="team",direction="{dir}"}}"#)
    };
    let text = metrics_when(&lingo, |t| metric(t, &tokens("in")).is_some()).await;
    assert_eq!(metric(&text, &tokens("in")), Some(7.0), "{text}");
    assert_eq!(metric(&text, &tokens("out")), Some(6.0), "{text}");
}

/// A batch with `n` > 1 is refused, streamed or not, naming the field.
#[tokio::test]
async fn batches_with_several_choices_are_refused() {
    let lingo = lingo().await;
    for stream in [false, true] {
        let body = json!({"model": "m", "prompt": ["a", "b"], "n": 2, "stream": stream});
        let response = post(&lingo, "/v1/completions", &body).await;
        assert_eq!(response.status, 400, "{}", response.body);
        let error = &response.json()["error"];
        assert_eq!(error["param"], "n", "{error}");
        assert_eq!(error["type"], "invalid_request_error", "{error}");
    }
}
