//! A client's limits as the table holds them: what each counts, over what window, and what
//! happens to it while the shared store cannot be reached.

use std::sync::Arc;
use std::time::Duration;

/// Windows this long or longer are budgets (a spent one is `insufficient_quota`, which the
/// official SDKs do not retry); shorter ones are rate limits.
pub const BUDGET_FROM: Duration = Duration::from_secs(24 * 3600);

/// The largest single reservation of tokens or credits when a limit sets none.
pub const DEFAULT_MAX_RESERVATION: u64 = 8_000;

/// How long lingo waits for the shared store when the table sets no `timeout`.
pub const DEFAULT_STORE_TIMEOUT: Duration = Duration::from_millis(20);

/// What a limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    Requests,
    /// Input and output tokens together.
    Tokens,
    InputTokens,
    OutputTokens,
    /// Web-data credits.
    Credits,
}

/// What a limit does while the shared store cannot be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnStoreError {
    /// Admit as if the limit were not there.
    Allow,
    /// Refuse (503) every request the limit applies to.
    Deny,
    /// Hold this replica to its share of the limit (the limit over the replicas seen lately).
    Local,
}

/// One limit of a client.
#[derive(Debug, Clone)]
pub struct Limit {
    /// What the counters are kept under: the unit, the window, the route and the model. A
    /// reload that keeps these keeps the counters, whatever the amount becomes.
    pub id: Arc<str>,
    pub unit: Unit,
    /// How much a window admits; for a bucket, what it refills each `per`.
    pub amount: u64,
    pub per: Duration,
    /// A bucket of this size, refilled continuously, instead of a fixed window.
    pub capacity: Option<u64>,
    /// Counted and reported, never refused.
    pub shadow: bool,
    pub on_store_error: OnStoreError,
    /// The most one request reserves of this limit before its usage is known.
    pub max_reservation: u64,
    /// Only requests on the route with this label count (all routes when `None`).
    pub route: Option<Arc<str>>,
    /// Only requests for this model count (its name as the client sends it).
    pub model: Option<Arc<str>>,
}

/// Where counters shared by replicas are kept (`quota_store:`).
#[derive(Clone, PartialEq, Eq)]
pub struct QuotaStore {
    /// `redis://host:port/db`; it may hold a password, so it prints without it
    /// ([`QuotaStore::shown`]).
    pub redis: String,
    /// How long a request waits for it at most.
    pub timeout: Duration,
    /// `redis` is a node of a Redis Cluster, whose other nodes it names.
    pub cluster: bool,
}

// === impl QuotaStore ===

impl QuotaStore {
    /// The Redis URL with its password hidden.
    pub fn shown(&self) -> String {
        super::webhooks::without_password(&self.redis)
    }
}

impl std::fmt::Debug for QuotaStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (f.debug_struct("QuotaStore"))
            .field("redis", &self.shown())
            .field("timeout", &self.timeout)
            .field("cluster", &self.cluster)
            .finish()
    }
}

// === impl Unit ===

impl Unit {
    /// Its name in the table, the metrics and the headers.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Requests => "requests",
            Unit::Tokens => "tokens",
            Unit::InputTokens => "input_tokens",
            Unit::OutputTokens => "output_tokens",
            Unit::Credits => "credits",
        }
    }

    /// Whether it counts tokens (of any direction).
    pub fn is_tokens(self) -> bool {
        matches!(self, Unit::Tokens | Unit::InputTokens | Unit::OutputTokens)
    }
}

// === impl Limit ===

impl Limit {
    /// Whether a spent limit is a budget (see [`BUDGET_FROM`]) rather than a rate limit.
    pub fn is_budget(&self) -> bool {
        self.capacity.is_none() && self.per >= BUDGET_FROM
    }

    /// Whether a request on the route labelled `route` for `model` counts against it.
    pub fn applies_to(&self, route: &str, model: Option<&str>) -> bool {
        self.applies_to_route(route) && self.model.as_deref().is_none_or(|m| Some(m) == model)
    }

    /// Whether requests on the route labelled `route` may count against it.
    pub fn applies_to_route(&self, route: &str) -> bool {
        self.route.as_deref().is_none_or(|r| r == route)
    }

    /// What it holds at most: a window's amount, or a bucket's capacity.
    pub fn ceiling(&self) -> u64 {
        self.capacity.unwrap_or(self.amount)
    }
}
