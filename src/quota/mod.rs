//! Rate limits and budgets per client: a request reserves its likely cost before it is
//! forwarded, and its answer's real usage settles the reservation when the answer ends.
//!
//! - `count`: one counter's sums (a fixed window or a bucket), pure.
//! - `cost`: a request's estimate (from its body) and an answer's usage (from the counts
//!   in it), pure.
//! - `local`: counters in the process (one replica; and each replica's share while the
//!   shared store is away); `redis`: the shared store, with its breaker and heartbeat;
//!   `shared`: Redis with this replica's share and the limits clients are known to be over.
//! - `reservation`: what a request was charged, and its settlement; `settle`: the body
//!   wrapper that settles it when the answer ends.
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
mod reservation;
mod settle;
mod shared;

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use serde_json::{Value, json};

use crate::error::{ProxyError, Refusal};
use crate::observe::Metrics;
use crate::table::quota::{Limit, OnStoreError, Unit};
use crate::table::{ClientKey, RouteTable};
use count::{Check, Shape};
use local::Local;
use redis::Shared;
use reservation::{Part, Placed};
use shared::SharedStore;

pub use cost::{Estimate, Used};
pub use headers::RateHeaders;
pub use reservation::Reservation;
pub use settle::settling;

/// The clients' counters and where they are kept; outlives reloads.
pub struct Quota {
    stores: ArcSwap<Stores>,
    metrics: Arc<Metrics>,
}

/// Where counters are kept under one table's `quota_store`.
struct Stores {
    /// Held in the process (no `quota_store`); kept across reloads.
    local: Arc<Local>,
    shared: Option<Arc<SharedStore>>,
}

/// One limit asked for a cost.
#[derive(Debug, Clone)]
pub struct Ask {
    pub id: Arc<str>,
    pub shape: Shape,
    pub cost: u64,
    pub shadow: bool,
}

/// A difference to add to a counter, for `cost` charged at `mark`.
#[derive(Debug, Clone)]
pub struct Charge {
    pub id: Arc<str>,
    pub shape: Shape,
    pub mark: i64,
    pub cost: u64,
    pub delta: i64,
}

/// What admitting a request decided, and the `x-ratelimit-*` fields its answer carries.
pub struct Admitted {
    pub headers: RateHeaders,
    /// A reservation to settle (none when no limit applies), or the refusal.
    pub outcome: Result<Option<Reservation>, ProxyError>,
}

/// The limits asked, what each asked for, and what the store found.
type Asked<'l> = (Vec<(&'l Limit, Ask)>, Vec<Check>);

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

    /// Takes `table`'s `quota_store`: the same store keeps its counters (and forgets which
    /// clients it knew to be over: their limits may have changed); another starts from what
    /// it holds (the one before still gets the settlements of the requests charged in it).
    /// Must be called inside the runtime.
    pub fn apply(&self, table: &RouteTable) -> Result<(), String> {
        let now = self.stores.load();
        if let Some(shared) = &now.shared {
            shared.forget_known();
        }
        if now.shared.as_ref().map(|s| &s.config) == table.quota_store.as_ref() {
            return Ok(());
        }
        let shared = match &table.quota_store {
            None => None,
            Some(config) => {
                let redis = Shared::new(config, Arc::clone(&self.metrics))?;
                let redis = Arc::new(redis);
                redis::spawn_heartbeat(Arc::downgrade(&redis));
                redis::spawn_sender(Arc::clone(&redis));
                Some(Arc::new(SharedStore::new(redis, config.clone())))
            }
        };
        self.metrics.quota.store_up(true);
        self.stores.store(Arc::new(Stores {
            local: Arc::clone(&now.local),
            shared,
        }));
        Ok(())
    }

    /// Sends the settlements that wait to be sent to the shared store: lingo is stopping.
    pub async fn send_waiting(&self) {
        if let Some(shared) = &self.stores.load_full().shared {
            shared.redis.send_waiting().await;
        }
    }

    /// Whether the shared store answers: `None` when counters are held in the process.
    pub fn store_up(&self) -> Option<bool> {
        let stores = self.stores.load();
        stores.shared.as_ref().map(|s| s.redis.is_up())
    }

    /// Whether `client`'s limits on the route labelled `route` count more than requests, or
    /// are for one model (so the request's body is read first, for its estimate and model).
    pub fn needs_body(client: &ClientKey, route: &str) -> bool {
        (client.quota.iter())
            .any(|l| l.applies_to_route(route) && (l.unit != Unit::Requests || l.model.is_some()))
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
        if asked.is_empty() {
            let headers = RateHeaders::default();
            let outcome = Ok(None);
            return Admitted { headers, outcome };
        }
        let name = client.name.as_str();
        let stores = self.stores.load_full();
        let now = now_ms();
        let placed = match &stores.shared {
            None => {
                let asks = asks_of(&asked);
                let checks = stores.local.admit(name, &asks, now);
                Ok((Placed::Local(Arc::clone(&stores.local)), (asked, checks)))
            }
            Some(shared) => self.admit_shared(shared, name, asked, now).await,
        };
        let (placed, (asked, checks)) = match placed {
            Ok(placed) => placed,
            Err((err, headers)) => {
                let outcome = Err(err);
                return Admitted { headers, outcome };
            }
        };
        let mut headers = RateHeaders::default();
        for ((limit, ask), check) in asked.iter().zip(&checks) {
            headers.note(limit, ask, check);
        }
        let outcome = self
            .decide(name, &placed, (&asked, &checks), now)
            .map(|()| {
                Some(Reservation {
                    client: Arc::from(name),
                    placed,
                    parts: parts(&asked, &checks),
                    estimate,
                    reads_answer: true,
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
    ) -> Result<(Placed, Asked<'l>), (ProxyError, RateHeaders)> {
        if let Some((refusal, limit)) = shared.known_over(name, &asked, now) {
            let mut headers = RateHeaders::default();
            headers.note_spent(limit, refusal.amount, refusal.retry_after);
            self.metrics.quota.refused(name, &limit.id, false);
            return Err((ProxyError::OverLimit(refusal), headers));
        }
        if shared.redis.is_up() {
            let asks = asks_of(&asked);
            match shared.redis.admit(name, &asks, false).await {
                Ok(checks) => return Ok((Placed::Shared(Arc::clone(shared)), (asked, checks))),
                Err(error) => shared.redis.failed(&error),
            }
        }
        let Some(kept) = self.fallback(asked, shared.redis.replicas()) else {
            return Err((ProxyError::QuotaUnavailable, RateHeaders::default()));
        };
        let asks = asks_of(&kept);
        let checks = shared.fallback.admit(name, &asks, now);
        Ok((Placed::Fallback(Arc::clone(shared)), (kept, checks)))
    }

    /// What each limit does while the shared store is away: left out (`allow`, and every
    /// shadow limit), a refusal (`deny`: `None`), or this replica's share of it (`local`).
    fn fallback<'l>(
        &self,
        asked: Vec<(&'l Limit, Ask)>,
        replicas: u32,
    ) -> Option<Vec<(&'l Limit, Ask)>> {
        let mut kept = Vec::with_capacity(asked.len());
        for (limit, ask) in asked {
            let mode = match limit.on_store_error {
                _ if ask.shadow => OnStoreError::Allow,
                mode => mode,
            };
            match mode {
                OnStoreError::Allow => self.metrics.quota.fallback("allow"),
                OnStoreError::Deny => {
                    self.metrics.quota.fallback("deny");
                    return None;
                }
                OnStoreError::Local => {
                    self.metrics.quota.fallback("local");
                    kept.push((limit, share(ask, replicas)));
                }
            }
        }
        Some(kept)
    }

    /// Refuses when an enforced limit has no room (a spent budget before a rate limit, else
    /// the longest wait); counts what shadow limits would have refused.
    fn decide(
        &self,
        name: &str,
        placed: &Placed,
        (asked, checks): (&[(&Limit, Ask)], &[Check]),
        now: u64,
    ) -> Result<(), ProxyError> {
        let mut worst: Option<(&Limit, &Ask, &Check)> = None;
        for ((limit, ask), check) in asked.iter().zip(checks) {
            if !check.over {
                continue;
            }
            if limit.shadow {
                self.metrics.quota.refused(name, &limit.id, true);
                continue;
            }
            let rank = |l: &Limit, c: &Check| (l.is_budget(), c.reset_ms);
            if worst.is_none_or(|(l, _, c)| rank(limit, check) > rank(l, c)) {
                worst = Some((limit, ask, check));
            }
        }
        let Some((limit, ask, check)) = worst else {
            return Ok(());
        };
        self.metrics.quota.refused(name, &limit.id, false);
        let refusal = refusal(limit, ask.shape, check.reset_ms);
        if let Placed::Shared(shared) = placed {
            shared.remember_over(name, limit, (now, check.reset_ms), &refusal);
        }
        Err(ProxyError::OverLimit(refusal))
    }

    /// Each client's limits: what is used and left of each, and when it renews, as
    /// `GET /quota` tells them. Nothing is charged, and Redis is not asked while it is away.
    pub async fn usage(&self, clients: &[ClientKey]) -> Value {
        let stores = self.stores.load_full();
        let mut listed = Vec::new();
        for client in clients.iter().filter(|c| !c.quota.is_empty()) {
            let asks: Vec<Ask> = (client.quota.iter())
                .map(|l| Ask {
                    cost: 0,
                    shadow: true,
                    ..ask(l, &Estimate::NOTHING)
                })
                .collect();
            let checks = match &stores.shared {
                None => Ok(stores.local.admit(&client.name, &asks, now_ms())),
                Some(shared) if shared.redis.is_up() => {
                    let peeked = shared.redis.admit(&client.name, &asks, true).await;
                    peeked.map_err(|e| e.why)
                }
                Some(_) => Err("the quota store is unreachable".to_owned()),
            };
            let limits: Vec<Value> = match checks {
                Ok(checks) => (client.quota.iter().zip(checks))
                    .map(|(limit, check)| listed_limit(limit, &check))
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

/// One limit as `GET /quota` lists it.
fn listed_limit(limit: &Limit, check: &Check) -> Value {
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
}

/// What a reservation holds of each limit asked.
fn parts(asked: &[(&Limit, Ask)], checks: &[Check]) -> Vec<Part> {
    (asked.iter().zip(checks))
        .map(|((limit, ask), check)| Part {
            unit: limit.unit,
            id: Arc::clone(&ask.id),
            shape: ask.shape,
            cost: ask.cost,
            mark: check.mark,
        })
        .collect()
}

/// The asks of `asked`, for a store.
fn asks_of(asked: &[(&Limit, Ask)]) -> Vec<Ask> {
    asked.iter().map(|(_, ask)| ask.clone()).collect()
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

/// `ask` held to one replica's share of its limit (at least 1).
fn share(ask: Ask, replicas: u32) -> Ask {
    let part = |n: u64| n.div_ceil(u64::from(replicas.max(1))).max(1);
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

/// The refusal of `limit` (as asked: `shape` is this replica's share while the store is away),
/// with room again in `reset_ms`.
fn refusal(limit: &Limit, shape: Shape, reset_ms: u64) -> Refusal {
    Refusal {
        unit: limit.unit.as_str(),
        amount: shape.capacity.unwrap_or(shape.amount),
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
