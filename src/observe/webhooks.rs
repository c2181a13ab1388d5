//! The webhook relay's metrics and its access lines: events received (by whether their
//! signature was checked, or why they were refused), stored, repeated, delivered and given
//! up; delivery attempts by outcome; each store's queue depth and the age of its oldest
//! event. Each delivery attempt writes a line in the access log.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamLabels {
    upstream: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    upstream: String,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StoreLabels {
    store: String,
}

/// What each metric counts, as `/metrics` says it.
mod help {
    pub const RECEIVED: &str = "Webhook events received from upstreams, by result: verified (its signature checked), unverified (the upstream has no `verify` secret) or refused (a bad token, signature or body: nothing stored)";
    pub const STORED: &str = "Webhook events stored for delivery";
    pub const DUPLICATES: &str =
        "Webhook events received again with a webhookId already stored (stored once)";
    pub const DELIVERED: &str = "Webhook events delivered to the client (a 2xx response)";
    pub const ATTEMPTS: &str = "Webhook delivery attempts, by outcome: delivered, status (a non-2xx response, 3xx included), timeout, unreachable, refused (the destination is not allowed)";
    pub const GIVEN_UP: &str = "Webhook events given up after their last attempt (kept for replay)";
    pub const DEPTH: &str = "Webhook events stored and not yet delivered or given up, by store";
    pub const OLDEST: &str =
        "Age of the oldest webhook event not yet delivered or given up, by store (0 when none)";
}

/// The relay's metrics, registered with lingo's.
#[derive(Default)]
pub struct WebhookMetrics {
    received: Family<ResultLabels, Counter>,
    stored: Family<UpstreamLabels, Counter>,
    duplicates: Family<UpstreamLabels, Counter>,
    delivered: Family<UpstreamLabels, Counter>,
    attempts: Family<ResultLabels, Counter>,
    given_up: Family<UpstreamLabels, Counter>,
    depth: Family<StoreLabels, Gauge>,
    oldest: Family<StoreLabels, Gauge>,
}

/// One delivery attempt, as its access line says it.
#[derive(Debug)]
pub struct Attempt<'a> {
    /// The event's `webhook-id`.
    pub id: &'a str,
    pub upstream: &'a str,
    pub route: &'a str,
    pub client: Option<&'a str>,
    /// The destination's path (its query is not logged: it may carry a credential).
    pub path: &'a str,
    /// Counted from 1.
    pub attempt: u32,
    /// The response's status; 0 when none came.
    pub status: u16,
    pub bytes: u64,
    pub duration_ms: f64,
    /// `delivered`, `status`, `timeout`, `unreachable` or `refused`.
    pub outcome: &'static str,
    pub error: &'a str,
}

// === impl WebhookMetrics ===

impl WebhookMetrics {
    pub fn register(&self, registry: &mut Registry) {
        let prefixed = registry.sub_registry_with_prefix("webhook");
        prefixed.register("events_received", help::RECEIVED, self.received.clone());
        prefixed.register("events_stored", help::STORED, self.stored.clone());
        prefixed.register(
            "events_duplicate",
            help::DUPLICATES,
            self.duplicates.clone(),
        );
        prefixed.register("events_delivered", help::DELIVERED, self.delivered.clone());
        prefixed.register("attempts", help::ATTEMPTS, self.attempts.clone());
        prefixed.register("events_given_up", help::GIVEN_UP, self.given_up.clone());
        prefixed.register("queue_depth", help::DEPTH, self.depth.clone());
        prefixed.register(
            "oldest_event_age_seconds",
            help::OLDEST,
            self.oldest.clone(),
        );
    }

    /// An event received: `verified`, `unverified` or `refused`.
    pub fn received(&self, upstream: &str, result: &'static str) {
        let labels = ResultLabels {
            upstream: upstream.to_owned(),
            result,
        };
        self.received.get_or_create(&labels).inc();
    }

    /// An event stored (`fresh`), or one already stored.
    pub fn stored(&self, upstream: &str, fresh: bool) {
        let family = if fresh {
            &self.stored
        } else {
            &self.duplicates
        };
        family.get_or_create(&upstream_labels(upstream)).inc();
    }

    /// An attempt ended as `attempt.outcome`, and writes its access line.
    pub fn attempted(&self, attempt: &Attempt<'_>) {
        let labels = ResultLabels {
            upstream: attempt.upstream.to_owned(),
            result: attempt.outcome,
        };
        self.attempts.get_or_create(&labels).inc();
        if attempt.outcome == "delivered" {
            let upstream = upstream_labels(attempt.upstream);
            self.delivered.get_or_create(&upstream).inc();
        }
        attempt.emit();
    }

    pub fn given_up(&self, upstream: &str) {
        self.given_up
            .get_or_create(&upstream_labels(upstream))
            .inc();
    }

    /// A store's events waiting, and the age of the oldest, in seconds.
    pub fn queue(&self, store: &str, depth: u64, oldest_seconds: u64) {
        let labels = StoreLabels {
            store: store.to_owned(),
        };
        let gauge = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        self.depth.get_or_create(&labels).set(gauge(depth));
        self.oldest
            .get_or_create(&labels)
            .set(gauge(oldest_seconds));
    }
}

fn upstream_labels(upstream: &str) -> UpstreamLabels {
    UpstreamLabels {
        upstream: upstream.to_owned(),
    }
}

// === impl Attempt ===

impl Attempt<'_> {
    /// The access line: the request's fields where a delivery has them (`request_id` is
    /// the event's `webhook-id`), and the attempt's number.
    fn emit(&self) {
        tracing::info!(
            target: "lingo::access",
            method = "POST",
            path = %self.path,
            route = %self.route,
            upstream = %self.upstream,
            status = self.status,
            duration_ms = self.duration_ms,
            bytes = self.bytes,
            client = %self.client.unwrap_or("-"),
            request_id = %self.id,
            outcome = %self.outcome,
            error = self.error,
            webhook_attempt = self.attempt,
        );
    }
}
