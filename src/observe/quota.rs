//! The quota's metrics: requests refused by a limit (and those a shadow limit would have
//! refused), what each client used, counts an answer lacked (its estimate stood), and the
//! shared store's state.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LimitLabels {
    client: String,
    limit: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UnitLabels {
    client: String,
    unit: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModeLabels {
    mode: &'static str,
}

/// What each metric counts, as `/metrics` says it.
mod help {
    pub const REFUSED: &str = "Requests refused by a client's limit, by client and limit";
    pub const SHADOW: &str =
        "Requests a shadow limit would have refused (they were served), by client and limit";
    pub const USED: &str = "What clients used, settled when each answer ended, by client and unit (requests, input_tokens, output_tokens, credits)";
    pub const ESTIMATED: &str =
        "Answers that lacked a usage count, whose estimate was charged instead, by client and unit";
    pub const STORE_UP: &str =
        "Whether the quota store answers (1; always 1 when counters are held in the process)";
    pub const STORE_ERRORS: &str =
        "Quota store calls that failed or timed out, and settlements dropped while it was away";
    pub const FALLBACK: &str = "Limits applied while the quota store was unreachable, by what they did (allow, deny, local)";
}

/// The quota's metrics, registered with lingo's.
#[derive(Default)]
pub struct QuotaMetrics {
    refused: Family<LimitLabels, Counter>,
    shadow: Family<LimitLabels, Counter>,
    used: Family<UnitLabels, Counter>,
    estimated: Family<UnitLabels, Counter>,
    store_up: Gauge,
    store_errors: Counter,
    fallback: Family<ModeLabels, Counter>,
}

// === impl QuotaMetrics ===

impl QuotaMetrics {
    pub fn register(&self, registry: &mut Registry) {
        let prefixed = registry.sub_registry_with_prefix("quota");
        prefixed.register("refused", help::REFUSED, self.refused.clone());
        prefixed.register("shadow_refused", help::SHADOW, self.shadow.clone());
        prefixed.register("used", help::USED, self.used.clone());
        prefixed.register("estimated", help::ESTIMATED, self.estimated.clone());
        prefixed.register("store_up", help::STORE_UP, self.store_up.clone());
        prefixed.register(
            "store_errors",
            help::STORE_ERRORS,
            self.store_errors.clone(),
        );
        prefixed.register("fallback", help::FALLBACK, self.fallback.clone());
        self.store_up.set(1);
    }

    /// A request refused by `limit` of `client` (`shadow`: only counted).
    pub fn refused(&self, client: &str, limit: &str, shadow: bool) {
        let labels = LimitLabels {
            client: client.to_owned(),
            limit: limit.to_owned(),
        };
        let family = if shadow { &self.shadow } else { &self.refused };
        family.get_or_create(&labels).inc();
    }

    /// `amount` of `unit` used by `client`; `estimated` when the answer lacked its count.
    pub fn used(&self, client: &str, unit: &'static str, amount: u64, estimated: bool) {
        let labels = UnitLabels {
            client: client.to_owned(),
            unit,
        };
        self.used.get_or_create(&labels).inc_by(amount);
        if estimated {
            self.estimated.get_or_create(&labels).inc();
        }
    }

    /// Whether the store answers.
    pub fn store_up(&self, up: bool) {
        self.store_up.set(i64::from(up));
    }

    pub fn store_error(&self) {
        self.store_errors.inc();
    }

    /// `count` settlements dropped: the store could not be given them.
    pub fn store_errors(&self, count: usize) {
        self.store_errors.inc_by(count as u64);
    }

    /// A limit applied by its fallback: `allow`, `deny` or `local`.
    pub fn fallback(&self, mode: &'static str) {
        self.fallback.get_or_create(&ModeLabels { mode }).inc();
    }
}
