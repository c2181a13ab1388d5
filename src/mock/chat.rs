//! The mock's chat-completions dialect: `/v1/chat/completions`, `/v1/completions`,
//! `/v1/embeddings`, `/v1/models` and `/v1/models/{id}` in the official shapes, with the
//! native mock's words, vectors, models and knobs (`tokens`, `token_delay`, `error_after`,
//! `cut_after`, `status`, ...). Errors are the official error object, mid-stream as a
//! `data: {"error": ...}` event with no `[DONE]` after it.
//!
//! What a request gets: `tools` -> one call per tool (up to two), split over chunks;
//! `response_format` `json_object`/`json_schema` -> JSON content; else `tokens` words.
//! `reasoning_effort` (other than `none`) -> three words of `reasoning_content` first.
//! `max_completion_tokens`/`max_tokens` under the words -> cut there, `finish_reason:
//! length` (`/v1/completions`: `max_tokens` defaults to 16, as the official API).

use hyper::Method;
use serde_json::{Value, json};

use super::chat_reply::{CREATED, Call, Kind, Reply};
use super::knobs::Knobs;
use super::native::{self, MODELS};
use super::stream::{Drip, Ending};
use super::{Answer, json_answer};
use crate::body::Body;
use crate::translate::embeddings::encode_base64;

/// The official error object: `invalid_request_error` for 4xx, `server_error` for 5xx.
pub fn error_body(status: u16, message: &str) -> Value {
    let kind = if status < 500 {
        "invalid_request_error"
    } else {
        "server_error"
    };
    let code = (status == 404 && message.contains("does not exist")).then_some("model_not_found");
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

/// An error answer in the official shape.
pub fn error(status: u16, message: &str) -> Answer {
    json_answer(status, &error_body(status, message))
}

/// Serves one request on a chat-completions mock.
pub fn route(method: &Method, path: &str, request: &Value, knobs: &Knobs, model: &str) -> Answer {
    let needs_model = path != "/v1/models" && !path.starts_with("/v1/models/");
    if needs_model && model.is_empty() {
        return error(400, "you must provide a model parameter");
    }
    if model.starts_with("missing") {
        return error(404, &missing(model));
    }
    match (method, path) {
        (&Method::POST, "/v1/chat/completions") => chat(request, knobs, model),
        (&Method::POST, "/v1/completions") => text(request, knobs, model),
        (&Method::POST, "/v1/embeddings") => embeddings(request, knobs, model),
        (&Method::GET, "/v1/models") => models(),
        (&Method::GET, p) if p.starts_with("/v1/models/") => one_model(&p["/v1/models/".len()..]),
        _ => error(404, &format!("Invalid URL ({method} {path})")),
    }
}

fn missing(model: &str) -> String {
    format!("The model `{model}` does not exist or you do not have access to it.")
}

fn chat(request: &Value, knobs: &Knobs, model: &str) -> Answer {
    if request["messages"].as_array().is_none_or(Vec::is_empty) {
        return error(400, "messages must be a non-empty array");
    }
    let format = match request
        .pointer("/response_format/type")
        .and_then(Value::as_str)
    {
        Some("json_object") => Some(json!("json")),
        Some("json_schema") => {
            let schema = request.pointer("/response_format/json_schema/schema");
            Some(schema.cloned().unwrap_or(json!("json")))
        }
        _ => None,
    };
    let pieces = match &format {
        Some(format) => native::json_pieces(format),
        None => native::word_pieces(knobs.tokens),
    };
    let mut reply = Reply::new(Kind::Chat, model, pieces, native::prompt_tokens(request));
    let tools = request["tools"].as_array().map_or(&[][..], Vec::as_slice);
    if !tools.is_empty() {
        reply.pieces.clear();
        reply = reply.with_calls(tools.iter().take(2).enumerate().map(call).collect());
    }
    let effort = request["reasoning_effort"]
        .as_str()
        .filter(|e| *e != "none");
    if effort.is_some() {
        reply.reasoning = native::word_pieces(3);
    }
    let limit = request["max_completion_tokens"]
        .as_u64()
        .or(request["max_tokens"].as_u64());
    answer(reply, request, knobs, limit)
}

/// Tool call `i` of `tool`: the native mock's arguments, as a JSON string.
fn call((i, tool): (usize, &Value)) -> Call {
    let name = tool
        .pointer("/function/name")
        .and_then(Value::as_str)
        .unwrap_or("tool");
    (
        format!("call_mock{i:04}"),
        name.to_owned(),
        native::arguments(tool).to_string(),
    )
}

fn text(request: &Value, knobs: &Knobs, model: &str) -> Answer {
    let prompt_ok = match &request["prompt"] {
        Value::String(_) => true,
        Value::Array(p) => !p.is_empty() && p.iter().all(Value::is_string),
        _ => false,
    };
    if !prompt_ok {
        return error(400, "prompt must be a string or an array of strings");
    }
    let prompt_tokens = match &request["prompt"] {
        Value::Array(p) => p
            .iter()
            .map(|p| native::prompt_tokens(&json!({"prompt": p})))
            .sum(),
        _ => native::prompt_tokens(request),
    };
    let reply = Reply::new(
        Kind::Text,
        model,
        native::word_pieces(knobs.tokens),
        prompt_tokens,
    );
    let limit = request["max_tokens"].as_u64().or(Some(16));
    answer(reply, request, knobs, limit)
}

/// Cuts the words at `limit`, then streams or answers whole, as the knobs say.
fn answer(mut reply: Reply, request: &Value, knobs: &Knobs, limit: Option<u64>) -> Answer {
    if let Some(limit) = limit
        .map(|l| l as usize)
        .filter(|l| *l < reply.pieces.len())
    {
        reply.pieces.truncate(limit);
        reply.finish = "length";
    }
    reply.include_usage = request.pointer("/stream_options/include_usage") == Some(&json!(true));
    let ending = match (knobs.error_after, knobs.cut_after) {
        (Some(n), _) => Ending::ErrorAfter(n),
        (None, Some(n)) => Ending::CutAfter(n),
        (None, None) => Ending::Done,
    };
    if request["stream"].as_bool().unwrap_or(false) {
        let body = Body::new(Drip::new(reply, knobs.token_delay, ending));
        return Answer::ok("text/event-stream", body);
    }
    match ending {
        Ending::Done => json_answer(200, &reply.whole()),
        Ending::ErrorAfter(n) => error(500, &format!("mock error after {n} tokens")),
        Ending::CutAfter(_) => Answer::cut(),
    }
}

fn embeddings(request: &Value, knobs: &Knobs, model: &str) -> Answer {
    let inputs: Vec<&str> = match &request["input"] {
        Value::String(s) if !s.is_empty() => vec![s.as_str()],
        Value::Array(items)
            if !items.is_empty()
                && items
                    .iter()
                    .all(|i| i.as_str().is_some_and(|s| !s.is_empty())) =>
        {
            items.iter().filter_map(Value::as_str).collect()
        }
        _ => {
            return error(
                400,
                "input must be a non-empty string or array of non-empty strings",
            );
        }
    };
    let size = match request["dimensions"].as_u64() {
        Some(d) if d > 0 && d < u64::from(knobs.embedding_size) => d as usize,
        _ => knobs.embedding_size as usize,
    };
    let base64 = match request["encoding_format"].as_str() {
        None | Some("float") => false,
        Some("base64") => true,
        Some(other) => {
            return error(
                400,
                &format!("encoding_format must be float or base64, not {other}"),
            );
        }
    };
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, text)| {
            let v = native::vector(text, size, true);
            let embedding = if base64 {
                json!(encode_base64(&v))
            } else {
                json!(v)
            };
            json!({"object": "embedding", "index": index, "embedding": embedding})
        })
        .collect();
    let tokens: usize = inputs.iter().map(|t| t.split_whitespace().count()).sum();
    json_answer(
        200,
        &json!({"object": "list", "data": data, "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}),
    )
}

fn model_entry(id: &str) -> Value {
    json!({"id": id, "object": "model", "created": CREATED, "owned_by": "lingo-mock"})
}

/// `/v1/models`: the models the native mock lists.
fn models() -> Answer {
    let data: Vec<Value> = MODELS.iter().map(|m| model_entry(m.name)).collect();
    json_answer(200, &json!({"object": "list", "data": data}))
}

/// `/v1/models/{id}`: any id (it may contain `/`) but those starting with `missing`.
fn one_model(id: &str) -> Answer {
    if id.starts_with("missing") {
        return error(404, &missing(id));
    }
    json_answer(200, &model_entry(id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::stream::Script;
    use crate::translate::native::{Meta, NativeStream, Output, Stamp, whole};
    use http_body_util::BodyExt;

    async fn body(answer: Answer) -> (u16, String) {
        let Answer::Response(r) = answer else {
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
    async fn whole_answers_in_the_official_shapes() {
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
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(status, 200);
        assert_eq!(answer["object"], "chat.completion");
        assert_eq!(answer["choices"][0]["message"]["content"], "Lingo is a");
        assert_eq!(
            answer["choices"][0]["message"]["reasoning_content"],
            "Lingo is a"
        );
        assert_eq!(answer["choices"][0]["finish_reason"], "length");
        assert_eq!(
            answer["usage"],
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
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            (&answer["object"], &answer["choices"][0]["finish_reason"]),
            (&json!("text_completion"), &json!("length"))
        );
        assert_eq!(answer["usage"]["prompt_tokens"], 3);
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
        let request = json!({"model": "e", "input": ["a", "b c"], "encoding_format": "base64", "dimensions": 4});
        let (_, text) = body(route(
            &Method::POST,
            "/v1/embeddings",
            &request,
            &knobs(2),
            "e",
        ))
        .await;
        let answer: Value = serde_json::from_str(&text).unwrap();
        let vector = crate::translate::embeddings::decode_base64(
            answer["data"][1]["embedding"].as_str().unwrap(),
        );
        assert_eq!(vector.map(|v| v.len()), Some(4));
        assert_eq!(
            answer["usage"],
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
        assert!(
            frames[0].contains(r#""arguments":"""#) && frames[0].contains(r#""role":"assistant""#)
        );
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
}
