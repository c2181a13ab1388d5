//! Rate limits and budgets per client: a request reserves its likely cost before it is
//! forwarded, and its answer's real usage settles the reservation when the answer ends.
//!
//! - `count`: one counter's sums (a fixed window or a bucket), pure.
//! - `cost`: a request's estimate (from its body) and an answer's usage (from the counts
//!   in it), pure.
//! - `local`: counters in the process (one replica; and each replica's share while the
//!   shared store is away); `redis`: the shared store, with its breaker and heartbeat.
//! - `settle`: the body wrapper that settles a reservation when its answer ends.
//! - `headers`: the `x-ratelimit-*` fields every answer to a limited client carries.
//!
//! A request's limits are asked all or nothing: when one enforced limit has no room, none is
//! charged. With Redis, a client found over a limit is refused by the replica without asking
//! Redis again until the limit's reset (a request limit) or for at most a second (a token or
//! credit limit, which answers settling below their reservations can give room in).

mod cost;
mod count;
mod headers;
mod local;
mod redis;
mod settle;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use serde_json::{Value, json};

use crate::error::{ProxyError, Refusal};
use crate::observe::Metrics;
use crate::table::quota::{Limit, OnStoreError, QuotaStore, Unit};
use crate::table::{ClientKey, RouteTable};
use count::{Check, Shape};
use local::Local;
use redis::Shared;

pub use cost::{Estimate, Used};
pub use headers::RateHeaders;
pub use settle::settling;

/// The clients' counters and where they are kept; outlives reloads.
pub struct Quota {
    stores: ArcSwap<Stores>,
    metrics: Arc<Metrics>,
}

/// How long a client found over a token or credit limit is refused without asking the
/// store: answers in flight may give some of it back as they settle.
const KNOWN_OVER_AT_MOST_MS: u64 = 1_000;

/// Where counters are kept under one table's `quota_store`.
struct Stores {
    /// Held in the process (no `quota_store`); kept across reloads.
    local: Arc<Local>,
    shared: Option<Arc<SharedStore>>,
}

/// The shared store and what each replica keeps beside it.
struct SharedStore {
    redis: Arc<Shared>,
    config: QuotaStore,
    /// This replica's share of each limit, while the store is away.
    fallback: Local,
    /// Limits clients are known to be over, with when each has room again (ms since the
    /// epoch): those requests are refused without asking the store.
    over: Mutex<HashMap<Arc<str>, Vec<KnownOver>>>,
}

/// A limit (by id) a client is over, until when (ms since the epoch), and its refusal.
type KnownOver = (Arc<str>, u64, Refusal);

/// One limit asked for a cost.
#[derive(Debug, Clone)]
pub struct Ask {
    pub id: Arc<str>,
    pub shape: Shape,
    pub cost: u64,
    pub shadow: bool,
}

/// A difference to add to a counter, charged in window `mark`.
#[derive(Debug, Clone)]
pub struct Charge {
    pub id: Arc<str>,
    pub shape: Shape,
    pub mark: i64,
    pub delta: i64,
}

/// What admitting a request decided, and the `x-ratelimit-*` fields its answer carries.
pub struct Admitted {
    pub headers: RateHeaders,
    /// A reservation to settle (none when no limit applies), or the refusal.
    pub outcome: Result<Option<Reservation>, ProxyError>,
}

/// A request's charges, settled when its answer ends.
pub struct Reservation {
    client: Arc<str>,
    placed: Placed,
    parts: Vec<Part>,
    estimate: Estimate,
    metrics: Arc<Metrics>,
}

/// Where a reservation was charged.
enum Placed {
    Local(Arc<Local>),
    Shared(Arc<SharedStore>),
    /// This replica's share, the shared store being away.
    Fallback(Arc<SharedStore>),
}

/// One limit's part of a reservation.
struct Part {
    unit: Unit,
    id: Arc<str>,
    shape: Shape,
    cost: u64,
    mark: i64,
}

// === impl Quota ===

impl Quota {
    pub fn new(metrics: Arc<Metrics>) -> Quota {
        Quota {
            stores: ArcSwap::from_pointee(Stores {
                local: Arc::default(),
                shared: None,
            }),
            metrics,
        }
    }

    /// Takes `table`'s `quota_store`: the same store keeps its counters; another starts
    /// afresh (Redis's own counters are where they were). Must be called inside the runtime.
    pub fn apply(&self, table: &RouteTable) -> Result<(), String> {
        let now = self.stores.load();
        let same = now.shared.as_ref().map(|s| &s.config) == table.quota_store.as_ref();
        if same {
            return Ok(());
        }
        let shared = match &table.quota_store {
            None => None,
            Some(config) => {
                let redis = Shared::new(&config.redis, config.timeout, Arc::clone(&self.metrics))?;
                let redis = Arc::new(redis);
                redis::spawn_heartbeat(Arc::downgrade(&redis));
                Some(Arc::new(SharedStore {
                    redis,
                    config: config.clone(),
                    fallback: Local::default(),
                    over: Mutex::default(),
                }))
            }
        };
        self.metrics.quota.store_up(true);
        self.stores.store(Arc::new(Stores {
            local: Arc::clone(&now.local),
            shared,
        }));
        Ok(())
    }

    /// Whether the shared store answers: `None` when counters are held in the process.
    pub fn store_up(&self) -> Option<bool> {
        let stores = self.stores.load();
        stores.shared.as_ref().map(|s| s.redis.is_up())
    }

    /// Whether `client`'s limits on the route labelled `route` count more than requests, or
    /// are for one model (so the request's body is read first, for its estimate and model).
    pub fn needs_body(client: &ClientKey, route: &str) -> bool {
        (client.quota.iter()).any(|l| {
            l.route.as_deref().is_none_or(|r| r == route)
                && (l.unit != Unit::Requests || l.model.is_some())
        })
    }

    /// Reserves the likely cost of a request of `client` on the route labelled `route`, for
    /// `model`.
    pub async fn admit(
        &self,
        client: &ClientKey,
        (route, model): (&str, Option<&str>),
        estimate: Estimate,
    ) -> Admitted {
        let asked: Vec<(&Limit, Ask)> = (client.quota.iter())
            .filter(|limit| limit.applies_to(route, model))
            .map(|limit| (limit, ask(limit, &estimate)))
            .filter(|(_, ask)| ask.cost > 0)
            .collect();
        let mut headers = RateHeaders::default();
        if asked.is_empty() {
            return Admitted {
                headers,
                outcome: Ok(None),
            };
        }
        let name = client.name.as_str();
        let stores = self.stores.load_full();
        let now = now_ms();
        let placed = match &stores.shared {
            None => {
                let asks: Vec<Ask> = asked.iter().map(|(_, a)| a.clone()).collect();
                let checks = stores.local.admit(name, &asks, now);
                Ok((Placed::Local(Arc::clone(&stores.local)), asked, checks))
            }
            Some(shared) => self.admit_shared(shared, name, asked, now).await,
        };
        let (placed, asked, checks) = match placed {
            Ok(placed) => placed,
            Err((err, known)) => {
                headers = known;
                return Admitted {
                    headers,
                    outcome: Err(err),
                };
            }
        };
        for ((limit, _), check) in asked.iter().zip(&checks) {
            headers.note(limit, check);
        }
        let outcome = self.decide(name, &placed, &asked, &checks, now).map(|()| {
            Some(Reservation {
                client: Arc::from(name),
                parts: (asked.iter().zip(&checks))
                    .map(|((limit, ask), check)| Part {
                        unit: limit.unit,
                        id: Arc::clone(&ask.id),
                        shape: ask.shape,
                        cost: ask.cost,
                        mark: check.mark,
                    })
                    .collect(),
                placed,
                estimate,
                metrics: Arc::clone(&self.metrics),
            })
        });
        Admitted { headers, outcome }
    }

    /// Asks the shared store (or, while it is away, each limit's fallback). An `Err` is the
    /// refusal, with the fields its answer carries.
    async fn admit_shared<'l>(
        &self,
        shared: &Arc<SharedStore>,
        name: &str,
        asked: Vec<(&'l Limit, Ask)>,
        now: u64,
    ) -> Result<(Placed, Vec<(&'l Limit, Ask)>, Vec<Check>), (ProxyError, RateHeaders)> {
        if let Some((refusal, limit)) = shared.known_over(name, &asked, now) {
            let mut headers = RateHeaders::default();
            headers.note_spent(limit, refusal.retry_after);
            self.metrics.quota.refused(name, &limit.id, false);
            return Err((ProxyError::OverLimit(refusal), headers));
        }
        if shared.redis.is_up() {
            let asks: Vec<Ask> = asked.iter().map(|(_, a)| a.clone()).collect();
            match shared.redis.admit(name, &asks).await {
                Ok(checks) => return Ok((Placed::Shared(Arc::clone(shared)), asked, checks)),
                Err(why) => shared.redis.failed(&why),
            }
        }
        let replicas = u64::from(shared.redis.replicas());
        let mut kept = Vec::with_capacity(asked.len());
        for (limit, ask) in asked {
            match limit.on_store_error {
                OnStoreError::Allow => self.metrics.quota.fallback("allow"),
                OnStoreError::Deny if ask.shadow => self.metrics.quota.fallback("allow"),
                OnStoreError::Deny => {
                    self.metrics.quota.fallback("deny");
                    return Err((ProxyError::QuotaUnavailable, RateHeaders::default()));
                }
                OnStoreError::Local => {
                    self.metrics.quota.fallback("local");
                    kept.push((limit, share(ask, replicas)));
                }
            }
        }
        let asks: Vec<Ask> = kept.iter().map(|(_, a)| a.clone()).collect();
        let checks = shared.fallback.admit(name, &asks, now);
        Ok((Placed::Fallback(Arc::clone(shared)), kept, checks))
    }

    /// Refuses when an enforced limit has no room (a spent budget before a rate limit, else
    /// the longest wait); counts what shadow limits would have refused.
    fn decide(
        &self,
        name: &str,
        placed: &Placed,
        asked: &[(&Limit, Ask)],
        checks: &[Check],
        now: u64,
    ) -> Result<(), ProxyError> {
        let mut worst: Option<(&Limit, &Check)> = None;
        for ((limit, _), check) in asked.iter().zip(checks) {
            if !check.over {
                continue;
            }
            if limit.shadow {
                self.metrics.quota.refused(name, &limit.id, true);
                continue;
            }
            let rank = |(l, c): (&Limit, &Check)| (l.is_budget(), c.reset_ms);
            if worst.is_none_or(|w| rank((limit, check)) > rank(w)) {
                worst = Some((limit, check));
            }
        }
        let Some((limit, check)) = worst else {
            return Ok(());
        };
        self.metrics.quota.refused(name, &limit.id, false);
        let refusal = refusal(limit, check.reset_ms);
        if let Placed::Shared(shared) = placed {
            // A request limit only has room again when it resets; a token or credit limit may
            // sooner, as answers in flight settle below their reservations.
            let known_for = match limit.unit {
                Unit::Requests => check.reset_ms,
                _ => check.reset_ms.min(KNOWN_OVER_AT_MOST_MS),
            };
            shared.remember_over(name, limit, now + known_for, &refusal);
        }
        Err(ProxyError::OverLimit(refusal))
    }

    /// Each client's limits: what is used and left of each, and when it renews, as
    /// `GET /quota` on the admin listener tells them.
    pub async fn usage(&self, clients: &[ClientKey]) -> Value {
        let stores = self.stores.load_full();
        let mut listed = Vec::new();
        for client in clients.iter().filter(|c| !c.quota.is_empty()) {
            // Asking for nothing changes nothing, and tells what is there.
            let asks: Vec<Ask> = (client.quota.iter())
                .map(|l| Ask {
                    cost: 0,
                    shadow: true,
                    ..ask(l, &Estimate::NOTHING)
                })
                .collect();
            let checks = match &stores.shared {
                None => Ok(stores.local.admit(&client.name, &asks, now_ms())),
                Some(shared) => shared.redis.admit(&client.name, &asks).await,
            };
            let limits: Vec<Value> = match checks {
                Ok(checks) => (client.quota.iter().zip(checks))
                    .map(|(limit, check)| {
                        json!({
                            "limit": &*limit.id,
                            "unit": limit.unit.as_str(),
                            "amount": limit.ceiling(),
                            "used": limit.ceiling().saturating_sub(check.remaining),
                            "remaining": check.remaining,
                            "reset_ms": check.reset_ms,
                            "shadow": limit.shadow,
                            "budget": limit.is_budget(),
                        })
                    })
                    .collect(),
                Err(why) => vec![json!({ "error": why })],
            };
            listed.push(json!({ "client": client.name, "limits": limits }));
        }
        let store = match &stores.shared {
            None => json!({ "kind": "process" }),
            Some(shared) => json!({ "kind": "redis", "up": shared.redis.is_up(),
                "replicas": shared.redis.replicas() }),
        };
        json!({ "store": store, "clients": listed })
    }
}

// === impl SharedStore ===

impl SharedStore {
    /// A limit among `asked` that `client` is known to be over now, and its refusal.
    fn known_over<'l>(
        &self,
        client: &str,
        asked: &[(&'l Limit, Ask)],
        now: u64,
    ) -> Option<(Refusal, &'l Limit)> {
        let over = self.over.lock().unwrap_or_else(|e| e.into_inner());
        let known = over.get(client)?;
        asked.iter().find_map(|(limit, ask)| {
            let (_, until, refusal) = known
                .iter()
                .find(|(id, until, _)| *id == ask.id && *until > now && !ask.shadow)?;
            let retry_after = Duration::from_millis(until - now);
            Some((
                Refusal {
                    retry_after,
                    ..refusal.clone()
                },
                *limit,
            ))
        })
    }

    /// Notes that `client` is over `limit` until `until` (ms since the epoch).
    fn remember_over(&self, client: &str, limit: &Limit, until: u64, refusal: &Refusal) {
        let mut over = self.over.lock().unwrap_or_else(|e| e.into_inner());
        let known = over.entry(Arc::from(client)).or_default();
        let now = now_ms();
        known.retain(|(id, at, _)| *at > now && *id != limit.id);
        known.push((Arc::clone(&limit.id), until, refusal.clone()));
    }
}

// === impl Reservation ===

impl Reservation {
    /// Settles with what the answer used; `None`: it did not end well (the client left, the
    /// upstream failed or refused), and everything but the request itself is refunded.
    pub fn settle(self, used: Option<Used>) {
        let refund = used.is_none();
        let used = used.unwrap_or_default();
        self.count_used(&used, refund);
        let charges: Vec<Charge> = (self.parts.iter())
            .filter(|part| part.unit != Unit::Requests)
            .map(|part| {
                let actual = if refund {
                    0
                } else {
                    used.cost(part.unit, part.cost, &self.estimate).0
                };
                Charge {
                    id: Arc::clone(&part.id),
                    shape: part.shape,
                    mark: part.mark,
                    delta: actual as i64 - part.cost as i64,
                }
            })
            .filter(|charge| charge.delta != 0)
            .collect();
        if charges.is_empty() {
            return;
        }
        let now = now_ms();
        match self.placed {
            Placed::Local(local) => local.settle(&self.client, &charges, now),
            Placed::Fallback(shared) => shared.fallback.settle(&self.client, &charges, now),
            Placed::Shared(shared) => {
                // Off the answer's path: the last byte is not held for it.
                let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                    return;
                };
                runtime.spawn(async move {
                    if let Err(why) = shared.redis.settle(&self.client, &charges).await {
                        shared.redis.failed(&why);
                    }
                });
            }
        }
    }

    /// Counts what the client used, in the units its limits count.
    fn count_used(&self, used: &Used, refund: bool) {
        let quota = &self.metrics.quota;
        let client = &*self.client;
        quota.used(client, "requests", 1, false);
        if refund {
            return;
        }
        let units = |f: fn(Unit) -> bool| self.parts.iter().any(|p| f(p.unit));
        if units(Unit::is_tokens) {
            let input = used.input_tokens.ok_or(self.estimate.input_tokens);
            let output = used
                .output_tokens
                .ok_or(self.estimate.output_tokens.unwrap_or(0));
            quota.used(
                client,
                "input_tokens",
                input.unwrap_or_else(|e| e),
                input.is_err(),
            );
            quota.used(
                client,
                "output_tokens",
                output.unwrap_or_else(|e| e),
                output.is_err(),
            );
        }
        if units(|u| u == Unit::Credits) {
            let credits = used.credits.ok_or(self.estimate.credits);
            quota.used(
                client,
                "credits",
                credits.unwrap_or_else(|e| e),
                credits.is_err(),
            );
        }
    }

    /// Whether any part counts what an answer's usage says (tokens or credits).
    fn counts_usage(&self) -> bool {
        self.parts.iter().any(|p| p.unit != Unit::Requests)
    }
}

/// What `limit` asks of a request estimated at `estimate`.
fn ask(limit: &Limit, estimate: &Estimate) -> Ask {
    let cap = limit.max_reservation.min(limit.ceiling());
    Ask {
        id: Arc::clone(&limit.id),
        shape: Shape {
            amount: limit.amount,
            per_ms: limit.per.as_millis().max(1) as u64,
            capacity: limit.capacity,
        },
        cost: estimate.cost(limit.unit, cap),
        shadow: limit.shadow,
    }
}

/// `ask` held to one replica's share of its limit.
fn share(ask: Ask, replicas: u64) -> Ask {
    let part = |n: u64| n.div_ceil(replicas.max(1)).max(1);
    let shape = Shape {
        amount: part(ask.shape.amount),
        capacity: ask.shape.capacity.map(part),
        ..ask.shape
    };
    Ask {
        cost: ask.cost.min(shape.capacity.unwrap_or(shape.amount)),
        shape,
        ..ask
    }
}

/// The refusal of `limit`, with room again in `reset_ms`.
fn refusal(limit: &Limit, reset_ms: u64) -> Refusal {
    Refusal {
        unit: limit.unit.as_str(),
        amount: limit.ceiling(),
        per: limit.per,
        budget: limit.is_budget(),
        retry_after: Duration::from_millis(reset_ms.max(1)),
    }
}

/// Milliseconds since the Unix epoch: every replica's windows start at the same instants.
fn now_ms() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0, |d| d.as_millis() as u64)
}
