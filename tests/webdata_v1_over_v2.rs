//! Web-data v1 clients over a v2-only upstream, over sockets: lingo in front of
//! the built-in mock speaking `web-data-v2` (which 404s on `/v1/...` and refuses v1-only
//! keys, so an untranslated call fails loudly). `/v1/...` is translated both ways, `/v2/...`
//! passes, and what v2 has no home for is refused in the v1 shape.

mod support;

use hyper::Method;
use serde_json::{Value, json};
use support::*;

async fn lingo() -> Lingo {
    let yaml = table(
        "upstreams:\n  fc:\n    mock: {}\n    speaks: web-data-v2\n\
         routes:\n  - { prefix: /v1, to: fc }\n  - { prefix: /v2, to: fc }\n",
    );
    Lingo::start(&yaml).await
}

async fn post(lingo: &Lingo, path: &str, body: Value) -> WholeResponse {
    send(request(
        Method::POST,
        &lingo.url(path),
        &[],
        &body.to_string(),
    ))
    .await
}

#[tokio::test]
async fn scrape_with_extract_responds_with_extract_and_v1_defaults() {
    let lingo = lingo().await;
    let response = post(
        &lingo,
        "/v1/scrape",
        json!({"url": "https://example.com",
        "formats": ["markdown", "extract", "screenshot@fullPage"],
        "extract": {"schema": {"type": "object", "properties": {"title": {"type": "string"}}}}}),
    )
    .await;
    assert_eq!(response.status, 200, "{}", response.body);
    let data = &response.json()["data"];
    assert_eq!(data["extract"], json!({"title": "mock title"}));
    assert!(data.get("json").is_none());
    assert_eq!(data["screenshot"], "https://mock.invalid/full.png");
    // v1's defaults went up explicitly: basic proxy, no cache.
    assert_eq!(
        (
            &data["metadata"]["proxyUsed"],
            &data["metadata"]["cacheState"]
        ),
        (&json!("basic"), &json!("miss"))
    );
    let pdf = post(
        &lingo,
        "/v1/scrape",
        json!({"url": "https://example.com/a.pdf", "parsePDF": false}),
    )
    .await;
    assert_eq!(pdf.json()["data"]["markdown"], "JVBERi0xLjQK");
}

#[tokio::test]
async fn a_v1_crawl_stays_v1_on_every_status_page() {
    let lingo = lingo().await;
    let started = post(
        &lingo,
        "/v1/crawl",
        json!({"url": "https://example.com", "maxDepth": 3,
        "allowBackwardLinks": true, "ignoreSitemap": true,
        "scrapeOptions": {"formats": ["markdown", "extract"], "extract": {"prompt": "title"}}}),
    )
    .await;
    assert_eq!(started.status, 200, "{}", started.body);
    let started = started.json();
    let id = started["id"].as_str().unwrap();
    let url = format!("http://{}/v1/crawl/{id}", lingo.addr);
    assert_eq!(started["url"], url);
    // Each `get` is a new connection.
    let first = get(&format!("{url}?limit=2")).await.json();
    assert_eq!(first["next"], format!("{url}?skip=2&limit=2"));
    let second = get(first["next"].as_str().unwrap()).await.json();
    for doc in [&first["data"][0], &first["data"][1], &second["data"][0]] {
        assert_eq!(doc["extract"], json!({"title": "Mock page"}), "{doc}");
        assert!(doc.get("json").is_none(), "{doc}");
    }
    let batch = post(
        &lingo,
        "/v1/batch/scrape",
        json!({"urls": ["https://example.com"],
        "formats": ["json"], "jsonOptions": {"prompt": "p"}}),
    )
    .await
    .json();
    let page = get(batch["url"].as_str().unwrap()).await.json();
    assert!(batch["url"].as_str().unwrap().contains("/v1/batch/scrape/"));
    assert_eq!(page["data"][0]["json"], json!({"title": "Mock page"}));
    assert!(page["data"][0].get("extract").is_none());
}

#[tokio::test]
async fn a_job_lingo_did_not_see_start_gets_both_names() {
    let lingo = lingo().await;
    let started = post(
        &lingo,
        "/v2/crawl",
        json!({"url": "https://example.com",
        "scrapeOptions": {"formats": [{"type": "json"}]}}),
    )
    .await
    .json();
    let id = started["id"].as_str().unwrap();
    assert_eq!(
        started["url"],
        format!("http://{}/v2/crawl/{id}", lingo.addr),
        "v2 passes, re-based"
    );
    let page = get(&lingo.url(&format!("/v1/crawl/{id}"))).await.json();
    assert_eq!(page["data"][0]["extract"], json!({"title": "Mock page"}));
    assert_eq!(page["data"][0]["json"], page["data"][0]["extract"]);
    let cancel = send(request(
        Method::DELETE,
        &lingo.url(&format!("/v1/crawl/{id}")),
        &[],
        "",
    ))
    .await;
    assert_eq!(cancel.json(), json!({"status": "cancelled"}));
    let errors = get(&lingo.url(&format!("/v1/crawl/{id}/errors")))
        .await
        .json();
    assert_eq!(errors, json!({"errors": [], "robotsBlocked": []}));
}

#[tokio::test]
async fn map_search_usage_and_active_in_v1_shapes() {
    let lingo = lingo().await;
    let map = post(
        &lingo,
        "/v1/map",
        json!({"url": "https://example.com", "sitemapOnly": true}),
    )
    .await
    .json();
    assert_eq!(
        map["links"],
        json!([
            "https://example.com",
            "https://example.com/about",
            "https://example.com/docs"
        ])
    );
    let search = post(&lingo, "/v1/search", json!({"query": "q", "limit": 2}))
        .await
        .json();
    assert_eq!(search["data"].as_array().unwrap().len(), 2);
    assert!(search.get("creditsUsed").is_none());
    let none = post(&lingo, "/v1/search", json!({"query": "noresults"}))
        .await
        .json();
    assert_eq!(
        (&none["data"], &none["warning"]),
        (&json!([]), &json!("No search results found"))
    );
    let extract = post(
        &lingo,
        "/v1/extract",
        json!({"urls": ["https://example.com"], "prompt": "p"}),
    )
    .await
    .json();
    let status = get(&lingo.url(&format!("/v1/extract/{}", extract["id"].as_str().unwrap())))
        .await
        .json();
    assert_eq!(status["status"], "completed");
    let tokens = get(&lingo.url("/v1/team/token-usage")).await.json();
    assert_eq!(
        tokens["data"],
        json!({"remaining_tokens": 1_000_000, "plan_tokens": 1_000_000,
        "billing_period_start": "2026-01-01T00:00:00.000Z", "billing_period_end": "2026-02-01T00:00:00.000Z"})
    );
    let credits = get(&lingo.url("/v1/team/credit-usage")).await.json();
    assert_eq!(credits["data"]["remaining_credits"], 1_000_000);
    let active = get(&lingo.url("/v1/crawl/active")).await.json();
    let options = &active["crawls"][0]["options"];
    assert_eq!(
        (&options["ignoreSitemap"], &options["allowBackwardLinks"]),
        (&json!(true), &json!(true))
    );
    assert_eq!(
        options["scrapeOptions"]["formats"],
        json!(["markdown", "json"])
    );
    assert_eq!(options["scrapeOptions"]["parsePDF"], true);
}

#[tokio::test]
async fn refusals_are_v1_shaped() {
    let lingo = lingo().await;
    let agent = post(
        &lingo,
        "/v1/scrape",
        json!({"url": "https://example.com", "agent": {"model": "FIRE-1"}}),
    )
    .await;
    assert_eq!(agent.status, 400);
    let body = agent.json();
    assert_eq!(body["success"], false);
    assert_eq!(body["details"][0]["path"], json!(["agent"]));
    let unknown = post(
        &lingo,
        "/v1/crawl",
        json!({"url": "https://example.com", "search_tool_name": "x"}),
    )
    .await;
    assert_eq!(
        (
            unknown.status.as_u16(),
            &unknown.json()["details"][0]["keys"]
        ),
        (400, &json!(["search_tool_name"]))
    );
    let rule = post(
        &lingo,
        "/v1/scrape",
        json!({"url": "https://example.com", "formats": ["extract"]}),
    )
    .await;
    assert_eq!(
        (rule.status.as_u16(), &rule.json()["details"][0]["path"]),
        (400, &json!(["extract"]))
    );
    let llms = post(&lingo, "/v1/llmstxt", json!({"url": "https://example.com"})).await;
    assert_eq!(llms.status, 501);
    assert_eq!(
        llms.json(),
        json!({"success": false, "error": "/v1/llmstxt has no v2 equivalent on this upstream"})
    );
    let deep = get(&lingo.url("/v1/deep-research/x")).await;
    assert_eq!(deep.status, 501);
}

#[tokio::test]
async fn upstream_errors_keep_status_and_envelope() {
    let lingo = lingo().await;
    let headers = [("x-mock", "status=429")];
    let response = send(request(
        Method::GET,
        &lingo.url("/v1/team/token-usage"),
        &headers,
        "",
    ))
    .await;
    assert_eq!(response.status, 429);
    assert_eq!(
        response.json(),
        json!({"success": false, "error": "mock failure: status 429"})
    );
}

#[tokio::test]
async fn lingo_check_says_which_calls_are_translated() {
    let yaml = table(
        "upstreams:\n  fc:\n    mock: {}\n    speaks: web-data-v2\n\
         routes:\n  - { prefix: /v1, to: fc }\n  - { prefix: /v2, to: fc }\n",
    );
    let table = lingo::config::load_str(&yaml, std::path::Path::new("proxy.yaml")).unwrap();
    assert!(table.warnings.is_empty(), "{:?}", table.warnings);
    let summary = lingo::config::summary::summary(&table);
    assert!(
        summary.contains("web-data -> fc (web-data-v2)"),
        "{summary}"
    );
    assert!(summary.contains("translate v1 -> v2"), "{summary}");
    assert!(
        summary.contains("(web-data-v2)  pass-through (version 2)"),
        "{summary}"
    );
}

#[tokio::test]
async fn a_rate_limit_gets_the_retry_after_its_message_names() {
    let body = r#"{"success":false,"error":"Rate limit exceeded. Consumed (req/min): 11, Remaining (req/min): 0. Upgrade your plan at https://firecrawl.dev/pricing for increased rate limits or please retry after 25s, resets at Mon Nov 23 2026"}"#;
    let backend = Backend::json(429, body).await;
    let yaml = table(&format!(
        "upstreams:\n  fc:\n    url: {}\n    speaks: web-data-v2\n    auth: {{ bearer: {{ value: fc-upstream-key }} }}\n\
         routes:\n  - {{ prefix: /v1, to: fc }}\n",
        backend.url()
    ));
    let lingo = Lingo::start(&yaml).await;
    let gzip = [("accept-encoding", "gzip")];
    let url = lingo.url("/v1/team/token-usage?x=1");
    let response = send(request(Method::GET, &url, &gzip, "")).await;
    assert_eq!(response.status, 429);
    assert_eq!(response.headers["retry-after"], "25");
    assert_eq!(response.body, body);
    let seen = backend.last();
    assert_eq!(seen.uri, "/v2/team/token-usage?x=1");
    assert_eq!(seen.headers["authorization"], "Bearer fc-upstream-key");
    assert_eq!(
        seen.headers["accept-encoding"], "identity",
        "lingo reads the response, so it must come uncompressed"
    );
}

/// The upstream's own fields go on with a v1 response told from its v2 one, a success's and a
/// refusal's alike: its own `Retry-After` wins over the one its message names.
#[tokio::test]
async fn the_upstreams_own_fields_go_on_with_a_translated_response() {
    for (status, body) in [
        (200, r#"{"success":true,"data":{"remainingCredits":5}}"#),
        (429, r#"{"success":false,"error":"please retry after 25s"}"#),
    ] {
        let backend = Backend::start(move |_| async move {
            let mut response = json_response(status, body);
            let fields = response.fields_mut();
            fields.insert("x-ratelimit-remaining", "0".parse().unwrap());
            fields.insert("retry-after", "9".parse().unwrap());
            response
        })
        .await;
        let yaml = table(&format!(
            "upstreams:\n  fc:\n    url: {}\n    speaks: web-data-v2\n\
             routes:\n  - {{ prefix: /v1, to: fc }}\n",
            backend.url()
        ));
        let lingo = Lingo::start(&yaml).await;
        let url = lingo.url("/v1/team/credit-usage");
        let response = send(request(Method::GET, &url, &[], "")).await;
        assert_eq!(response.status, status);
        assert_eq!(response.headers["x-ratelimit-remaining"], "0", "{status}");
        assert_eq!(response.headers["retry-after"], "9", "{status}");
        assert_eq!(backend.last().uri, "/v2/team/credit-usage");
    }
}

#[tokio::test]
async fn a_v2_validation_error_keeps_its_code_and_details_and_points_at_v1_docs() {
    let body = r#"{"success":false,"code":"BAD_REQUEST","error":"Bad Request","details":[{"code":"unrecognized_keys","keys":["x"],"path":[],"message":"Unrecognized key in body -- please review the v2 API documentation for request body changes"}]}"#;
    let backend = Backend::json(400, body).await;
    let yaml = table(&format!(
        "upstreams:\n  fc:\n    url: {}\n    speaks: web-data-v2\n\
         routes:\n  - {{ prefix: /v1, to: fc }}\n",
        backend.url()
    ));
    let lingo = Lingo::start(&yaml).await;
    let response = post(&lingo, "/v1/scrape", json!({"url": "https://example.com"})).await;
    assert_eq!(response.status, 400, "{}", response.body);
    let mut expected: Value = serde_json::from_str(body).unwrap();
    expected["details"][0]["message"] = json!(
        "Unrecognized key in body -- please review the v1 API documentation for request body changes"
    );
    assert_eq!(response.json(), expected);
}
