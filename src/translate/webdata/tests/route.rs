//! The path map.

use super::*;

#[test]
fn every_v1_path_has_its_v2_counterpart() {
    let cases: &[(&str, &str, Option<&str>, Call, &str)] = &[
        ("POST", "/v1/scrape", None, Call::Scrape, "/v2/scrape"),
        (
            "GET",
            "/v1/scrape/j1",
            None,
            Call::ScrapeStatus,
            "/v2/scrape/j1",
        ),
        ("POST", "/v1/crawl", None, Call::Crawl, "/v2/crawl"),
        (
            "GET",
            "/v1/crawl/j1",
            Some("skip=40&limit=10"),
            Call::CrawlStatus,
            "/v2/crawl/j1?skip=40&limit=10",
        ),
        ("DELETE", "/v1/crawl/j1", None, Call::Same, "/v2/crawl/j1"),
        (
            "GET",
            "/v1/crawl/j1/errors",
            None,
            Call::Same,
            "/v2/crawl/j1/errors",
        ),
        (
            "GET",
            "/v1/crawl/active",
            None,
            Call::Active,
            "/v2/crawl/active",
        ),
        (
            "GET",
            "/v1/crawl/ongoing",
            None,
            Call::Active,
            "/v2/crawl/active",
        ),
        (
            "POST",
            "/v1/batch/scrape",
            None,
            Call::Batch,
            "/v2/batch/scrape",
        ),
        (
            "GET",
            "/v1/batch/scrape/j2",
            Some("skip=1"),
            Call::BatchStatus,
            "/v2/batch/scrape/j2?skip=1",
        ),
        (
            "DELETE",
            "/v1/batch/scrape/j2",
            None,
            Call::Same,
            "/v2/batch/scrape/j2",
        ),
        (
            "GET",
            "/v1/batch/scrape/j2/errors",
            None,
            Call::Same,
            "/v2/crawl/j2/errors",
        ),
        ("POST", "/v1/map", None, Call::Map, "/v2/map"),
        ("POST", "/v1/search", None, Call::Search, "/v2/search"),
        ("POST", "/v1/extract", None, Call::Extract, "/v2/extract"),
        ("GET", "/v1/extract/j3", None, Call::Same, "/v2/extract/j3"),
        (
            "GET",
            "/v1/team/token-usage",
            None,
            Call::TokenUsage,
            "/v2/team/token-usage",
        ),
        (
            "GET",
            "/v1/team/credit-usage",
            None,
            Call::CreditUsage,
            "/v2/team/credit-usage",
        ),
        (
            "GET",
            "/v1/team/token-usage/historical",
            Some("byApiKey=true"),
            Call::Same,
            "/v2/team/token-usage/historical?byApiKey=true",
        ),
        (
            "GET",
            "/v1/team/credit-usage/historical",
            None,
            Call::Same,
            "/v2/team/credit-usage/historical",
        ),
        (
            "GET",
            "/v1/team/queue-status",
            None,
            Call::Same,
            "/v2/team/queue-status",
        ),
        (
            "GET",
            "/v1/concurrency-check",
            None,
            Call::Same,
            "/v2/concurrency-check",
        ),
        (
            "GET",
            "/v1/crawl/j1/",
            Some(""),
            Call::CrawlStatus,
            "/v2/crawl/j1",
        ),
    ];
    for (method, path, query, call, v2) in cases {
        let got = route(method, path, *query).unwrap_or_else(|r| panic!("{path}: {r:?}"));
        assert_eq!(
            (got.call, got.path_and_query.as_str()),
            (*call, *v2),
            "{method} {path}"
        );
    }
}

#[test]
fn v1_endpoints_without_v2_counterpart_are_501_naming_the_path() {
    for (method, path) in [
        ("POST", "/v1/llmstxt"),
        ("GET", "/v1/llmstxt/j1"),
        ("POST", "/v1/deep-research"),
        ("GET", "/v1/deep-research/j1"),
        ("POST", "/v1/x402/search"),
        ("POST", "/v1/schedules"),
        ("PATCH", "/v1/schedules/s1"),
        ("POST", "/v1/fireclaw"),
    ] {
        let refusal = route(method, path, None).unwrap_err();
        assert_eq!(refusal.status, 501, "{path}");
        let body: Value = serde_json::from_slice(&refusal.body()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"success": false, "error": format!("{path} has no v2 equivalent on this upstream")}),
        );
    }
}

#[test]
fn unknown_paths_and_methods_are_404_in_the_v1_shape() {
    for (method, path) in [
        ("GET", "/v1/scrape"),
        ("PUT", "/v1/crawl/j1"),
        ("POST", "/v1/nothing"),
        ("GET", "/v2/scrape/j1"),
        ("GET", "/v1/"),
    ] {
        let refusal = route(method, path, None).unwrap_err();
        assert_eq!(refusal.status, 404, "{method} {path}");
        let body: Value = serde_json::from_slice(&refusal.body()).unwrap();
        assert_eq!(body["success"], false);
        assert!(body["error"].as_str().unwrap().contains(path), "{body}");
    }
}
