//! v1 request bodies as v2 bodies, per endpoint.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::keys;
use super::scrape::{self, Place};
use super::{Call, JsonAs, V1Error, crawl};

/// v1's scrape timeout default (scrape and batch, top level).
const SCRAPE_TIMEOUT_MS: u64 = 30_000;
/// v1's extract timeout default.
const EXTRACT_TIMEOUT_MS: u64 = 60_000;

/// A v1 request body, translated.
#[derive(Debug, Clone, PartialEq)]
pub struct Translated {
    /// The v2 body; `None` for calls without one (status pages, cancel, usage), whose body
    /// (normally empty) goes up unchanged.
    pub body: Option<Bytes>,
    /// Where the client reads json results from, as far as the request tells (status pages
    /// cannot tell: [`JsonAs::Unknown`]).
    pub json_as: JsonAs,
}

/// Translates the body of a `call` (see [`mod@super::route`]).
pub fn request(call: Call, body: &[u8]) -> Result<Translated, V1Error> {
    let handler: fn(&mut Map<String, Value>) -> Result<JsonAs, V1Error> = match call {
        Call::Scrape => scrape_body,
        Call::Batch => batch,
        Call::Crawl => crawl::crawl,
        Call::Map => |obj| crawl::map(obj).map(|()| JsonAs::Json),
        Call::Search => search,
        Call::Extract => extract,
        Call::ScrapeStatus
        | Call::CrawlStatus
        | Call::Active
        | Call::BatchStatus
        | Call::TokenUsage
        | Call::CreditUsage
        | Call::Same => {
            return Ok(Translated {
                body: None,
                json_as: JsonAs::Unknown,
            });
        }
    };
    let mut obj = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(obj)) => obj,
        Ok(_) => return Err(V1Error::field(&[], "the body must be a JSON object")),
        Err(_) => return Err(V1Error::malformed()),
    };
    let json_as = handler(&mut obj)?;
    let body = serde_json::to_vec(&obj).unwrap_or_default();
    Ok(Translated {
        body: Some(Bytes::from(body)),
        json_as,
    })
}

/// `POST /v1/scrape`: the scrape options at the top level, `timeout` 30000 by default.
fn scrape_body(obj: &mut Map<String, Value>) -> Result<JsonAs, V1Error> {
    keys::check(
        obj,
        &[],
        &[
            keys::SCRAPE_KEPT,
            keys::SCRAPE_TRANSLATED,
            keys::SCRAPE,
            keys::ENVELOPE,
        ],
        keys::SCRAPE_PREFIXES,
    )?;
    let place = Place {
        timeout: Some(SCRAPE_TIMEOUT_MS),
        search: false,
    };
    scrape::translate(obj, &[], place)
}

/// `POST /v1/batch/scrape`: flat scrape options plus the batch's own fields; v1 failed the
/// whole batch on an invalid URL, v2 drops it unless told otherwise.
fn batch(obj: &mut Map<String, Value>) -> Result<JsonAs, V1Error> {
    keys::check(
        obj,
        &[],
        &[
            keys::SCRAPE_KEPT,
            keys::SCRAPE_TRANSLATED,
            keys::BATCH,
            keys::ENVELOPE,
        ],
        keys::SCRAPE_PREFIXES,
    )?;
    let place = Place {
        timeout: Some(SCRAPE_TIMEOUT_MS),
        search: false,
    };
    let json_as = scrape::translate(obj, &[], place)?;
    obj.entry("ignoreInvalidURLs").or_insert(json!(false));
    Ok(json_as)
}

/// `POST /v1/search`: its own fields are the same in v2; the scrape options translate.
fn search(obj: &mut Map<String, Value>) -> Result<JsonAs, V1Error> {
    keys::check(obj, &[], &[keys::SEARCH, keys::ENVELOPE], &[])?;
    let place = Place {
        timeout: None,
        search: true,
    };
    scrape::nested(obj, Map::new(), place)
}

/// `POST /v1/extract`: no FIRE-1 agent; v1's timeout and invalid-URL defaults made explicit.
fn extract(obj: &mut Map<String, Value>) -> Result<JsonAs, V1Error> {
    keys::check(
        obj,
        &[],
        &[keys::EXTRACT, keys::ENVELOPE],
        keys::EXTRACT_PREFIXES,
    )?;
    if obj.get("agent").is_some_and(|a| !a.is_null()) {
        return Err(V1Error::field(
            &["agent"],
            "agent (FIRE-1) is not supported by this upstream",
        ));
    }
    obj.remove("agent");
    obj.entry("timeout").or_insert(json!(EXTRACT_TIMEOUT_MS));
    obj.entry("ignoreInvalidURLs").or_insert(json!(false));
    // Extract's scrape options default to `{onlyMainContent: false}` in both versions.
    let mut default = Map::new();
    default.insert("onlyMainContent".into(), json!(false));
    scrape::nested(obj, default, Place::default())
}
