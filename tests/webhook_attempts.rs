//! The webhook relay's delivery attempts, over real sockets: a 2xx that comes after the
//! relay's `timeout` is a failed attempt; a receiver's `Retry-After` longer than the
//! schedule's delay is waited; each attempt writes its access line; the upstream's key is
//! never sent to the client's URL; a reload turns the relay on and shortens its schedule,
//! the stored event kept (given up, listed) and the queue's gauges read while it waits.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};
use support::receiver::Receiver;
use support::relay::*;
use support::*;

const MS: Duration = Duration::from_millis(1);

/// One event whose receiver responds with 200 too late, then 503 with `Retry-After: 1`, then
/// 204: three attempts with one `webhook-id`, the third at least the second away from the
/// second, and three access lines saying how each went.
#[tokio::test]
async fn a_late_2xx_fails_retry_after_is_waited_and_each_attempt_is_logged() {
    let receiver = Receiver::with_headers(|hits| match hits.len() {
        1 => (200, Duration::from_secs(3), Vec::new()),
        2 => (503, Duration::ZERO, vec![("retry-after", "1".to_owned())]),
        _ => (204, Duration::ZERO, Vec::new()),
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("proxy.yaml");
    let yaml =
        relay_table(MOCK, "web-data", ALLOW_LOOPBACK).replace("timeout: 2s", "timeout: 500ms");
    std::fs::write(&config, yaml).unwrap();
    let lingo = LingoProcess::start(&config, true);
    let hook = json!({"url": receiver.url("/late"), "events": ["started"]});
    let body = json!({"url": "https://example.com", "webhook": hook});
    let started = start_job(&lingo.url("/v2/crawl"), "app-key", body).await;
    assert_eq!(started.status, 200, "{}", started.body);
    let hits = receiver.wait("/late", 3).await;
    let ids: BTreeSet<_> = hits
        .iter()
        .map(|h| h.headers["webhook-id"].clone())
        .collect();
    assert_eq!(ids.len(), 1, "one event: {ids:?}");
    let gap = hits[2].at - hits[1].at;
    assert!(gap >= Duration::from_secs(1), "Retry-After waited: {gap:?}");
    let base = lingo.admin_url("");
    let delivered = "lingo_webhook_events_delivered_total{upstream=\"fire\"}";
    wait_metric(&base, delivered, 1.0).await;
    let timeout = "lingo_webhook_attempts_total{upstream=\"fire\",result=\"timeout\"}";
    assert_eq!(metric_at(&base, timeout).await, 1.0);
    let id = hits[0].headers["webhook-id"].to_str().unwrap().to_owned();
    let want = [
        ("webhook_attempt=1", "outcome=timeout", "status=0"),
        ("webhook_attempt=2", "outcome=status", "status=503"),
        ("webhook_attempt=3", "outcome=delivered", "status=204"),
    ];
    for (attempt, outcome, status) in want {
        let line = wait_log_line(&lingo, &[attempt, &format!("request_id={id}")]).await;
        for field in [
            outcome,
            status,
            "method=POST",
            "path=/late",
            "upstream=fire",
            "client=app",
        ] {
            assert!(line.contains(field), "{field} in {line}");
        }
    }
}

/// The first access line of `lingo` holding every one of `fields`.
async fn wait_log_line(lingo: &LingoProcess, fields: &[&str]) -> String {
    for _ in 0..300 {
        let log = lingo.log_text();
        let found = log
            .lines()
            .find(|l| l.contains("lingo::access") && fields.iter().all(|f| l.contains(f)));
        if let Some(line) = found {
            return line.to_owned();
        }
        tokio::time::sleep(100 * MS).await;
    }
    panic!("no access line with {fields:?}:\n{}", lingo.log_text());
}

/// A client's webhook header holding the upstream's key is left out of its deliveries (the
/// key lingo sends the upstream, which does get it), the client's other headers are sent.
#[tokio::test]
async fn the_upstreams_key_never_reaches_the_clients_url() {
    let receiver = Receiver::ok().await;
    let upstream = scripted_upstream().await;
    let spec = format!(
        "url: {}\n    auth: {{ bearer: {{ value: upstream-key-1 }} }}",
        upstream.url()
    );
    let lingo = Lingo::start(&relay_table(&spec, "web-data", ALLOW_LOOPBACK)).await;
    let hook = json!({"url": receiver.url("/keys"),
        "headers": {"X-Up": "Bearer upstream-key-1", "X-Keep": "kept"}});
    let body = json!({"url": "https://example.com", "webhook": hook});
    let started = start_job(&lingo.url("/v2/crawl"), "app-key", body).await;
    assert_eq!(started.status, 200, "{}", started.body);
    assert_eq!(
        upstream.last().headers["authorization"],
        "Bearer upstream-key-1"
    );
    let url = receiver_url_given(&upstream);
    let event = json!({"success": true, "type": "crawl.started", "id": "job-1",
        "webhookId": "keys-1", "data": []});
    let response = send_event(&url, &event, Some(b"upstream-secret")).await;
    assert_eq!(response.status, 200, "{}", response.body);
    let hit = &receiver.wait("/keys", 1).await[0];
    assert_eq!(hit.headers["x-keep"], "kept");
    assert!(hit.headers.get("x-up").is_none(), "{hit:?}");
    assert!(hit.headers.get("authorization").is_none(), "{hit:?}");
    let all = format!("{:?}", hit.headers);
    assert!(
        !all.contains("upstream-key-1") && !all.contains("app-key"),
        "{all}"
    );
}

/// A table without the relay passes a job's webhook through (the mock delivers it itself,
/// unsigned by lingo); a reload turns the relay on, the next job's event is stored and
/// retried on the schedule, the queue's gauges show it waiting; a reload to a shorter
/// schedule gives it up at its next failure, and it stays listed for replay.
#[tokio::test]
async fn a_reload_turns_the_relay_on_and_its_new_schedule_applies_to_stored_events() {
    let receiver = Receiver::start(|_| (503, Duration::ZERO)).await;
    let long = format!("      retry: [{}]\n", ["500ms"; 20].join(", "));
    let on = relay_table(MOCK, "web-data", ALLOW_LOOPBACK)
        .replace("      retry: [100ms, 200ms, 300ms]\n", &long);
    let off = on.replace("relay: true", "relay: false");
    let lingo = Lingo::start(&off).await;
    let job = |path: &str| {
        let hook = json!({"url": receiver.url(path), "events": ["started"]});
        json!({"url": "https://example.com", "webhook": hook})
    };
    let direct = start_job(&lingo.url("/v2/crawl"), "app-key", job("/direct")).await;
    assert_eq!(direct.status, 200, "{}", direct.body);
    let direct = receiver.wait("/direct", 1).await;
    assert!(
        direct[0].headers.get("webhook-signature").is_none(),
        "sent by the mock"
    );

    std::fs::write(lingo.config_path(), &on).unwrap();
    assert_eq!(lingo.reloader.reload(true).unwrap(), 2);
    let relayed = start_job(&lingo.url("/v2/crawl"), "app-key", job("/relayed")).await;
    assert_eq!(relayed.status, 200, "{}", relayed.body);
    let hits = receiver.wait("/relayed", 2).await;
    assert_standard_signature(&hits[0], CLIENT_SECRET_BYTES);
    let base = format!("http://{}", lingo.addrs[1]);
    let store = lingo.dir.path().join("hooks.redb").display().to_string();
    wait_metric(
        &base,
        &format!("lingo_webhook_queue_depth{{store=\"{store}\"}}"),
        1.0,
    )
    .await;
    let age = format!("lingo_webhook_oldest_event_age_seconds{{store=\"{store}\"}}");
    wait_metric(&base, &age, 1.0).await;

    let short = on.replace(&long, "      retry: [100ms]\n");
    std::fs::write(lingo.config_path(), short).unwrap();
    assert_eq!(lingo.reloader.reload(true).unwrap(), 3);
    let given_up = wait_given_up_at(&base).await;
    let attempts = given_up["attempts"].as_u64().unwrap();
    assert!(
        attempts < 21,
        "given up before the long schedule's end: {given_up}"
    );
    assert_eq!(
        given_up["id"],
        hits[0].headers["webhook-id"].to_str().unwrap()
    );
    tokio::time::sleep(500 * MS).await;
    assert_eq!(
        receiver.hits("/relayed").len() as u64,
        attempts,
        "no attempt after"
    );
}

/// The first given-up event the admin listener at `base` lists.
async fn wait_given_up_at(base: &str) -> Value {
    for _ in 0..300 {
        let list = get(&format!("{base}/webhooks/given-up")).await.json();
        if let Some(first) = list["events"].get(0) {
            return first.clone();
        }
        tokio::time::sleep(100 * MS).await;
    }
    panic!("no event was given up");
}
