//! The official client libraries against lingo: the OpenAI Python SDK
//! (`tests/sdk/openai_chat.py`) on a chat-completions route, and the Ollama Python and
//! JavaScript clients (`tests/sdk/ollama_native.py`, `tests/sdk/ollama_native.mjs`) on a
//! native route over a chat-completions upstream; and the Firecrawl Python and JavaScript
//! SDKs' v1 clients (`tests/sdk/firecrawl_v1.py`, `tests/sdk/firecrawl_v1.mjs`) over a
//! web-data v2-only upstream; and the Firecrawl SDKs' webhook options, v2 and v1 clients, through
//! lingo's webhook relay (`tests/sdk/firecrawl_webhooks.py`, `tests/sdk/firecrawl_webhooks.mjs`);
//! and the OpenAI and Ollama Python clients in front of a flapping backend and a steady one
//! (`tests/sdk/flapping.py`); and the OpenAI Python and JavaScript SDKs against a client's
//! limits (`tests/sdk/openai_limits.py`, `tests/sdk/openai_limits.mjs`): one request and a
//! `RateLimitError` against a spent budget, a retry of their own after `retry-after-ms`
//! against a rate limit.
//!
//! CI installs them (`.ci/run`); where one is missing outside CI, its test prints a
//! `SKIPPED:` line in `cargo test`'s normal output (`pip install openai`, `pip install ollama`,
//! `pip install firecrawl-py`, `npm install --no-save --prefix tests/sdk ollama
//! @mendable/firecrawl-js@4 openai` enable them). With `CI` set, a missing client fails.

mod support;

use std::process::Command;

use hyper::Method;
use lingo::base::dialect::Dialect;
use lingo::mock::knobs::Knobs;
use lingo::table::MockSpec;
use serde_json::json;
use support::receiver::Receiver;
use support::relay::*;
use support::*;

#[tokio::test]
async fn openai_python_sdk_works_unchanged() {
    if !python_has("openai") && !can_run("the openai Python package", "pip install openai") {
        return;
    }
    let lingo = Lingo::start(&table(
        "upstreams:\n  models:\n    mock: { tokens: 4 }\n    speaks: native\n\
         models:\n  gpt-4o-mini: { upstream: models, model: llama3.2 }\n\
         routes:\n  - { path: /v1/chat/completions, speaks: chat-completions, to: models }\n",
    ))
    .await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/openai_chat.py");
    run_client("python3", script, lingo.url("/v1"), "openai sdk: ok").await;
}

/// A table whose client team-a (key `ka`, the scripts' API key) is held to `limit` (a YAML
/// flow entry) on a chat-completions route to a native mock that answers 4 tokens.
fn limited(limit: &str) -> String {
    table(&format!(
        "clients:\n  - name: team-a\n    key: {{ value: ka }}\n    quota:\n      - {limit}\n\
         upstreams:\n  models:\n    mock: {{ tokens: 4 }}\n    speaks: native\n\
         routes:\n  - {{ path: /v1/chat/completions, speaks: chat-completions, to: models }}\n"
    ))
}

/// The `lingo_requests_total` samples answered with `status`, summed.
fn answered(metrics: &str, status: u16) -> f64 {
    let status = format!("status=\"{status}\"");
    metrics
        .lines()
        .filter(|l| l.starts_with("lingo_requests_total{") && l.contains(&status))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// The refusals lingo counted of team-a's limit `limit`.
fn refused(metrics: &str, limit: &str) -> Option<f64> {
    let series = format!("lingo_quota_refused_total{{client=\"team-a\",limit=\"{limit}\"}}");
    metric(metrics, &series)
}

/// The JSON line an SDK script printed.
fn printed_json(printed: &str) -> serde_json::Value {
    printed
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON line in {printed}"))
}

/// Against a spent budget an SDK makes one request and raises its `RateLimitError`, with its
/// default two retries left unused. A budget of 20 tokens admits a first call (which reserves
/// the whole 20, as it sets no `max_tokens`, and is charged the 5 it used); the second would
/// reserve 20 again and does not fit the 15 left. Lingo saw exactly two requests, refused one,
/// and counts 5 used.
///
/// The refusal's `retry-after-ms` is the time until the budget renews (at the next UTC
/// midnight). The JavaScript SDK would sleep that long and then retry were it not for
/// `x-should-retry: false`. The Python SDK declines any wait over two minutes before it reads
/// `x-should-retry`, so outside the last two minutes of a UTC day the long wait alone keeps it
/// from retrying.
async fn sdk_makes_one_request_against_a_spent_budget(
    program: &'static str,
    script: &'static str,
    ok: &str,
) {
    let lingo = Lingo::start(&limited("{ tokens: 20, per: 1d }")).await;
    let args = vec![lingo.url("/v1"), "budget".to_owned()];
    let printed = run_client_with(program, script, args, ok).await;
    let seen = printed_json(&printed);
    let metrics = metrics_when(&lingo, |m| answered(m, 200) + answered(m, 429) >= 2.0).await;
    assert_eq!(answered(&metrics, 200), 1.0, "{seen}\n{metrics}");
    assert_eq!(answered(&metrics, 429), 1.0, "{seen}\n{metrics}");
    assert_eq!(refused(&metrics, "tokens/24h"), Some(1.0), "{metrics}");
    // The first answer settles a moment after the script has read it.
    let budget = || async {
        let quota = get(&lingo.url("/quota")).await.json();
        quota["clients"][0]["limits"][0].clone()
    };
    for _ in 0..200 {
        if budget().await["used"] == 5 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let limit = budget().await;
    assert_eq!(limit["limit"], "tokens/24h", "{limit}");
    assert_eq!(
        (&limit["used"], &limit["remaining"]),
        (&json!(5), &json!(15)),
        "{limit}"
    );
}

/// Against a rate limit an SDK waits the `retry-after-ms` it is told and retries by itself. A
/// bucket of one refilled once a second answers a first call; a second call straight after is
/// refused once, told to wait most of a second, and the SDK's own retry after that wait is
/// answered: the call succeeds, having taken at least the wait. Lingo saw three requests and
/// refused one.
async fn sdk_retries_after_retry_after_ms_against_a_rate_limit(
    program: &'static str,
    script: &'static str,
    ok: &str,
) {
    let lingo = Lingo::start(&limited("{ requests: 60, per: 1m, capacity: 1 }")).await;
    let args = vec![lingo.url("/v1"), "rate".to_owned()];
    let printed = run_client_with(program, script, args, ok).await;
    let timing = printed_json(&printed);
    let wait = timing["retry_after_ms"].as_u64().unwrap();
    let elapsed = timing["elapsed_ms"].as_u64().unwrap();
    // The bucket emptied a moment before the refusal: the wait is most of its second.
    assert!((500..=1000).contains(&wait), "{timing}");
    assert!(elapsed >= wait.saturating_sub(2), "{timing}");
    let metrics = metrics_when(&lingo, |m| answered(m, 200) + answered(m, 429) >= 3.0).await;
    assert_eq!(answered(&metrics, 200), 2.0, "{timing}\n{metrics}");
    assert_eq!(answered(&metrics, 429), 1.0, "{timing}\n{metrics}");
    let series = refused(&metrics, "requests/60s/bucket1");
    assert_eq!(series, Some(1.0), "{metrics}");
}

#[tokio::test]
async fn openai_python_sdk_makes_one_request_against_a_spent_budget() {
    if !python_has("openai") && !can_run("the openai Python package", "pip install openai") {
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/openai_limits.py");
    sdk_makes_one_request_against_a_spent_budget("python3", script, "openai limits: ok").await;
}

#[tokio::test]
async fn openai_python_sdk_retries_after_retry_after_ms_against_a_rate_limit() {
    if !python_has("openai") && !can_run("the openai Python package", "pip install openai") {
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/openai_limits.py");
    sdk_retries_after_retry_after_ms_against_a_rate_limit("python3", script, "openai limits: ok")
        .await;
}

#[tokio::test]
async fn openai_js_sdk_makes_one_request_against_a_spent_budget() {
    if !node_has("openai") {
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/openai_limits.mjs");
    sdk_makes_one_request_against_a_spent_budget("node", script, "openai js limits: ok").await;
}

#[tokio::test]
async fn openai_js_sdk_retries_after_retry_after_ms_against_a_rate_limit() {
    if !node_has("openai") {
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/openai_limits.mjs");
    sdk_retries_after_retry_after_ms_against_a_rate_limit("node", script, "openai js limits: ok")
        .await;
}

/// Whether `python3` can import `module`.
fn python_has(module: &str) -> bool {
    Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .status()
        .is_ok_and(|s| s.success())
}

/// A native route over a `mock:` chat-completions upstream, with an alias for a model the
/// upstream lists.
const NATIVE_OVER_CHAT_COMPLETIONS: &str = "upstreams:\n  chat:\n    mock: { tokens: 4 }\n    \
     speaks: chat-completions\n\
     models:\n  llama3: { upstream: chat, model: \"llama3.2:3b\" }\n\
     routes:\n  - { prefix: /api, speaks: native, to: chat }\n";

/// Runs `program script base_url` off the runtime and asserts it succeeded and printed `ok`.
async fn run_client(program: &'static str, script: &'static str, base_url: String, ok: &str) {
    run_client_with(program, script, vec![base_url], ok).await;
}

/// Runs `program script args...` off the runtime, asserts it succeeded and printed `ok`, and
/// gives what it printed.
async fn run_client_with(
    program: &'static str,
    script: &'static str,
    args: Vec<String>,
    ok: &str,
) -> String {
    let output =
        tokio::task::spawn_blocking(move || Command::new(program).arg(script).args(args).output())
            .await
            .unwrap()
            .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the client script failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains(ok), "{stdout}");
    stdout.into_owned()
}

/// Whether node and the npm `package` are there, in tests/sdk/node_modules where `.ci/run`
/// installs them; if not, [`can_run`] says so (and fails under CI).
fn node_has(package: &str) -> bool {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/sdk/node_modules")
        .join(package)
        .join("package.json");
    let node = Command::new("node").arg("--version").output();
    let there = manifest.is_file() && node.is_ok_and(|o| o.status.success());
    there
        || can_run(
            &format!("node with the {package} npm package in tests/sdk/node_modules"),
            "npm install --no-save --prefix tests/sdk ollama @mendable/firecrawl-js@4 openai",
        )
}

#[tokio::test]
async fn ollama_python_client_works_unchanged_over_chat_completions() {
    if !python_has("ollama") && !can_run("the ollama Python package", "pip install ollama") {
        return;
    }
    let lingo = Lingo::start(&table(NATIVE_OVER_CHAT_COMPLETIONS)).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/ollama_native.py");
    run_client("python3", script, lingo.url(""), "ollama sdk: ok").await;
}

#[tokio::test]
async fn ollama_js_client_works_unchanged_over_chat_completions() {
    if !node_has("ollama") {
        return;
    }
    let lingo = Lingo::start(&table(NATIVE_OVER_CHAT_COMPLETIONS)).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/ollama_native.mjs");
    run_client("node", script, lingo.url(""), "ollama js sdk: ok").await;
}

/// A `mock:` upstream that speaks web-data version 2 only (it 404s `/v1/...` and refuses
/// v1-only keys), with `/v1` and `/v2` routed to it: every v1 response an SDK sees is lingo's
/// translation.
const WEB_DATA_V2_ONLY: &str = "upstreams:\n  fire:\n    mock: {}\n    speaks: web-data-v2\n\
     routes:\n  - { prefix: /v1, to: fire }\n  - { prefix: /v2, to: fire }\n";

/// The v1 calls the SDK scripts make, sent straight at the v2-only mock (no lingo in
/// between): each is a 404, so the scripts passing is lingo's translation and not the mock
/// being lenient.
#[tokio::test]
async fn the_sdk_calls_fail_on_the_v2_only_upstream_itself() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let knobs = Knobs::from_spec(&MockSpec::default()).speaking(Dialect::WebDataV2);
    tokio::spawn(lingo::mock::serve_on(listener, knobs));
    for (method, path, body) in [
        (
            Method::POST,
            "/v1/scrape",
            r#"{"url":"https://example.com","formats":["markdown","extract"],"extract":{"prompt":"t"}}"#,
        ),
        (
            Method::POST,
            "/v1/crawl",
            r#"{"url":"https://example.com","limit":2}"#,
        ),
        (Method::GET, "/v1/crawl/any-id", ""),
        (Method::POST, "/v1/map", r#"{"url":"https://example.com"}"#),
        (Method::POST, "/v1/search", r#"{"query":"lingo","limit":2}"#),
        (Method::GET, "/v1/team/token-usage", ""),
    ] {
        let response = send(request(method, &format!("{base}{path}"), &[], body)).await;
        assert_eq!(response.status, 404, "{path}: {}", response.body);
    }
}

#[tokio::test]
async fn firecrawl_python_sdk_v1_client_works_unchanged_over_a_v2_only_upstream() {
    if !python_has("firecrawl")
        && !can_run(
            "the firecrawl-py Python package",
            "pip install firecrawl-py",
        )
    {
        return;
    }
    let lingo = Lingo::start(&table(WEB_DATA_V2_ONLY)).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/firecrawl_v1.py");
    run_client("python3", script, lingo.url(""), "firecrawl sdk: ok").await;
}

#[tokio::test]
async fn firecrawl_js_sdk_v1_client_works_unchanged_over_a_v2_only_upstream() {
    if !node_has("@mendable/firecrawl-js") {
        return;
    }
    let lingo = Lingo::start(&table(WEB_DATA_V2_ONLY)).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/firecrawl_v1.mjs");
    run_client("node", script, lingo.url(""), "firecrawl js sdk: ok").await;
}

#[tokio::test]
async fn firecrawl_python_sdk_webhooks_reach_the_client_through_the_relay() {
    if !python_has("firecrawl")
        && !can_run(
            "the firecrawl-py Python package",
            "pip install firecrawl-py",
        )
    {
        return;
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/sdk/firecrawl_webhooks.py"
    );
    sdk_webhooks("python3", script, "py", "python").await;
}

#[tokio::test]
async fn firecrawl_js_sdk_webhooks_reach_the_client_through_the_relay() {
    if !node_has("@mendable/firecrawl-js") {
        return;
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/sdk/firecrawl_webhooks.mjs"
    );
    sdk_webhooks("node", script, "js", "javascript").await;
}

/// Runs an SDK's webhook script against lingo (the relay on, the mock behind it) and checks
/// that each job's events reached the receiver, signed with the client's secret: the crawl's
/// five (with the SDK's headers and metadata), the batch's five, the v1 crawl's three pages.
async fn sdk_webhooks(program: &'static str, script: &'static str, prefix: &str, sdk: &str) {
    let receiver = Receiver::ok().await;
    let lingo = Lingo::start(&relay_table(MOCK, "web-data", ALLOW_LOOPBACK)).await;
    let args = vec![lingo.url(""), receiver.url("")];
    let ok = format!(
        "firecrawl {} webhooks: ok",
        if prefix == "py" { "python" } else { "js" }
    );
    let printed = run_client_with(program, script, args, &ok).await;
    let ids: serde_json::Value = printed
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .expect("the jobs' ids");
    for (job, events) in [("crawl", 5), ("batch", 5), ("v1", 3)] {
        let hits = receiver.wait(&format!("/{prefix}-{job}"), events).await;
        for hit in &hits {
            let payload = hit.json();
            assert_eq!(payload["id"], ids[job], "{job}: {payload}");
            assert_standard_signature(hit, CLIENT_SECRET_BYTES);
            if job == "crawl" {
                assert_eq!(payload["metadata"], serde_json::json!({"sdk": sdk}));
                assert_eq!(hit.headers["x-from"], sdk);
            }
            if job == "v1" {
                assert_eq!(payload["type"], "crawl.page");
            }
        }
    }
}

/// A native backend that, when it `flaps`, fails in turn: a good answer, a 500, a connection
/// closed before any response, an answer cut after its first line (each response closes its
/// connection); else it always answers.
async fn flapping_backend(flaps: bool) -> std::net::SocketAddr {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let turn = std::sync::Arc::new(AtomicUsize::new(0));
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let turn = std::sync::Arc::clone(&turn);
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&request).to_string();
                if !head.starts_with("POST /api/chat") {
                    let probe = "HTTP/1.1 200 OK\r\ncontent-length: 13\r\nconnection: close\r\n\r\n{\"models\":[]}";
                    let _ = stream.write_all(probe.as_bytes()).await;
                    return;
                }
                // The body follows its head within the same few reads.
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                let _ = stream
                    .try_read(&mut buf)
                    .map(|n| request.extend_from_slice(&buf[..n]));
                let streamed = !String::from_utf8_lossy(&request).contains("\"stream\":false");
                let turn = if flaps {
                    turn.fetch_add(1, Ordering::Relaxed) % 4
                } else {
                    0
                };
                let reply = flapping_reply(turn, streamed);
                let _ = stream.write_all(reply.as_bytes()).await;
            });
        }
    });
    addr
}

/// Turn `turn`'s reply: 0 whole, 1 a 500, 2 nothing, 3 cut after its first line.
fn flapping_reply(turn: usize, streamed: bool) -> String {
    let line = |content: &str, done: bool| {
        let end = if done {
            ",\"done_reason\":\"stop\",\"prompt_eval_count\":1,\"eval_count\":2"
        } else {
            ""
        };
        format!(
            "{{\"model\":\"m\",\"created_at\":\"2024-01-01T00:00:00Z\",\"message\":{{\"role\":\"assistant\",\"content\":\"{content}\"}},\"done\":{done}{end}}}\n"
        )
    };
    let chunk = |text: &str| format!("{:x}\r\n{text}\r\n", text.len());
    let head = "HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\nconnection: close\r\n";
    match (turn, streamed) {
        (1, _) => "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 17\r\nconnection: close\r\n\r\n{\"error\":\"boom!\"}".into(),
        (2, _) => String::new(),
        (3, true) => format!("{head}transfer-encoding: chunked\r\n\r\n{}", chunk(&line("Hello", false))),
        (3, false) => format!("{head}content-length: 400\r\n\r\n{}", line("Hello", false)),
        (_, true) => format!(
            "{head}transfer-encoding: chunked\r\n\r\n{}{}{}0\r\n\r\n",
            chunk(&line("Hello", false)),
            chunk(&line(" world", false)),
            chunk(&line("", true))
        ),
        (_, false) => {
            let body = line("Hello world", true);
            format!("{head}content-length: {}\r\n\r\n{body}", body.len())
        }
    }
}

#[tokio::test]
async fn openai_and_ollama_clients_get_whole_answers_or_one_error_from_a_flapping_backend() {
    if !python_has("openai") && !can_run("the openai Python package", "pip install openai") {
        return;
    }
    if !python_has("ollama") && !can_run("the ollama Python package", "pip install ollama") {
        return;
    }
    let (a, b) = (flapping_backend(true).await, flapping_backend(false).await);
    let lingo = Lingo::start(&table(&format!(
        "upstreams:\n  models:\n    speaks: native\n    backends:\n      - {{ url: \"http://{a}\" }}\n      - {{ url: \"http://{b}\" }}\n\
         routes:\n  - {{ path: /v1/chat/completions, speaks: chat-completions, to: models }}\n  - {{ prefix: /api, to: models }}\n"
    )))
    .await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/flapping.py");
    run_client("python3", script, lingo.url(""), "flapping: ok").await;
}
