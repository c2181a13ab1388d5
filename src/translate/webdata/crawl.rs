//! Crawl and map bodies, v1 -> v2: backward links, the sitemap switches, v1's path
//! depth limit, and (crawl) the nested scrape options.

use serde_json::{Map, Value, json};

use super::JsonAs;
use super::V1Error;
use super::keys::{self, at};
use super::scrape::{self, Place};

/// A crawl body translated in place; where its documents' json results are to be read.
pub(super) fn crawl(obj: &mut Map<String, Value>) -> Result<JsonAs, V1Error> {
    keys::check(
        obj,
        &[],
        &[
            keys::CRAWLER_KEPT,
            keys::CRAWLER_TRANSLATED,
            keys::CRAWL,
            keys::ENVELOPE,
        ],
        &[],
    )?;
    crawler(obj, false)?;
    // Crawl scrape options had no timeout default in v1: none is added.
    scrape::nested(obj, Map::new(), Place::default())
}

/// A map body translated in place.
pub(super) fn map(obj: &mut Map<String, Value>) -> Result<(), V1Error> {
    keys::check(
        obj,
        &[],
        &[
            keys::CRAWLER_KEPT,
            keys::CRAWLER_TRANSLATED,
            keys::MAP,
            keys::ENVELOPE,
        ],
        &[],
    )?;
    crawler(obj, true)
}

/// What crawl and map share: backward links, sitemap, path depth.
fn crawler(obj: &mut Map<String, Value>, map: bool) -> Result<(), V1Error> {
    if let Some(backward) = obj.remove("allowBackwardLinks") {
        // v1 let `crawlEntireDomain` override its deprecated alias.
        obj.entry("crawlEntireDomain").or_insert(backward);
    }
    sitemap(obj, map)?;
    max_depth(obj)
}

/// `ignoreSitemap` (and map's `sitemapOnly`) -> `sitemap`; false means v2's default.
fn sitemap(obj: &mut Map<String, Value>, map: bool) -> Result<(), V1Error> {
    keys::one_of(obj, &[], &["ignoreSitemap", "sitemapOnly"], "sitemap")?;
    let only = flag(obj, "sitemapOnly")?;
    let skip = flag(obj, "ignoreSitemap")?;
    if only && !map {
        return Err(V1Error::unknown_keys(&[], vec!["sitemapOnly".into()]));
    }
    if only {
        obj.insert("sitemap".into(), json!("only"));
    } else if skip {
        obj.insert("sitemap".into(), json!("skip"));
    }
    Ok(())
}

/// Takes out a boolean switch (absent or null is false).
fn flag(obj: &mut Map<String, Value>, key: &'static str) -> Result<bool, V1Error> {
    match obj.remove(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(b),
        Some(_) => Err(V1Error::field(&[key], format!("{key} must be a boolean"))),
    }
}

/// v1's `maxDepth` (a limit on the URL path's depth, counted on top of the start URL's) has
/// no v2 field. It is emulated with an `excludePaths` pattern rejecting deeper paths, and a
/// start URL deeper than `maxDepth` itself gets v1's own 400. It is never mapped to
/// `maxDiscoveryDepth`, which counts link hops instead.
fn max_depth(obj: &mut Map<String, Value>) -> Result<(), V1Error> {
    let Some(depth) = obj.remove("maxDepth") else {
        return Ok(());
    };
    let Some(depth) = depth.as_u64() else {
        return Err(V1Error::field(
            &["maxDepth"],
            "maxDepth must be a non-negative integer",
        ));
    };
    let start = path_depth(obj.get("url").and_then(Value::as_str).unwrap_or_default());
    if start > depth {
        return Err(V1Error::field(
            &["url"],
            "URL depth exceeds the specified maxDepth",
        ));
    }
    let full_url = obj.get("regexOnFullURL") == Some(&Value::Bool(true));
    let excluded = match obj
        .entry("excludePaths")
        .or_insert_with(|| Value::Array(Vec::new()))
    {
        Value::Array(list) => list,
        _ => {
            return Err(V1Error::field(
                &at(&[], "excludePaths"),
                "excludePaths must be an array of strings",
            ));
        }
    };
    // v1's crawler counted `maxDepth` from the start URL's own depth (`getAdjustedMaxDepth`):
    // `https://e.com/docs` with `maxDepth: 2` reaches `/docs/a/b`.
    let limit = depth.saturating_add(start);
    excluded.push(Value::String(deeper_than(limit, full_url)));
    Ok(())
}

/// A pattern matching paths with more than `depth` segments (a trailing slash adds none).
/// With `regexOnFullURL` the patterns see the whole URL, so the origin is matched first.
pub(super) fn deeper_than(depth: u64, full_url: bool) -> String {
    let origin = if full_url {
        "^[a-zA-Z][a-zA-Z0-9+.-]*://[^/]+"
    } else {
        "^"
    };
    format!("{origin}/(?:[^/]+/){{{depth},}}[^/]+")
}

/// How deep v1 counted a URL: its path's segments, `index.html` / `index.php` not counted.
pub(super) fn path_depth(url: &str) -> u64 {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = rest.find('/').map_or("", |i| &rest[i..]);
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let segments = path
        .split('/')
        .filter(|s| !s.is_empty() && !matches!(*s, "index.html" | "index.php"))
        .count();
    u64::try_from(segments).unwrap_or(u64::MAX)
}
