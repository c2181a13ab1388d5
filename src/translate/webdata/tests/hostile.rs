//! Hostile bodies: any JSON a v1 client can send is translated or refused with a 4xx in the
//! v1 shape, never a panic; and a translated body never carries a v1-only key v2 refuses.

use proptest::prelude::*;
use serde_json::{Map, json};

use super::*;

/// Keys of every kind: kept, translated, v2's, unknown.
const KEYS: &[&str] = &[
    "url",
    "urls",
    "query",
    "formats",
    "extract",
    "jsonOptions",
    "changeTrackingOptions",
    "parsePDF",
    "parsers",
    "geolocation",
    "location",
    "agent",
    "__experimental_cache",
    "maxAge",
    "timeout",
    "proxy",
    "scrapeOptions",
    "maxDepth",
    "allowBackwardLinks",
    "crawlEntireDomain",
    "ignoreSitemap",
    "sitemapOnly",
    "sitemap",
    "excludePaths",
    "regexOnFullURL",
    "webhook",
    "prompt",
    "schema",
    "mode",
    "temperature",
    "modes",
    "tag",
    "bogus",
];

/// Format names, v1's and not.
const FORMATS: &[&str] = &[
    "markdown",
    "html",
    "extract",
    "json",
    "changeTracking",
    "screenshot",
    "screenshot@fullPage",
    "summary",
    "images",
];

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..20).prop_map(|n| json!(n)),
        prop::sample::select(FORMATS).prop_map(|s| json!(s)),
        Just(json!("https://e.com/a/b/c")),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..5).prop_map(|kv| {
                Value::Object(
                    kv.into_iter()
                        .map(|(k, v)| (k.to_owned(), v))
                        .collect::<Map<_, _>>(),
                )
            }),
        ]
    })
}

fn body() -> impl Strategy<Value = Value> {
    prop::collection::vec((prop::sample::select(KEYS), value()), 0..8)
        .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()))
}

const CALLS: [Call; 6] = [
    Call::Scrape,
    Call::Batch,
    Call::Crawl,
    Call::Map,
    Call::Search,
    Call::Extract,
];

/// v1-only keys that must never reach a v2 upstream (top level or `scrapeOptions`).
const V1_ONLY: &[&str] = &[
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
];

/// Extract's own top level keeps `ignoreSitemap` (a field of v2 extract too) and its
/// `__experimental_*` flags.
fn extract_keeps(call: Call, key: &str) -> bool {
    call == Call::Extract && (key == "ignoreSitemap" || key.starts_with("__experimental_"))
}

proptest! {
    // Shrunk failures are printed; no regression files are written into the tree.
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_body_is_translated_or_refused_in_the_v1_shape(call in prop::sample::select(&CALLS[..]), v1 in body()) {
        match translate(call, &v1) {
            Ok((v2, _)) => {
                for (top, place) in [(true, &v2), (false, &v2["scrapeOptions"])] {
                    for key in V1_ONLY.iter().filter(|k| !(top && extract_keeps(call, k))) {
                        prop_assert!(place.get(*key).is_none(), "{key} went up: {v2}");
                    }
                    if let Some(formats) = place.get("formats").and_then(Value::as_array) {
                        prop_assert!(formats.iter().all(|f| f != "extract" && f != "screenshot@fullPage"), "{v2}");
                    }
                }
            }
            Err((status, body)) => {
                prop_assert_eq!(status, 400);
                prop_assert_eq!(&body["success"], &json!(false));
                prop_assert!(body["error"].is_string());
            }
        }
    }
}
