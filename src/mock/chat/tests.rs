//! The chat-completions mock: whole responses, errors, models and embeddings, and its streams
//! read back by lingo's own native translator (the two dialects must agree).

use super::*;
use crate::mock::stream::Script;
use crate::translate::native::{Meta, NativeStream, Output, Stamp, whole};
use http_body_util::BodyExt;

async fn body(response: Handled) -> (u16, String) {
    let Handled::Response(r) = response else {
        return (0, String::new());
    };
    let status = r.status().as_u16();
    let bytes = r.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

fn knobs(tokens: u32) -> Knobs {
    let mut k = Knobs::from_spec(&crate::table::MockSpec::default());
    k.tokens = tokens;
    k
}

/// The SSE a reply streams, event by event, as the Drip would send it.
fn frames(mut reply: Reply) -> Vec<String> {
    let mut out: Vec<String> = (0..reply.len())
        .map(|i| String::from_utf8(reply.token(i).to_vec()).unwrap())
        .collect();
    out.push(String::from_utf8(reply.done().to_vec()).unwrap());
    out
}

/// The native lines lingo's translator makes of `sse`: the two dialects agree.
fn native(sse: &str, output: Output) -> Vec<Value> {
    let meta = Meta {
        model: "m".into(),
        output,
    };
    let clock = Box::new(|| Stamp {
        created_at: "t".into(),
        elapsed: std::time::Duration::ZERO,
    });
    let mut stream = NativeStream::new(meta, clock);
    let mut out = Vec::new();
    for line in sse.lines() {
        out.extend(stream.on_line(line.as_bytes()).unwrap());
    }
    out.extend(stream.finish().unwrap());
    out.iter()
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

#[tokio::test]
async fn whole_responses_in_the_official_shapes() {
    let request = json!({"model": "m", "messages": [{"role": "user", "content": "two words"}],
        "reasoning_effort": "low", "max_tokens": 3});
    let (status, text) = body(route(
        &Method::POST,
        "/v1/chat/completions",
        &request,
        &knobs(5),
        "m",
    ))
    .await;
    let response: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(status, 200);
    assert_eq!(response["object"], "chat.completion");
    assert_eq!(response["choices"][0]["message"]["content"], "Lingo is a");
    assert_eq!(
        response["choices"][0]["message"]["reasoning_content"],
        "Lingo is a"
    );
    assert_eq!(response["choices"][0]["finish_reason"], "length");
    assert_eq!(
        response["usage"],
        json!({"prompt_tokens": 2, "completion_tokens": 6, "total_tokens": 8})
    );
    let meta = Meta {
        model: "m".into(),
        output: Output::Chat,
    };
    let stamp = Stamp {
        created_at: "t".into(),
        elapsed: std::time::Duration::ZERO,
    };
    assert!(whole(text.as_bytes(), &meta, &stamp).is_ok());
    let text_req = json!({"model": "m", "prompt": ["a b", "c"]});
    let (_, text) = body(route(
        &Method::POST,
        "/v1/completions",
        &text_req,
        &knobs(20),
        "m",
    ))
    .await;
    let response: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (
            &response["object"],
            &response["choices"][0]["finish_reason"]
        ),
        (&json!("text_completion"), &json!("length"))
    );
    assert_eq!(response["usage"]["prompt_tokens"], 3);
}

#[tokio::test]
async fn errors_models_and_embeddings() {
    for (method, path, request, status, needle) in [
        (
            Method::POST,
            "/v1/chat/completions",
            json!({"messages": [1]}),
            400,
            "model parameter",
        ),
        (
            Method::POST,
            "/v1/chat/completions",
            json!({"model": "m"}),
            400,
            "messages",
        ),
        (
            Method::POST,
            "/v1/chat/completions",
            json!({"model": "missing-x"}),
            404,
            "does not exist",
        ),
        (
            Method::GET,
            "/v1/models/missing-y",
            Value::Null,
            404,
            "does not exist",
        ),
        (
            Method::POST,
            "/v1/embeddings",
            json!({"model": "e", "input": []}),
            400,
            "input",
        ),
        (
            Method::POST,
            "/v1/completions",
            json!({"model": "e"}),
            400,
            "prompt",
        ),
        (
            Method::POST,
            "/v1/nope",
            json!({"model": "e"}),
            404,
            "Invalid URL (POST /v1/nope)",
        ),
    ] {
        let model = request["model"].as_str().unwrap_or("");
        let (got, text) = body(route(&method, path, &request, &knobs(2), model)).await;
        let error: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(got, status, "{path} {request}");
        assert!(
            error["error"]["message"].as_str().unwrap().contains(needle),
            "{text}"
        );
        let kind = if status < 500 {
            "invalid_request_error"
        } else {
            "server_error"
        };
        assert_eq!(error["error"]["type"], kind);
    }
    let (_, text) = body(route(
        &Method::GET,
        "/v1/models",
        &Value::Null,
        &knobs(2),
        "",
    ))
    .await;
    let ids: Vec<Value> = serde_json::from_str::<Value>(&text).unwrap()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].clone())
        .collect();
    assert_eq!(ids, [json!("llama3.2:3b"), json!("all-minilm:latest")]);
    let (_, text) = body(route(
        &Method::GET,
        "/v1/models/org/m:q4",
        &Value::Null,
        &knobs(2),
        "",
    ))
    .await;
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["id"],
        "org/m:q4"
    );
    let request =
        json!({"model": "e", "input": ["a", "b c"], "encoding_format": "base64", "dimensions": 4});
    let (_, text) = body(route(
        &Method::POST,
        "/v1/embeddings",
        &request,
        &knobs(2),
        "e",
    ))
    .await;
    let response: Value = serde_json::from_str(&text).unwrap();
    let vector = crate::translate::embeddings::decode_base64(
        response["data"][1]["embedding"].as_str().unwrap(),
    );
    assert_eq!(vector.map(|v| v.len()), Some(4));
    assert_eq!(
        response["usage"],
        json!({"prompt_tokens": 3, "total_tokens": 3})
    );
}

#[test]
fn streams_split_tool_calls_and_end_with_usage_and_done() {
    let tools = json!([
        {"type": "function", "function": {"name": "weather", "parameters": {"type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city", "days"]}}},
        {"type": "function", "function": {"name": "time"}}]);
    let calls = tools
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(call)
        .collect();
    let mut reply = Reply::new(Kind::Chat, "m", Vec::new(), 2).with_calls(calls);
    reply.include_usage = true;
    let frames = frames(reply);
    assert!(frames.len() >= 5, "split over chunks: {frames:?}");
    assert!(frames[0].contains(r#""arguments":"""#) && frames[0].contains(r#""role":"assistant""#));
    let last = frames.last().unwrap();
    assert!(
        last.contains(r#""finish_reason":"tool_calls""#)
            && last.contains(r#""completion_tokens":2"#)
    );
    assert!(last.ends_with("data: [DONE]\n\n"));
    let lines = native(&frames.concat(), Output::Chat);
    assert_eq!(
        lines[0]["message"]["tool_calls"],
        json!([{"id": "call_mock0000",
        "function": {"index": 0, "name": "weather", "arguments": {"city": "mock", "days": 0}}}])
    );
    assert_eq!(
        lines[1]["message"]["tool_calls"][0]["function"]["name"],
        "time"
    );
    assert_eq!(
        (&lines[2]["done"], &lines[2]["eval_count"]),
        (&json!(true), &json!(2))
    );
}

#[test]
fn streams_of_words_reasoning_and_errors() {
    let mut reply = Reply::new(Kind::Chat, "m", native::word_pieces(3), 1);
    reply.reasoning = native::word_pieces(2);
    let lines = native(&frames(reply).concat(), Output::Chat);
    assert_eq!(lines.len(), 6);
    assert_eq!(
        (
            &lines[0]["message"]["thinking"],
            &lines[2]["message"]["content"]
        ),
        (&json!("Lingo"), &json!("Lingo"))
    );
    assert!(
        lines[5].get("prompt_eval_count").is_none(),
        "no usage chunk was asked for"
    );
    let text = Reply::new(Kind::Text, "m", native::word_pieces(2), 1);
    let lines = native(&frames(text).concat(), Output::Generate);
    assert_eq!(
        (&lines[1]["response"], &lines[2]["done"]),
        (&json!(" is"), &json!(true))
    );
    let empty = frames(Reply::new(Kind::Chat, "m", Vec::new(), 1));
    assert!(
        empty[0].contains(r#""role":"assistant","content":"""#)
            || empty[0].contains(r#""content":"","role":"assistant""#)
    );
    let mut reply = Reply::new(Kind::Chat, "m", Vec::new(), 1);
    let error: Value = serde_json::from_str(
        String::from_utf8(reply.error(2).to_vec())
            .unwrap()
            .trim_start_matches("data: "),
    )
    .unwrap();
    assert_eq!(error["error"]["message"], "mock error after 2 tokens");
    assert_eq!(error["error"]["type"], "server_error");
}
