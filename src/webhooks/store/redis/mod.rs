//! The Redis store, which replicas share: events wait on a stream read through a consumer
//! group, so each is given to one replica at a time.
//!
//! Keys (under `lingo:webhooks:`): `stream` (events ready, field `e` the event as JSON; group
//! `lingo`), `due` (a sorted set: failed events by the time they are due again), `received`
//! (a sorted set: every event waiting, by receipt time: the depth and the oldest),
//! `given_up` (a hash: id -> event), `seen:<id>` (set, with a time to live of
//! [`SEEN_FOR`], with the event: a repeat is stored once).
//!
//! - put: one script: `SET seen:<id> NX EX`, then `XADD` (acknowledged by Redis before the
//!   upstream gets a response).
//! - claim: the retries due moved to the stream (one script), the entries another replica
//!   claimed and has not settled for the stale time taken over (`XAUTOCLAIM`: a replica that
//!   died leaves its events to the others), then new entries (`XREADGROUP`).
//! - settle: one transaction: `XACK` and `XDEL`, and the event rescheduled (`ZADD due`) or
//!   kept as given up (`HSET given_up`).
//!
//! A Redis that restarted empty has no group: reads response `NOGROUP`, and the group is made
//! again on the next claim (which the worker makes after its pause, not at once). lingo says
//! once, when it first connects, if the server does not write an append-only file: events
//! acknowledged to the upstream then live in Redis's memory until its next snapshot.

mod scripts;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::streams::{StreamAutoClaimReply, StreamId, StreamReadReply};
use redis::{RedisError, Script};
use tokio::sync::OnceCell;
use tokio::time::Instant;

use super::{Depth, Pending, SEEN_FOR, Store, StoreError};
use crate::webhooks::event::{Event, now_ms};

/// The consumer group every replica reads the stream through.
const GROUP: &str = "lingo";

/// How often a replica looks for events a dead one left.
const TAKE_OVER_EVERY: Duration = Duration::from_secs(1);

/// The Redis store.
pub struct Redis {
    client: redis::Client,
    connection: OnceCell<ConnectionManager>,
    /// This replica's name in the group: host, process and a random part.
    consumer: String,
    keys: Keys,
    put: Script,
    due: Script,
    replay: Script,
    /// The group is known to exist (until a read says it does not).
    group: AtomicBool,
    taken_over: Mutex<Option<Instant>>,
}

struct Keys {
    stream: String,
    due: String,
    received: String,
    given_up: String,
    seen: String,
}

// === impl Redis ===

impl Redis {
    /// A store at `url` (`redis://...`); nothing is connected until it is used.
    pub fn new(url: &str) -> Result<Redis, String> {
        let client =
            redis::Client::open(url).map_err(|e| format!("not a Redis URL: {}", e.category()))?;
        let prefix = "lingo:webhooks:";
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "lingo".into());
        let random = crate::base::ids::random_hex();
        Ok(Redis {
            client,
            connection: OnceCell::new(),
            consumer: format!("{host}-{}-{}", std::process::id(), &random[..8]),
            keys: Keys {
                stream: format!("{prefix}stream"),
                due: format!("{prefix}due"),
                received: format!("{prefix}received"),
                given_up: format!("{prefix}given_up"),
                seen: format!("{prefix}seen:"),
            },
            put: Script::new(scripts::PUT),
            due: Script::new(scripts::DUE),
            replay: Script::new(scripts::REPLAY),
            group: AtomicBool::new(false),
            taken_over: Mutex::new(None),
        })
    }

    /// This replica's name in the consumer group.
    pub fn consumer(&self) -> &str {
        &self.consumer
    }

    /// The connection (made on first use, and made again by itself when it breaks).
    async fn connection(&self) -> Result<ConnectionManager, StoreError> {
        let made = self.connection.get_or_try_init(|| async {
            let config = ConnectionManagerConfig::new()
                .set_connection_timeout(Some(Duration::from_secs(2)))
                .set_response_timeout(Some(Duration::from_secs(3)))
                .set_number_of_retries(2);
            let mut connection =
                ConnectionManager::new_with_config(self.client.clone(), config).await?;
            say_persistence(&mut connection).await;
            Ok::<_, RedisError>(connection)
        });
        made.await.cloned().map_err(failed)
    }

    /// Makes the consumer group (and the stream), unless it is known to exist.
    async fn ensure_group(&self, connection: &mut ConnectionManager) -> Result<(), StoreError> {
        if self.group.load(Ordering::Relaxed) {
            return Ok(());
        }
        let made: Result<(), RedisError> = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(&self.keys.stream)
            .arg(GROUP)
            .arg("0")
            .arg("MKSTREAM")
            .query_async(connection)
            .await;
        match made {
            Ok(()) => tracing::info!("the webhook stream's consumer group was made in Redis"),
            Err(e) if e.code() == Some("BUSYGROUP") => {}
            Err(e) => return Err(failed(e)),
        }
        self.group.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// A read's error; `NOGROUP` (a Redis restarted empty) has the group made again next.
    fn read_failed(&self, e: RedisError) -> StoreError {
        if e.code() == Some("NOGROUP") {
            self.group.store(false, Ordering::Relaxed);
            return StoreError(
                "the webhook stream's consumer group is gone from Redis (restarted empty?); it is made again".into(),
            );
        }
        failed(e)
    }

    /// Up to `max` new entries for this replica.
    async fn read_new(
        &self,
        connection: &mut ConnectionManager,
        max: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let read: Option<StreamReadReply> = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg(GROUP)
            .arg(&self.consumer)
            .arg("COUNT")
            .arg(max)
            .arg("STREAMS")
            .arg(&self.keys.stream)
            .arg(">")
            .query_async(connection)
            .await
            .map_err(|e| self.read_failed(e))?;
        let entries = read.into_iter().flat_map(|r| r.keys).flat_map(|k| k.ids);
        Ok(self.events(connection, entries.collect()).await)
    }

    /// Up to `max` entries other replicas claimed and left unsettled for `stale` (at most
    /// once every [`TAKE_OVER_EVERY`]).
    async fn take_over(
        &self,
        connection: &mut ConnectionManager,
        max: usize,
        stale: Duration,
    ) -> Result<Vec<Event>, StoreError> {
        {
            let mut last = self
                .taken_over
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if last.is_some_and(|at| at.elapsed() < TAKE_OVER_EVERY) {
                return Ok(Vec::new());
            }
            *last = Some(Instant::now());
        }
        let stale_ms = u64::try_from(stale.as_millis()).unwrap_or(u64::MAX);
        let claimed: StreamAutoClaimReply = redis::cmd("XAUTOCLAIM")
            .arg(&self.keys.stream)
            .arg(GROUP)
            .arg(&self.consumer)
            .arg(stale_ms)
            .arg("0-0")
            .arg("COUNT")
            .arg(max)
            .query_async(connection)
            .await
            .map_err(|e| self.read_failed(e))?;
        if !claimed.claimed.is_empty() {
            tracing::info!(
                events = claimed.claimed.len(),
                "webhook events another replica left unsettled are taken over"
            );
        }
        Ok(self.events(connection, claimed.claimed).await)
    }

    /// The events of stream entries; an entry that holds none is dropped from the stream.
    async fn events(
        &self,
        connection: &mut ConnectionManager,
        entries: Vec<StreamId>,
    ) -> Vec<Event> {
        let mut events = Vec::with_capacity(entries.len());
        for entry in entries {
            let event = entry
                .get::<Vec<u8>>("e")
                .and_then(|e| Event::from_bytes(&e));
            match event {
                Some(event) => events.push(Event {
                    handle: Some(entry.id),
                    ..event
                }),
                None => {
                    tracing::warn!(entry = %entry.id, "a webhook stream entry holds no event; dropped");
                    let settle = self.settled(&entry.id);
                    let _: Result<(), _> = settle.query_async(connection).await;
                }
            }
        }
        events
    }

    /// A transaction that acknowledges and deletes the stream entry `handle`.
    fn settled(&self, handle: &str) -> redis::Pipeline {
        let mut pipe = redis::pipe();
        pipe.atomic();
        pipe.cmd("XACK")
            .arg(&self.keys.stream)
            .arg(GROUP)
            .arg(handle)
            .ignore();
        pipe.cmd("XDEL").arg(&self.keys.stream).arg(handle).ignore();
        pipe
    }

    /// Settles a claimed event with `then` done in the same transaction.
    fn settle(&self, event: &Event, then: impl FnOnce(&mut redis::Pipeline)) -> Pending<'_, ()> {
        let mut pipe = self.settled(event.handle.as_deref().unwrap_or("0-0"));
        then(&mut pipe);
        Box::pin(async move {
            let mut connection = self.connection().await?;
            pipe.query_async::<()>(&mut connection)
                .await
                .map_err(failed)
        })
    }
}

impl Store for Redis {
    fn put(&self, event: Event) -> Pending<'_, bool> {
        Box::pin(async move {
            let mut connection = self.connection().await?;
            let stored: i64 = self
                .put
                .key(format!("{}{}", self.keys.seen, event.id))
                .key(&self.keys.stream)
                .key(&self.keys.received)
                .arg(event.to_bytes())
                .arg(event.received_ms)
                .arg(SEEN_FOR.as_secs())
                .arg(&event.id)
                .invoke_async(&mut connection)
                .await
                .map_err(failed)?;
            Ok(stored == 1)
        })
    }

    fn claim(&self, max: usize, stale: Duration) -> Pending<'_, Vec<Event>> {
        Box::pin(async move {
            let mut connection = self.connection().await?;
            self.ensure_group(&mut connection).await?;
            let _moved: i64 = (self.due.key(&self.keys.due).key(&self.keys.stream))
                .arg(now_ms())
                .arg(max)
                .invoke_async(&mut connection)
                .await
                .map_err(failed)?;
            let mut events = self.take_over(&mut connection, max, stale).await?;
            if events.len() < max {
                let new = self.read_new(&mut connection, max - events.len()).await?;
                events.extend(new);
            }
            Ok(events)
        })
    }

    fn delivered(&self, event: &Event) -> Pending<'_, ()> {
        let id = event.id.clone();
        let received = self.keys.received.clone();
        self.settle(event, move |pipe| {
            pipe.cmd("ZREM").arg(received).arg(id).ignore();
        })
    }

    fn retry(&self, event: &Event) -> Pending<'_, ()> {
        let (due, bytes, at) = (self.keys.due.clone(), event.to_bytes(), event.due_ms);
        self.settle(event, move |pipe| {
            pipe.cmd("ZADD").arg(due).arg(at).arg(bytes).ignore();
        })
    }

    fn give_up(&self, event: &Event) -> Pending<'_, ()> {
        let (given_up, received) = (self.keys.given_up.clone(), self.keys.received.clone());
        let (id, bytes) = (event.id.clone(), event.to_bytes());
        self.settle(event, move |pipe| {
            pipe.cmd("HSET").arg(given_up).arg(&id).arg(bytes).ignore();
            pipe.cmd("ZREM").arg(received).arg(&id).ignore();
        })
    }

    fn given_up(&self) -> Pending<'_, Vec<Event>> {
        Box::pin(async move {
            let mut connection = self.connection().await?;
            let all: Vec<Vec<u8>> = redis::cmd("HVALS")
                .arg(&self.keys.given_up)
                .query_async(&mut connection)
                .await
                .map_err(failed)?;
            Ok(all.iter().filter_map(|e| Event::from_bytes(e)).collect())
        })
    }

    fn replay(&self, id: Option<String>) -> Pending<'_, usize> {
        Box::pin(async move {
            let mut connection = self.connection().await?;
            let chosen: Vec<(String, Vec<u8>)> = match id {
                Some(id) => {
                    let one: Option<Vec<u8>> = redis::cmd("HGET")
                        .arg(&self.keys.given_up)
                        .arg(&id)
                        .query_async(&mut connection)
                        .await
                        .map_err(failed)?;
                    one.map(|bytes| (id, bytes)).into_iter().collect()
                }
                None => redis::cmd("HGETALL")
                    .arg(&self.keys.given_up)
                    .query_async(&mut connection)
                    .await
                    .map_err(failed)?,
            };
            let mut replayed = 0;
            for (id, bytes) in chosen {
                let Some(event) = Event::from_bytes(&bytes) else {
                    continue;
                };
                let event = event.replayed(now_ms());
                let done: i64 = (self.replay.key(&self.keys.given_up).key(&self.keys.stream))
                    .key(&self.keys.received)
                    .arg(&id)
                    .arg(event.to_bytes())
                    .arg(event.received_ms)
                    .invoke_async(&mut connection)
                    .await
                    .map_err(failed)?;
                replayed += usize::try_from(done).unwrap_or(0);
            }
            Ok(replayed)
        })
    }

    fn depth(&self) -> Pending<'_, Depth> {
        Box::pin(async move {
            let mut connection = self.connection().await?;
            let (events, oldest): (u64, Vec<(String, f64)>) = redis::pipe()
                .cmd("ZCARD")
                .arg(&self.keys.received)
                .cmd("ZRANGE")
                .arg(&self.keys.received)
                .arg(0)
                .arg(0)
                .arg("WITHSCORES")
                .query_async(&mut connection)
                .await
                .map_err(failed)?;
            let oldest_ms = oldest.first().map(|(_, at)| *at as u64);
            Ok(Depth { events, oldest_ms })
        })
    }
}

/// Says, once per connection made, when the server keeps no append-only file.
async fn say_persistence(connection: &mut ConnectionManager) {
    let said: Result<Vec<String>, RedisError> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("appendonly")
        .query_async(connection)
        .await;
    if let Ok(said) = said
        && said.get(1).is_some_and(|v| v == "no")
    {
        tracing::warn!(
            "the webhook store's Redis has `appendonly no`: events lingo acknowledged live in Redis's memory until its next snapshot, and a Redis restart can lose them (`appendonly yes` keeps them)"
        );
    }
}

fn failed(e: RedisError) -> StoreError {
    StoreError(format!("Redis: {e}"))
}
