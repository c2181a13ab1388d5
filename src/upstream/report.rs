//! What `/metrics` says of each backend of the upstreams that have several (an upstream
//! with one is the upstream's own metrics): read from the backends' counters when asked.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use super::backends::Backends;
use super::health::BackendState;
use crate::table::Upstream;

/// Each metric: its name, type and help.
const METRICS: &[(&str, &str, &str)] = &[
    (
        "lingo_backend_in_flight",
        "gauge",
        "Requests in flight on a backend, until their response's last byte",
    ),
    (
        "lingo_backend_in_service",
        "gauge",
        "1 while a backend is in service, 0 while it is ejected or its probe fails",
    ),
    (
        "lingo_backend_models_loaded",
        "gauge",
        "Models a native backend had loaded at its last probe",
    ),
    (
        "lingo_backend_requests",
        "counter",
        "Attempts on a backend, by outcome (ok; failed: connect error, timeout, 5xx; busy: 429 or 503)",
    ),
    (
        "lingo_backend_ejections",
        "counter",
        "Times a backend was ejected after failures in a row",
    ),
    (
        "lingo_backend_failed_after_first_byte",
        "counter",
        "Responses that failed after their first byte reached the client (never retried)",
    ),
    (
        "lingo_backend_first_byte_seconds",
        "summary",
        "Time from a request sent to its response's first byte",
    ),
    (
        "lingo_backend_retries",
        "counter",
        "Requests sent again to another backend, by the first one's failure (unreachable, timeout, server_error: 5xx, busy: 429 or 503, error_line: a native error on a 200's first line)",
    ),
    (
        "lingo_backend_retry_budget_exhausted",
        "counter",
        "Retries not made: the retry budget had no token",
    ),
];

/// The backend metrics of `upstreams`, in the OpenMetrics text format, to go before its
/// `# EOF`.
pub fn render<'a>(upstreams: impl Iterator<Item = (&'a Upstream, &'a Backends)> + Clone) -> String {
    let mut out = String::new();
    for &(name, kind, help) in METRICS {
        let _ = writeln!(out, "# TYPE {name} {kind}\n# HELP {name} {help}.");
        for (upstream, backends) in upstreams.clone().filter(|(_, b)| b.members().len() > 1) {
            each(&mut out, name, upstream, backends);
        }
    }
    out
}

fn each(out: &mut String, name: &str, upstream: &Upstream, backends: &Backends) {
    let up = &upstream.name;
    let r = &backends.retries;
    match name {
        "lingo_backend_retries" => {
            for (reason, n) in [
                ("unreachable", &r.unreachable),
                ("timeout", &r.timeout),
                ("server_error", &r.server_error),
                ("busy", &r.busy),
                ("error_line", &r.error_line),
            ] {
                let _ = writeln!(
                    out,
                    "{name}_total{{upstream=\"{up}\",reason=\"{reason}\"}} {}",
                    get(n)
                );
            }
        }
        "lingo_backend_retry_budget_exhausted" => {
            let n = get(&r.budget_exhausted);
            let _ = writeln!(out, "{name}_total{{upstream=\"{up}\"}} {n}");
        }
        _ => {
            for (backend, member) in upstream.backends.iter().zip(backends.members()) {
                let labels = format!("upstream=\"{up}\",backend=\"{}\"", backend.label);
                for (suffix, more, value) in values(name, &member.state) {
                    let _ = writeln!(out, "{name}{suffix}{{{labels}{more}}} {value}");
                }
            }
        }
    }
}

/// A backend's series of the metric `name`: each one's name suffix (`_total`), labels besides
/// its upstream's and its own (`,outcome="ok"`), and value.
fn values(name: &str, state: &BackendState) -> Vec<(&'static str, String, String)> {
    let c = &state.counts;
    let one = |suffix, value: String| vec![(suffix, String::new(), value)];
    match name {
        "lingo_backend_in_flight" => one("", state.in_flight.load(Ordering::Relaxed).to_string()),
        "lingo_backend_in_service" => one("", u8::from(state.in_service()).to_string()),
        "lingo_backend_models_loaded" => one("", models_loaded(state).to_string()),
        "lingo_backend_ejections" => one("_total", get(&c.ejections).to_string()),
        "lingo_backend_failed_after_first_byte" => {
            one("_total", get(&c.failed_after_first_byte).to_string())
        }
        "lingo_backend_requests" => [("ok", &c.ok), ("failed", &c.failed), ("busy", &c.busy)]
            .into_iter()
            .map(|(outcome, n)| {
                (
                    "_total",
                    format!(",outcome=\"{outcome}\""),
                    get(n).to_string(),
                )
            })
            .collect(),
        "lingo_backend_first_byte_seconds" => vec![
            (
                "_sum",
                String::new(),
                (get(&c.first_byte_micros) as f64 / 1e6).to_string(),
            ),
            ("_count", String::new(), get(&c.first_bytes).to_string()),
        ],
        _ => Vec::new(),
    }
}

/// The models a backend has loaded, each once (its name without `:latest` is there too).
fn models_loaded(state: &BackendState) -> usize {
    let models = state.models();
    let loaded = &models.loaded;
    let latest = |n: &&str| loaded.contains(&format!("{n}:latest"));
    loaded.iter().filter(|n| !latest(n)).count()
}

fn get(n: &AtomicU64) -> u64 {
    n.load(Ordering::Relaxed)
}
