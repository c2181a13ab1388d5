//! The path map: which v2 request a v1 request becomes, and what kind of call it is
//! (the kind decides how its body and its response are translated).

use super::V1Error;

/// What a v1 request is, for the body and response translators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// `POST /v1/scrape`.
    Scrape,
    /// `GET /v1/scrape/:id`.
    ScrapeStatus,
    /// `POST /v1/crawl`.
    Crawl,
    /// `GET /v1/crawl/:id` (and the WebSocket watcher on the same path).
    CrawlStatus,
    /// `GET /v1/crawl/active` or `/v1/crawl/ongoing`.
    Active,
    /// `POST /v1/batch/scrape`.
    Batch,
    /// `GET /v1/batch/scrape/:id`.
    BatchStatus,
    /// `POST /v1/map`.
    Map,
    /// `POST /v1/search`.
    Search,
    /// `POST /v1/extract`.
    Extract,
    /// `GET /v1/team/token-usage`.
    TokenUsage,
    /// `GET /v1/team/credit-usage`.
    CreditUsage,
    /// Same body and response in both versions: cancel, error lists, extract status,
    /// historical usage, queue status, concurrency check.
    Same,
}

/// A v1 request's v2 counterpart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub call: Call,
    /// The v2 path, with the client's query (if any) unchanged.
    pub path_and_query: String,
}

/// Where the v1 families with no v2 counterpart start.
const NO_COUNTERPART: [&str; 5] = ["llmstxt", "deep-research", "x402", "schedules", "fireclaw"];

/// The v2 request for `method path?query`, a v1 path. A v1 endpoint with no v2 counterpart
/// is a 501 naming the path; a path that is no v1 endpoint (or not with this method) is a 404.
pub fn route(method: &str, path: &str, query: Option<&str>) -> Result<Route, V1Error> {
    let Some(rest) = path.strip_prefix("/v1/") else {
        return Err(V1Error::not_found(method, path));
    };
    let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    if segments
        .first()
        .is_some_and(|first| NO_COUNTERPART.contains(first))
    {
        return Err(V1Error::no_counterpart(path));
    }
    let call = call(method, &segments).ok_or_else(|| V1Error::not_found(method, path))?;
    let mut v2 = match (call, segments.as_slice()) {
        (Call::Active, _) => "/v2/crawl/active".to_owned(),
        // The errors endpoint ignores the job's kind, and `/v2/crawl/:id/errors` is served by
        // every v2 server, where `/v2/batch/scrape/:id/errors` is not by those of Aug 2025.
        (_, ["batch", "scrape", id, "errors"]) => format!("/v2/crawl/{id}/errors"),
        _ => format!("/v2/{}", segments.join("/")),
    };
    if let Some(query) = query.filter(|q| !q.is_empty()) {
        v2.push('?');
        v2.push_str(query);
    }
    Ok(Route {
        call,
        path_and_query: v2,
    })
}

/// The kind of call `method /v1/<segments>` is, if it is a v1 endpoint with a v2 counterpart.
fn call(method: &str, segments: &[&str]) -> Option<Call> {
    let call = match (method, segments) {
        ("POST", ["scrape"]) => Call::Scrape,
        ("GET", ["scrape", _]) => Call::ScrapeStatus,
        ("POST", ["crawl"]) => Call::Crawl,
        ("GET", ["crawl", "active" | "ongoing"]) => Call::Active,
        ("GET", ["crawl", _]) => Call::CrawlStatus,
        ("POST", ["batch", "scrape"]) => Call::Batch,
        ("GET", ["batch", "scrape", _]) => Call::BatchStatus,
        ("POST", ["map"]) => Call::Map,
        ("POST", ["search"]) => Call::Search,
        ("POST", ["extract"]) => Call::Extract,
        ("GET", ["team", "token-usage"]) => Call::TokenUsage,
        ("GET", ["team", "credit-usage"]) => Call::CreditUsage,
        ("DELETE", ["crawl", _] | ["batch", "scrape", _])
        | ("GET", ["crawl", _, "errors"] | ["batch", "scrape", _, "errors"])
        | ("GET", ["extract", _])
        | ("GET", ["team", "token-usage" | "credit-usage", "historical"])
        | ("GET", ["team", "queue-status"] | ["concurrency-check"]) => Call::Same,
        _ => return None,
    };
    Some(call)
}
