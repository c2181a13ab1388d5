//! The mock as a version-2-only web-data upstream (`speaks: web-data-v2`): `/v1/...` is a 404,
//! bodies are checked for v1's spellings (the keys and format strings v1 had and v2 refuses
//! are 400s, as on v2; other unknown keys are not checked), and responses come in v2's shapes: format objects (json, screenshot, changeTracking)
//! and `parsers` honoured, map links as objects, search grouped by source, usage in camelCase.
//!
//! Responses tell what the request asked for where the real API does (`proxyUsed`,
//! `cacheState`), so tests through lingo can see which defaults lingo made explicit. Job ids
//! carry the formats they were started with (the fourth group of the UUID), so status pages
//! stay deterministic without state.

use hyper::Method;
use serde_json::{Map, Value, json};

use super::job::JobPages;
use super::{PAGES, bad_request, begin, page_url};
use crate::mock::knobs::Knobs;
use crate::mock::webhook::Kind;
use crate::mock::{Handled, respond_error, respond_json};

/// Keys v1 had and v2 refuses, wherever scrape or crawl options stand.
const V1_ONLY: [&str; 12] = [
    "extract",
    "jsonOptions",
    "changeTrackingOptions",
    "parsePDF",
    "geolocation",
    "agent",
    "__experimental_cache",
    "maxDepth",
    "allowBackwardLinks",
    "ignoreSitemap",
    "sitemapOnly",
    "allowBackwardCrawling",
];

/// The format types v2 accepts.
const FORMATS: [&str; 9] = [
    "markdown",
    "html",
    "rawHtml",
    "links",
    "summary",
    "json",
    "changeTracking",
    "screenshot",
    "images",
];

/// The bit of a job id's fourth group that says the job asked for a json format.
const JSON_FLAG: u64 = 1;

/// Responds to a call to a v2-only upstream; what v1 and v2 share goes to the common mock.
pub fn handle(
    method: &Method,
    path: &str,
    query: &str,
    body: &Value,
    host: &str,
    knobs: &Knobs,
) -> Handled {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    if segments.first() != Some(&"v2") {
        let message = format!("Cannot {method} {path}: this upstream serves version 2 only");
        return respond_error(404, &message, true);
    }
    if let Some(issue) = strict(body) {
        return bad_request(issue);
    }
    match (method, &segments[1..]) {
        (&Method::POST, ["scrape"]) => scrape(body),
        (&Method::POST, ["crawl"]) => {
            let options = &body["scrapeOptions"];
            start(Kind::Crawl, options, body, host, knobs)
        }
        (&Method::POST, ["batch", "scrape"]) => start(Kind::BatchScrape, body, body, host, knobs),
        (&Method::GET, ["crawl", "active" | "ongoing"]) => active(),
        (&Method::GET, ["crawl", id]) => status(Kind::Crawl, id, query, host),
        (&Method::GET, ["batch", "scrape", id]) => status(Kind::BatchScrape, id, query, host),
        (&Method::POST, ["map"]) => map(body),
        (&Method::POST, ["search"]) => search(body),
        (&Method::GET, ["team", "token-usage"]) => ok(json!({"data": usage("Tokens")})),
        (&Method::GET, ["team", "credit-usage"]) => ok(json!({"data": usage("Credits")})),
        (&Method::GET, ["concurrency-check"]) => ok(json!({"concurrency": 0, "maxConcurrency": 2})),
        (&Method::GET, ["team", "queue-status"]) => ok(json!({"jobsInQueue": 0,
            "activeJobsInQueue": 0, "waitingJobsInQueue": 0, "maxConcurrency": 2,
            "mostRecentSuccess": null})),
        _ => super::handle(method, path, query, body, host, knobs),
    }
}

/// `{"success": true, ...fields}`.
fn ok(mut fields: Value) -> Handled {
    fields["success"] = Value::Bool(true);
    respond_json(200, &fields)
}

/// v2's strict schemas: the issue with a v1-only key or v1 format string, in v2's words.
fn strict(body: &Value) -> Option<Value> {
    for (path, options) in [
        (vec![], body),
        (vec!["scrapeOptions"], &body["scrapeOptions"]),
    ] {
        let Some(options) = options.as_object() else {
            continue;
        };
        let keys: Vec<&str> = V1_ONLY
            .into_iter()
            .filter(|k| options.contains_key(*k))
            .collect();
        if !keys.is_empty() {
            let message = "Unrecognized key in body -- please review the v2 API documentation for request body changes";
            let issue = json!({"code": "unrecognized_keys", "keys": keys, "path": path, "message": message});
            return Some(issue);
        }
        for (i, format) in formats(options).iter().enumerate() {
            if !kind(format).is_some_and(|k| FORMATS.contains(&k)) {
                let issue = json!({"code": "invalid_union", "path": ["formats", i], "message": "Invalid input"});
                return Some(issue);
            }
        }
    }
    None
}

/// The options' formats (v2's default: markdown).
fn formats(options: &Map<String, Value>) -> Vec<Value> {
    match options.get("formats") {
        Some(Value::Array(list)) => list.clone(),
        _ => vec![json!("markdown")],
    }
}

/// A format's type: the string itself, or the object's `type`.
fn kind(format: &Value) -> Option<&str> {
    format
        .as_str()
        .or_else(|| format.get("type").and_then(Value::as_str))
}

fn scrape(body: &Value) -> Handled {
    match (body["url"].as_str(), body.as_object()) {
        (Some(url), Some(options)) => ok(json!({"data": document(url, options)})),
        _ => respond_error(400, "Bad Request: url is required", true),
    }
}

/// One scraped page with exactly the formats asked for.
fn document(url: &str, options: &Map<String, Value>) -> Value {
    let mut doc = Map::new();
    for format in formats(options) {
        let kind = kind(&format).unwrap_or_default();
        let value = match kind {
            "markdown" => markdown(url, options),
            "html" => json!("<h1>Mock page</h1>"),
            "rawHtml" => json!("<html><body><h1>Mock page</h1></body></html>"),
            "links" => json!([format!("{}/about", url.trim_end_matches('/'))]),
            "summary" => json!("A page the v2 mock made up."),
            "images" => json!([]),
            "screenshot" if format["fullPage"] == true => json!("https://mock.invalid/full.png"),
            "screenshot" => json!("https://mock.invalid/viewport.png"),
            "json" => extracted(&format),
            "changeTracking" => change_tracking(&format),
            _ => continue,
        };
        doc.insert(kind.to_owned(), value);
    }
    let pdf_as_base64 = is_pdf(url) && !parses_pdf(options);
    let proxy = options
        .get("proxy")
        .and_then(Value::as_str)
        .unwrap_or("auto");
    let cache = if options.get("maxAge") == Some(&json!(0)) {
        "miss"
    } else {
        "hit"
    };
    doc.insert(
        "metadata".into(),
        json!({
            "title": "Mock page", "sourceURL": url, "url": url, "statusCode": 200,
            "proxyUsed": proxy, "cacheState": cache,
            "contentType": if is_pdf(url) { "application/pdf" } else { "text/html" },
            "creditsUsed": if pdf_as_base64 { 1 } else { 5 },
        }),
    );
    Value::Object(doc)
}

/// The page's markdown: a PDF's text when `parsers` has `pdf` (v2's default), the PDF itself
/// in base64 when `parsers` is `[]`.
fn markdown(url: &str, options: &Map<String, Value>) -> Value {
    match (is_pdf(url), parses_pdf(options)) {
        (true, false) => json!("JVBERi0xLjQK"),
        (true, true) => json!(format!("# Mock PDF\n\nThe v2 mock parsed {url}.")),
        _ => json!(format!("# Mock page\n\nThe v2 mock scraped {url}.")),
    }
}

fn is_pdf(url: &str) -> bool {
    url.to_ascii_lowercase().ends_with(".pdf")
}

fn parses_pdf(options: &Map<String, Value>) -> bool {
    match options.get("parsers") {
        Some(Value::Array(parsers)) => parsers.iter().any(|p| kind(p) == Some("pdf")),
        _ => true,
    }
}

/// A json format's result: one made-up value per property of its schema.
fn extracted(format: &Value) -> Value {
    match format["schema"]["properties"].as_object() {
        Some(properties) => properties
            .keys()
            .map(|k| (k.clone(), json!(format!("mock {k}"))))
            .collect::<Map<_, _>>()
            .into(),
        None => json!({"title": "Mock page"}),
    }
}

fn change_tracking(format: &Value) -> Value {
    let mut out = json!({"previousScrapeAt": null, "changeStatus": "new", "visibility": "visible"});
    let modes = format["modes"].as_array().cloned().unwrap_or_default();
    if modes.contains(&json!("git-diff")) {
        out["diff"] = json!({"text": ""});
    }
    if modes.contains(&json!("json")) {
        out["json"] = json!({});
    }
    out
}

/// The flags a job id carries.
fn flags(id: &str) -> u64 {
    let group = id.split('-').nth(3).unwrap_or_default();
    u64::from_str_radix(group, 16).map_or(0, |g| g & !0x8000)
}

/// Starts a crawl or batch whose pages have the formats of `options`.
fn start(job: Kind, options: &Value, body: &Value, host: &str, knobs: &Knobs) -> Handled {
    let wants_json = options
        .as_object()
        .is_some_and(|o| formats(o).iter().any(|f| kind(f) == Some("json")));
    let flags = if wants_json { JSON_FLAG } else { 0 };
    let pages = || -> JobPages { Box::new(page_maker(flags)) };
    match begin(job, body, knobs, flags, pages) {
        Ok(id) => {
            let family = super::family(job);
            ok(json!({"id": id, "url": format!("https://{host}/v2/{family}/{id}")}))
        }
        Err(issue) => bad_request(issue),
    }
}

/// The documents of a job whose id carries `flags`: markdown, and json when asked for.
fn page_maker(flags: u64) -> impl Fn(u64) -> Value + Send + 'static {
    let mut formats = vec![json!("markdown")];
    if flags & JSON_FLAG != 0 {
        formats.push(json!({"type": "json"}));
    }
    let mut options = Map::new();
    options.insert("formats".into(), Value::Array(formats));
    move |i| document(&page_url(i), &options)
}

fn status(job: Kind, id: &str, query: &str, host: &str) -> Handled {
    super::status("v2", job, id, query, host, page_maker(flags(id)))
}

fn active() -> Handled {
    ok(json!({"crawls": [{
        "id": "00000000-0000-4000-8001-000000000000", "teamId": "mock",
        "url": "https://example.com", "created_at": "2026-01-01T00:00:00.000Z",
        "options": {"limit": 10, "sitemap": "skip", "crawlEntireDomain": true,
            "scrapeOptions": {"formats": ["markdown", {"type": "json", "prompt": "the title"}],
                "parsers": ["pdf"]}}
    }]}))
}

fn map(body: &Value) -> Handled {
    let Some(url) = body["url"].as_str() else {
        return respond_error(400, "Bad Request: url is required", true);
    };
    let base = url.trim_end_matches('/');
    let links = ["", "/about", "/docs"]
        .iter()
        .map(|p| json!({"url": format!("{base}{p}"), "title": "Mock page"}))
        .collect::<Vec<_>>();
    ok(json!({"links": links}))
}

fn search(body: &Value) -> Handled {
    let query = body["query"].as_str().unwrap_or_default();
    let limit = body["limit"].as_u64().unwrap_or(5).min(PAGES);
    let limit = if query.contains("noresults") {
        0
    } else {
        limit
    };
    let options = body["scrapeOptions"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let scraped = !formats_or_none(&options).is_empty();
    let web: Vec<Value> = (0..limit)
        .map(|i| {
            let url = format!("https://example.com/result/{i}");
            let mut hit = json!({"url": url, "title": format!("Result {i}"),
                "description": format!("About {query}"), "position": i + 1});
            if scraped
                && let (Value::Object(hit), Value::Object(doc)) =
                    (&mut hit, document(&url, &options))
            {
                hit.extend(doc);
            }
            hit
        })
        .collect();
    ok(json!({"data": {"web": web}, "creditsUsed": limit}))
}

/// Search's formats: none unless asked for (v2's search default).
fn formats_or_none(options: &Map<String, Value>) -> Vec<Value> {
    match options.get("formats") {
        Some(Value::Array(list)) => list.clone(),
        _ => Vec::new(),
    }
}

/// `remaining<What>`, `plan<What>` and the billing period, as v2 names them.
fn usage(what: &str) -> Value {
    json!({
        format!("remaining{what}"): 1_000_000,
        format!("plan{what}"): 1_000_000,
        "billingPeriodStart": "2026-01-01T00:00:00.000Z",
        "billingPeriodEnd": "2026-02-01T00:00:00.000Z",
    })
}
