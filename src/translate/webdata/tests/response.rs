//! Responses, v2 -> v1; the WebSocket frames; the job memory.

use std::time::{Duration, Instant};

use serde_json::json;

use super::*;

const BASE: &str = "http://lingo:8080";

fn response_context(call: Call, json_as: JsonAs) -> ResponseContext<'static> {
    ResponseContext {
        call,
        json_as,
        public_base: BASE,
        base_path: "/fc",
    }
}

/// The v1 response (parsed) for a v2 response; `None` when it goes on unchanged.
fn v1_of(call: Call, json_as: JsonAs, status: u16, v2: &Value) -> Option<Value> {
    let out = response(
        &response_context(call, json_as),
        status,
        v2.to_string().as_bytes(),
    )?;
    Some(serde_json::from_slice(&out).unwrap())
}

#[test]
fn responses_per_endpoint() {
    let doc = |extra: Value| {
        let mut d = json!({"markdown": "# m", "metadata": {"sourceURL": "https://e.com"}});
        for (k, v) in extra.as_object().unwrap() {
            d[k] = v.clone();
        }
        d
    };
    let cases: Vec<(&str, Call, JsonAs, Value, Option<Value>)> = vec![
        (
            "scrape json -> extract",
            Call::Scrape,
            JsonAs::Extract,
            json!({"success": true, "data": doc(json!({"json": {"t": 1}}))}),
            Some(json!({"success": true, "data": doc(json!({"extract": {"t": 1}}))})),
        ),
        (
            "scrape json stays json",
            Call::Scrape,
            JsonAs::Json,
            json!({"success": true, "data": doc(json!({"json": {"t": 1}}))}),
            None,
        ),
        (
            "scrape status unknown: both",
            Call::ScrapeStatus,
            JsonAs::Unknown,
            json!({"success": true, "data": doc(json!({"json": {"t": 1}}))}),
            Some(
                json!({"success": true, "data": doc(json!({"json": {"t": 1}, "extract": {"t": 1}}))}),
            ),
        ),
        (
            "crawl start url",
            Call::Crawl,
            JsonAs::Extract,
            json!({"success": true, "id": "j1", "url": "https://up.dev/fc/v2/crawl/j1"}),
            Some(json!({"success": true, "id": "j1", "url": "http://lingo:8080/v1/crawl/j1"})),
        ),
        (
            "batch start url, invalidURLs kept",
            Call::Batch,
            JsonAs::Json,
            json!({"success": true, "id": "j2", "url": "https://up.dev/v2/batch/scrape/j2", "invalidURLs": ["x"]}),
            Some(
                json!({"success": true, "id": "j2", "url": "http://lingo:8080/v1/batch/scrape/j2", "invalidURLs": ["x"]}),
            ),
        ),
        (
            "crawl status next and documents",
            Call::CrawlStatus,
            JsonAs::Extract,
            json!({"success": true, "status": "scraping", "completed": 1, "total": 2, "creditsUsed": 1,
            "next": "https://up.dev/fc/v2/crawl/j1?skip=1&limit=1",
            "data": [doc(json!({"json": {"a": 1}})), doc(json!({}))]}),
            Some(
                json!({"success": true, "status": "scraping", "completed": 1, "total": 2, "creditsUsed": 1,
            "next": "http://lingo:8080/v1/crawl/j1?skip=1&limit=1",
            "data": [doc(json!({"extract": {"a": 1}})), doc(json!({}))]}),
            ),
        ),
        (
            "batch status without next",
            Call::BatchStatus,
            JsonAs::Json,
            json!({"success": true, "status": "completed", "data": [doc(json!({"json": 1}))]}),
            None,
        ),
        (
            "cancel unchanged",
            Call::Same,
            JsonAs::Unknown,
            json!({"status": "cancelled"}),
            None,
        ),
        (
            "errors unchanged",
            Call::Same,
            JsonAs::Unknown,
            json!({"errors": [{"id": "e", "timestamp": "t", "url": "u", "error": "x", "code": "SCRAPE_TIMEOUT"}], "robotsBlocked": []}),
            None,
        ),
        (
            "active options",
            Call::Active,
            JsonAs::Unknown,
            json!({"success": true, "crawls": [{"id": "j", "teamId": "t", "url": "https://e.com", "created_at": "c",
            "options": {"limit": 5, "sitemap": "skip", "crawlEntireDomain": true, "scrapeOptions": {
                "formats": ["markdown", {"type": "json", "prompt": "p"}, {"type": "screenshot", "fullPage": true},
                    {"type": "changeTracking", "modes": []}, {"type": "html"}], "parsers": []}}}]}),
            Some(
                json!({"success": true, "crawls": [{"id": "j", "teamId": "t", "url": "https://e.com", "created_at": "c",
            "options": {"limit": 5, "ignoreSitemap": true, "crawlEntireDomain": true, "allowBackwardLinks": true,
                "scrapeOptions": {"formats": ["markdown", "json", "screenshot@fullPage", "changeTracking", "html"],
                    "jsonOptions": {"prompt": "p"}, "changeTrackingOptions": {"modes": []}, "parsePDF": false}}}]}),
            ),
        ),
        (
            "active without sitemap",
            Call::Active,
            JsonAs::Unknown,
            json!({"success": true, "crawls": [{"id": "j", "options": {"scrapeOptions": {"parsers": ["pdf"]}}}]}),
            Some(
                json!({"success": true, "crawls": [{"id": "j", "options": {"ignoreSitemap": false, "scrapeOptions": {"parsePDF": true}}}]}),
            ),
        ),
        (
            "active: a plain screenshot, pdf parser as an object",
            Call::Active,
            JsonAs::Unknown,
            json!({"success": true, "crawls": [{"id": "j", "options": {"scrapeOptions": {
                "formats": [{"type": "screenshot"}, {"type": "screenshot", "fullPage": false}],
                "parsers": [{"type": "pdf", "maxPages": 3}]}}}]}),
            Some(
                json!({"success": true, "crawls": [{"id": "j", "options": {"ignoreSitemap": false,
                "scrapeOptions": {"formats": ["screenshot", "screenshot"], "parsePDF": true}}}]}),
            ),
        ),
        (
            "map links",
            Call::Map,
            JsonAs::Json,
            json!({"success": true, "links": [{"url": "https://e.com", "title": "Home"}, {"url": "https://e.com/a"}, "https://e.com/b"]}),
            Some(
                json!({"success": true, "links": ["https://e.com", "https://e.com/a", "https://e.com/b"]}),
            ),
        ),
        (
            "search web -> data",
            Call::Search,
            JsonAs::Extract,
            json!({"success": true, "data": {"web": [{"url": "u", "title": "t", "position": 1, "json": 2}]}, "creditsUsed": 5, "warning": "w"}),
            Some(
                json!({"success": true, "data": [{"url": "u", "title": "t", "position": 1, "extract": 2}], "warning": "w"}),
            ),
        ),
        (
            "search no results",
            Call::Search,
            JsonAs::Json,
            json!({"success": true, "data": {}, "creditsUsed": 0}),
            Some(json!({"success": true, "data": [], "warning": "No search results found"})),
        ),
        (
            "extract unchanged",
            Call::Extract,
            JsonAs::Json,
            json!({"success": true, "id": "x", "urlTrace": []}),
            None,
        ),
        (
            "extract status unchanged",
            Call::Same,
            JsonAs::Unknown,
            json!({"success": true, "status": "completed", "data": {"json": 1}, "expiresAt": "e"}),
            None,
        ),
        (
            "token usage",
            Call::TokenUsage,
            JsonAs::Unknown,
            json!({"success": true, "data": {"remainingTokens": 5, "planTokens": 10, "billingPeriodStart": null, "billingPeriodEnd": "2026-12-01T00:00:00Z"}}),
            Some(
                json!({"success": true, "data": {"remaining_tokens": 5, "plan_tokens": 10, "billing_period_start": null, "billing_period_end": "2026-12-01T00:00:00Z"}}),
            ),
        ),
        (
            "credit usage",
            Call::CreditUsage,
            JsonAs::Unknown,
            json!({"success": true, "data": {"remainingCredits": 5, "planCredits": 10, "billingPeriodStart": "s", "billingPeriodEnd": "e"}}),
            Some(
                json!({"success": true, "data": {"remaining_credits": 5, "plan_credits": 10, "billing_period_start": "s", "billing_period_end": "e"}}),
            ),
        ),
        (
            "crawl status: only next changes",
            Call::CrawlStatus,
            JsonAs::Extract,
            json!({"success": true, "status": "scraping", "data": [doc(json!({}))],
            "next": "https://up.dev/fc/v2/crawl/j1?skip=1"}),
            Some(
                json!({"success": true, "status": "scraping", "data": [doc(json!({}))],
            "next": "http://lingo:8080/v1/crawl/j1?skip=1"}),
            ),
        ),
        (
            "crawl status: every document, two of them",
            Call::CrawlStatus,
            JsonAs::Extract,
            json!({"success": true, "status": "completed",
            "data": [doc(json!({"json": 1})), doc(json!({"json": 2}))]}),
            Some(json!({"success": true, "status": "completed",
            "data": [doc(json!({"extract": 1})), doc(json!({"extract": 2}))]})),
        ),
        (
            "search results without a warning get none",
            Call::Search,
            JsonAs::Json,
            json!({"success": true, "data": {"web": [{"url": "u"}]}}),
            Some(json!({"success": true, "data": [{"url": "u"}]})),
        ),
        (
            "historical unchanged",
            Call::Same,
            JsonAs::Unknown,
            json!({"success": true, "periods": [{"startDate": "a", "endDate": "b", "apiKey": null, "totalCredits": 1}]}),
            None,
        ),
    ];
    for (name, call, json_as, v2, v1) in cases {
        assert_eq!(v1_of(call, json_as, 200, &v2), v1, "{name}");
    }
}

#[test]
fn errors_keep_status_and_envelope() {
    let cases: Vec<(u16, Value, Option<Value>)> = vec![
        (
            400,
            json!({"success": false, "code": "BAD_REQUEST", "error": "Bad Request", "details": [
            {"code": "unrecognized_keys", "keys": ["x"], "path": [], "message": "Unrecognized key in body -- please review the v2 API documentation for request body changes"}]}),
            Some(
                json!({"success": false, "code": "BAD_REQUEST", "error": "Bad Request", "details": [
            {"code": "unrecognized_keys", "keys": ["x"], "path": [], "message": "Unrecognized key in body -- please review the v1 API documentation for request body changes"}]}),
            ),
        ),
        (
            404,
            json!({"success": false, "error": "Job not found"}),
            None,
        ),
        (
            429,
            json!({"success": false, "error": "Rate limit exceeded. retry after 25s"}),
            None,
        ),
        (
            500,
            json!({"success": false, "code": "SCRAPE_ALL_ENGINES_FAILED", "error": "x"}),
            None,
        ),
    ];
    for call in [Call::Scrape, Call::CrawlStatus, Call::Map, Call::TokenUsage] {
        for (status, v2, v1) in &cases {
            assert_eq!(
                &v1_of(call, JsonAs::Extract, *status, v2),
                v1,
                "{call:?} {status}"
            );
        }
    }
    assert_eq!(
        response(
            &response_context(Call::Scrape, JsonAs::Extract),
            502,
            b"<html>"
        ),
        None
    );
}

#[test]
fn websocket_frames() {
    let catchup = json!({"type": "catchup", "data": {"status": "scraping", "data": [{"json": 1}, {"markdown": "m"}]}});
    let got: Value =
        serde_json::from_str(&ws_frame(JsonAs::Extract, &catchup.to_string()).unwrap()).unwrap();
    assert_eq!(
        got,
        json!({"type": "catchup", "data": {"status": "scraping", "data": [{"extract": 1}, {"markdown": "m"}]}})
    );
    let document = json!({"type": "document", "data": {"json": 1}});
    let got: Value =
        serde_json::from_str(&ws_frame(JsonAs::Unknown, &document.to_string()).unwrap()).unwrap();
    assert_eq!(
        got,
        json!({"type": "document", "data": {"json": 1, "extract": 1}})
    );
    assert_eq!(ws_frame(JsonAs::Json, &document.to_string()), None);
    assert_eq!(ws_frame(JsonAs::Extract, r#"{"type":"done"}"#), None);
    assert_eq!(ws_frame(JsonAs::Extract, "not json"), None);
}

#[test]
fn jobs_are_remembered_bounded_and_expiring() {
    let t0 = Instant::now();
    let mut jobs = Jobs::new(2, Duration::from_secs(60));
    jobs.remember("a", JsonAs::Extract, t0);
    jobs.remember("b", JsonAs::Json, t0);
    assert_eq!(jobs.recall("a", t0), JsonAs::Extract);
    assert_eq!(jobs.recall("b", t0), JsonAs::Json);
    jobs.remember("c", JsonAs::Extract, t0 + Duration::from_secs(1));
    assert_eq!(
        (jobs.len(), jobs.recall("a", t0)),
        (2, JsonAs::Unknown),
        "oldest forgotten"
    );
    let later = t0 + Duration::from_millis(60_500);
    assert_eq!(jobs.recall("c", later), JsonAs::Extract);
    assert_eq!(jobs.recall("b", later), JsonAs::Unknown, "expired");
    jobs.remember("d", JsonAs::Extract, later);
    assert_eq!(jobs.len(), 2);
    jobs.remember("u", JsonAs::Unknown, later);
    assert_eq!(jobs.recall("u", later), JsonAs::Unknown);
    for _ in 0..10 {
        jobs.remember("d", JsonAs::Extract, later);
    }
    assert!(jobs.len() <= 2);
    assert!(!jobs.is_empty());
    // Exactly the TTL old is expired: not recalled, and dropped when the next job comes.
    let mut timed = Jobs::new(10, Duration::from_secs(60));
    timed.remember("a", JsonAs::Extract, t0);
    let ttl_later = t0 + Duration::from_secs(60);
    assert_eq!(timed.recall("a", ttl_later), JsonAs::Unknown);
    timed.remember("b", JsonAs::Extract, ttl_later);
    assert_eq!(
        timed.len(),
        1,
        "the expired job is forgotten, not only hidden"
    );
    let mut none = Jobs::new(0, TTL);
    none.remember("z", JsonAs::Extract, later);
    assert!(none.is_empty(), "a capacity of 0 remembers nothing");
    assert_eq!(
        TTL,
        Duration::from_secs(24 * 3600),
        "the crawl expiry upstream"
    );
    let long = "i".repeat(super::super::jobs::MAX_ID + 1);
    jobs.remember(&long, JsonAs::Extract, later);
    assert_eq!(
        jobs.recall(&long, later),
        JsonAs::Unknown,
        "an overlong id is not kept"
    );
    let longest = "i".repeat(super::super::jobs::MAX_ID);
    jobs.remember(&longest, JsonAs::Extract, later);
    assert_eq!(jobs.recall(&longest, later), JsonAs::Extract);
}

#[test]
fn job_ids_from_responses_and_paths() {
    assert_eq!(
        job_id(br#"{"success":true,"id":"j1","url":"x"}"#).as_deref(),
        Some("j1")
    );
    assert_eq!(job_id(b"{}"), None);
    assert_eq!(status_id("/v1/crawl/j1"), Some("j1"));
    assert_eq!(status_id("/v1/batch/scrape/j2/"), Some("j2"));
    assert_eq!(status_id("/v1/crawl/j1/errors"), None);
    assert_eq!(status_id("/v1/scrape/j1"), None);
}

/// What the client receives for `stream`, pushed in `pieces`.
fn through_frames(stream: &[u8], cuts: &[usize], max: usize) -> Vec<u8> {
    let mut frames = Frames::new(JsonAs::Extract, max);
    let mut out = Vec::new();
    let mut at = 0;
    for &cut in cuts.iter().chain(std::iter::once(&stream.len())) {
        out.extend_from_slice(&frames.push(&stream[at..cut]));
        at = cut;
    }
    out.extend_from_slice(&frames.finish());
    out
}

#[test]
fn watcher_frames_are_retold_whole_however_they_arrive() {
    let long_doc = "x".repeat(300);
    let doc = json!({"type": "document", "data": {"json": 1, "markdown": long_doc}}).to_string();
    let want_doc =
        json!({"type": "document", "data": {"extract": 1, "markdown": long_doc}}).to_string();
    let ping = [0x89, 0x00];
    let masked = [0x81, 0x82, 1, 2, 3, 4, b'{' ^ 1, b'}' ^ 2];
    let fragment = [0x01, 0x02, b'{', b'}'];
    let close = [0x88, 0x02, 0x03, 0xe8];
    let mut stream = encode(0x81, doc.as_bytes()).to_vec();
    stream.extend_from_slice(&ping);
    stream.extend_from_slice(&masked);
    stream.extend_from_slice(&fragment);
    stream.extend_from_slice(&encode(0x81, b"{\"type\":\"done\"}"));
    stream.extend_from_slice(&close);
    let mut want = encode(0x81, want_doc.as_bytes()).to_vec();
    want.extend_from_slice(&stream[encode(0x81, doc.as_bytes()).len()..]);
    assert_eq!(through_frames(&stream, &[], 1 << 20), want);
    for cut in 0..=stream.len() {
        assert_eq!(
            through_frames(&stream, &[cut], 1 << 20),
            want,
            "cut at {cut}"
        );
    }
    let bytewise: Vec<usize> = (1..stream.len()).collect();
    assert_eq!(through_frames(&stream, &bytewise, 1 << 20), want);
    // A frame over the limit, and everything after it, goes on untouched; one of exactly the
    // limit is still rewritten.
    assert_eq!(through_frames(&stream, &[3], 100), stream);
    assert_eq!(through_frames(&stream, &[3], doc.len()), want);
    assert_eq!(through_frames(&stream, &[3], doc.len() - 1), stream);
    // A lone document frame is rewritten as soon as it is whole, not left to `finish`.
    assert_eq!(
        through_frames(&encode(0x81, doc.as_bytes()), &[], 1 << 20),
        encode(0x81, want_doc.as_bytes()).to_vec()
    );
    // A 64-bit length (over 65,535 bytes) is read too.
    let big = json!({"type": "document", "data": {"json": 1, "markdown": "y".repeat(70_000)}})
        .to_string();
    let want_big =
        json!({"type": "document", "data": {"extract": 1, "markdown": "y".repeat(70_000)}})
            .to_string();
    assert_eq!(
        through_frames(&encode(0x81, big.as_bytes()), &[9, 40_000], 1 << 20),
        encode(0x81, want_big.as_bytes()).to_vec()
    );
    // A frame cut off by the close of the stream goes on as it came.
    let cut = &encode(0x81, doc.as_bytes())[..20];
    assert_eq!(through_frames(cut, &[5], 1 << 20), cut);
    // A masked text frame (a client's, which a server never sends) is not touched, even when
    // its payload reads as a document (a zero masking key).
    let mut masked_doc = vec![0x81, 0x80 | 126];
    masked_doc.extend_from_slice(&u16::try_from(doc.len()).unwrap().to_be_bytes());
    masked_doc.extend_from_slice(&[0, 0, 0, 0]);
    masked_doc.extend_from_slice(doc.as_bytes());
    assert_eq!(through_frames(&masked_doc, &[], 1 << 20), masked_doc);
    // A hostile 64-bit length with no limit to speak of: passed on, no overflow, no panic.
    let mut hostile = vec![0x81, 127];
    hostile.extend_from_slice(&u64::MAX.to_be_bytes());
    hostile.extend_from_slice(b"{}");
    assert_eq!(through_frames(&hostile, &[5], usize::MAX), hostile);
}

#[test]
fn frame_lengths_use_the_short_forms() {
    assert_eq!(&encode(0x81, &[b'a'; 125])[..2], &[0x81, 125]);
    assert_eq!(&encode(0x81, &[b'a'; 126])[..4], &[0x81, 126, 0, 126]);
    assert_eq!(
        &encode(0x81, &vec![b'a'; 70_000])[..10],
        &[0x81, 127, 0, 0, 0, 0, 0, 1, 0x11, 0x70]
    );
}

#[test]
fn retry_after_is_read_from_the_rate_limit_message() {
    let cases: &[(&str, Option<u64>)] = &[
        (
            r#"{"success":false,"error":"Rate limit exceeded. Consumed (req/min): 11, Remaining (req/min): 0. Upgrade your plan at https://firecrawl.dev/pricing for increased rate limits or please retry after 25s, resets at Mon Nov 23 2026"}"#,
            Some(25),
        ),
        (r#"{"success":false,"error":"Retry after 3s"}"#, Some(3)),
        (r#"{"success":false,"error":"retry after a while"}"#, None),
        (r#"{"success":false,"error":"retry after 5 minutes"}"#, None),
        (r#"{"success":false}"#, None),
        ("not json", None),
    ];
    for (body, want) in cases {
        assert_eq!(retry_after(body.as_bytes()), *want, "{body}");
    }
}
