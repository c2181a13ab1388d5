//! The webhook relay's Redis store, with a real `redis-server` each test starts on a port of
//! its own: two lingo replicas share the queue, and one killed (`kill -9`) in the middle of a
//! backlog leaves its events to the other; a repeat is stored once; a Redis that restarted
//! empty is recovered from; a Redis without an append-only file is said so; given-up events
//! are listed and replayed. Without `redis-server` the tests say SKIPPED (and fail under
//! `CI`, where `.ci/run` installs it).

mod support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hyper::Method;
use serde_json::json;
use support::receiver::Receiver;
use support::redis_server::RedisServer;
use support::relay::*;
use support::*;

const MS: Duration = Duration::from_millis(1);

/// The relay's table with its events in the Redis at `redis`, for `upstream`.
fn redis_table(upstream: &str, redis: &RedisServer, timeout: &str) -> String {
    relay_table(upstream, "web-data", ALLOW_LOOPBACK)
        .replace("store: hooks.redb", &format!("store: \"{}\"", redis.url()))
        .replace("timeout: 2s", &format!("timeout: {timeout}"))
}

/// The upstream mock's: jobs page by page, signed webhooks, retried quickly.
const UPSTREAM_KNOBS: &str = "page_delay=10ms,webhook_secret=upstream-secret,webhook_retry=500ms";

/// How many stream entries each consumer of the group holds unsettled, by name.
fn pending_by_consumer(redis: &RedisServer) -> Vec<(String, u64)> {
    let mut connection = redis.connection();
    let consumers: Vec<redis::Value> = redis::cmd("XINFO")
        .arg("CONSUMERS")
        .arg("lingo:webhooks:stream")
        .arg("lingo")
        .query(&mut connection)
        .unwrap();
    consumers
        .iter()
        .map(|c| {
            let fields: std::collections::HashMap<String, redis::Value> =
                redis::from_redis_value_ref(c).unwrap();
            let name: String = redis::from_redis_value_ref(&fields["name"]).unwrap();
            let pending: u64 = redis::from_redis_value_ref(&fields["pending"]).unwrap();
            (name, pending)
        })
        .collect()
}

/// Two replicas share the queue; A, which the upstream sends the events to, takes part of
/// the backlog (its receiver holds each attempt without a response) and is killed with those events
/// claimed; B takes them over once they are stale and every event is delivered.
#[tokio::test]
async fn a_replica_killed_mid_backlog_leaves_its_events_to_the_other() {
    let Some(redis) = RedisServer::start(true) else {
        return;
    };
    let fast = Arc::new(AtomicBool::new(false));
    let is_fast = Arc::clone(&fast);
    let receiver = Receiver::start(move |_| {
        let slow = !is_fast.load(Ordering::SeqCst);
        (
            200,
            if slow {
                Duration::from_secs(60)
            } else {
                Duration::ZERO
            },
        )
    })
    .await;
    // A mock on a port of its own, so that it outlives the lingo that is killed.
    let upstream = format!("url: {}", mock_with(UPSTREAM_KNOBS).await);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("proxy.yaml");
    std::fs::write(&config, redis_table(&upstream, &redis, "4s")).unwrap();
    let mut a = LingoProcess::start(&config, true);
    let b = LingoProcess::start(&config, true);
    for _ in 0..4 {
        let body = json!({"url": "https://example.com", "webhook": receiver.url("/backlog")});
        assert_eq!(
            start_job(&a.url("/v2/crawl"), "app-key", body).await.status,
            200
        );
    }
    let stored = "lingo_webhook_events_stored_total{upstream=\"fire\"}";
    wait_metric(&a.admin_url(""), stored, 20.0).await;
    // Every event is out to the receiver, which holds each attempt without a response.
    receiver.wait("/backlog", 20).await;
    let pending = pending_by_consumer(&redis);
    a.kill9();
    let a_name = format!("-{}-", a.pid());
    let held_by_a: u64 = pending
        .iter()
        .filter(|(n, _)| n.contains(&a_name))
        .map(|(_, p)| p)
        .sum();
    let held: u64 = pending.iter().map(|(_, p)| p).sum();
    assert!(
        held_by_a > 0 && held == 20,
        "the backlog, claimed: {pending:?}"
    );
    fast.store(true, Ordering::SeqCst);
    let from = receiver.hits("/backlog").len();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let ids: BTreeSet<String> = loop {
        let hits = receiver.hits("/backlog").split_off(from);
        let ids: BTreeSet<String> = hits
            .iter()
            .map(|h| h.headers["webhook-id"].to_str().unwrap().to_owned())
            .collect();
        if ids.len() >= 20 {
            break ids;
        }
        assert!(
            hits.len() < 200 && std::time::Instant::now() < deadline,
            "{} events delivered: {}",
            ids.len(),
            b.log_text()
        );
        tokio::time::sleep(100 * MS).await;
    };
    assert_eq!(ids.len(), 20);
    let delivered = "lingo_webhook_events_delivered_total{upstream=\"fire\"}";
    wait_metric(&b.admin_url(""), delivered, 20.0).await;
    assert!(b.log_text().contains("taken over"), "{}", b.log_text());
    let given_up = get(&b.admin_url("/webhooks/given-up")).await.json();
    assert_eq!(given_up["events"], json!([]));
}

/// On Redis too: a repeated event is stored once; a Redis restarted empty (its group gone)
/// is recovered from, and events sent after it are delivered; a Redis without an
/// append-only file is said so; a given-up event is listed and replayed.
#[tokio::test]
async fn redis_repeats_an_empty_restart_persistence_and_replays() {
    let Some(mut redis) = RedisServer::start(false) else {
        return;
    };
    let broken = Arc::new(AtomicBool::new(false));
    let is_broken = Arc::clone(&broken);
    let receiver = Receiver::start(move |hits| {
        let to_broken = hits.last().is_some_and(|h| h.path == "/broken");
        let status = if to_broken && is_broken.load(Ordering::SeqCst) {
            500
        } else {
            200
        };
        (status, Duration::ZERO)
    })
    .await;
    let upstream = scripted_upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("proxy.yaml");
    let spec = format!("url: {}", upstream.url());
    std::fs::write(&config, redis_table(&spec, &redis, "2s")).unwrap();
    let lingo = LingoProcess::start(&config, true);
    let token_url = |path: &str| {
        let path = path.to_owned();
        let upstream = &upstream;
        let lingo = &lingo;
        let receiver = &receiver;
        async move {
            let body = json!({"url": "https://example.com", "webhook": receiver.url(&path)});
            assert_eq!(
                start_job(&lingo.url("/v2/crawl"), "app-key", body)
                    .await
                    .status,
                200
            );
            receiver_url_given(upstream)
        }
    };
    let once = token_url("/once").await;
    let event = |id: &str| {
        json!({"type": "crawl.page", "id": "job-1", "webhookId": id, "success": true,
        "data": [{"markdown": "# Page"}]})
    };
    for _ in 0..2 {
        assert_eq!(
            send_event(&once, &event("r-1"), Some(b"upstream-secret"))
                .await
                .status,
            200
        );
    }
    receiver.wait("/once", 1).await;
    assert!(
        lingo.log_text().contains("appendonly no"),
        "{}",
        lingo.log_text()
    );

    redis.restart_empty();
    let after = token_url("/after").await;
    // Stored again as soon as Redis responds (the stream is made by the first event).
    let mut stored = 0;
    for _ in 0..50 {
        stored = send_event(&after, &event("r-2"), Some(b"upstream-secret"))
            .await
            .status
            .as_u16();
        if stored == 200 {
            break;
        }
        tokio::time::sleep(100 * MS).await;
    }
    assert_eq!(stored, 200);
    receiver.wait("/after", 1).await;
    assert!(lingo.log_text().contains("is gone"), "{}", lingo.log_text());

    broken.store(true, Ordering::SeqCst);
    let doomed = token_url("/broken").await;
    assert_eq!(
        send_event(&doomed, &event("r-3"), Some(b"upstream-secret"))
            .await
            .status,
        200
    );
    let mut listed = json!([]);
    for _ in 0..100 {
        listed = get(&lingo.admin_url("/webhooks/given-up")).await.json()["events"].clone();
        if listed.as_array().is_some_and(|l| !l.is_empty()) {
            break;
        }
        tokio::time::sleep(100 * MS).await;
    }
    assert_eq!(listed[0]["id"], "r-3", "{listed}");
    assert_eq!(listed[0]["attempts"], 4);
    broken.store(false, Ordering::SeqCst);
    let replay = send(request(
        Method::POST,
        &lingo.admin_url("/webhooks/replay"),
        &[],
        "",
    ))
    .await;
    assert_eq!(replay.json()["replayed"], 1, "{}", replay.body);
    let hits = receiver.wait("/broken", 5).await;
    assert_eq!(hits[4].headers["webhook-id"], "r-3");
    assert_eq!(
        receiver.hits("/once").len(),
        1,
        "the repeat was stored once"
    );
}
