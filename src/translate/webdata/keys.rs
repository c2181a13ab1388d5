//! The keys each v1 body may carry, and the check that refuses the others.
//!
//! v1 and v2 servers validate bodies with strict schemas, so a key lingo forwarded without
//! knowing it would fail on the upstream with v2's message (or, worse, be honoured with a v2
//! meaning). Each list below is what the v1 schema of that body accepts and lingo either keeps
//! or translates; a few v2-only keys are accepted too (a key that is neither v1 nor v2 is
//! refused) when they have no v1 spelling in the same body.

use serde_json::{Map, Value};

use super::V1Error;

/// Scrape options kept as they are.
pub(super) const SCRAPE_KEPT: &[&str] = &[
    "headers",
    "includeTags",
    "excludeTags",
    "onlyMainContent",
    "waitFor",
    "timeout",
    "mobile",
    "actions",
    "location",
    "skipTlsVerification",
    "removeBase64Images",
    "fastMode",
    "blockAds",
    "proxy",
    "maxAge",
    "storeInCache",
    "useMock",
    "__searchPreviewToken",
];

/// Scrape options lingo translates, and v2's `parsers`.
pub(super) const SCRAPE_TRANSLATED: &[&str] = &[
    "formats",
    "extract",
    "jsonOptions",
    "changeTrackingOptions",
    "parsePDF",
    "parsers",
    "geolocation",
    "__experimental_cache",
    "agent",
];

/// Scrape option prefixes kept as they are.
pub(super) const SCRAPE_PREFIXES: &[&str] = &["__experimental_omce"];

/// What every top-level body may carry besides its own fields.
pub(super) const ENVELOPE: &[&str] = &["origin", "integration", "zeroDataRetention"];

/// `POST /v1/scrape` besides the scrape options.
pub(super) const SCRAPE: &[&str] = &["url"];

/// `POST /v1/batch/scrape` besides the scrape options.
pub(super) const BATCH: &[&str] = &[
    "urls",
    "webhook",
    "appendToId",
    "ignoreInvalidURLs",
    "maxConcurrency",
];

/// Crawler options kept as they are, shared by crawl and map.
pub(super) const CRAWLER_KEPT: &[&str] = &[
    "url",
    "includePaths",
    "excludePaths",
    "maxDiscoveryDepth",
    "allowExternalLinks",
    "allowSubdomains",
    "ignoreRobotsTxt",
    "deduplicateSimilarURLs",
    "ignoreQueryParameters",
    "regexOnFullURL",
    "delay",
    "limit",
    "crawlEntireDomain",
];

/// Crawler options lingo translates (crawl and map).
pub(super) const CRAWLER_TRANSLATED: &[&str] =
    &["maxDepth", "allowBackwardLinks", "ignoreSitemap", "sitemap"];

/// `POST /v1/crawl` besides the crawler options (`prompt` is v2's).
pub(super) const CRAWL: &[&str] = &["maxConcurrency", "webhook", "scrapeOptions", "prompt"];

/// `POST /v1/map` besides the crawler options (`location` is v2's).
pub(super) const MAP: &[&str] = &[
    "search",
    "includeSubdomains",
    "timeout",
    "useMock",
    "filterByPath",
    "useIndex",
    "sitemapOnly",
    "location",
];

/// `POST /v1/search`. v2's `sources` and `categories` are refused: their results (images,
/// news) have no place in v1's flat `data`.
pub(super) const SEARCH: &[&str] = &[
    "query",
    "limit",
    "tbs",
    "filter",
    "lang",
    "country",
    "location",
    "timeout",
    "ignoreInvalidURLs",
    "scrapeOptions",
];

/// `POST /v1/extract`.
pub(super) const EXTRACT: &[&str] = &[
    "urls",
    "prompt",
    "systemPrompt",
    "schema",
    "limit",
    "ignoreSitemap",
    "includeSubdomains",
    "allowExternalLinks",
    "enableWebSearch",
    "scrapeOptions",
    "urlTrace",
    "showSources",
    "agent",
    "timeout",
    "ignoreInvalidURLs",
    "webhook",
];

/// Extract's experimental flags, kept as they are.
pub(super) const EXTRACT_PREFIXES: &[&str] = &["__experimental_"];

/// The members of `extract` / `jsonOptions` (`checkPromptInjection`: both SDKs' v1 models
/// offer it, and v2's json format has it too).
pub(super) const JSON_OPTIONS: &[&str] = &[
    "mode",
    "schema",
    "systemPrompt",
    "prompt",
    "temperature",
    "agent",
    "checkPromptInjection",
];

/// The members of `changeTrackingOptions`.
pub(super) const CHANGE_TRACKING: &[&str] = &["prompt", "schema", "modes", "tag"];

/// Refuses `obj` (found at `path`) if it has a key in none of `lists` and starting with none
/// of `prefixes`; all such keys are named at once.
pub(super) fn check(
    obj: &Map<String, Value>,
    path: &[&str],
    lists: &[&[&str]],
    prefixes: &[&str],
) -> Result<(), V1Error> {
    let unknown: Vec<String> = obj
        .keys()
        .filter(|k| !lists.iter().any(|list| list.contains(&k.as_str())))
        .filter(|k| !prefixes.iter().any(|p| k.starts_with(p)))
        .cloned()
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(V1Error::unknown_keys(path, unknown))
    }
}

/// `path` + `key`, for naming a nested field.
pub(super) fn at<'a>(path: &[&'a str], key: &'a str) -> Vec<&'a str> {
    let mut out = path.to_vec();
    out.push(key);
    out
}

/// Refuses two spellings of one setting in the same body (a v1 one and v2's).
pub(super) fn one_of(
    obj: &Map<String, Value>,
    path: &[&str],
    v1: &[&str],
    v2: &str,
) -> Result<(), V1Error> {
    match v1.iter().find(|k| obj.contains_key(**k)) {
        Some(old) if obj.contains_key(v2) => Err(V1Error::field(
            &at(path, v2),
            format!("give either {old} (v1) or {v2} (v2), not both"),
        )),
        _ => Ok(()),
    }
}
