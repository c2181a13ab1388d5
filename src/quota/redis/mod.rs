//! The Redis store, which replicas share: one script call admits a request (all its limits,
//! all or nothing); settlements wait a little and go a client's together (`waiting`). Keys:
//! `lingo:quota:{<client>}` (a hash: one key a client, so that each script touches one key,
//! in one slot of a Redis Cluster) and `lingo:quota:replicas` (a sorted set: the replicas
//! seen lately, for each one's share while the store is away). One Redis node, or a Redis
//! Cluster (`quota_store.cluster`), whose client sends each script to the node that holds
//! its key.
//!
//! Every call is bounded by the table's `timeout`; one that fails to reach Redis or times out
//! marks the store down, and requests then use their limits' fallback without calling it (the
//! breaker). A heartbeat each [`BEAT_EVERY`] is the only caller while it is down; it marks the
//! store up again when it answers within the requests' timeout, with the scripts loaded, and
//! then sends the settlements that waited meanwhile.

mod scripts;
mod waiting;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisError, RedisFuture, Script, ScriptInvocation, Value};
use tokio::sync::OnceCell;

use super::count::{Check, Shape};
use super::{Ask, Charge};
use crate::base::worker;
use crate::observe::Metrics;
use crate::table::QuotaStore;
use waiting::Waiting;

/// How often a replica says it is alive (and tries a store that is down).
pub const BEAT_EVERY: Duration = Duration::from_secs(1);
/// The most charges a settlement call carries (a Lua function takes at most about 8,000
/// arguments: each charge is two fields of the hash to read).
const CHARGES_A_CALL: usize = 1_000;
/// The most settlement calls sent at once.
const CALLS_AT_ONCE: usize = 64;
/// How long a heartbeat waits: longer than a request does, so a slow first connect lands.
const BEAT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a replica counts as alive after its last heartbeat.
const ALIVE_FOR: Duration = Duration::from_secs(5);

/// The Redis store.
pub struct Shared {
    client: Client,
    /// One connection a serving thread (`base::worker::slot`; slot 0 for the heartbeat and
    /// what runs off the workers), made on that thread's first call: its replies then wake
    /// the thread that waits for them, not another runtime's (measured in
    /// docs/benchmarks.md).
    connections: Vec<OnceCell<Connection>>,
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
    /// Settlements not sent yet.
    waiting: Waiting,
    /// Held while a batch of them is sent.
    sending: tokio::sync::Mutex<()>,
    metrics: Arc<Metrics>,
}

/// Why a call did not get its answer.
#[derive(Debug)]
pub struct StoreError {
    pub why: String,
    /// Redis could not be reached or did not answer in time (the breaker opens); otherwise it
    /// answered with an error about this call alone.
    pub down: bool,
    /// The call may have run in Redis (it was sent, and no answer says it did not): sending
    /// it again could count it twice.
    pub may_have_run: bool,
}

// === impl Shared ===

impl Shared {
    /// The store `config` names; nothing is connected until the heartbeat or a request needs
    /// it.
    pub fn new(config: &QuotaStore, metrics: Arc<Metrics>) -> Result<Shared, String> {
        let not_redis = |e: RedisError| format!("not a Redis URL: {}", e.category());
        let url = config.redis.as_str();
        let client = if config.cluster {
            let builder = ClusterClient::builder([url])
                .connection_timeout(BEAT_TIMEOUT)
                .response_timeout(BEAT_TIMEOUT);
            Client::Cluster(Box::new(builder.build().map_err(not_redis)?))
        } else {
            Client::Node(redis::Client::open(url).map_err(not_redis)?)
        };
        let timeout = config.timeout;
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "lingo".into());
        Ok(Shared {
            client,
            connections: (0..worker::slots()).map(|_| OnceCell::new()).collect(),
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
            waiting: Waiting::default(),
            sending: tokio::sync::Mutex::default(),
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

    /// Counts a failed call; one that could not reach Redis marks it down: requests use their
    /// fallback until a heartbeat gets an answer.
    pub fn failed(&self, error: &StoreError) {
        self.metrics.quota.store_error();
        if error.down && self.up.swap(false, Ordering::Relaxed) {
            self.metrics.quota.store_up(false);
            let why = &error.why;
            tracing::warn!("the quota store is unreachable ({why}); limits use their fallback");
        }
    }

    /// Asks `client`'s counters, charging them unless `peek`.
    pub async fn admit(
        &self,
        client: &str,
        asks: &[Ask],
        peek: bool,
    ) -> Result<Vec<Check>, StoreError> {
        let mut call = self.admit.prepare_invoke();
        call.key(key(client)).arg(u8::from(!peek)).arg(asks.len());
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
            let why = format!("the admit script replied {} numbers", reply.len());
            let may_have_run = true;
            return Err(StoreError {
                why,
                down: false,
                may_have_run,
            });
        }
        let checks = reply.chunks(4).map(|r| Check {
            over: r[0] == 1,
            remaining: r[1].max(0) as u64,
            reset_ms: r[2].max(0) as u64,
            mark: r[3],
        });
        Ok(checks.collect())
    }

    /// Adds each charge's difference to `client`'s counters, a little later, with the
    /// client's other settlements (`waiting`).
    pub fn settle(&self, client: Arc<str>, charges: Vec<Charge>) {
        if !self.waiting.add(client, charges) {
            self.metrics.quota.store_error();
        }
    }

    /// Sends every settlement that waits, now (lingo is stopping, or this store is no longer
    /// used); those it cannot send are counted and told.
    pub async fn send_waiting(&self) {
        if self.is_up() {
            self.send_due(Instant::now() + waiting::SEND_AFTER).await;
        }
        let left = self.waiting.charges();
        if left > 0 {
            self.metrics.quota.store_errors(left);
            tracing::warn!(
                "{left} settlements could not be sent to the quota store; their reservations stand"
            );
        }
    }

    /// Sends the settlements that have waited their time by `now`, a few clients' at once,
    /// and says whether others wait. One batch at a time: `send_waiting` waits for the one
    /// being sent.
    async fn send_due(&self, now: Instant) -> bool {
        let _one_at_a_time = self.sending.lock().await;
        let (due, more) = self.waiting.due(now);
        let mut calls = Vec::new();
        for (client, charges) in due {
            for part in charges.chunks(CHARGES_A_CALL) {
                calls.push(self.send_settlement(Arc::clone(&client), part.to_vec()));
            }
        }
        while !calls.is_empty() {
            let now: Vec<_> = calls.drain(..calls.len().min(CALLS_AT_ONCE)).collect();
            futures_util::future::join_all(now).await;
        }
        more
    }

    /// Sends one call's settlement; while the store is away it waits again.
    async fn send_settlement(&self, client: Arc<str>, charges: Vec<Charge>) {
        if !self.is_up() {
            self.settle(client, charges);
            return;
        }
        let mut call = self.settle.prepare_invoke();
        call.key(key(&client)).arg(charges.len());
        for charge in &charges {
            counter(&mut call, &charge.id, charge.shape)
                .arg(charge.mark)
                .arg(charge.cost)
                .arg(charge.delta);
        }
        let sent = self
            .bounded(self.timeout, |mut c| async move {
                call.invoke_async::<i64>(&mut c).await
            })
            .await;
        if let Err(error) = sent {
            self.failed(&error);
            self.unsent(client, charges, &error);
        }
    }

    /// Puts back a settlement whose call failed without reaching Redis, to be sent when it
    /// answers; one that may have run is not sent again (its reservation may stand instead).
    fn unsent(&self, client: Arc<str>, charges: Vec<Charge>, error: &StoreError) {
        if error.down && !error.may_have_run {
            self.settle(client, charges);
        }
    }

    /// Says this replica is alive. An answer within the requests' timeout (the scripts
    /// loaded first, after a Redis that restarted empty) marks the store up again, and the
    /// settlements that waited meanwhile are sent.
    async fn heartbeat(&self) -> Result<(), StoreError> {
        let started = Instant::now();
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
        if self.is_up() {
            return Ok(());
        }
        let loading = [&self.admit, &self.settle].map(|s| s.prepare_invoke());
        self.bounded(BEAT_TIMEOUT, |mut c| async move {
            for script in &loading {
                script.load_async(&mut c).await?;
            }
            Ok(())
        })
        .await?;
        if started.elapsed() > self.timeout {
            // Answering, but slower than requests wait: they would only time out again.
            return Ok(());
        }
        self.up.store(true, Ordering::Relaxed);
        self.metrics.quota.store_up(true);
        tracing::info!("the quota store answers again; limits are shared again");
        self.waiting.wake.notify_one();
        Ok(())
    }

    /// Runs `call` on the connection (made on first use) within `limit`.
    async fn bounded<T, F>(
        &self,
        limit: Duration,
        call: impl FnOnce(Connection) -> F,
    ) -> Result<T, StoreError>
    where
        F: Future<Output = Result<T, RedisError>>,
    {
        // The error, and whether the call was sent.
        let work = async {
            let connection = self.connection().await.map_err(|e| (e, false))?;
            call(connection).await.map_err(|e| (e, true))
        };
        match tokio::time::timeout(limit, work).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err((e, sent))) => Err(StoreError {
                why: format!("Redis: {}", e.category()),
                down: e.is_io_error()
                    || e.is_timeout()
                    || e.is_connection_dropped()
                    || e.is_connection_refusal()
                    || e.is_unrecoverable_error(),
                may_have_run: sent && !e.is_connection_refusal(),
            }),
            Err(_) => Err(StoreError {
                why: format!(
                    "no answer within {}",
                    crate::base::units::format_duration(limit)
                ),
                down: true,
                may_have_run: true,
            }),
        }
    }

    async fn connection(&self) -> Result<Connection, RedisError> {
        let slot = worker::slot().min(self.connections.len() - 1);
        let made = self.connections[slot].get_or_try_init(|| async {
            Ok::<_, RedisError>(match &self.client {
                Client::Node(client) => {
                    let config = ConnectionManagerConfig::new()
                        .set_connection_timeout(Some(BEAT_TIMEOUT))
                        .set_response_timeout(Some(BEAT_TIMEOUT))
                        .set_number_of_retries(1);
                    let made = ConnectionManager::new_with_config(client.clone(), config);
                    Connection::Node(made.await?)
                }
                Client::Cluster(client) => {
                    Connection::Cluster(client.get_async_connection().await?)
                }
            })
        });
        made.await.cloned()
    }
}

/// How the store is reached: one node, or a Redis Cluster.
enum Client {
    Node(redis::Client),
    Cluster(Box<ClusterClient>),
}

/// A connection to one node (made again by itself when it breaks), or to a cluster (each
/// command sent to the node that holds its key).
#[derive(Clone)]
enum Connection {
    Node(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Connection::Node(c) => c.req_packed_command(cmd),
            Connection::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Connection::Node(c) => c.req_packed_commands(pipeline, offset, count),
            Connection::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Node(c) => c.get_db(),
            Connection::Cluster(c) => c.get_db(),
        }
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
            if let Err(error) = shared.heartbeat().await {
                shared.failed(&error);
            }
        }
    });
}

/// Sends `shared`'s settlements once each has waited [`waiting::SEND_AFTER`]; while the
/// store is away, it waits to be woken when the store answers again. It holds the store:
/// once nothing else does (a reload replaced it, and the requests charged in it have
/// ended), it sends what waits and ends.
pub fn spawn_sender(shared: Arc<Shared>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        loop {
            let woken = tokio::time::timeout(BEAT_EVERY, shared.waiting.wake.notified()).await;
            if Arc::strong_count(&shared) == 1 {
                shared.send_waiting().await;
                return;
            }
            while woken.is_ok() {
                tokio::time::sleep(waiting::SEND_AFTER).await;
                if !shared.is_up() || !shared.send_due(Instant::now()).await {
                    break;
                }
            }
        }
    });
}

/// A counter's first four arguments to both scripts: its id and its shape.
fn counter<'c, 'a>(
    call: &'c mut ScriptInvocation<'a>,
    id: &str,
    shape: Shape,
) -> &'c mut ScriptInvocation<'a> {
    call.arg(id)
        .arg(shape.amount)
        .arg(shape.per_ms)
        .arg(shape.capacity.unwrap_or(0))
}

/// A client's hash: the braces make the client's name its hash tag.
fn key(client: &str) -> String {
    format!("lingo:quota:{{{client}}}")
}
