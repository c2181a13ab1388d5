//! `/metrics`: what lingo counts, in the Prometheus/OpenMetrics text format.
//!
//! One [`Metrics`] lives as long as the server (it outlives reloads). Each request carries a
//! [`RequestStats`] that the handlers fill in (time spent waiting on upstreams, tokens from
//! the usage counts) and that is read once, when the response has ended.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::time::Instant;

use super::Outcome;
use super::access::AccessLog;
use super::handles::{Handles, Pair, SeriesKey};
use super::quota::QuotaMetrics;
use super::timing::Timing;
use super::webhooks::WebhookMetrics;
use crate::base::clock;
use crate::base::dialect::Dialect;
use crate::base::usage::Usage;
use crate::error::{ProxyError, TimeoutKind};

/// The `Content-Type` of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: Arc<str>,
    upstream: Arc<str>,
    status: u16,
    dialect: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: Arc<str>,
    upstream: Arc<str>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    upstream: String,
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    route: Arc<str>,
    client: String,
    direction: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WorkerLabels {
    worker: u64,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReloadLabels {
    result: &'static str,
}

type Histograms<L> = Family<L, Timing, fn() -> Timing>;

/// What each metric counts, as `/metrics` says it.
mod help {
    pub const REQUESTS: &str = "Requests served, by route, upstream, status, the client's dialect and how the response ended (outcome)";
    pub const DURATION: &str = "Time from request received to response ended";
    pub const OVERHEAD: &str = "lingo's own time before the response starts: time to the response's head not spent waiting on upstreams";
    pub const OPEN: &str = "Responses being sent to clients right now";
    pub const CONNECTIONS: &str = "Connections open (admin and refused ones included), by the worker thread serving them (0 when lingo serves without workers)";
    pub const ERRORS: &str = "Failures talking to upstreams, by kind (unreachable, connect_timeout, first_byte_timeout, idle_timeout, bad_response before the response; mid_stream after it started)";
    pub const RELOADS: &str = "Route table reloads, by result (ok or refused)";
    pub const GENERATION: &str =
        "Generation of the route table being served (1 at start, +1 per reload)";
    pub const TOKENS: &str = "Tokens from the upstreams' usage counts on translated routes, by route, client key name and direction (in = prompt, out = completion)";
}

/// Every metric lingo exports.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    duration: Histograms<RouteLabels>,
    overhead: Histograms<RouteLabels>,
    open_streams: Gauge,
    connections: Family<WorkerLabels, Gauge>,
    upstream_errors: Family<ErrorLabels, Counter>,
    reloads: Family<ReloadLabels, Counter>,
    generation: Gauge,
    tokens: Family<TokenLabels, Counter>,
    /// The series of the route and upstream pairs seen lately, found without hashing.
    handles: Handles,
    /// The webhook relay's.
    pub webhooks: WebhookMetrics,
    /// The clients' limits'.
    pub quota: QuotaMetrics,
}

/// What one request's handlers learnt on the way, read when its response has ended.
#[derive(Debug, Default)]
pub struct RequestStats {
    wait: Mutex<Wait>,
    tokens_in: AtomicU64,
    tokens_out: AtomicU64,
    /// How a stream failed after its head was sent, as the stream itself knows it (a
    /// translated stream ends its body cleanly with an error frame, so only it can tell).
    failure: Mutex<Option<(Outcome, String)>>,
}

/// Time spent waiting on upstreams, overlapping waits (the `n` choices of a request, the
/// prompts of a batch) counted once: lingo's own time is what is left.
#[derive(Debug, Default)]
struct Wait {
    /// Waits in progress.
    open: usize,
    /// When the waits in progress began (set while `open > 0`).
    since: Option<Instant>,
    /// Finished waiting time.
    total: Duration,
}

/// A wait on an upstream (a head, or a whole body) in progress; dropping it ends the wait.
pub struct Waiting<'a>(&'a RequestStats);

/// A request whose response has started: counted as an open stream until [`Finish::done`].
pub struct Finish {
    metrics: Arc<Metrics>,
    stats: Arc<RequestStats>,
    /// Its pair's duration histogram and, once the pair has counted a complete response like
    /// it, the requests counter it counts in if it ends complete: found with its overhead's,
    /// so that most responses end without a lookup. (Not made here: a response that never ends
    /// complete does not make a series of none.)
    duration: Timing,
    complete: Option<Counter>,
}

// === impl Metrics ===

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("lingo");
        let requests = Family::default();
        registry.register("requests", help::REQUESTS, requests.clone());
        // 100 µs .. ~105 s
        let duration = Histograms::new_with_constructor(|| Timing::exponential(0.0001, 4.0, 11));
        registry.register("request_duration_seconds", help::DURATION, duration.clone());
        // 10 µs .. ~2.6 s
        let overhead = Histograms::new_with_constructor(|| Timing::exponential(0.00001, 4.0, 10));
        registry.register("overhead_seconds", help::OVERHEAD, overhead.clone());
        let open_streams = Gauge::default();
        registry.register("open_streams", help::OPEN, open_streams.clone());
        let connections = Family::default();
        registry.register("open_connections", help::CONNECTIONS, connections.clone());
        let upstream_errors = Family::default();
        registry.register("upstream_errors", help::ERRORS, upstream_errors.clone());
        let reloads = Family::default();
        registry.register("reloads", help::RELOADS, reloads.clone());
        let generation = Gauge::default();
        registry.register("table_generation", help::GENERATION, generation.clone());
        let tokens = Family::default();
        registry.register("tokens", help::TOKENS, tokens.clone());
        generation.set(1);
        let webhooks = WebhookMetrics::default();
        webhooks.register(&mut registry);
        let quota = QuotaMetrics::default();
        quota.register(&mut registry);
        Metrics {
            registry,
            requests,
            duration,
            overhead,
            open_streams,
            connections,
            upstream_errors,
            reloads,
            generation,
            tokens,
            handles: Handles::default(),
            webhooks,
            quota,
        }
    }

    /// The whole registry as OpenMetrics text.
    pub fn render(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }

    /// The count of connections open on worker `worker` (its `base::worker::slot`), kept by
    /// the server's drain.
    pub fn connections_on(&self, worker: usize) -> Gauge {
        let worker = u64::try_from(worker).unwrap_or(u64::MAX);
        self.connections
            .get_or_create(&WorkerLabels { worker })
            .clone()
    }

    /// A response has ended (or its client went away). Its duration is observed last, so
    /// that a reader who sees the duration's count sees the rest counted too.
    fn response_ended(&self, log: &AccessLog, finish: &Finish, outcome: Outcome) {
        self.open_streams.dec();
        let tokens = finish.stats.tokens();
        // Tokens are counted by route: a request used some on this one.
        let tokens_on = (log.route.as_ref()).filter(|_| tokens.0.saturating_add(tokens.1) > 0);
        let kept = finish
            .complete
            .as_ref()
            .filter(|_| outcome == Outcome::Complete);
        match kept {
            Some(complete) if tokens_on.is_none() => {
                complete.inc();
            }
            // Found again: another outcome, a series not kept yet, or tokens to count.
            _ => self.with_pair(log.route.as_ref(), log.upstream.as_ref(), |pair| {
                self.requests_in(pair, log, outcome).inc();
                if let Some(route) = tokens_on {
                    self.count_tokens(pair, route, log, tokens);
                }
            }),
        }
        if outcome.is_upstream_failure() {
            let labels = ErrorLabels {
                upstream: log.upstream.as_ref().map_or("-", |u| &**u).to_owned(),
                kind: "mid_stream",
            };
            self.upstream_errors.get_or_create(&labels).inc();
        }
        finish.duration.observe(clock::since(log.started)); // `Record::tell` read it fresh
    }

    /// The tokens (in, out) a request on `route` used, under its client's name.
    fn count_tokens(
        &self,
        pair: &mut Pair,
        route: &Arc<str>,
        log: &AccessLog,
        (used_in, used_out): (u64, u64),
    ) {
        let client = log.client.as_deref().unwrap_or("-");
        let [counted_in, counted_out] = pair.tokens(client, || self.tokens_series(route, client));
        counted_in.inc_by(used_in);
        counted_out.inc_by(used_out);
    }

    /// The requests counter of `log`'s response, ended as `outcome`, in its `pair`.
    fn requests_in(&self, pair: &mut Pair, log: &AccessLog, outcome: Outcome) -> Counter {
        pair.requests(series_key(log, outcome), || {
            self.requests_series(log, outcome)
        })
    }

    /// A requests series not in the pair's handles: the family's (made the first time).
    #[cold]
    #[inline(never)]
    fn requests_series(&self, log: &AccessLog, outcome: Outcome) -> Counter {
        let labels = RequestLabels {
            route: named(log.route.as_ref()),
            upstream: named(log.upstream.as_ref()),
            status: log.status,
            dialect: log.dialect.map_or("-", Dialect::as_str),
            outcome: outcome.as_str(),
        };
        self.requests.get_or_create_owned(&labels)
    }

    /// The tokens series (in, out) of `client` on `route`: the family's.
    #[cold]
    #[inline(never)]
    fn tokens_series(&self, route: &Arc<str>, client: &str) -> [Counter; 2] {
        ["in", "out"].map(|direction| {
            let labels = TokenLabels {
                route: Arc::clone(route),
                client: client.to_owned(),
                direction,
            };
            self.tokens.get_or_create_owned(&labels)
        })
    }

    /// An error lingo responded with; counted when it is an upstream's failure.
    pub fn upstream_error(&self, err: &ProxyError) {
        let (upstream, kind) = match err {
            ProxyError::Unreachable { upstream, .. } => (upstream, "unreachable"),
            ProxyError::BadResponse { upstream, .. } => (upstream, "bad_response"),
            ProxyError::Timeout { upstream, kind, .. } => (
                upstream,
                match kind {
                    TimeoutKind::Connect => "connect_timeout",
                    TimeoutKind::FirstByte => "first_byte_timeout",
                    TimeoutKind::Idle => "idle_timeout",
                },
            ),
            _ => return,
        };
        let labels = ErrorLabels {
            upstream: upstream.clone(),
            kind,
        };
        self.upstream_errors.get_or_create(&labels).inc();
    }

    /// Runs `f` on the handles of the pair's series (see `handles`).
    fn with_pair<R>(
        &self,
        route: Option<&Arc<str>>,
        upstream: Option<&Arc<str>>,
        f: impl FnOnce(&mut Pair) -> R,
    ) -> R {
        let make = || self.pair_series(route, upstream);
        let (route, upstream) = (name_or_none(route), name_or_none(upstream));
        self.handles.with(route, upstream, make, f)
    }

    /// The duration and overhead histograms of a pair not in the handles: the families'.
    #[cold]
    #[inline(never)]
    fn pair_series(
        &self,
        route: Option<&Arc<str>>,
        upstream: Option<&Arc<str>>,
    ) -> (Timing, Timing) {
        let labels = route_labels(route, upstream);
        (
            self.duration.get_or_create_owned(&labels),
            self.overhead.get_or_create_owned(&labels),
        )
    }

    pub fn reloaded(&self, generation: u64) {
        self.reloads
            .get_or_create(&ReloadLabels { result: "ok" })
            .inc();
        self.generation
            .set(i64::try_from(generation).unwrap_or(i64::MAX));
    }

    pub fn reload_refused(&self) {
        self.reloads
            .get_or_create(&ReloadLabels { result: "refused" })
            .inc();
    }
}

// === impl Finish ===

impl Finish {
    /// The response's head is ready (`log` says for what): it becomes an open stream, and
    /// lingo's share of the time so far is recorded.
    pub fn new(metrics: Arc<Metrics>, log: &AccessLog, stats: Arc<RequestStats>) -> Finish {
        metrics.open_streams.inc();
        let own = clock::fresh_since(log.started).saturating_sub(stats.upstream_wait());
        let (route, upstream) = (log.route.as_ref(), log.upstream.as_ref());
        let (duration, complete) = metrics.with_pair(route, upstream, |pair| {
            pair.overhead.observe(own);
            let complete = pair.kept_requests(series_key(log, Outcome::Complete));
            (pair.duration.clone(), complete)
        });
        Finish {
            metrics,
            stats,
            duration,
            complete,
        }
    }

    /// The response has ended, or its client went away. What `log` says of it (status,
    /// route, dialect, client) is as it was at [`Finish::new`].
    pub fn done(self, log: &AccessLog, outcome: Outcome) {
        self.metrics.response_ended(log, &self, outcome);
    }

    /// How the stream failed, if it said so itself.
    pub fn stream_failure(&self) -> Option<(Outcome, String)> {
        self.stats.failure()
    }
}

// === impl Waiting ===

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut wait = self.0.wait.lock().unwrap_or_else(|e| e.into_inner());
        wait.open -= 1;
        if wait.open == 0
            && let Some(since) = wait.since.take()
        {
            wait.total += clock::fresh_since(since);
        }
    }
}

/// The key of `log`'s requests series in its pair, ended as `outcome`.
fn series_key(log: &AccessLog, outcome: Outcome) -> SeriesKey {
    (log.status, log.dialect, outcome)
}

fn route_labels(route: Option<&Arc<str>>, upstream: Option<&Arc<str>>) -> RouteLabels {
    RouteLabels {
        route: named(route),
        upstream: named(upstream),
    }
}

/// A route's or upstream's name as a label (shared with the table, not copied), or `-` for
/// a request that reached none.
fn named(name: Option<&Arc<str>>) -> Arc<str> {
    Arc::clone(name_or_none(name))
}

/// The name itself, or the one shared `-`: borrowed, for finding a pair by its names.
fn name_or_none(name: Option<&Arc<str>>) -> &Arc<str> {
    static NONE: LazyLock<Arc<str>> = LazyLock::new(|| Arc::from("-"));
    name.unwrap_or(&NONE)
}

// === impl RequestStats ===

impl RequestStats {
    pub fn new() -> Arc<RequestStats> {
        Arc::new(RequestStats::default())
    }

    /// Starts waiting on an upstream (a head, or a whole body) until the guard is dropped.
    pub fn waiting(&self) -> Waiting<'_> {
        let mut wait = self.wait.lock().unwrap_or_else(|e| e.into_inner());
        if wait.open == 0 {
            wait.since = Some(clock::fresh());
        }
        wait.open += 1;
        Waiting(self)
    }

    /// The time some upstream wait was in progress, so far.
    pub fn upstream_wait(&self) -> Duration {
        let wait = self.wait.lock().unwrap_or_else(|e| e.into_inner());
        wait.total + wait.since.map_or(Duration::ZERO, clock::since)
    }

    /// The usage of a response (or of one of its `n` choices).
    pub fn used(&self, usage: Usage) {
        self.tokens_in
            .fetch_add(usage.prompt_tokens, Ordering::Relaxed);
        self.tokens_out
            .fetch_add(usage.completion_tokens, Ordering::Relaxed);
    }

    /// The response was cut after it had started (a translated stream's error frame); the
    /// first failure is the one reported.
    pub fn stream_failed(&self, outcome: Outcome, reason: &str) {
        let mut failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        failure.get_or_insert_with(|| (outcome, reason.to_owned()));
    }

    /// How the stream failed, if it said so itself.
    pub fn failure(&self) -> Option<(Outcome, String)> {
        self.failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The tokens counted so far: (prompt, completion).
    pub fn tokens(&self) -> (u64, u64) {
        (
            self.tokens_in.load(Ordering::Relaxed),
            self.tokens_out.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::RequestStats;

    /// Overlapping waits count once: two waits over the same 300 ms are 300 ms, not 600.
    /// (The margins are wide: this checks the union, not the clock.)
    #[test]
    fn overlapping_waits_count_once() {
        let stats = RequestStats::new();
        let first = stats.waiting();
        let second = stats.waiting();
        std::thread::sleep(Duration::from_millis(300));
        drop(first);
        drop(second);
        let waited = stats.upstream_wait();
        assert!(waited >= Duration::from_millis(300), "{waited:?}");
        assert!(waited < Duration::from_millis(550), "{waited:?}");
        // Nothing in progress: the total stays put.
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(stats.upstream_wait(), waited);
    }
}
