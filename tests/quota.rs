//! Rate limits and budgets per client, with counters held in the process, over real sockets:
//! each unit and window (and a bucket), what each dialect's clients are told (status, body,
//! `retry-after-ms`, `x-should-retry`, `x-ratelimit-*`), settlement at the end of an answer
//! (streamed included; a client that leaves is refunded; a count the upstream left out stands
//! at its estimate), shadow limits, per-route limits, and a reload that keeps the counters.
//! What is used is read from `GET /quota`, which lists each client's limits.

mod support;

use std::time::Duration;

use hyper::Method;
use serde_json::{Value, json};
use support::*;

/// A table with client `team-a` (key `ka`) limited by `quota` (YAML flow entries, one a
/// line), client `team-b` (key `kb`) unlimited, a native mock answering 4 tokens, a web-data
/// v2 mock, and routes for each dialect.
fn limited(quota: &[&str]) -> String {
    let quota: String = quota.iter().map(|q| format!("      - {q}\n")).collect();
    table(&format!(
        "clients:\n  - name: team-a\n    key: {{ value: ka }}\n    quota:\n{quota}\
         \x20 - name: team-b\n    key: {{ value: kb }}\n\
         upstreams:\n  models:\n    mock: {{ tokens: 4 }}\n    speaks: native\n\
         \x20 web:\n    mock: {{}}\n    speaks: web-data-v2\n\
         routes:\n  - {{ path: /v1/chat/completions, speaks: chat-completions, to: models }}\n\
         \x20 - {{ prefix: /api, to: models }}\n  - {{ prefix: /v2, to: web }}\n"
    ))
}

const A: (&str, &str) = ("authorization", "Bearer ka");
const B: (&str, &str) = ("authorization", "Bearer kb");

async fn post(lingo: &Lingo, path: &str, key: (&str, &str), body: &Value) -> WholeResponse {
    let url = lingo.url(path);
    send(request(Method::POST, &url, &[key], &body.to_string())).await
}

fn chat_request(stream: bool, max_tokens: Option<u64>) -> Value {
    let mut body = json!({"model": "m", "stream": stream,
        "messages": [{"role": "user", "content": "hi"}]});
    if let Some(max) = max_tokens {
        body["max_tokens"] = max.into();
    }
    body
}

/// What `GET /quota` says of team-a's limit `id`: (used, remaining).
async fn used(lingo: &Lingo, id: &str) -> (u64, u64) {
    let quota = get(&lingo.url("/quota")).await.json();
    let clients = quota["clients"].as_array().unwrap();
    let team_a = clients.iter().find(|c| c["client"] == "team-a").unwrap();
    let limits = team_a["limits"].as_array().unwrap();
    let limit = limits
        .iter()
        .find(|l| l["limit"] == id)
        .unwrap_or_else(|| panic!("no limit {id} in {quota}"));
    (
        limit["used"].as_u64().unwrap(),
        limit["remaining"].as_u64().unwrap(),
    )
}

/// `used` once it equals `want` (an answer settles as its body is dropped, a moment after the
/// client has read its end).
async fn used_becomes(lingo: &Lingo, id: &str, want: u64) {
    for _ in 0..200 {
        if used(lingo, id).await.0 == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{id} used {:?}, never {want}", used(lingo, id).await);
}

fn header<'a>(response: &'a WholeResponse, name: &str) -> &'a str {
    response
        .headers
        .get(name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", response.headers))
        .to_str()
        .unwrap()
}

#[tokio::test]
async fn a_request_limit_refuses_the_next_one_the_way_the_chat_sdks_read_it() {
    let lingo = Lingo::start(&limited(&["{ requests: 2, per: 1h }"])).await;
    for left in ["1", "0"] {
        let ok = post(
            &lingo,
            "/v1/chat/completions",
            A,
            &chat_request(false, None),
        )
        .await;
        assert_eq!(ok.status, 200, "{}", ok.body);
        assert_eq!(header(&ok, "x-ratelimit-limit-requests"), "2");
        assert_eq!(header(&ok, "x-ratelimit-remaining-requests"), left);
        assert!(header(&ok, "x-ratelimit-reset-requests").ends_with('s'));
    }
    let refused = post(
        &lingo,
        "/v1/chat/completions",
        A,
        &chat_request(false, None),
    )
    .await;
    assert_eq!(refused.status, 429);
    let error = &refused.json()["error"];
    assert_eq!(error["type"], "requests");
    assert_eq!(error["code"], "rate_limit_exceeded");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with("rate limit of 2 requests per 1h reached; retry in"),
        "{error}"
    );
    let wait_ms: u64 = header(&refused, "retry-after-ms").parse().unwrap();
    let wait_s: u64 = header(&refused, "retry-after").parse().unwrap();
    assert!(wait_ms > 0 && wait_ms <= 3_600_000, "{wait_ms}");
    assert_eq!(wait_s, wait_ms.div_ceil(1000));
    assert_eq!(header(&refused, "x-ratelimit-remaining-requests"), "0");
    assert!(refused.headers.get("x-should-retry").is_none());
    // Another client is not held back by team-a's limit, and carries no limit fields.
    let other = post(
        &lingo,
        "/v1/chat/completions",
        B,
        &chat_request(false, None),
    )
    .await;
    assert_eq!(other.status, 200);
    assert!(other.headers.get("x-ratelimit-limit-requests").is_none());
    let metrics = get(&lingo.url("/metrics")).await.body;
    let series = "lingo_quota_refused_total{client=\"team-a\",limit=\"requests/1h\"}";
    assert_eq!(metric(&metrics, series), Some(1.0), "{metrics}");
}

/// A spent budget (a window of a day or more) is `insufficient_quota`, with
/// `x-should-retry: false`. Each request reserves its estimate (a token for every four bytes
/// of its body, and its `max_tokens`) and is charged the answer's own count.
#[tokio::test]
async fn a_token_budget_settles_each_answer_and_then_says_it_is_spent() {
    let lingo = Lingo::start(&limited(&["{ tokens: 40, per: 1d }"])).await;
    let body = chat_request(false, Some(4));
    let estimate = (body.to_string().len() as u64).div_ceil(4) + 4;
    // "hi" is 1 prompt token and the mock answers 4: 5 a request.
    let mut charged = 0;
    while charged + estimate <= 40 {
        let ok = post(&lingo, "/v1/chat/completions", A, &body).await;
        assert_eq!(ok.status, 200, "{}", ok.body);
        assert_eq!(ok.json()["usage"]["total_tokens"], 5);
        charged += 5;
        used_becomes(&lingo, "tokens/24h", charged).await;
    }
    assert!(charged >= 10, "the test's budget admits a few requests");
    let spent = post(&lingo, "/v1/chat/completions", A, &body).await;
    assert_eq!(spent.status, 429, "{}", spent.body);
    let error = &spent.json()["error"];
    assert_eq!(error["type"], "insufficient_quota");
    assert_eq!(error["code"], "insufficient_quota");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with("the budget of 40 tokens per 24h is spent; it renews in"),
        "{error}"
    );
    assert_eq!(header(&spent, "x-should-retry"), "false");
    assert_eq!(header(&spent, "x-ratelimit-limit-tokens"), "40");
    let left: u64 = header(&spent, "x-ratelimit-remaining-tokens")
        .parse()
        .unwrap();
    assert_eq!(left, 40 - charged);
}

/// Each unit counts its own part of the usage; a reservation larger than its limit's cap
/// reserves the cap.
#[tokio::test]
async fn input_and_output_tokens_count_their_own_direction() {
    let lingo = Lingo::start(&limited(&[
        "{ input_tokens: 100, per: 1m }",
        "{ output_tokens: 100, per: 1m, max_reservation: 50 }",
    ]))
    .await;
    for _ in 0..3 {
        let body = chat_request(false, Some(1_000));
        let ok = post(&lingo, "/v1/chat/completions", A, &body).await;
        assert_eq!(ok.status, 200, "{}", ok.body);
        // While it runs, 50 are held of the output limit: 4 are charged once it ends.
    }
    used_becomes(&lingo, "input_tokens/60s", 3).await;
    used_becomes(&lingo, "output_tokens/60s", 12).await;
}

/// A streamed answer settles at its end, from the usage the translator counted; a client that
/// leaves in the middle of a stream is refunded all but the request.
#[tokio::test]
async fn a_stream_settles_at_its_end_and_a_client_that_leaves_is_refunded() {
    let lingo = Lingo::start(&limited(&[
        "{ tokens: 1000, per: 1h }",
        "{ requests: 100, per: 1h }",
    ]))
    .await;
    let streamed = post(
        &lingo,
        "/v1/chat/completions",
        A,
        &chat_request(true, Some(8)),
    )
    .await;
    assert_eq!(streamed.status, 200);
    assert_eq!(header(&streamed, "x-ratelimit-limit-tokens"), "1000");
    assert!(streamed.body.contains("data: [DONE]"));
    used_becomes(&lingo, "tokens/1h", 5).await;

    // A slow stream, left after its first frame.
    let slow = json!({"model": "m@token_delay=300ms", "stream": true,
        "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8});
    let url = lingo.url("/v1/chat/completions");
    let response = client()
        .request(request(Method::POST, &url, &[A], &slow.to_string()))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    use http_body_util::BodyExt;
    let first = body.frame().await.unwrap().unwrap();
    assert!(first.data_ref().is_some());
    // While it runs, its reservation is held: the prompt's estimate and its 8 tokens.
    assert!(used(&lingo, "tokens/1h").await.0 > 5);
    drop(body);
    used_becomes(&lingo, "tokens/1h", 5).await;
    used_becomes(&lingo, "requests/1h", 2).await;
}

/// A shadow limit refuses nothing; what it would have refused is counted.
#[tokio::test]
async fn a_shadow_limit_counts_and_refuses_nothing() {
    let lingo = Lingo::start(&limited(&["{ requests: 1, per: 1h, shadow: true }"])).await;
    for _ in 0..3 {
        let ok = post(&lingo, "/api/chat", A, &chat_request(false, None)).await;
        assert_eq!(ok.status, 200, "{}", ok.body);
        // It refuses nothing, so it tells clients nothing to slow down for.
        assert!(ok.headers.get("x-ratelimit-remaining-requests").is_none());
    }
    let metrics = get(&lingo.url("/metrics")).await.body;
    let series = "lingo_quota_shadow_refused_total{client=\"team-a\",limit=\"requests/1h\"}";
    assert_eq!(metric(&metrics, series), Some(2.0), "{metrics}");
    assert_eq!(
        used(&lingo, "requests/1h").await.0,
        1,
        "counted up to its size"
    );
}

/// A bucket holds its capacity and refills at its rate: 2 at once, then one each half second.
#[tokio::test]
async fn a_bucket_admits_a_burst_then_its_rate() {
    let lingo = Lingo::start(&limited(&["{ requests: 2, per: 1s, capacity: 2 }"])).await;
    for _ in 0..2 {
        let ok = post(&lingo, "/api/chat", A, &chat_request(false, None)).await;
        assert_eq!(ok.status, 200);
    }
    let refused = post(&lingo, "/api/chat", A, &chat_request(false, None)).await;
    assert_eq!(refused.status, 429);
    let wait: u64 = header(&refused, "retry-after-ms").parse().unwrap();
    assert!((1..=500).contains(&wait), "{wait}");
    tokio::time::sleep(Duration::from_millis(wait + 20)).await;
    let again = post(&lingo, "/api/chat", A, &chat_request(false, None)).await;
    assert_eq!(again.status, 200, "room again after retry-after-ms");
}

/// Native clients get `{"error": "..."}`; web-data clients `{"success": false, ...}`, 429 for a
/// rate limit and 402 for spent credits, charged from the answers' `creditsUsed`.
#[tokio::test]
async fn native_and_web_data_clients_are_refused_in_their_own_shapes() {
    let lingo = Lingo::start(&limited(&[
        "{ requests: 1, per: 1m, route: /api }",
        "{ credits: 6, per: 30d }",
    ]))
    .await;
    assert_eq!(
        post(&lingo, "/api/chat", A, &chat_request(false, None))
            .await
            .status,
        200
    );
    let native = post(&lingo, "/api/chat", A, &chat_request(false, None)).await;
    assert_eq!(native.status, 429);
    let message = native.json()["error"].as_str().unwrap().to_owned();
    assert!(
        message.starts_with("rate limit of 1 requests per 60s"),
        "{message}"
    );
    assert!(native.headers.get("retry-after").is_some());

    // The mock charges 5 credits a page (the estimate was 1): the second page does not fit.
    let scrape = json!({"url": "https://example.com"});
    let page = post(&lingo, "/v2/scrape", A, &scrape).await;
    assert_eq!(page.status, 200, "{}", page.body);
    used_becomes(&lingo, "credits/30d", 5).await;
    let more = post(
        &lingo,
        "/v2/scrape",
        A,
        &json!({"url": "https://example.com", "limit": 2}),
    )
    .await;
    assert_eq!(more.status, 402, "{}", more.body);
    let body = more.json();
    assert_eq!(body["success"], false);
    assert_eq!(body["code"], "INSUFFICIENT_QUOTA");
    assert!(
        body["error"].as_str().unwrap().contains("credits"),
        "{body}"
    );
    // The `/api` limit is the route's: web-data calls never counted against it.
    assert_eq!(used(&lingo, "requests/60s on prefix /api").await.0, 1);
}

/// A limit for one model counts only the requests that name it.
#[tokio::test]
async fn a_limit_for_one_model_counts_only_its_requests() {
    let lingo = Lingo::start(&limited(&["{ requests: 1, per: 1h, model: big }"])).await;
    let named = |model: &str| json!({"model": model, "messages": []});
    assert_eq!(
        post(&lingo, "/api/chat", A, &named("big")).await.status,
        200
    );
    let refused = post(&lingo, "/api/chat", A, &named("big")).await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    for _ in 0..3 {
        let other = post(&lingo, "/api/chat", A, &named("small")).await;
        assert_eq!(other.status, 200, "{}", other.body);
    }
    assert_eq!(used(&lingo, "requests/1h for big").await, (1, 0));
}

/// An upstream that leaves out the prompt's count (a native server does when the prompt was
/// cached): the estimate stands, and a metric says so.
#[tokio::test]
async fn a_count_left_out_stands_at_its_estimate() {
    let upstream = Backend::json(
        200,
        r#"{"model":"m","message":{"role":"assistant","content":"ok"},"done":true,"eval_count":3}"#,
    )
    .await;
    let yaml = limited(&[
        "{ input_tokens: 1000, per: 1h }",
        "{ output_tokens: 1000, per: 1h }",
    ])
    .replace("mock: { tokens: 4 }", &format!("url: {}", upstream.url()));
    let lingo = Lingo::start(&yaml).await;
    let body = json!({"model": "m", "stream": false, "messages": []});
    let url = lingo.url("/api/chat");
    let gzip = ("accept-encoding", "gzip");
    let ok = send(request(Method::POST, &url, &[A, gzip], &body.to_string())).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    // Its usage is read in the answer as it passes, so it is asked for uncompressed.
    assert!(upstream.last().headers.get("accept-encoding").is_none());
    // A token for every four bytes of the request body.
    let estimate = (body.to_string().len() as u64).div_ceil(4);
    used_becomes(&lingo, "input_tokens/1h", estimate).await;
    used_becomes(&lingo, "output_tokens/1h", 3).await;
    let metrics = get(&lingo.url("/metrics")).await.body;
    let series = "lingo_quota_estimated_total{client=\"team-a\",unit=\"input_tokens\"}";
    assert_eq!(metric(&metrics, series), Some(1.0), "{metrics}");
}

/// A client that leaves before its answer has begun is refunded: the request's future ends,
/// and its reservation with it.
#[tokio::test]
async fn a_client_that_leaves_before_the_answer_is_refunded() {
    let lingo = Lingo::start(&limited(&["{ tokens: 1000, per: 1h }"])).await;
    let slow = json!({"model": "m@first_token_delay=5s", "stream": false, "max_tokens": 8,
        "messages": [{"role": "user", "content": "hi"}]});
    let url = lingo.url("/v1/chat/completions");
    let asking = tokio::spawn(send(request(Method::POST, &url, &[A], &slow.to_string())));
    // Its reservation is held while it waits for its answer...
    for _ in 0..200 {
        if used(&lingo, "tokens/1h").await.0 > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(used(&lingo, "tokens/1h").await.0 > 0, "held while it ran");
    // ...and given back when the client goes before the answer's head.
    asking.abort();
    used_becomes(&lingo, "tokens/1h", 0).await;
}

/// An upstream's error refunds what was reserved.
#[tokio::test]
async fn an_upstream_error_is_refunded() {
    let lingo = Lingo::start(&limited(&["{ tokens: 1000, per: 1h }"])).await;
    let body = json!({"model": "missing-model", "messages": [], "max_tokens": 5});
    let failed = post(&lingo, "/api/chat", A, &body).await;
    assert_eq!(failed.status, 404, "{}", failed.body);
    used_becomes(&lingo, "tokens/1h", 0).await;
}

/// A reload that keeps a limit's unit, window and route keeps its counter, whatever its
/// amount becomes.
#[tokio::test]
async fn a_reload_keeps_the_counters() {
    let lingo = Lingo::start(&limited(&["{ requests: 2, per: 1h }"])).await;
    for _ in 0..2 {
        assert_eq!(
            post(&lingo, "/api/chat", A, &chat_request(false, None))
                .await
                .status,
            200
        );
    }
    let refused = post(&lingo, "/api/chat", A, &chat_request(false, None)).await;
    assert_eq!(refused.status, 429);
    std::fs::write(
        lingo.config_path(),
        limited(&["{ requests: 3, per: 1h }"]).replace("127.0.0.1:0", &lingo.addr.to_string()),
    )
    .unwrap();
    lingo.reloader.reload(true).unwrap();
    assert_eq!(used(&lingo, "requests/1h").await, (2, 1));
    assert_eq!(
        post(&lingo, "/api/chat", A, &chat_request(false, None))
            .await
            .status,
        200
    );
    assert_eq!(
        post(&lingo, "/api/chat", A, &chat_request(false, None))
            .await
            .status,
        429
    );
}
