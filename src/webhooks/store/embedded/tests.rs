use std::time::Duration;

use super::*;
use crate::webhooks::seal::{Destination, Shape};

fn event(id: &str, due_ms: u64) -> Event {
    Event {
        id: id.into(),
        to: Destination {
            upstream: "fire".into(),
            route: "prefix /v2".into(),
            client: None,
            url: "http://127.0.0.1:9/hook".into(),
            headers: Vec::new(),
            shape: Shape::Same,
        },
        body: r#"{"type":"crawl.started"}"#.into(),
        received_ms: now_ms(),
        attempts: 0,
        due_ms,
        last: None,
        handle: None,
    }
}

/// Opens the store at `path`, waiting for an earlier handle's writer to have let go.
async fn reopen(path: &Path) -> Embedded {
    for _ in 0..100 {
        if let Ok(store) = Embedded::open(path) {
            return store;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the store was never let go");
}

const STALE: Duration = Duration::from_secs(60);

#[tokio::test]
async fn an_event_is_stored_once_claimed_once_and_settled() {
    let dir = tempfile::tempdir().unwrap();
    let store = Embedded::open(&dir.path().join("s.redb")).unwrap();
    assert!(store.put(event("a", now_ms())).await.unwrap());
    assert!(!store.put(event("a", now_ms())).await.unwrap(), "a repeat");
    let claimed = store.claim(10, STALE).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert!(
        store.claim(10, STALE).await.unwrap().is_empty(),
        "in flight"
    );
    let depth = store.depth().await.unwrap();
    assert_eq!(depth.events, 1);
    assert!(depth.oldest_ms.is_some());

    let mut later = claimed[0].clone();
    later.attempts = 1;
    later.due_ms = now_ms() + 60_000;
    store.retry(&later).await.unwrap();
    assert!(
        store.claim(10, STALE).await.unwrap().is_empty(),
        "not due yet"
    );
    store.give_up(&later).await.unwrap();
    assert_eq!(store.depth().await.unwrap(), Depth::default());
    let given_up = store.given_up().await.unwrap();
    assert_eq!((given_up.len(), given_up[0].attempts), (1, 1));

    assert_eq!(store.replay(Some("nope".into())).await.unwrap(), 0);
    assert_eq!(store.replay(None).await.unwrap(), 1);
    let again = store.claim(10, STALE).await.unwrap();
    assert_eq!((again.len(), again[0].attempts), (1, 0));
    store.delivered(&again[0]).await.unwrap();
    assert_eq!(store.depth().await.unwrap().events, 0);
    assert!(store.given_up().await.unwrap().is_empty());
    assert!(
        !store.put(event("a", now_ms())).await.unwrap(),
        "still known"
    );
}

/// What was committed is there when the file is opened again; nothing is in flight then.
#[tokio::test]
async fn events_outlive_the_process_that_stored_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    let store = Embedded::open(&path).unwrap();
    for id in ["a", "b", "c"] {
        assert!(store.put(event(id, now_ms())).await.unwrap());
    }
    assert_eq!(store.claim(2, STALE).await.unwrap().len(), 2);
    drop(store);
    let store = reopen(&path).await;
    let ids: Vec<String> = store
        .claim(10, STALE)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert!(!store.put(event("b", now_ms())).await.unwrap());
}

/// Changes asked for at once are all made (one commit takes many).
#[tokio::test]
async fn many_puts_at_once_each_get_a_response() {
    let dir = tempfile::tempdir().unwrap();
    let store = Embedded::open(&dir.path().join("s.redb")).unwrap();
    let puts = (0..200).map(|i| store.put(event(&format!("e{i}"), now_ms())));
    let stored = crate::http::join::join_all(puts.collect()).await;
    assert!(stored.into_iter().all(|s| s.unwrap()));
    assert_eq!(store.depth().await.unwrap().events, 200);
}
