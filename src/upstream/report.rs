//! What `/metrics` says of each backend of the upstreams that have several (an upstream
//! with one is the upstream's own metrics): read from the backends' counters when asked.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use super::backends::Backends;
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
        "Requests sent again to another backend, by the first one's failure",
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
    let get = |n: &AtomicU64| n.load(Ordering::Relaxed);
    if name == "lingo_backend_retries" {
        let r = &backends.retries;
        for (reason, n) in [
            ("unreachable", &r.unreachable),
            ("timeout", &r.timeout),
            ("status", &r.status),
            ("busy", &r.busy),
            ("error_line", &r.error_line),
        ] {
            let _ = writeln!(
                out,
                "{name}_total{{upstream=\"{up}\",reason=\"{reason}\"}} {}",
                get(n)
            );
        }
        return;
    }
    if name == "lingo_backend_retry_budget_exhausted" {
        let n = get(&backends.retries.budget_exhausted);
        let _ = writeln!(out, "{name}_total{{upstream=\"{up}\"}} {n}");
        return;
    }
    for (backend, member) in upstream.backends.iter().zip(backends.members()) {
        let labels = format!("upstream=\"{up}\",backend=\"{}\"", backend.label);
        let (state, c) = (&member.state, &member.state.counts);
        let _ = match name {
            "lingo_backend_in_flight" => {
                writeln!(
                    out,
                    "{name}{{{labels}}} {}",
                    state.in_flight.load(Ordering::Relaxed)
                )
            }
            "lingo_backend_in_service" => {
                writeln!(out, "{name}{{{labels}}} {}", u8::from(state.in_service()))
            }
            "lingo_backend_models_loaded" => {
                // Each model once: its name without `:latest` is there too.
                let loaded = state.models().loaded;
                let latest = |n: &&String| loaded.contains(&format!("{n}:latest"));
                writeln!(
                    out,
                    "{name}{{{labels}}} {}",
                    loaded.iter().filter(|n| !latest(n)).count()
                )
            }
            "lingo_backend_requests" => (|| {
                for (outcome, n) in [("ok", &c.ok), ("failed", &c.failed), ("busy", &c.busy)] {
                    writeln!(
                        out,
                        "{name}_total{{{labels},outcome=\"{outcome}\"}} {}",
                        get(n)
                    )?;
                }
                Ok(())
            })(),
            "lingo_backend_ejections" => {
                writeln!(out, "{name}_total{{{labels}}} {}", get(&c.ejections))
            }
            "lingo_backend_failed_after_first_byte" => {
                writeln!(
                    out,
                    "{name}_total{{{labels}}} {}",
                    get(&c.failed_after_first_byte)
                )
            }
            _ => {
                let seconds = get(&c.first_byte_micros) as f64 / 1e6;
                writeln!(
                    out,
                    "{name}_sum{{{labels}}} {seconds}\n{name}_count{{{labels}}} {}",
                    get(&c.first_bytes)
                )
            }
        };
    }
}
