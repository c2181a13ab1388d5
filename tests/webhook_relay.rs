//! lingo relays web-data webhooks, over real sockets: the mock (or a scripted upstream) sends
//! a job's events to lingo's receiver, and a recording receiver plays the client: events
//! reach it in its dialect (v1 over a v2-only upstream included), signed with its secret;
//! a receiver that is down gets them later on the schedule; a repeated event is delivered
//! once; a bad signature stores nothing; addresses lingo does not deliver to are refused in
//! every spelling; given-up events are listed and replayed; a reload keeps the stored events
//! and applies the new secret; lingo killed with `kill -9` after it responded to the upstream
//! delivers every event once it runs again.

mod support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hyper::Method;
use lingo::mock::knobs::Knobs;
use lingo::table::MockSpec;
use serde_json::{Value, json};
use support::receiver::{Hit, Receiver};
use support::relay::*;
use support::*;

const MS: Duration = Duration::from_millis(1);

fn admin_url(lingo: &Lingo, path: &str) -> String {
    format!("http://{}{path}", lingo.addrs[1])
}

/// Where `/metrics` is: the admin listener.
fn admin_base(lingo: &Lingo) -> String {
    admin_url(lingo, "")
}

fn types(hits: &[Hit]) -> BTreeSet<String> {
    hits.iter()
        .map(|h| h.json()["type"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_crawls_events_reach_the_client_signed_with_its_secret() {
    let receiver = Receiver::ok().await;
    let lingo = Lingo::start(&relay_table(MOCK, "web-data", ALLOW_LOOPBACK)).await;
    let hook = json!({"url": receiver.url("/app"), "metadata": {"customer": "acme"},
        "headers": {"X-Hook": "yes", "Authorization": "Bearer app-key", "X-Other": "other-key"}});
    let body = json!({"url": "https://example.com", "webhook": hook});
    let started = start_job(&lingo.url("/v2/crawl"), "app-key", body).await;
    assert_eq!(started.status, 200, "{}", started.body);
    let job = started.json()["id"].as_str().unwrap().to_owned();
    let hits = receiver.wait("/app", 5).await;
    let want = ["crawl.started", "crawl.page", "crawl.completed"];
    assert_eq!(types(&hits), want.map(String::from).into());
    for hit in &hits {
        let payload = hit.json();
        assert_eq!(payload["id"], job.as_str());
        assert_eq!(payload["metadata"], json!({"customer": "acme"}));
        assert_eq!(
            hit.headers["webhook-id"],
            payload["webhookId"].as_str().unwrap()
        );
        assert_eq!(hit.headers["x-hook"], "yes");
        assert_eq!(hit.headers["content-type"], "application/json");
        // The client's own lingo key, and another client's, never leave lingo.
        assert!(hit.headers.get("authorization").is_none(), "{hit:?}");
        assert!(hit.headers.get("x-other").is_none(), "{hit:?}");
        assert!(hit.headers.get("x-firecrawl-signature").is_none());
        assert_standard_signature(hit, CLIENT_SECRET_BYTES);
    }
    // A client without a secret of its own: lingo's `sign`, its bytes as written.
    let body = json!({"url": "https://example.com", "webhook": receiver.url("/other")});
    let started = start_job(&lingo.url("/v1/crawl"), "other-key", body).await;
    assert_eq!(started.status, 200, "{}", started.body);
    for hit in receiver.wait("/other", 5).await {
        assert_standard_signature(&hit, b"lingo-sign");
    }
    let base = admin_base(&lingo);
    let up = |name: &str| format!("lingo_webhook_{name}{{upstream=\"fire\"}}");
    wait_metric(&base, &up("events_delivered_total"), 10.0).await;
    assert_eq!(metric_at(&base, &up("events_stored_total")).await, 10.0);
    let verified = "lingo_webhook_events_received_total{upstream=\"fire\",result=\"verified\"}";
    assert_eq!(metric_at(&base, verified).await, 10.0);
    let attempts = "lingo_webhook_attempts_total{upstream=\"fire\",result=\"delivered\"}";
    assert_eq!(metric_at(&base, attempts).await, 10.0);
    let store = format!("{}", lingo.dir.path().join("hooks.redb").display());
    let depth = format!("lingo_webhook_queue_depth{{store=\"{store}\"}}");
    wait_metric_down(&base, &depth).await;
    lingo.shutdown().await;
}

/// Waits until a gauge reads 0 (it is read every second).
async fn wait_metric_down(base: &str, name: &str) {
    for _ in 0..100 {
        let text = get(&format!("{base}/metrics")).await.body;
        if metric(&text, name) == Some(0.0) {
            return;
        }
        tokio::time::sleep(100 * MS).await;
    }
    panic!("{name} never read 0");
}

/// A v1 client over a v2-only upstream reads its pages as v1 gives them: json results
/// under `extract`, as its request asked; deliveries also carry `X-Firecrawl-Signature`,
/// made with the client's secret.
#[tokio::test]
async fn v1_clients_over_a_v2_only_upstream_get_v1_pages() {
    let receiver = Receiver::ok().await;
    let extra = format!("{ALLOW_LOOPBACK}      firecrawl_signature: true\n");
    let lingo = Lingo::start(&relay_table(MOCK, "web-data-v2", &extra)).await;
    let body = json!({"url": "https://example.com", "webhook": {"url": receiver.url("/v1"),
        "events": ["page"]},
        "scrapeOptions": {"formats": ["markdown", "extract"], "extract": {"prompt": "the title"}}});
    let started = start_job(&lingo.url("/v1/crawl"), "app-key", body).await;
    assert_eq!(started.status, 200, "{}", started.body);
    let hits = receiver.wait("/v1", 3).await;
    for hit in &hits {
        let page = hit.json();
        assert_eq!(page["type"], "crawl.page");
        let doc = &page["data"][0];
        assert!(doc["extract"].is_object(), "{doc}");
        assert!(doc.get("json").is_none(), "{doc}");
        assert!(doc["markdown"].is_string(), "{doc}");
        let secret = client_secret();
        assert_eq!(
            hit.headers["x-firecrawl-signature"],
            firecrawl_signature(secret.as_bytes(), &hit.body).as_str()
        );
        assert_standard_signature(hit, CLIENT_SECRET_BYTES);
    }
}

/// A receiver that fails gets the event again on the schedule (each wait at least its
/// delay), with the same `webhook-id`, until it responds with 2xx; then no more.
#[tokio::test]
async fn a_receiver_that_is_down_gets_the_event_later_on_schedule() {
    let receiver =
        Receiver::start(|hits| (if hits.len() <= 2 { 503 } else { 204 }, Duration::ZERO)).await;
    let lingo = Lingo::start(&relay_table(MOCK, "web-data", ALLOW_LOOPBACK)).await;
    let hook = json!({"url": receiver.url("/down"), "events": ["started"]});
    let body = json!({"url": "https://example.com", "webhook": hook});
    assert_eq!(
        start_job(&lingo.url("/v2/crawl"), "app-key", body)
            .await
            .status,
        200
    );
    let hits = receiver.wait("/down", 3).await;
    assert!(
        hits[1].at - hits[0].at >= 100 * MS,
        "{:?}",
        hits[1].at - hits[0].at
    );
    assert!(
        hits[2].at - hits[1].at >= 200 * MS,
        "{:?}",
        hits[2].at - hits[1].at
    );
    let ids: BTreeSet<_> = hits
        .iter()
        .map(|h| h.headers["webhook-id"].clone())
        .collect();
    assert_eq!(ids.len(), 1, "one event: {ids:?}");
    let failed = "lingo_webhook_attempts_total{upstream=\"fire\",result=\"status\"}";
    assert_eq!(metric_at(&admin_base(&lingo), failed).await, 2.0);
    tokio::time::sleep(600 * MS).await;
    assert_eq!(receiver.hits("/down").len(), 3, "nothing after the 2xx");
}

/// The upstream gets lingo's receiver in place of the client's URL and never the client's
/// headers; an event it sends twice is delivered once; one with a bad or missing signature
/// is refused (401) and nothing is stored; a changed token is no receiver (404).
#[tokio::test]
async fn a_repeated_event_is_delivered_once_and_a_bad_signature_stores_nothing() {
    let receiver = Receiver::ok().await;
    let upstream = scripted_upstream().await;
    let spec = format!("url: {}", upstream.url());
    let lingo = Lingo::start(&relay_table(&spec, "web-data", ALLOW_LOOPBACK)).await;
    let hook = json!({"url": receiver.url("/once"), "headers": {"X-Secret": "client-side"},
        "metadata": {"m": "n"}, "events": ["started", "completed"]});
    let body = json!({"url": "https://example.com", "webhook": hook});
    assert_eq!(
        start_job(&lingo.url("/v2/crawl"), "app-key", body)
            .await
            .status,
        200
    );
    let sent = String::from_utf8_lossy(&upstream.last().body).into_owned();
    assert!(
        !sent.contains(&receiver.url("")) && !sent.contains("client-side"),
        "{sent}"
    );
    let given: Value = serde_json::from_str(&sent).unwrap();
    assert_eq!(given["webhook"]["metadata"], json!({"m": "n"}));
    assert_eq!(given["webhook"]["events"], json!(["started", "completed"]));
    let url = receiver_url_given(&upstream);
    assert!(url.starts_with(&lingo.url("/lingo/webhooks/")), "{url}");

    let event = json!({"success": true, "type": "crawl.started", "id": "job-1",
        "webhookId": "7c1f-once", "data": [], "metadata": {"m": "n"}});
    for _ in 0..2 {
        let response = send_event(&url, &event, Some(b"upstream-secret")).await;
        assert_eq!(response.status, 200, "{}", response.body);
    }
    let base = admin_base(&lingo);
    wait_metric(
        &base,
        "lingo_webhook_events_duplicate_total{upstream=\"fire\"}",
        1.0,
    )
    .await;
    let hits = receiver.wait("/once", 1).await;
    assert_eq!(hits[0].headers["x-secret"], "client-side");
    assert_eq!(hits[0].headers["webhook-id"], "7c1f-once");

    // Without an id of its own, the same body twice is still one event.
    let plain = json!({"success": true, "type": "crawl.completed", "id": "job-1", "data": []});
    for _ in 0..2 {
        assert_eq!(
            send_event(&url, &plain, Some(b"upstream-secret"))
                .await
                .status,
            200
        );
    }
    receiver.wait("/once", 2).await;

    let bad = send_event(&url, &event, Some(b"not-the-secret")).await;
    assert_eq!(bad.status, 401, "{}", bad.body);
    assert_eq!(bad.json()["success"], false);
    assert_eq!(send_event(&url, &plain, None).await.status, 401);
    let mut changed = url.clone();
    let last = changed.pop().unwrap();
    changed.push(if last == 'A' { 'B' } else { 'A' });
    assert_eq!(
        send_event(&changed, &event, Some(b"upstream-secret"))
            .await
            .status,
        404
    );

    let refused = "lingo_webhook_events_received_total{upstream=\"fire\",result=\"refused\"}";
    assert_eq!(metric_at(&base, refused).await, 2.0);
    assert_eq!(
        metric_at(
            &base,
            "lingo_webhook_events_stored_total{upstream=\"fire\"}"
        )
        .await,
        2.0
    );
    tokio::time::sleep(500 * MS).await;
    assert_eq!(receiver.hits("/once").len(), 2, "each event once");
}

/// Every spelling of an address lingo does not deliver to is refused before anything goes
/// upstream (400, the API's schema issue); a name that resolves to loopback is refused when
/// the event is delivered (given up at once, listed); a redirect to loopback is a failed
/// attempt and never followed.
#[tokio::test]
async fn destinations_lingo_does_not_deliver_to_are_refused_in_every_spelling() {
    let upstream = scripted_upstream().await;
    let spec = format!("url: {}", upstream.url());
    let lingo = Lingo::start(&relay_table(&spec, "web-data", "")).await;
    let receiver = Receiver::ok().await;
    let port = receiver.url("").rsplit(':').next().unwrap().to_owned();
    let spellings = [
        "127.0.0.1",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "0",
        "169.254.169.254",
        "100.64.0.1",
        "127.1",
        "2130706433",
        "10.0.0.1",
        "[fe80::1]",
    ];
    for host in spellings {
        let hook = format!("http://{host}:{port}/hook");
        for webhook in [json!(hook), json!({"url": hook})] {
            let body = json!({"url": "https://example.com", "webhook": webhook});
            for path in ["/v1/crawl", "/v2/batch/scrape", "/v2/extract"] {
                let response = start_job(&lingo.url(path), "app-key", body.clone()).await;
                assert_eq!(response.status, 400, "{host} {path}: {}", response.body);
                let issue = &response.json()["details"][0];
                assert_eq!(issue["path"], json!(["webhook", "url"]), "{host}");
                assert!(
                    issue["message"]
                        .as_str()
                        .unwrap()
                        .contains("webhooks.allow")
                );
            }
        }
    }
    assert!(upstream.requests().is_empty(), "nothing went upstream");

    let by_name = json!({"url": "https://example.com",
        "webhook": format!("http://localhost:{port}/by-name")});
    assert_eq!(
        start_job(&lingo.url("/v2/crawl"), "app-key", by_name)
            .await
            .status,
        200
    );
    let url = receiver_url_given(&upstream);
    let event = json!({"type": "crawl.started", "id": "job-1", "webhookId": "by-name-1",
        "data": [], "success": true});
    assert_eq!(
        send_event(&url, &event, Some(b"upstream-secret"))
            .await
            .status,
        200
    );
    let given_up = wait_given_up(&lingo, 1).await;
    assert_eq!(given_up[0]["id"], "by-name-1");
    assert_eq!(given_up[0]["attempts"], 1, "given up at once");
    assert!(
        given_up[0]["last"].as_str().unwrap().contains("loopback"),
        "{given_up:?}"
    );
    assert!(receiver.hits("/by-name").is_empty());
    let base = admin_base(&lingo);
    let refused = "lingo_webhook_attempts_total{upstream=\"fire\",result=\"refused\"}";
    assert_eq!(metric_at(&base, refused).await, 1.0);
    let given_up = "lingo_webhook_events_given_up_total{upstream=\"fire\"}";
    assert_eq!(metric_at(&base, given_up).await, 1.0);
}

/// The given-up list on the admin listener once it has `n` events.
async fn wait_given_up(lingo: &Lingo, n: usize) -> Vec<Value> {
    for _ in 0..300 {
        let list = get(&admin_url(lingo, "/webhooks/given-up")).await.json();
        let events = list["events"].as_array().unwrap().clone();
        if events.len() >= n {
            return events;
        }
        tokio::time::sleep(100 * MS).await;
    }
    panic!("{n} events were never given up");
}

/// A receiver that redirects has failed each time and the redirect is not followed; the
/// event is given up after the schedule, listed, and replayed by the admin endpoint once the
/// receiver is fixed.
#[tokio::test]
async fn redirects_are_not_followed_and_given_up_events_are_replayed() {
    let fixed = Arc::new(AtomicBool::new(false));
    let is_fixed = Arc::clone(&fixed);
    let receiver = Receiver::start(move |_| {
        let status = if is_fixed.load(Ordering::SeqCst) {
            200
        } else {
            302
        };
        (status, Duration::ZERO)
    })
    .await;
    let lingo = Lingo::start(&relay_table(MOCK, "web-data", ALLOW_LOOPBACK)).await;
    let hook = json!({"url": receiver.url("/moved"), "events": ["completed"]});
    let body = json!({"urls": ["https://example.com"], "webhook": hook});
    assert_eq!(
        start_job(&lingo.url("/v2/batch/scrape"), "app-key", body)
            .await
            .status,
        200
    );
    let given_up = wait_given_up(&lingo, 1).await;
    assert_eq!(
        receiver.hits("/moved").len(),
        4,
        "the first attempt and three retries"
    );
    assert!(receiver.hits("/redirected").is_empty(), "never followed");
    assert_eq!(given_up[0]["attempts"], 4);
    assert_eq!(given_up[0]["type"], "batch_scrape.completed");
    assert!(
        given_up[0]["last"].as_str().unwrap().contains("302"),
        "{given_up:?}"
    );
    assert!(given_up[0].get("headers").is_none());

    fixed.store(true, Ordering::SeqCst);
    let id = given_up[0]["id"].as_str().unwrap();
    let unknown = send(request(
        Method::POST,
        &admin_url(&lingo, "/webhooks/replay/nope"),
        &[],
        "",
    ))
    .await;
    assert_eq!(unknown.status, 404);
    let replay_url = admin_url(&lingo, &format!("/webhooks/replay/{id}"));
    let replayed = send(request(Method::POST, &replay_url, &[], "")).await;
    assert_eq!(replayed.json()["replayed"], 1, "{}", replayed.body);
    let hits = receiver.wait("/moved", 5).await;
    assert_eq!(hits[4].headers["webhook-id"], id);
    let list = get(&admin_url(&lingo, "/webhooks/given-up")).await.json();
    assert_eq!(list["events"], json!([]));
    let on_public = send(request(
        Method::POST,
        &lingo.url("/webhooks/replay"),
        &[],
        "",
    ))
    .await;
    assert_ne!(
        on_public.status, 200,
        "the admin endpoints are on the admin listener only"
    );
}

/// Events stored while the receiver is down survive a reload that turns the relay off and
/// changes lingo's secret: they are delivered, signed with the new secret.
#[tokio::test]
async fn a_reload_keeps_the_stored_events_and_applies_the_new_secret() {
    let up = Arc::new(AtomicBool::new(false));
    let is_up = Arc::clone(&up);
    let receiver = Receiver::start(move |_| {
        let status = if is_up.load(Ordering::SeqCst) {
            200
        } else {
            503
        };
        (status, Duration::ZERO)
    })
    .await;
    let slow = "      retry: [1s, 1s, 1s, 1s, 1s, 1s, 1s, 1s, 1s, 1s]\n";
    let first = relay_table(MOCK, "web-data", ALLOW_LOOPBACK)
        .replace("      retry: [100ms, 200ms, 300ms]\n", slow);
    let lingo = Lingo::start(&first).await;
    let body = json!({"url": "https://example.com", "webhook": receiver.url("/kept")});
    assert_eq!(
        start_job(&lingo.url("/v2/crawl"), "other-key", body)
            .await
            .status,
        200
    );
    let base = admin_base(&lingo);
    wait_metric(
        &base,
        "lingo_webhook_events_stored_total{upstream=\"fire\"}",
        5.0,
    )
    .await;
    let second = first.replace("relay: true", "relay: false").replace(
        "sign: { value: lingo-sign }",
        "sign: { value: rotated-sign }",
    );
    std::fs::write(lingo.config_path(), second).unwrap();
    assert_eq!(lingo.reloader.reload(true).unwrap(), 2);
    // An attempt that began before the reload has had its response by now.
    tokio::time::sleep(300 * MS).await;
    let from = receiver.hits("/kept").len();
    up.store(true, Ordering::SeqCst);
    let delivered = wait_events_after(&receiver, "/kept", from, 5).await;
    for hit in &delivered {
        assert_standard_signature(hit, b"rotated-sign");
    }
    // With the relay off, a job's webhook goes up as the client wrote it.
    let body = json!({"url": "https://example.com", "webhook": receiver.url("/direct")});
    assert_eq!(
        start_job(&lingo.url("/v2/crawl"), "other-key", body)
            .await
            .status,
        200
    );
    let direct = receiver.wait("/direct", 5).await;
    assert!(
        direct[0].headers.get("webhook-signature").is_none(),
        "sent by the mock itself"
    );
}

/// The hits on `path` after the first `from`, once they are of `n` distinct events.
async fn wait_events_after(receiver: &Receiver, path: &str, from: usize, n: usize) -> Vec<Hit> {
    for _ in 0..300 {
        let hits = receiver
            .hits(path)
            .split_off(from.min(receiver.hits(path).len()));
        let ids: BTreeSet<_> = hits
            .iter()
            .map(|h| h.headers["webhook-id"].clone())
            .collect();
        if ids.len() >= n {
            return hits;
        }
        tokio::time::sleep(100 * MS).await;
    }
    panic!("{path} never got {n} events after its first {from} requests");
}

/// A store that cannot be created is an error at start, naming the key.
#[tokio::test]
async fn an_unusable_store_is_an_error_at_start() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a-file"), "").unwrap();
    let yaml =
        relay_table(MOCK, "web-data", "").replace("store: hooks.redb", "store: a-file/hooks.redb");
    let path = dir.path().join("proxy.yaml");
    std::fs::write(&path, yaml).unwrap();
    let err = lingo::server::Server::bind(&path)
        .await
        .err()
        .expect("refused");
    let text = err.to_string();
    assert!(
        text.contains("upstream `fire` webhooks.store") && text.contains("cannot open"),
        "{text}"
    );
}

/// lingo killed (`kill -9`) after it responded to the upstream for every event, before any was
/// delivered, and started again on the same store: every event is delivered (a repeat only
/// with the same `webhook-id`).
#[tokio::test]
async fn events_acknowledged_before_a_kill_9_are_delivered_after_the_restart() {
    let up = Arc::new(AtomicBool::new(false));
    let is_up = Arc::clone(&up);
    let receiver = Receiver::start(move |_| {
        let status = if is_up.load(Ordering::SeqCst) {
            200
        } else {
            503
        };
        (status, Duration::ZERO)
    })
    .await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mock_url = format!("http://{}", listener.local_addr().unwrap());
    let mut knobs = Knobs::from_spec(&MockSpec::default());
    knobs
        .apply("page_delay=10ms,webhook_secret=upstream-secret,webhook_retry=500ms")
        .unwrap();
    tokio::spawn(lingo::mock::serve_on(listener, knobs));
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("proxy.yaml");
    let slow = "      retry: [300ms, 300ms, 300ms, 300ms, 300ms, 300ms, 300ms, 300ms, 300ms, 300ms, 300ms, 300ms]\n";
    let yaml = relay_table(&format!("url: {mock_url}"), "web-data", ALLOW_LOOPBACK)
        .replace("      retry: [100ms, 200ms, 300ms]\n", slow);
    std::fs::write(&config, yaml).unwrap();
    let mut first = LingoProcess::start(&config, true);
    let body = json!({"url": "https://example.com", "webhook": receiver.url("/k9")});
    assert_eq!(
        start_job(&first.url("/v2/crawl"), "app-key", body)
            .await
            .status,
        200
    );
    wait_metric(
        &first.admin_url(""),
        "lingo_webhook_events_stored_total{upstream=\"fire\"}",
        5.0,
    )
    .await;
    first.kill9();
    let from = receiver.hits("/k9").len();
    up.store(true, Ordering::SeqCst);
    let second = LingoProcess::start(&config, true);
    let after = wait_events_after(&receiver, "/k9", from, 5).await;
    let ids: BTreeSet<String> = after
        .iter()
        .map(|h| h.json()["webhookId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 5, "every event: {}", second.log_text());
    for hit in &after {
        assert_eq!(
            hit.headers["webhook-id"],
            hit.json()["webhookId"].as_str().unwrap()
        );
    }
    let types: BTreeSet<_> = after
        .iter()
        .map(|h| h.json()["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(types.len(), 3, "{types:?}");
}
