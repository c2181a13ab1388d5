//! v2 responses rewritten in v1's shapes, per endpoint. Error envelopes keep their
//! status and shape; a body that is not what the endpoint documents is passed on unchanged.

use bytes::Bytes;
use serde_json::{Map, Value};

use super::Call;
use super::formats;
use crate::translate::links;

/// Where a v1 client reads a json result (`formats: ["extract"]` vs `["json"]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonAs {
    /// `data.json`, as v2 sends it (the client asked for `json`, or for no json at all).
    Json,
    /// `data.extract`: the client asked for `extract` only.
    Extract,
    /// Not known (a job polled without its start having been seen): the result is given
    /// under both names, which v1 SDK models both have.
    Unknown,
}

/// What a response's translation needs besides the response.
#[derive(Debug, Clone, Copy)]
pub struct ResponseContext<'a> {
    pub call: Call,
    pub json_as: JsonAs,
    /// lingo's address as the client used it: `scheme://authority`.
    pub public_base: &'a str,
    /// The upstream's own path prefix, taken off its links.
    pub base_path: &'a str,
}

/// The v1 response for a v2 response with `status`; `None` when it goes on unchanged.
pub fn response(at: &ResponseContext<'_>, status: u16, body: &[u8]) -> Option<Bytes> {
    let Ok(Value::Object(mut obj)) = serde_json::from_slice::<Value>(body) else {
        return None;
    };
    let changed = if status >= 400 {
        error(&mut obj)
    } else {
        success(at, &mut obj)
    };
    changed.then(|| Bytes::from(serde_json::to_vec(&obj).unwrap_or_default()))
}

/// The wait a rate-limited response's message names ("... please retry after 25s, resets at
/// ..."): the API sends no `Retry-After` header, so lingo adds one from it.
pub fn retry_after(body: &[u8]) -> Option<u64> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let message = v.get("error")?.as_str()?.to_ascii_lowercase();
    let rest = &message[message.find("retry after ")? + "retry after ".len()..];
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let seconds = rest[..digits].parse().ok()?;
    rest[digits..].starts_with('s').then_some(seconds)
}

/// A WebSocket watcher frame (`catchup` with its documents, or one `document`) with json
/// results where the client reads them; `None` when it goes on unchanged.
pub fn ws_frame(json_as: JsonAs, text: &str) -> Option<String> {
    let Ok(Value::Object(mut frame)) = serde_json::from_str::<Value>(text) else {
        return None;
    };
    let kind = frame.get("type").and_then(Value::as_str).map(str::to_owned);
    let changed = match (kind.as_deref(), frame.get_mut("data")) {
        (Some("catchup"), Some(Value::Object(status))) => documents(status, json_as),
        (Some("document"), Some(doc)) => document(doc, json_as),
        _ => false,
    };
    changed.then(|| Value::Object(frame).to_string())
}

/// A webhook page event's `data` (its documents) with json results where a v1 client reads
/// them, as its status pages give them; whether anything changed.
pub fn documents_v1(data: &mut Value, json_as: JsonAs) -> bool {
    let Value::Array(docs) = data else {
        return false;
    };
    docs.iter_mut()
        .fold(false, |changed, doc| document(doc, json_as) | changed)
}

/// A 2xx response, per endpoint; whether anything changed.
fn success(at: &ResponseContext<'_>, obj: &mut Map<String, Value>) -> bool {
    match at.call {
        Call::Scrape | Call::ScrapeStatus => obj
            .get_mut("data")
            .is_some_and(|doc| document(doc, at.json_as)),
        Call::Crawl | Call::Batch => relink(obj, "url", at),
        Call::CrawlStatus | Call::BatchStatus => {
            let next = relink(obj, "next", at);
            documents(obj, at.json_as) | next
        }
        Call::Active => active(obj),
        Call::Map => map_links(obj),
        Call::Search => search(obj, at.json_as),
        Call::TokenUsage => snake_case(obj, &TOKEN_USAGE),
        Call::CreditUsage => snake_case(obj, &CREDIT_USAGE),
        Call::Extract | Call::Same => false,
    }
}

/// A document's `json` result under `extract`, if that is where the client reads it.
fn document(doc: &mut Value, json_as: JsonAs) -> bool {
    let Some(doc) = doc.as_object_mut() else {
        return false;
    };
    if doc.contains_key("extract") {
        return false;
    }
    match json_as {
        JsonAs::Json => false,
        JsonAs::Extract => doc
            .remove("json")
            .map(|json| doc.insert("extract".into(), json))
            .is_some(),
        JsonAs::Unknown => doc
            .get("json")
            .cloned()
            .map(|json| doc.insert("extract".into(), json))
            .is_some(),
    }
}

/// Every document of a status page's `data`.
fn documents(obj: &mut Map<String, Value>, json_as: JsonAs) -> bool {
    let Some(Value::Array(docs)) = obj.get_mut("data") else {
        return false;
    };
    docs.iter_mut()
        .fold(false, |changed, doc| document(doc, json_as) | changed)
}

/// An API link re-based onto lingo, its `/v2/` turned back into `/v1/` (query kept).
fn relink(obj: &mut Map<String, Value>, key: &str, at: &ResponseContext<'_>) -> bool {
    let Some(Value::String(link)) = obj.get(key) else {
        return false;
    };
    let Some(rebased) = links::rebase(link, at.public_base, at.base_path) else {
        return false;
    };
    let path = &rebased[at.public_base.len()..];
    let v1 = match path.strip_prefix("/v2/") {
        Some(rest) => format!("{}/v1/{rest}", at.public_base),
        None => rebased,
    };
    obj.insert(key.to_owned(), Value::String(v1));
    true
}

/// Active crawls' `options` in v1's names.
fn active(obj: &mut Map<String, Value>) -> bool {
    let Some(Value::Array(crawls)) = obj.get_mut("crawls") else {
        return false;
    };
    let mut changed = false;
    for options in crawls.iter_mut().filter_map(|c| c.get_mut("options")) {
        if let Value::Object(options) = options {
            crawl_options(options);
            changed = true;
        }
    }
    changed
}

/// v2 crawl options as v1 reported them.
fn crawl_options(options: &mut Map<String, Value>) {
    let skip = options.remove("sitemap").is_some_and(|s| s == "skip");
    options.insert("ignoreSitemap".into(), Value::Bool(skip));
    if let Some(entire) = options.get("crawlEntireDomain").cloned() {
        options.insert("allowBackwardLinks".into(), entire);
    }
    if let Some(Value::Object(scrape)) = options.get_mut("scrapeOptions") {
        formats::to_v1(scrape);
    }
}

/// Map's link objects as the URL strings v1 gave.
fn map_links(obj: &mut Map<String, Value>) -> bool {
    let Some(Value::Array(links)) = obj.get_mut("links") else {
        return false;
    };
    let mut changed = false;
    for link in links.iter_mut() {
        if let Some(url) = link.get("url").filter(|_| link.is_object()).cloned() {
            *link = url;
            changed = true;
        }
    }
    changed
}

/// Search's `data.web` as v1's flat `data`; v2's `creditsUsed` has no v1 field.
fn search(obj: &mut Map<String, Value>, json_as: JsonAs) -> bool {
    let Some(Value::Object(data)) = obj.get_mut("data") else {
        return false;
    };
    let web = match data.remove("web") {
        Some(Value::Array(web)) => web,
        _ => Vec::new(),
    };
    if web.is_empty() && !obj.contains_key("warning") {
        obj.insert("warning".into(), "No search results found".into());
    }
    obj.insert("data".into(), Value::Array(web));
    obj.remove("creditsUsed");
    documents(obj, json_as);
    true
}

/// Usage fields, v2 name -> v1 name.
const TOKEN_USAGE: [(&str, &str); 4] = [
    ("remainingTokens", "remaining_tokens"),
    ("planTokens", "plan_tokens"),
    ("billingPeriodStart", "billing_period_start"),
    ("billingPeriodEnd", "billing_period_end"),
];
const CREDIT_USAGE: [(&str, &str); 4] = [
    ("remainingCredits", "remaining_credits"),
    ("planCredits", "plan_credits"),
    ("billingPeriodStart", "billing_period_start"),
    ("billingPeriodEnd", "billing_period_end"),
];

/// `data`'s camelCase usage fields in v1's snake_case.
fn snake_case(obj: &mut Map<String, Value>, names: &[(&str, &str)]) -> bool {
    let Some(Value::Object(data)) = obj.get_mut("data") else {
        return false;
    };
    let mut changed = false;
    for (v2, v1) in names {
        if let Some(value) = data.remove(*v2) {
            data.insert((*v1).to_owned(), value);
            changed = true;
        }
    }
    changed
}

/// An error response: same status and envelope; v2's "review the v2 API documentation" points
/// a v1 client at the wrong docs, so it says v1.
fn error(obj: &mut Map<String, Value>) -> bool {
    let Some(Value::Array(details)) = obj.get_mut("details") else {
        return false;
    };
    let mut changed = false;
    for message in details.iter_mut().filter_map(|d| d.get_mut("message")) {
        if let Some(text) = message
            .as_str()
            .filter(|t| t.contains("v2 API documentation"))
        {
            *message = Value::String(text.replace("v2 API documentation", "v1 API documentation"));
            changed = true;
        }
    }
    changed
}
