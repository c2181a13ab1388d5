//! The built-in mock backend over sockets: each endpoint, each knob, each failure mode, and
//! the same backend running in-process behind lingo (`mock:` upstreams).

mod support;

use http_body_util::BodyExt;
use hyper::Method;
use serde_json::{Value, json};
use support::*;

fn lines(body: &str) -> Vec<Value> {
    body.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

async fn post(url: &str, body: Value, headers: &[(&str, &str)]) -> WholeResponse {
    send(request(Method::POST, url, headers, &body.to_string())).await
}

#[tokio::test]
async fn chat_streams_ndjson_with_the_requested_token_count() {
    let base = mock_with("").await;
    let response = post(
        &format!("{base}/api/chat"),
        json!({"model": "m", "messages": [{"role": "user", "content": "hi there"}]}),
        &[],
    )
    .await;
    assert_eq!(response.headers["content-type"], "application/x-ndjson");
    let events = lines(&response.body);
    assert_eq!(events.len(), 17, "16 tokens and the closing event");
    assert!(
        events[..16]
            .iter()
            .all(|e| e["done"] == false && e["message"]["role"] == "assistant")
    );
    let last = &events[16];
    assert_eq!(
        (last["done"].clone(), last["done_reason"].clone()),
        (json!(true), json!("stop"))
    );
    assert_eq!(
        (
            last["eval_count"].clone(),
            last["prompt_eval_count"].clone()
        ),
        (json!(16), json!(2))
    );

    for (headers, model) in [
        (&[("x-mock", "tokens=3")][..], "m"),
        (&[][..], "m@tokens=3"),
    ] {
        let response = post(
            &format!("{base}/api/chat"),
            json!({"model": model, "messages": []}),
            headers,
        )
        .await;
        assert_eq!(lines(&response.body).len(), 4, "{headers:?} {model}");
        assert_eq!(
            lines(&response.body)[0]["model"],
            "m",
            "knobs are not part of the model name"
        );
    }
}

#[tokio::test]
async fn chat_non_stream_tools_json_and_length() {
    let base = mock_with("").await;
    let url = format!("{base}/api/chat");
    let whole = post(
        &url,
        json!({"model": "m", "stream": false, "messages": []}),
        &[("x-mock", "tokens=4")],
    )
    .await
    .json();
    assert_eq!(whole["message"]["content"], "Lingo is a mock");
    assert_eq!(whole["done"], true);

    let tools = json!([{"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}, "required": ["city"]}}}]);
    let called = post(
        &url,
        json!({"model": "m", "stream": false, "messages": [], "tools": tools}),
        &[],
    )
    .await
    .json();
    let call = &called["message"]["tool_calls"][0]["function"];
    assert_eq!(call["name"], "get_weather");
    assert_eq!(call["arguments"], json!({"city": "mock"}));

    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}, "ok": {"type": "boolean"}}});
    for (format, want) in [
        (json!("json"), json!({"answer": "mock"})),
        (schema, json!({"n": 0, "ok": true})),
    ] {
        let response = post(
            &url,
            json!({"model": "m", "messages": [], "format": format}),
            &[],
        )
        .await;
        let text: String = lines(&response.body)
            .iter()
            .map(|e| e["message"]["content"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), want);
    }

    let cut = post(
        &url,
        json!({"model": "m", "stream": false, "messages": [], "options": {"num_predict": 2}}),
        &[],
    )
    .await
    .json();
    assert_eq!(
        (
            cut["done_reason"].clone(),
            cut["message"]["content"].clone()
        ),
        (json!("length"), json!("Lingo is"))
    );
}

#[tokio::test]
async fn generate_embed_tags_show() {
    let base = mock_with("").await;
    let generated = post(
        &format!("{base}/api/generate"),
        json!({"model": "m", "prompt": "x", "stream": false}),
        &[("x-mock", "tokens=2")],
    )
    .await
    .json();
    assert_eq!(generated["response"], "Lingo is");
    assert_eq!(generated["context"], json!([1, 2, 3]));

    let embed = post(
        &format!("{base}/api/embed"),
        json!({"model": "e", "input": ["a", "b c"]}),
        &[("x-mock", "embedding_size=8")],
    )
    .await
    .json();
    let vectors = embed["embeddings"].as_array().unwrap();
    assert_eq!(vectors.len(), 2);
    assert_eq!(vectors[0].as_array().unwrap().len(), 8);
    let norm: f64 = vectors[1]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap().powi(2))
        .sum();
    assert!((norm - 1.0).abs() < 1e-3, "normalised: {norm}");
    assert_eq!(embed["prompt_eval_count"], 3);
    let again = post(
        &format!("{base}/api/embed"),
        json!({"model": "e", "input": "a"}),
        &[("x-mock", "embedding_size=8")],
    )
    .await
    .json();
    assert_eq!(again["embeddings"][0], vectors[0], "deterministic");
    let dims = post(
        &format!("{base}/api/embed"),
        json!({"model": "e", "input": "a", "dimensions": 3}),
        &[],
    )
    .await
    .json();
    assert_eq!(dims["embeddings"][0].as_array().unwrap().len(), 3);
    let legacy = post(
        &format!("{base}/api/embeddings"),
        json!({"model": "e", "prompt": "a"}),
        &[],
    )
    .await
    .json();
    assert_eq!(legacy["embedding"].as_array().unwrap().len(), 16);
    let bad = post(
        &format!("{base}/api/embed"),
        json!({"model": "e", "input": 5}),
        &[],
    )
    .await;
    assert_eq!(
        (bad.status.as_u16(), bad.json()),
        (400, json!({"error": "invalid input type"}))
    );

    let missing = post(
        &format!("{base}/api/show"),
        json!({"model": "missing-model"}),
        &[],
    )
    .await;
    assert_eq!(
        (missing.status.as_u16(), missing.json()),
        (404, json!({"error": "model 'missing-model' not found"}))
    );
}

/// The mock's native model entry, every field the real server writes, realistic: what Ollama-style clients
/// parse (a zero size or a dummy digest reads as a broken model in their pickers).
#[tokio::test]
async fn tags_list_complete_realistic_entries() {
    let base = mock_with("").await;
    let tags = get(&format!("{base}/api/tags")).await.json();
    let models = tags["models"].as_array().unwrap();
    let names: Vec<&str> = models.iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["llama3.2:3b", "all-minilm:latest"],
        "the shipped alias's target and an embedding model"
    );
    let mut digests = Vec::new();
    for model in models {
        let fields: Vec<&str> = model
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            fields,
            ["details", "digest", "model", "modified_at", "name", "size"],
            "{model}"
        );
        assert_eq!(model["model"], model["name"]);
        assert_eq!(model["modified_at"], "2026-01-01T00:00:00Z");
        assert!(model["size"].as_u64().unwrap() > 1_000_000, "{model}");
        let digest = model["digest"].as_str().unwrap();
        assert!(
            digest.len() == 64
                && digest
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
            "{digest}"
        );
        digests.push(digest.to_owned());
        let details = &model["details"];
        let fields: Vec<&str> = details
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            fields,
            [
                "families",
                "family",
                "format",
                "parameter_size",
                "parent_model",
                "quantization_level"
            ],
        );
        assert_eq!(details["format"], "gguf");
        assert_eq!(details["families"], json!([details["family"]]));
    }
    assert_ne!(digests[0], digests[1], "a digest per model");
    assert_eq!(
        (
            models[0]["details"]["parameter_size"].clone(),
            models[0]["details"]["quantization_level"].clone()
        ),
        (json!("3.2B"), json!("Q4_K_M"))
    );
    let again = get(&format!("{base}/api/tags")).await.json();
    assert_eq!(again, tags, "deterministic");
}

/// `/api/show`: the real server's fields (`model_info` spelled as the real server spells it), the
/// details of the model asked for.
#[tokio::test]
async fn show_describes_the_model_asked_for() {
    let base = mock_with("").await;
    let tags = get(&format!("{base}/api/tags")).await.json();
    for (asked, listed) in [
        ("llama3.2:3b", 0),
        ("all-minilm", 1),
        ("all-minilm:latest", 1),
        ("anything-else", 0),
    ] {
        let show = post(&format!("{base}/api/show"), json!({"model": asked}), &[]).await;
        assert_eq!(show.status, 200, "{asked}: {}", show.body);
        let show = show.json();
        for field in [
            "modified_at",
            "template",
            "system",
            "modelfile",
            "parameters",
        ] {
            assert!(show[field].is_string(), "{asked}: {field} in {show}");
        }
        assert_eq!(show["model"], asked);
        assert_eq!(
            show["details"], tags["models"][listed]["details"],
            "{asked}"
        );
        assert!(show["capabilities"].is_array());
        let arch = show["model_info"]["general.architecture"].as_str().unwrap();
        assert_eq!(arch, tags["models"][listed]["details"]["family"]);
        assert!(
            show["model_info"][format!("{arch}.context_length")]
                .as_u64()
                .unwrap()
                > 0
        );
        assert!(show.get("modelinfo").is_none());
    }
    let legacy = post(
        &format!("{base}/api/show"),
        json!({"name": "all-minilm"}),
        &[],
    )
    .await
    .json();
    assert_eq!(legacy["capabilities"], json!(["embedding"]));
}

#[tokio::test]
async fn failure_knobs() {
    let base = mock_with("").await;
    let url = format!("{base}/api/chat");
    let body = json!({"model": "m", "messages": []});
    let failed = post(&url, body.clone(), &[("x-mock", "status=500")]).await;
    assert_eq!(
        (failed.status.as_u16(), failed.json()),
        (500, json!({"error": "mock failure: status 500"}))
    );
    // A busy server refuses what runs a model, in a native server's words for a full queue,
    // and still answers its listings.
    let busy = post(&url, body.clone(), &[("x-mock", "busy=true")]).await;
    let words = "server busy, please try again.  maximum pending requests exceeded";
    assert_eq!(
        (busy.status.as_u16(), busy.json()),
        (503, json!({ "error": words }))
    );
    let tags = [("x-mock", "busy=true")];
    let listed = send(request(Method::GET, &format!("{base}/api/tags"), &tags, "")).await;
    assert_eq!(listed.status, 200);
    // The models loaded, as `/api/ps` lists them: each a listed model's entry.
    let loaded = [("x-mock", "loaded=llama3.2:3b,other")];
    let ps = send(request(Method::GET, &format!("{base}/api/ps"), &loaded, "")).await;
    let models = ps.json()["models"].as_array().unwrap().clone();
    let names: Vec<&str> = models.iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["llama3.2:3b", "other"]);
    assert!(
        models
            .iter()
            .all(|m| m["size_vram"].is_u64() && m["expires_at"].is_string())
    );

    let errored = post(&url, body.clone(), &[("x-mock", "error_after=2")]).await;
    let events = lines(&errored.body);
    assert_eq!(events.len(), 3);
    assert_eq!(events[2], json!({"error": "mock error after 2 tokens"}));

    let response = client()
        .request(request(
            Method::POST,
            &url,
            &[("x-mock", "cut_after=2")],
            &body.to_string(),
        ))
        .await
        .unwrap();
    let mut stream = response.into_body();
    let mut got = Vec::new();
    let outcome = loop {
        match stream.frame().await {
            Some(Ok(frame)) => got.extend_from_slice(&frame.into_data().unwrap()),
            Some(Err(e)) => break Err(e),
            None => break Ok(()),
        }
    };
    assert!(outcome.is_err(), "the connection is cut, not ended cleanly");
    assert_eq!(String::from_utf8(got).unwrap().lines().count(), 2);

    let bad = post(&url, body, &[("x-mock", "tokenz=2")]).await;
    assert_eq!(bad.status, 400);
    assert!(
        bad.json()["error"]
            .as_str()
            .unwrap()
            .contains("unknown mock knob `tokenz`")
    );
}

#[tokio::test]
async fn webdata_shapes_and_links_from_host() {
    let base = mock_with("").await;
    let scraped = post(
        &format!("{base}/v1/scrape"),
        json!({"url": "https://example.com"}),
        &[],
    )
    .await
    .json();
    assert_eq!(scraped["success"], true);
    assert_eq!(
        scraped["data"]["metadata"]["sourceURL"],
        "https://example.com"
    );
    let started = post(
        &format!("{base}/v2/crawl"),
        json!({"url": "https://example.com"}),
        &[],
    )
    .await
    .json();
    let id = started["id"].as_str().unwrap();
    let host = base.trim_start_matches("http://");
    assert_eq!(started["url"], format!("https://{host}/v2/crawl/{id}"));
    let page = get(&format!("{base}/v2/crawl/{id}?limit=2")).await.json();
    assert_eq!(page["data"].as_array().unwrap().len(), 2);
    assert_eq!(
        page["next"],
        format!("https://{host}/v2/crawl/{id}?skip=2&limit=2")
    );
    let v1 = get(&format!("{base}/v1/team/token-usage")).await.json();
    assert_eq!(
        v1,
        json!({"success": true, "data": {"remaining_tokens": 1_000_000}})
    );
    let v2 = get(&format!("{base}/v2/team/token-usage")).await.json();
    assert_eq!(v2["data"]["remainingTokens"], 1_000_000);
    let unknown = get(&format!("{base}/v1/nothing")).await;
    assert_eq!(
        (unknown.status.as_u16(), unknown.json()["success"].clone()),
        (404, json!(false))
    );
}

/// `mock:` upstreams run the same backend inside lingo; lingo's own limits apply to it.
#[tokio::test]
async fn mock_upstream_inside_lingo() {
    let yaml = table(
        "upstreams:\n  models:\n    mock: { tokens: 5 }\n    speaks: native\n    timeouts: { first_byte: 300ms, idle: 300ms }\n  \
           webdata:\n    mock: {}\n    speaks: web-data\n\
         routes:\n  - { prefix: /api, to: models }\n  - { prefix: /v1, to: webdata }\n",
    );
    let lingo = Lingo::start(&yaml).await;
    let chat = post(
        &lingo.url("/api/chat"),
        json!({"model": "m", "messages": []}),
        &[],
    )
    .await;
    assert_eq!(lines(&chat.body).len(), 6);
    let slow = post(
        &lingo.url("/api/chat"),
        json!({"model": "m@first_token_delay=5s", "messages": []}),
        &[],
    )
    .await;
    assert_eq!(
        slow.status, 504,
        "the first-byte limit applies to the mock too"
    );
    let started = post(
        &lingo.url("/v1/crawl"),
        json!({"url": "https://example.com"}),
        &[],
    )
    .await
    .json();
    assert!(
        started["url"]
            .as_str()
            .unwrap()
            .starts_with(&format!("http://{}/v1/crawl/", lingo.addr))
    );
}
