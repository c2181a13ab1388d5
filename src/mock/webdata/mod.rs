//! The mock's web-data dialect: scrape, crawl and batch start/status, token and credit
//! usage, in the `{success, data}` shapes of the real API.
//!
//! Like the real server, start answers build their `url` (and status pages their `next`)
//! from the `Host` the request carried, so lingo's link re-basing is exercised for real.

pub mod v2;

use std::sync::atomic::{AtomicU64, Ordering};

use hyper::Method;
use serde_json::{Value, json};

use crate::mock::{Answer, error_answer, json_answer};

/// Pages every mock crawl or batch has.
pub(super) const PAGES: u64 = 3;

/// Answers a web-data call; `host` is the request's `Host`.
pub fn handle(method: &Method, path: &str, query: &str, body: &Value, host: &str) -> Answer {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (method, segments.as_slice()) {
        (&Method::POST, [v @ ("v1" | "v2"), "scrape"]) => scrape(v, body),
        (&Method::POST, [v @ ("v1" | "v2"), "crawl"]) => start(v, "crawl", body, host),
        (&Method::POST, [v @ ("v1" | "v2"), "batch", "scrape"]) => {
            start(v, "batch/scrape", body, host)
        }
        (&Method::GET, [v @ ("v1" | "v2"), "crawl", id]) => status(v, "crawl", id, query, host),
        (&Method::GET, [v @ ("v1" | "v2"), "batch", "scrape", id]) => {
            status(v, "batch/scrape", id, query, host)
        }
        (&Method::DELETE, [_, "crawl", _] | [_, "batch", "scrape", _]) => {
            json_answer(200, &json!({"status": "cancelled"}))
        }
        (&Method::GET, [_, "crawl", _, "errors"] | [_, "batch", "scrape", _, "errors"]) => {
            json_answer(200, &json!({"errors": [], "robotsBlocked": []}))
        }
        (&Method::GET, ["v1", "team", "token-usage"]) => {
            usage(json!({"remaining_tokens": 1_000_000}))
        }
        (&Method::GET, ["v2", "team", "token-usage"]) => {
            usage(json!({"remainingTokens": 1_000_000}))
        }
        (&Method::GET, ["v1", "team", "credit-usage"]) => {
            usage(json!({"remaining_credits": 500_000}))
        }
        (&Method::GET, ["v2", "team", "credit-usage"]) => {
            usage(json!({"remainingCredits": 500_000}))
        }
        _ => error_answer(404, &format!("Not found: {method} {path}"), true),
    }
}

fn document(url: &str, version: &str) -> Value {
    json!({
        "markdown": format!("# Mock page\n\nThe {version} mock scraped {url}."),
        "metadata": {"title": "Mock page", "sourceURL": url, "url": url, "statusCode": 200}
    })
}

fn scrape(version: &str, body: &Value) -> Answer {
    match body["url"].as_str() {
        Some(url) => json_answer(
            200,
            &json!({"success": true, "data": document(url, version)}),
        ),
        None => error_answer(400, "Bad Request: url is required", true),
    }
}

fn start(version: &str, family: &str, body: &Value, host: &str) -> Answer {
    static NEXT_ID: AtomicU64 = AtomicU64::new(1);
    let seeds = body["url"].is_string() || body["urls"].is_array();
    if !seeds {
        return error_answer(400, "Bad Request: url or urls is required", true);
    }
    let id = format!(
        "00000000-0000-4000-8000-{:012x}",
        NEXT_ID.fetch_add(1, Ordering::Relaxed)
    );
    let url = format!("https://{host}/{version}/{family}/{id}");
    json_answer(200, &json!({"success": true, "id": id, "url": url}))
}

fn status(version: &str, family: &str, id: &str, query: &str, host: &str) -> Answer {
    let (skip, limit, end) = page_range(query);
    let data: Vec<Value> = (skip..end)
        .map(|i| document(&format!("https://example.com/page/{i}"), version))
        .collect();
    let mut answer = json!({
        "success": true, "status": "completed", "completed": PAGES, "total": PAGES,
        "creditsUsed": PAGES, "expiresAt": "2026-01-02T00:00:00.000Z", "data": data
    });
    if end < PAGES {
        let next = format!("https://{host}/{version}/{family}/{id}?skip={end}&limit={limit}");
        answer["next"] = next.into();
    }
    json_answer(200, &answer)
}

fn usage(data: Value) -> Answer {
    json_answer(200, &json!({"success": true, "data": data}))
}

/// `skip`, `limit` and the end of a status page, from its query.
pub(super) fn page_range(query: &str) -> (u64, u64, u64) {
    let param = |name: &str| {
        query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == name)
            .and_then(|(_, v)| v.parse::<u64>().ok())
    };
    let skip = param("skip").unwrap_or(0).min(PAGES);
    let limit = param("limit").unwrap_or(100).max(1);
    (skip, limit, (skip + limit).min(PAGES))
}
