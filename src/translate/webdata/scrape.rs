//! Scrape options, v1 -> v2, wherever they stand: the top level of scrape and
//! batch bodies, or the `scrapeOptions` of crawl, search and extract.

use serde_json::{Map, Value, json};

use super::JsonAs;
use super::V1Error;
use super::formats::{self, Folded};
use super::keys::{self, at};

/// `__experimental_cache: true` meant four hours of cache in v1.
const EXPERIMENTAL_CACHE_MS: u64 = 14_400_000;

/// Where the options stand, which decides the defaults lingo makes explicit.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Place {
    /// v1's `timeout` default here (scrape and batch: 30000; elsewhere none).
    pub timeout: Option<u64>,
    /// Search's `scrapeOptions`: v1 accepted fewer formats there.
    pub search: bool,
}

/// Translates the scrape options in `obj` (found at `path`) in place; the caller has
/// checked its keys. Returns where a json result is to be read from.
pub(super) fn translate(
    obj: &mut Map<String, Value>,
    path: &[&str],
    place: Place,
) -> Result<JsonAs, V1Error> {
    if obj.get("agent").is_some_and(|a| !a.is_null()) {
        return Err(formats::fire_1(&at(path, "agent")));
    }
    obj.remove("agent");
    let folded = Folded {
        extract: obj.remove("extract").filter(|v| !v.is_null()),
        json_options: obj.remove("jsonOptions").filter(|v| !v.is_null()),
        change_tracking: obj.remove("changeTrackingOptions").filter(|v| !v.is_null()),
    };
    let json_as = match obj.remove("formats") {
        Some(list) => {
            let (list, json_as) = formats::to_v2(&list, &folded, path, place.search)?;
            obj.insert("formats".into(), Value::Array(list));
            json_as
        }
        None => {
            let none = Value::Array(Vec::new());
            formats::to_v2(&none, &folded, path, place.search)?;
            JsonAs::Json
        }
    };
    parsers(obj, path)?;
    location(obj);
    cache(obj, path)?;
    defaults(obj, place);
    Ok(json_as)
}

/// `parsePDF` -> `parsers`, always explicit.
fn parsers(obj: &mut Map<String, Value>, path: &[&str]) -> Result<(), V1Error> {
    super::keys::one_of(obj, path, &["parsePDF"], "parsers")?;
    let parsers = match obj.remove("parsePDF") {
        Some(Value::Bool(false)) => json!([]),
        Some(Value::Bool(true)) | None => json!(["pdf"]),
        Some(_) => {
            return Err(V1Error::field(
                &at(path, "parsePDF"),
                "parsePDF must be a boolean",
            ));
        }
    };
    obj.entry("parsers").or_insert(parsers);
    Ok(())
}

/// `geolocation` -> `location`; an explicit `location` wins, as in v1.
fn location(obj: &mut Map<String, Value>) {
    if let Some(geolocation) = obj.remove("geolocation") {
        obj.entry("location").or_insert(geolocation);
    }
}

/// `__experimental_cache` -> `maxAge`.
fn cache(obj: &mut Map<String, Value>, path: &[&str]) -> Result<(), V1Error> {
    match obj.remove("__experimental_cache") {
        Some(Value::Bool(true)) => {
            obj.entry("maxAge").or_insert(json!(EXPERIMENTAL_CACHE_MS));
        }
        Some(Value::Bool(false)) | None => {}
        Some(_) => {
            return Err(V1Error::field(
                &at(path, "__experimental_cache"),
                "__experimental_cache must be a boolean",
            ));
        }
    }
    Ok(())
}

/// v1's defaults where v2's differ, sent explicitly.
fn defaults(obj: &mut Map<String, Value>, place: Place) {
    obj.entry("maxAge").or_insert(json!(0));
    obj.entry("proxy").or_insert(json!("basic"));
    obj.entry("skipTlsVerification").or_insert(json!(false));
    if let Some(timeout) = place.timeout {
        obj.entry("timeout").or_insert(json!(timeout));
    }
}

/// Translates the `scrapeOptions` of a crawl, search or extract body (or `default` when
/// absent, as v1 filled it in) in place.
pub(super) fn nested(
    obj: &mut Map<String, Value>,
    default: Map<String, Value>,
    place: Place,
) -> Result<JsonAs, V1Error> {
    let path = ["scrapeOptions"];
    let mut options = match obj.remove("scrapeOptions") {
        None | Some(Value::Null) => default,
        Some(Value::Object(options)) => options,
        Some(_) => return Err(V1Error::field(&path, "must be an object")),
    };
    keys::check(
        &options,
        &path,
        &[keys::SCRAPE_KEPT, keys::SCRAPE_TRANSLATED],
        keys::SCRAPE_PREFIXES,
    )?;
    let json_as = translate(&mut options, &path, place)?;
    obj.insert("scrapeOptions".into(), Value::Object(options));
    Ok(json_as)
}
