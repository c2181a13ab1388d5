//! The Redis store, which replicas share: one script call admits a request (all its limits,
//! all or nothing), one settles it. Keys: `lingo:quota:{<client>}` (a hash: one key a client,
//! so a request's script touches one slot and Redis Cluster serves it) and
//! `lingo:quota:replicas` (a sorted set: the replicas seen lately, for each one's share while
//! the store is away).
//!
//! Every call is bounded by the table's `timeout`; one that fails or times out marks the store
//! down, and requests then use their limits' fallback without calling it (the breaker). A
//! heartbeat each [`BEAT_EVERY`], bounded by [`BEAT_TIMEOUT`], is the only caller while it is
//! down, and marks it up again when it answers.

mod scripts;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{RedisError, Script};
use tokio::sync::OnceCell;

use super::count::{Check, Shape};
use super::{Ask, Charge};
use crate::observe::Metrics;

/// How often a replica says it is alive (and tries a store that is down).
pub const BEAT_EVERY: Duration = Duration::from_secs(1);
/// How long a heartbeat waits: longer than a request does, so a slow first connect lands.
const BEAT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a replica counts as alive after its last heartbeat.
const ALIVE_FOR: Duration = Duration::from_secs(5);

/// The Redis store.
pub struct Shared {
    client: redis::Client,
    connection: OnceCell<ConnectionManager>,
    /// The longest a request waits for it.
    pub timeout: Duration,
    admit: Script,
    settle: Script,
    beat: Script,
    /// This replica's name in the set of replicas.
    replica: String,
    up: AtomicBool,
    /// Replicas that said they were alive lately, this one included.
    replicas: AtomicU32,
    metrics: Arc<Metrics>,
}

// === impl Shared ===

impl Shared {
    /// A store at `url`; nothing is connected until the heartbeat or a request needs it.
    pub fn new(url: &str, timeout: Duration, metrics: Arc<Metrics>) -> Result<Shared, String> {
        let client =
            redis::Client::open(url).map_err(|e| format!("not a Redis URL: {}", e.category()))?;
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "lingo".into());
        Ok(Shared {
            client,
            connection: OnceCell::new(),
            timeout,
            admit: Script::new(scripts::ADMIT),
            settle: Script::new(scripts::SETTLE),
            beat: Script::new(scripts::BEAT),
            replica: format!(
                "{host}-{}-{}",
                std::process::id(),
                &crate::base::ids::random_hex()[..8]
            ),
            // Until a call says otherwise: the first requests try it.
            up: AtomicBool::new(true),
            replicas: AtomicU32::new(1),
            metrics,
        })
    }

    /// Whether requests call it (the breaker is closed).
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    /// Replicas seen lately (at least this one).
    pub fn replicas(&self) -> u32 {
        self.replicas.load(Ordering::Relaxed).max(1)
    }

    /// Marks it down: requests use their fallback until a heartbeat gets an answer.
    pub fn failed(&self, why: &str) {
        self.metrics.quota.store_error();
        if self.up.swap(false, Ordering::Relaxed) {
            self.metrics.quota.store_up(false);
            tracing::warn!("the quota store is unreachable ({why}); limits use their fallback");
        }
    }

    /// Asks `client`'s counters; an error in words (a timeout included).
    pub async fn admit(&self, client: &str, asks: &[Ask]) -> Result<Vec<Check>, String> {
        let mut call = self.admit.prepare_invoke();
        call.key(key(client)).arg(asks.len());
        for ask in asks {
            counter(&mut call, &ask.id, ask.shape)
                .arg(ask.cost)
                .arg(u8::from(!ask.shadow));
        }
        let reply: Vec<i64> = self
            .bounded(self.timeout, |mut c| async move {
                call.invoke_async(&mut c).await
            })
            .await?;
        if reply.len() != asks.len() * 4 {
            return Err(format!("the admit script replied {} numbers", reply.len()));
        }
        let checks = reply.chunks(4).map(|r| Check {
            over: r[0] == 1,
            remaining: r[1].max(0) as u64,
            reset_ms: r[2].max(0) as u64,
            mark: r[3],
        });
        Ok(checks.collect())
    }

    /// Adds each charge's difference to `client`'s counters.
    pub async fn settle(&self, client: &str, charges: &[Charge]) -> Result<(), String> {
        let mut call = self.settle.prepare_invoke();
        call.key(key(client)).arg(charges.len());
        for charge in charges {
            counter(&mut call, &charge.id, charge.shape)
                .arg(charge.mark)
                .arg(charge.delta);
        }
        self.bounded(self.timeout, |mut c| async move {
            call.invoke_async::<i64>(&mut c).await
        })
        .await
        .map(drop)
    }

    /// Says this replica is alive; an answer marks the store up again.
    async fn heartbeat(&self) -> Result<(), String> {
        let mut call = self.beat.prepare_invoke();
        call.key("lingo:quota:replicas")
            .arg(&self.replica)
            .arg(ALIVE_FOR.as_millis() as u64);
        let count: u32 = self
            .bounded(BEAT_TIMEOUT, |mut c| async move {
                call.invoke_async(&mut c).await
            })
            .await?;
        self.replicas.store(count, Ordering::Relaxed);
        if !self.up.swap(true, Ordering::Relaxed) {
            self.metrics.quota.store_up(true);
            tracing::info!("the quota store answers again; limits are shared again");
        }
        Ok(())
    }

    /// Runs `call` on the connection (made on first use) within `limit`.
    async fn bounded<T, F>(
        &self,
        limit: Duration,
        call: impl FnOnce(ConnectionManager) -> F,
    ) -> Result<T, String>
    where
        F: Future<Output = Result<T, RedisError>>,
    {
        let work = async {
            let connection = self.connection().await?;
            call(connection).await
        };
        match tokio::time::timeout(limit, work).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(format!("Redis: {}", e.category())),
            Err(_) => Err(format!(
                "no answer within {}",
                crate::base::units::format_duration(limit)
            )),
        }
    }

    async fn connection(&self) -> Result<ConnectionManager, RedisError> {
        let made = self.connection.get_or_try_init(|| {
            let config = ConnectionManagerConfig::new()
                .set_connection_timeout(Some(BEAT_TIMEOUT))
                .set_response_timeout(Some(BEAT_TIMEOUT))
                .set_number_of_retries(1);
            ConnectionManager::new_with_config(self.client.clone(), config)
        });
        made.await.cloned()
    }
}

/// Beats for `shared` until it is dropped (a reload that changed the store).
pub fn spawn_heartbeat(shared: Weak<Shared>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        let mut every = tokio::time::interval(BEAT_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            let Some(shared) = shared.upgrade() else {
                return;
            };
            if let Err(why) = shared.heartbeat().await {
                shared.failed(&why);
            }
        }
    });
}

/// A counter's first four arguments to both scripts: its id and its shape.
fn counter<'c, 'a>(
    call: &'c mut redis::ScriptInvocation<'a>,
    id: &str,
    shape: Shape,
) -> &'c mut redis::ScriptInvocation<'a> {
    call.arg(id)
        .arg(shape.amount)
        .arg(shape.per_ms)
        .arg(shape.capacity.unwrap_or(0))
}

/// A client's hash: the braces make the client's name its hash tag.
fn key(client: &str) -> String {
    format!("lingo:quota:{{{client}}}")
}
