//! The mock's web-data dialect: scrape; crawl, batch scrape and extract jobs (start, status,
//! and their webhooks); token and credit usage; in the `{success, data}` shapes of the real
//! API.
//!
//! Like the real server, start responses build their `url` (and status pages their `next`)
//! from the `Host` the request carried, so lingo's link re-basing is exercised for real.
//! A job's life (its pace, its end, its webhook events) is [`job`]'s.

mod job;
pub mod v2;

use hyper::Method;
use serde_json::{Value, json};

use crate::mock::knobs::Knobs;
use crate::mock::webhook::{self, JOB_FAILED, Kind};
use crate::mock::{Handled, respond_error, respond_json};
use job::{JobPages, State};

/// Pages every mock crawl or batch has.
pub(super) const PAGES: u64 = 3;

/// When every mock job's data expires.
const EXPIRES: &str = "2026-01-02T00:00:00.000Z";

/// Responds to a web-data call; `host` is the request's `Host`.
pub fn handle(
    method: &Method,
    path: &str,
    query: &str,
    body: &Value,
    host: &str,
    knobs: &Knobs,
) -> Handled {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (method, segments.as_slice()) {
        (&Method::POST, [v @ ("v1" | "v2"), "scrape"]) => scrape(v, body),
        (&Method::POST, [v @ ("v1" | "v2"), "crawl"]) => start(v, Kind::Crawl, body, host, knobs),
        (&Method::POST, [v @ ("v1" | "v2"), "batch", "scrape"]) => {
            start(v, Kind::BatchScrape, body, host, knobs)
        }
        (&Method::GET, [v @ ("v1" | "v2"), "crawl", id]) => {
            let version = version(v);
            let page = |i| document(&page_url(i), version);
            status(version, Kind::Crawl, id, query, host, page)
        }
        (&Method::GET, [v @ ("v1" | "v2"), "batch", "scrape", id]) => {
            let version = version(v);
            let page = |i| document(&page_url(i), version);
            status(version, Kind::BatchScrape, id, query, host, page)
        }
        (&Method::POST, ["v1" | "v2", "extract"]) => extract(body, knobs),
        (&Method::GET, ["v1" | "v2", "extract", id]) => extract_status(id),
        (&Method::DELETE, [_, "crawl", _] | [_, "batch", "scrape", _]) => {
            respond_json(200, &json!({"status": "cancelled"}))
        }
        (&Method::GET, [_, "crawl", _, "errors"] | [_, "batch", "scrape", _, "errors"]) => {
            respond_json(200, &json!({"errors": [], "robotsBlocked": []}))
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
        _ => respond_error(404, &format!("Not found: {method} {path}"), true),
    }
}

/// The path's version, for what outlives the request (a job's page events).
fn version(v: &str) -> &'static str {
    if v == "v1" { "v1" } else { "v2" }
}

fn document(url: &str, version: &str) -> Value {
    json!({
        "markdown": format!("# Mock page\n\nThe {version} mock scraped {url}."),
        "metadata": {"title": "Mock page", "sourceURL": url, "url": url, "statusCode": 200}
    })
}

/// The URL of a job's page `i`.
pub(super) fn page_url(i: u64) -> String {
    format!("https://example.com/page/{i}")
}

/// A job's path under the version: `crawl`, `batch/scrape`, `extract`.
fn family(kind: Kind) -> &'static str {
    match kind {
        Kind::Crawl => "crawl",
        Kind::BatchScrape => "batch/scrape",
        Kind::Extract => "extract",
    }
}

fn scrape(version: &str, body: &Value) -> Handled {
    match body["url"].as_str() {
        Some(url) => respond_json(
            200,
            &json!({"success": true, "data": document(url, version)}),
        ),
        None => respond_error(400, "Bad Request: url is required", true),
    }
}

fn start(version: &str, kind: Kind, body: &Value, host: &str, knobs: &Knobs) -> Handled {
    let seeds = body["url"].is_string() || body["urls"].is_array();
    if !seeds {
        return respond_error(400, "Bad Request: url or urls is required", true);
    }
    let version = self::version(version);
    let pages = || -> JobPages { Box::new(move |i| document(&page_url(i), version)) };
    match begin(kind, body, knobs, 0, pages) {
        Ok(id) => {
            let url = format!("https://{host}/{version}/{}/{id}", family(kind));
            respond_json(200, &json!({"success": true, "id": id, "url": url}))
        }
        Err(issue) => bad_request(issue),
    }
}

/// Checks the request's `webhook` and starts the job: its id, with `flags` in its fourth
/// group, or the schema's issue with a bad webhook (for [`bad_request`]). What the job's
/// page events carry is made only for a job with a webhook.
pub(super) fn begin(
    kind: Kind,
    body: &Value,
    knobs: &Knobs,
    flags: u64,
    pages: impl FnOnce() -> JobPages,
) -> Result<String, Value> {
    let hook = webhook::parse(body, kind)?;
    let events = hook.map(|hook| (hook, kind, pages()));
    Ok(job::start(knobs, flags, events))
}

/// A crawl's or batch's status page: the pages so far (from `skip`, up to `limit`), each
/// made by `page`, and `next` while more pages exist or may come.
pub(super) fn status(
    version: &str,
    kind: Kind,
    id: &str,
    query: &str,
    host: &str,
    page: impl Fn(u64) -> Value,
) -> Handled {
    let progress = job::progress(id);
    let (skip, limit, end) = page_range(query, progress.pages);
    let data: Vec<Value> = (skip..end).map(page).collect();
    let state = match progress.state {
        State::Running => "scraping",
        State::Completed => "completed",
        State::Failed => "failed",
    };
    let mut response = json!({
        "success": true, "status": state, "completed": progress.pages, "total": PAGES,
        "creditsUsed": progress.pages, "expiresAt": EXPIRES, "data": data
    });
    if end < progress.pages || progress.state == State::Running {
        let family = family(kind);
        let next = format!("https://{host}/{version}/{family}/{id}?skip={end}&limit={limit}");
        response["next"] = next.into();
    }
    respond_json(200, &response)
}

/// Extract's start: one of `urls` or `prompt` is needed, as on the real API.
fn extract(body: &Value, knobs: &Knobs) -> Handled {
    if !(body["urls"].is_array() || body["prompt"].is_string()) {
        let issue = json!({"code": "custom", "path": ["urls"],
            "message": "Either `urls` or `prompt` must be provided"});
        return bad_request(issue);
    }
    let no_pages = || -> JobPages { Box::new(|_| Value::Null) };
    match begin(Kind::Extract, body, knobs, 0, no_pages) {
        Ok(id) => respond_json(200, &json!({"success": true, "id": id, "urlTrace": []})),
        Err(issue) => bad_request(issue),
    }
}

/// Extract's status: `processing` while it runs, then its data, or `success: false` and
/// the error when it failed.
fn extract_status(id: &str) -> Handled {
    let response = match job::progress(id).state {
        State::Running => json!({"success": true, "status": "processing", "expiresAt": EXPIRES}),
        State::Completed => json!({"success": true, "status": "completed",
            "data": extract_data(), "expiresAt": EXPIRES}),
        State::Failed => json!({"success": false, "status": "failed", "error": JOB_FAILED,
            "expiresAt": EXPIRES}),
    };
    respond_json(200, &response)
}

/// What every mock extract finds.
fn extract_data() -> Value {
    json!({"title": "Mock page"})
}

/// A 400 as the real API's schema check gives it, with one issue.
pub(super) fn bad_request(issue: Value) -> Handled {
    let body = json!({"success": false, "code": "BAD_REQUEST", "error": "Bad Request", "details": [issue]});
    respond_json(400, &body)
}

fn usage(data: Value) -> Handled {
    respond_json(200, &json!({"success": true, "data": data}))
}

/// `skip`, `limit` and the end of a status page of a job with `pages` so far, from its
/// query.
pub(super) fn page_range(query: &str, pages: u64) -> (u64, u64, u64) {
    let param = |name: &str| {
        query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == name)
            .and_then(|(_, v)| v.parse::<u64>().ok())
    };
    let skip = param("skip").unwrap_or(0).min(pages);
    let limit = param("limit").unwrap_or(100).max(1);
    (skip, limit, skip.saturating_add(limit).min(pages))
}
