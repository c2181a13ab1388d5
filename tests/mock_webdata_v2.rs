//! The mock as a version-2-only web-data upstream (`speaks: web-data-v2`), over sockets: 404
//! on `/v1/...`, v2's strict bodies, and v2's response shapes for every endpoint lingo translates.

mod support;

use hyper::Method;
use serde_json::{Value, json};
use support::*;

async fn post(url: &str, body: Value) -> WholeResponse {
    send(request(Method::POST, url, &[], &body.to_string())).await
}

#[tokio::test]
async fn v1_paths_are_404() {
    let base = mock_with("speaks=web-data-v2").await;
    for (method, path) in [
        (Method::POST, "/v1/scrape"),
        (Method::GET, "/v1/team/token-usage"),
        (Method::GET, "/v1/crawl/x"),
    ] {
        let response = send(request(method, &format!("{base}{path}"), &[], "{}")).await;
        assert_eq!(response.status, 404, "{path}");
        assert_eq!(response.json()["success"], false);
    }
}

#[tokio::test]
async fn v1_keys_and_formats_are_refused_as_v2_does() {
    let base = mock_with("speaks=web-data-v2").await;
    let cases = [
        (
            "/v2/scrape",
            json!({"url": "https://e.com", "parsePDF": false}),
            json!(["parsePDF"]),
        ),
        (
            "/v2/crawl",
            json!({"url": "https://e.com", "maxDepth": 2, "ignoreSitemap": true}),
            json!(["maxDepth", "ignoreSitemap"]),
        ),
        (
            "/v2/crawl",
            json!({"url": "https://e.com", "scrapeOptions": {"jsonOptions": {}}}),
            json!(["jsonOptions"]),
        ),
    ];
    for (path, body, keys) in cases {
        let response = post(&format!("{base}{path}"), body).await;
        assert_eq!(response.status, 400, "{path}");
        let issue = &response.json()["details"][0];
        assert_eq!(
            (&issue["code"], &issue["keys"]),
            (&json!("unrecognized_keys"), &keys)
        );
    }
    let response = post(
        &format!("{base}/v2/scrape"),
        json!({"url": "u", "formats": ["extract"]}),
    )
    .await;
    assert_eq!(
        (
            response.status.as_u16(),
            &response.json()["details"][0]["path"]
        ),
        (400, &json!(["formats", 0]))
    );
}

#[tokio::test]
async fn scrape_honours_format_objects_and_parsers() {
    let base = mock_with("speaks=web-data-v2").await;
    let body = json!({"url": "https://e.com", "proxy": "basic", "maxAge": 0, "formats": [
        "markdown",
        {"type": "json", "schema": {"type": "object", "properties": {"title": {}}}},
        {"type": "screenshot", "fullPage": true},
        {"type": "changeTracking", "modes": ["git-diff"]}]});
    let data = post(&format!("{base}/v2/scrape"), body).await.json()["data"].clone();
    assert_eq!(data["json"], json!({"title": "mock title"}));
    assert_eq!(data["screenshot"], "https://mock.invalid/full.png");
    assert_eq!(data["changeTracking"]["diff"], json!({"text": ""}));
    assert_eq!(
        (
            &data["metadata"]["proxyUsed"],
            &data["metadata"]["cacheState"]
        ),
        (&json!("basic"), &json!("miss"))
    );
    let pdf = |parsers: Value| json!({"url": "https://e.com/a.pdf", "parsers": parsers});
    let parsed = post(&format!("{base}/v2/scrape"), pdf(json!(["pdf"])))
        .await
        .json();
    assert!(
        parsed["data"]["markdown"]
            .as_str()
            .unwrap()
            .starts_with("# Mock PDF")
    );
    let raw = post(&format!("{base}/v2/scrape"), pdf(json!([])))
        .await
        .json();
    assert_eq!(raw["data"]["markdown"], "JVBERi0xLjQK");
    assert_eq!(raw["data"]["metadata"]["creditsUsed"], 1);
    let defaults = post(
        &format!("{base}/v2/scrape"),
        json!({"url": "https://e.com"}),
    )
    .await
    .json();
    assert_eq!(defaults["data"]["metadata"]["proxyUsed"], "auto");
    assert!(defaults["data"].get("json").is_none());
}

#[tokio::test]
async fn jobs_remember_their_json_format_in_their_id() {
    let base = mock_with("speaks=web-data-v2").await;
    let host = base.trim_start_matches("http://");
    let started = post(
        &format!("{base}/v2/crawl"),
        json!({"url": "https://e.com",
        "scrapeOptions": {"formats": ["markdown", {"type": "json", "prompt": "p"}]}}),
    )
    .await
    .json();
    let id = started["id"].as_str().unwrap();
    assert_eq!(started["url"], format!("https://{host}/v2/crawl/{id}"));
    let page = get(&format!("{base}/v2/crawl/{id}?limit=1")).await.json();
    assert_eq!(page["data"][0]["json"], json!({"title": "Mock page"}));
    assert_eq!(
        page["next"],
        format!("https://{host}/v2/crawl/{id}?skip=1&limit=1")
    );
    let batch = post(
        &format!("{base}/v2/batch/scrape"),
        json!({"urls": ["https://e.com"]}),
    )
    .await
    .json();
    let id = batch["id"].as_str().unwrap();
    let page = get(&format!("{base}/v2/batch/scrape/{id}")).await.json();
    assert!(page["data"][0].get("json").is_none());
    assert!(page.get("next").is_none());
}

#[tokio::test]
async fn map_search_extract_usage_and_active_in_v2_shapes() {
    let base = mock_with("speaks=web-data-v2").await;
    let map = post(&format!("{base}/v2/map"), json!({"url": "https://e.com/"}))
        .await
        .json();
    assert_eq!(
        map["links"][1],
        json!({"url": "https://e.com/about", "title": "Mock page"})
    );
    let search = post(
        &format!("{base}/v2/search"),
        json!({"query": "q", "limit": 2,
        "scrapeOptions": {"formats": ["markdown"]}}),
    )
    .await
    .json();
    let web = search["data"]["web"].as_array().unwrap();
    assert_eq!(
        (web.len(), &web[0]["position"], &search["creditsUsed"]),
        (2, &json!(1), &json!(2))
    );
    assert!(web[0]["markdown"].is_string());
    let none = post(&format!("{base}/v2/search"), json!({"query": "noresults"}))
        .await
        .json();
    assert_eq!(none["data"], json!({"web": []}));
    let extract = post(
        &format!("{base}/v2/extract"),
        json!({"urls": ["https://e.com"]}),
    )
    .await
    .json();
    assert_eq!(extract["urlTrace"], json!([]));
    let status = get(&format!(
        "{base}/v2/extract/{}",
        extract["id"].as_str().unwrap()
    ))
    .await
    .json();
    assert_eq!(status["status"], "completed");
    let tokens = get(&format!("{base}/v2/team/token-usage")).await.json();
    assert_eq!(tokens["data"]["planTokens"], 1_000_000);
    assert!(tokens["data"]["billingPeriodEnd"].is_string());
    let credits = get(&format!("{base}/v2/team/credit-usage")).await.json();
    assert_eq!(credits["data"]["remainingCredits"], 1_000_000);
    let queue = get(&format!("{base}/v2/team/queue-status")).await.json();
    assert_eq!(
        (
            &queue["success"],
            &queue["maxConcurrency"],
            &queue["mostRecentSuccess"]
        ),
        (&json!(true), &json!(2), &Value::Null)
    );
    let active = get(&format!("{base}/v2/crawl/active")).await.json();
    assert_eq!(active["crawls"][0]["options"]["sitemap"], "skip");
    let cancel = send(request(
        Method::DELETE,
        &format!("{base}/v2/crawl/x"),
        &[],
        "",
    ))
    .await;
    assert_eq!(cancel.json(), json!({"status": "cancelled"}));
}
