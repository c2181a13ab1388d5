//! Request bodies, v1 -> v2: scrape options, crawl and map.

use serde_json::json;

use super::*;

/// The v1 defaults a v1 scrape body gets when it names none of them.
fn scrape_defaults() -> Value {
    json!({"maxAge": 0, "proxy": "basic", "skipTlsVerification": false, "timeout": 30000,
        "parsers": ["pdf"]})
}

/// `extra` merged over `base`.
fn with(base: Value, extra: Value) -> Value {
    let mut base = base;
    for (k, v) in extra.as_object().unwrap() {
        base[k] = v.clone();
    }
    base
}

#[test]
fn scrape_options() {
    let u = || json!({"url": "https://example.com"});
    let cases: Vec<(&str, Value, Value, JsonAs)> = vec![
        (
            "1: kept unchanged",
            json!({"url": "https://example.com", "headers": {"a": "b"},
            "includeTags": ["p"], "excludeTags": ["nav"], "onlyMainContent": false, "waitFor": 100,
            "timeout": 9000, "mobile": true, "actions": [{"type": "scrape"}],
            "location": {"country": "DE"}, "skipTlsVerification": true, "removeBase64Images": false,
            "fastMode": true, "blockAds": false, "proxy": "stealth", "maxAge": 5, "storeInCache": false,
            "useMock": "m", "origin": "python-sdk@1.0", "integration": "dify",
            "zeroDataRetention": false, "__experimental_omceDomain": "x", "__searchPreviewToken": "t"}),
            json!({"url": "https://example.com", "headers": {"a": "b"},
            "includeTags": ["p"], "excludeTags": ["nav"], "onlyMainContent": false, "waitFor": 100,
            "timeout": 9000, "mobile": true, "actions": [{"type": "scrape"}],
            "location": {"country": "DE"}, "skipTlsVerification": true, "removeBase64Images": false,
            "fastMode": true, "blockAds": false, "proxy": "stealth", "maxAge": 5, "storeInCache": false,
            "useMock": "m", "origin": "python-sdk@1.0", "integration": "dify",
            "zeroDataRetention": false, "__experimental_omceDomain": "x", "__searchPreviewToken": "t",
            "parsers": ["pdf"]}),
            JsonAs::Json,
        ),
        (
            "2: plain strings",
            with(
                u(),
                json!({"formats": ["markdown", "html", "rawHtml", "links", "screenshot", "summary"]}),
            ),
            with(
                with(u(), scrape_defaults()),
                json!({"formats": ["markdown", "html", "rawHtml", "links", "screenshot", "summary"]}),
            ),
            JsonAs::Json,
        ),
        (
            "2: screenshot@fullPage",
            with(u(), json!({"formats": ["screenshot@fullPage"]})),
            with(
                with(u(), scrape_defaults()),
                json!({"formats": [{"type": "screenshot", "fullPage": true}]}),
            ),
            JsonAs::Json,
        ),
        (
            "2: extract from extract",
            with(
                u(),
                json!({"formats": ["markdown", "extract"],
            "extract": {"mode": "llm", "schema": {"type": "object"}, "prompt": "p", "systemPrompt": "s"}}),
            ),
            with(
                with(u(), scrape_defaults()),
                json!({"formats": ["markdown",
            {"type": "json", "schema": {"type": "object"}, "prompt": "p"}]}),
            ),
            JsonAs::Extract,
        ),
        (
            // Both SDKs' v1 models (Python V1JsonConfig, JS jsonOptions) offer it; it was
            // refused as an unrecognized key until the Python SDK sent it.
            "2: extract keeps checkPromptInjection, a member of v2's json format too",
            with(
                u(),
                json!({"formats": ["extract"],
            "extract": {"prompt": "p", "checkPromptInjection": true}}),
            ),
            with(
                with(u(), scrape_defaults()),
                json!({"formats": [{"type": "json", "prompt": "p", "checkPromptInjection": true}]}),
            ),
            JsonAs::Extract,
        ),
        (
            "2: extract, nulls omitted",
            with(
                u(),
                json!({"formats": ["extract"],
            "extract": {"schema": null, "prompt": "p"}}),
            ),
            with(
                with(u(), scrape_defaults()),
                json!({"formats": [{"type": "json", "prompt": "p"}]}),
            ),
            JsonAs::Extract,
        ),
        (
            "2: json",
            with(
                u(),
                json!({"formats": ["json"], "jsonOptions": {"schema": {"type": "object"}}}),
            ),
            with(
                with(u(), scrape_defaults()),
                json!({"formats": [{"type": "json", "schema": {"type": "object"}}]}),
            ),
            JsonAs::Json,
        ),
        (
            "2: extract and json emit one json format",
            with(
                u(),
                json!({"formats": ["extract", "json"],
            "extract": {"prompt": "p"}, "jsonOptions": {"prompt": "p"}}),
            ),
            with(
                with(u(), scrape_defaults()),
                json!({"formats": [{"type": "json", "prompt": "p"}]}),
            ),
            JsonAs::Json,
        ),
        (
            "2: changeTracking with options",
            with(
                u(),
                json!({"formats": ["markdown", "changeTracking"],
            "changeTrackingOptions": {"modes": ["git-diff"], "tag": "prod", "prompt": "p"}}),
            ),
            with(
                with(u(), scrape_defaults()),
                json!({"formats": ["markdown",
            {"type": "changeTracking", "modes": ["git-diff"], "tag": "prod", "prompt": "p"}]}),
            ),
            JsonAs::Json,
        ),
        (
            "2: changeTracking defaults",
            with(u(), json!({"formats": ["markdown", "changeTracking"]})),
            with(
                with(u(), scrape_defaults()),
                json!({"formats": ["markdown",
            {"type": "changeTracking", "modes": [], "tag": null}]}),
            ),
            JsonAs::Json,
        ),
        (
            "4: parsePDF false",
            with(u(), json!({"parsePDF": false})),
            with(with(u(), scrape_defaults()), json!({"parsers": []})),
            JsonAs::Json,
        ),
        (
            "4: parsePDF true",
            with(u(), json!({"parsePDF": true})),
            with(u(), scrape_defaults()),
            JsonAs::Json,
        ),
        (
            "4: v2 parsers given",
            with(u(), json!({"parsers": []})),
            with(with(u(), scrape_defaults()), json!({"parsers": []})),
            JsonAs::Json,
        ),
        (
            "5: geolocation",
            with(u(), json!({"geolocation": {"country": "FR"}})),
            with(
                with(u(), scrape_defaults()),
                json!({"location": {"country": "FR"}}),
            ),
            JsonAs::Json,
        ),
        (
            "5: location wins",
            with(
                u(),
                json!({"geolocation": {"country": "FR"}, "location": {"country": "DE"}}),
            ),
            with(
                with(u(), scrape_defaults()),
                json!({"location": {"country": "DE"}}),
            ),
            JsonAs::Json,
        ),
        (
            "6: __experimental_cache",
            with(u(), json!({"__experimental_cache": true})),
            with(with(u(), scrape_defaults()), json!({"maxAge": 14400000})),
            JsonAs::Json,
        ),
        (
            "6: __experimental_cache with maxAge",
            with(u(), json!({"__experimental_cache": true, "maxAge": 7})),
            with(with(u(), scrape_defaults()), json!({"maxAge": 7})),
            JsonAs::Json,
        ),
        (
            "6: __experimental_cache false",
            with(u(), json!({"__experimental_cache": false})),
            with(u(), scrape_defaults()),
            JsonAs::Json,
        ),
        (
            "7: defaults explicit",
            u(),
            with(u(), scrape_defaults()),
            JsonAs::Json,
        ),
        (
            "8: agent null is no agent",
            with(u(), json!({"agent": null})),
            with(u(), scrape_defaults()),
            JsonAs::Json,
        ),
    ];
    for (name, v1, v2, json_as) in cases {
        assert_eq!(translate(Call::Scrape, &v1), Ok((v2, json_as)), "{name}");
    }
}

#[test]
fn scrape_refusals_are_v1_shaped_400s_naming_the_field() {
    let u = || json!({"url": "https://example.com"});
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "8: FIRE-1 agent",
            with(u(), json!({"agent": {"model": "FIRE-1", "prompt": "go"}})),
            json!(["agent"]),
        ),
        (
            "8: agent in extract",
            with(
                u(),
                json!({"formats": ["extract"], "extract": {"prompt": "p", "agent": {"model": "FIRE-1"}}}),
            ),
            json!(["extract", "agent"]),
        ),
        (
            "8: agent in jsonOptions",
            with(
                u(),
                json!({"formats": ["json"], "jsonOptions": {"agent": {"model": "FIRE-1"}}}),
            ),
            json!(["jsonOptions", "agent"]),
        ),
        (
            "9: extract format without options",
            with(u(), json!({"formats": ["extract"]})),
            json!(["extract"]),
        ),
        (
            "9: extract options without format",
            with(u(), json!({"extract": {"prompt": "p"}})),
            json!(["extract"]),
        ),
        (
            "9: json without jsonOptions",
            with(u(), json!({"formats": ["json"]})),
            json!(["jsonOptions"]),
        ),
        (
            "9: the extract format with jsonOptions only (v1's extractRefine is strict)",
            with(
                u(),
                json!({"formats": ["extract"], "jsonOptions": {"prompt": "p"}}),
            ),
            json!(["extract"]),
        ),
        (
            "9: extract and json formats with jsonOptions only",
            with(
                u(),
                json!({"formats": ["extract", "json"], "jsonOptions": {"prompt": "p"}}),
            ),
            json!(["extract"]),
        ),
        (
            "9: jsonOptions without format",
            with(
                u(),
                json!({"formats": ["markdown"], "jsonOptions": {"prompt": "p"}}),
            ),
            json!(["jsonOptions"]),
        ),
        (
            "9: both screenshots",
            with(
                u(),
                json!({"formats": ["screenshot", "screenshot@fullPage"]}),
            ),
            json!(["formats"]),
        ),
        (
            "9: changeTracking without markdown",
            with(u(), json!({"formats": ["changeTracking"]})),
            json!(["formats"]),
        ),
        (
            "changeTrackingOptions without format",
            with(u(), json!({"changeTrackingOptions": {"modes": []}})),
            json!(["changeTrackingOptions"]),
        ),
        (
            "extract and jsonOptions disagree",
            with(
                u(),
                json!({"formats": ["extract", "json"], "extract": {"prompt": "a"}, "jsonOptions": {"prompt": "b"}}),
            ),
            json!(["extract"]),
        ),
        (
            "temperature has no v2 home",
            with(
                u(),
                json!({"formats": ["extract"], "extract": {"prompt": "p", "temperature": 0.5}}),
            ),
            json!(["extract", "temperature"]),
        ),
        (
            "mode other than llm",
            with(
                u(),
                json!({"formats": ["extract"], "extract": {"mode": "x"}}),
            ),
            json!(["extract", "mode"]),
        ),
        (
            "unknown format",
            with(u(), json!({"formats": ["images"]})),
            json!(["formats"]),
        ),
        (
            "v2 format object",
            with(u(), json!({"formats": [{"type": "markdown"}]})),
            json!(["formats"]),
        ),
        (
            "parsePDF and parsers",
            with(u(), json!({"parsePDF": true, "parsers": []})),
            json!(["parsers"]),
        ),
        (
            "parsePDF not a boolean",
            with(u(), json!({"parsePDF": "yes"})),
            json!(["parsePDF"]),
        ),
    ];
    for (name, v1, path) in cases {
        let (status, body) = translate(Call::Scrape, &v1).unwrap_err();
        assert_eq!(status, 400, "{name}");
        assert_eq!(body["success"], false, "{name}");
        assert!(body["error"].is_string(), "{name}");
        assert_eq!(body["details"][0]["path"], path, "{name}: {body}");
    }
}

#[test]
fn unknown_keys_are_refused_by_name() {
    let cases: Vec<(Call, Value, Value, Value)> = vec![
        (
            Call::Scrape,
            json!({"url": "u", "search_tool_name": "x", "bogus": 1}),
            json!([]),
            json!(["bogus", "search_tool_name"]),
        ),
        (
            Call::Scrape,
            json!({"url": "u", "__experimental_other": 1}),
            json!([]),
            json!(["__experimental_other"]),
        ),
        (
            Call::Scrape,
            json!({"url": "u", "formats": ["extract"], "extract": {"prompt": "p", "x": 1}}),
            json!(["extract"]),
            json!(["x"]),
        ),
        (
            Call::Scrape,
            json!({"url": "u", "formats": ["markdown", "changeTracking"], "changeTrackingOptions": {"y": 1}}),
            json!(["changeTrackingOptions"]),
            json!(["y"]),
        ),
        (
            Call::Crawl,
            json!({"url": "u", "scrapeOptions": {"nope": true}}),
            json!(["scrapeOptions"]),
            json!(["nope"]),
        ),
        (
            Call::Crawl,
            json!({"url": "u", "sitemapOnly": true}),
            json!([]),
            json!(["sitemapOnly"]),
        ),
        (
            Call::Batch,
            json!({"urls": ["u"], "url": "u"}),
            json!([]),
            json!(["url"]),
        ),
        (
            Call::Map,
            json!({"url": "u", "scrapeOptions": {}}),
            json!([]),
            json!(["scrapeOptions"]),
        ),
        (
            Call::Search,
            json!({"query": "q", "sources": ["news"]}),
            json!([]),
            json!(["sources"]),
        ),
        (
            Call::Extract,
            json!({"urls": ["u"], "maxDepth": 2}),
            json!([]),
            json!(["maxDepth"]),
        ),
    ];
    for (call, v1, path, keys) in cases {
        let (status, body) = translate(call, &v1).unwrap_err();
        assert_eq!(status, 400, "{v1}");
        let issue = &body["details"][0];
        assert_eq!(issue["code"], "unrecognized_keys", "{v1}");
        assert_eq!((&issue["path"], &issue["keys"]), (&path, &keys), "{v1}");
        assert!(
            issue["message"].as_str().unwrap().contains("v1 API"),
            "{v1}"
        );
        let named: Vec<String> = keys
            .as_array()
            .unwrap()
            .iter()
            .map(|k| format!("'{}'", k.as_str().unwrap()))
            .collect();
        let want = format!("Bad Request: unrecognized key(s) {}", named.join(", "));
        assert_eq!(body["error"], want, "the message names the keys: {v1}");
    }
}

#[test]
fn bodies_that_are_not_json_objects() {
    assert_eq!(
        request(Call::Scrape, b"{not json").unwrap_err().body(),
        r#"{"code":"BAD_REQUEST_INVALID_JSON","error":"Bad request, malformed JSON","success":false}"#
    );
    let (status, body) = translate(Call::Crawl, &json!(["u"])).unwrap_err();
    assert_eq!((status, &body["details"][0]["path"]), (400, &json!([])));
    let no_body = request(Call::CrawlStatus, b"").unwrap();
    assert_eq!((no_body.body, no_body.json_as), (None, JsonAs::Unknown));
}

/// The defaults in nested scrape options: no timeout.
fn nested_defaults() -> Value {
    json!({"maxAge": 0, "proxy": "basic", "skipTlsVerification": false, "parsers": ["pdf"]})
}

#[test]
fn crawl_and_map() {
    let cases: Vec<(&str, Call, Value, Value, JsonAs)> = vec![
        (
            "allowBackwardLinks",
            Call::Crawl,
            json!({"url": "u", "allowBackwardLinks": true}),
            json!({"url": "u", "crawlEntireDomain": true, "scrapeOptions": nested_defaults()}),
            JsonAs::Json,
        ),
        (
            "crawlEntireDomain wins",
            Call::Crawl,
            json!({"url": "u", "allowBackwardLinks": true, "crawlEntireDomain": false}),
            json!({"url": "u", "crawlEntireDomain": false, "scrapeOptions": nested_defaults()}),
            JsonAs::Json,
        ),
        (
            "ignoreSitemap true",
            Call::Crawl,
            json!({"url": "u", "ignoreSitemap": true}),
            json!({"url": "u", "sitemap": "skip", "scrapeOptions": nested_defaults()}),
            JsonAs::Json,
        ),
        (
            "ignoreSitemap false",
            Call::Crawl,
            json!({"url": "u", "ignoreSitemap": false}),
            json!({"url": "u", "scrapeOptions": nested_defaults()}),
            JsonAs::Json,
        ),
        (
            "sitemapOnly wins",
            Call::Map,
            json!({"url": "u", "sitemapOnly": true, "ignoreSitemap": true}),
            json!({"url": "u", "sitemap": "only"}),
            JsonAs::Json,
        ),
        (
            "map ignoreSitemap",
            Call::Map,
            json!({"url": "u", "ignoreSitemap": true, "allowBackwardLinks": false}),
            json!({"url": "u", "sitemap": "skip", "crawlEntireDomain": false}),
            JsonAs::Json,
        ),
        (
            "maxDiscoveryDepth unchanged",
            Call::Crawl,
            json!({"url": "u", "maxDiscoveryDepth": 2}),
            json!({"url": "u", "maxDiscoveryDepth": 2, "scrapeOptions": nested_defaults()}),
            JsonAs::Json,
        ),
        (
            "maxDepth emulated, counted from the start URL's depth (1 + 2)",
            Call::Crawl,
            json!({"url": "https://e.com/a", "maxDepth": 2, "excludePaths": ["^/x"]}),
            json!({"url": "https://e.com/a", "excludePaths": ["^/x", "^/(?:[^/]+/){3,}[^/]+"], "scrapeOptions": nested_defaults()}),
            JsonAs::Json,
        ),
        (
            "maxDepth on full URLs",
            Call::Map,
            json!({"url": "https://e.com/", "maxDepth": 0, "regexOnFullURL": true}),
            json!({"url": "https://e.com/", "regexOnFullURL": true, "excludePaths": ["^[a-zA-Z][a-zA-Z0-9+.-]*://[^/]+/(?:[^/]+/){0,}[^/]+"]}),
            JsonAs::Json,
        ),
        (
            "scrapeOptions, no timeout added",
            Call::Crawl,
            json!({"url": "u", "scrapeOptions": {"formats": ["extract"], "extract": {"prompt": "p"}}}),
            json!({"url": "u", "scrapeOptions": with(nested_defaults(), json!({"formats": [{"type": "json", "prompt": "p"}]}))}),
            JsonAs::Extract,
        ),
        (
            "everything else unchanged",
            Call::Crawl,
            json!({"url": "u", "limit": 5, "includePaths": ["a"], "excludePaths": ["b"],
            "allowExternalLinks": true, "allowSubdomains": true, "ignoreRobotsTxt": true, "deduplicateSimilarURLs": false,
            "ignoreQueryParameters": true, "regexOnFullURL": false, "delay": 1, "maxConcurrency": 2,
            "webhook": {"url": "https://hook", "headers": {"x": "y"}, "metadata": {"m": "n"}, "events": ["page"]},
            "origin": "o", "integration": "i", "zeroDataRetention": false, "prompt": "v2 prompt"}),
            json!({"url": "u", "limit": 5, "includePaths": ["a"], "excludePaths": ["b"],
            "allowExternalLinks": true, "allowSubdomains": true, "ignoreRobotsTxt": true, "deduplicateSimilarURLs": false,
            "ignoreQueryParameters": true, "regexOnFullURL": false, "delay": 1, "maxConcurrency": 2,
            "webhook": {"url": "https://hook", "headers": {"x": "y"}, "metadata": {"m": "n"}, "events": ["page"]},
            "origin": "o", "integration": "i", "zeroDataRetention": false, "prompt": "v2 prompt",
            "scrapeOptions": nested_defaults()}),
            JsonAs::Json,
        ),
        (
            "map's own fields unchanged",
            Call::Map,
            json!({"url": "u", "search": "s", "includeSubdomains": false,
            "timeout": 5, "filterByPath": false, "useIndex": false, "limit": 9, "useMock": "m", "location": {"country": "DE"}}),
            json!({"url": "u", "search": "s", "includeSubdomains": false,
            "timeout": 5, "filterByPath": false, "useIndex": false, "limit": 9, "useMock": "m", "location": {"country": "DE"}}),
            JsonAs::Json,
        ),
    ];
    for (name, call, v1, v2, json_as) in cases {
        assert_eq!(translate(call, &v1), Ok((v2, json_as)), "{name}");
    }
}

#[test]
fn crawl_refusals() {
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "start URL deeper than maxDepth",
            json!({"url": "https://e.com/a/b/c", "maxDepth": 2}),
            json!(["url"]),
        ),
        (
            "maxDepth not a count",
            json!({"url": "u", "maxDepth": -1}),
            json!(["maxDepth"]),
        ),
        (
            "ignoreSitemap and sitemap",
            json!({"url": "u", "ignoreSitemap": true, "sitemap": "include"}),
            json!(["sitemap"]),
        ),
        (
            "FIRE-1 in scrapeOptions",
            json!({"url": "u", "scrapeOptions": {"agent": {"model": "FIRE-1"}}}),
            json!(["scrapeOptions", "agent"]),
        ),
        (
            "extract rule in scrapeOptions",
            json!({"url": "u", "scrapeOptions": {"formats": ["extract"]}}),
            json!(["scrapeOptions", "extract"]),
        ),
    ];
    for (name, v1, path) in cases {
        let (status, body) = translate(Call::Crawl, &v1).unwrap_err();
        assert_eq!(
            (status, &body["details"][0]["path"]),
            (400, &path),
            "{name}: {body}"
        );
    }
}

#[test]
fn path_depth_counts_as_v1_did() {
    for (url, depth) in [
        ("https://e.com", 0),
        ("https://e.com/", 0),
        ("https://e.com/a/b/", 2),
        ("https://e.com/a/index.html", 1),
        ("https://e.com/a/b/index.php?x=/y/z", 2),
        ("e.com/a", 1),
    ] {
        assert_eq!(crawl::path_depth(url), depth, "{url}");
    }
}

#[test]
fn batch_search_and_extract() {
    let cases: Vec<(&str, Call, Value, Value, JsonAs)> = vec![
        (
            "batch: flat options, v1 defaults",
            Call::Batch,
            json!({"urls": ["a", "b"], "formats": ["extract"], "extract": {"schema": {}}, "webhook": "https://hook",
            "appendToId": "j", "maxConcurrency": 3}),
            json!({"urls": ["a", "b"], "formats": [{"type": "json", "schema": {}}], "webhook": "https://hook",
            "appendToId": "j", "maxConcurrency": 3, "ignoreInvalidURLs": false,
            "maxAge": 0, "proxy": "basic", "skipTlsVerification": false, "timeout": 30000, "parsers": ["pdf"]}),
            JsonAs::Extract,
        ),
        (
            "batch: ignoreInvalidURLs kept",
            Call::Batch,
            json!({"urls": ["a"], "ignoreInvalidURLs": true, "timeout": 1}),
            json!({"urls": ["a"], "ignoreInvalidURLs": true, "timeout": 1,
            "maxAge": 0, "proxy": "basic", "skipTlsVerification": false, "parsers": ["pdf"]}),
            JsonAs::Json,
        ),
        (
            "search: scrapeOptions translated as scrape options",
            Call::Search,
            json!({"query": "q", "limit": 3, "lang": "de", "scrapeOptions": {"formats": ["markdown", "screenshot@fullPage"]}}),
            json!({"query": "q", "limit": 3, "lang": "de", "scrapeOptions": with(nested_defaults(),
            json!({"formats": ["markdown", {"type": "screenshot", "fullPage": true}]}))}),
            JsonAs::Json,
        ),
        (
            "search: no scrapeOptions",
            Call::Search,
            json!({"query": "q"}),
            json!({"query": "q", "scrapeOptions": nested_defaults()}),
            JsonAs::Json,
        ),
        (
            "extract: v1 defaults",
            Call::Extract,
            json!({"urls": ["a"], "prompt": "p", "__experimental_streamSteps": true}),
            json!({"urls": ["a"], "prompt": "p", "__experimental_streamSteps": true, "timeout": 60000,
            "ignoreInvalidURLs": false, "scrapeOptions": with(nested_defaults(), json!({"onlyMainContent": false}))}),
            JsonAs::Json,
        ),
        (
            "extract: given values kept",
            Call::Extract,
            json!({"urls": ["a"], "timeout": 5, "ignoreInvalidURLs": true,
            "scrapeOptions": {"parsePDF": false}, "agent": null}),
            json!({"urls": ["a"], "timeout": 5, "ignoreInvalidURLs": true,
            "scrapeOptions": with(nested_defaults(), json!({"parsers": []}))}),
            JsonAs::Json,
        ),
    ];
    for (name, call, v1, v2, json_as) in cases {
        assert_eq!(translate(call, &v1), Ok((v2, json_as)), "{name}");
    }
    let (status, body) = translate(
        Call::Extract,
        &json!({"urls": ["a"], "agent": {"model": "FIRE-1"}}),
    )
    .unwrap_err();
    assert_eq!(
        (status, &body["details"][0]["path"]),
        (400, &json!(["agent"]))
    );
    let (status, body) = translate(
        Call::Search,
        &json!({"query": "q", "scrapeOptions": {"formats": ["summary"]}}),
    )
    .unwrap_err();
    assert_eq!(
        (status, &body["details"][0]["path"]),
        (400, &json!(["scrapeOptions", "formats"]))
    );
    let (status, body) = translate(
        Call::Batch,
        &json!({"urls": ["a"], "agent": {"model": "FIRE-1"}}),
    )
    .unwrap_err();
    assert_eq!(
        (status, &body["details"][0]["path"]),
        (400, &json!(["agent"]))
    );
}
