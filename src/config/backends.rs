//! An upstream's servers (`url:`, `mock:` or `backends:`) and how requests are spread over
//! them (`balance:`, `health:`, `retry_budget:`).

use std::sync::Arc;
use std::time::Duration;

use hyper::header::HeaderName;

use super::ctx::{Ctx, http_url, optional};
use super::raw::{self, At};
use super::upstream::mock_spec;
use crate::table::{Backend, Balance, DEFAULT_HEALTH, DEFAULT_RETRY_BUDGET, Health, Target};

/// The shortest time between two probes of a backend.
const MIN_INTERVAL: Duration = Duration::from_millis(50);

/// Where an upstream's one server is, or its several, as the entry wrote them.
pub(super) struct Targets {
    pub url: Option<At<String>>,
    pub mock: Option<At<raw::Mock>>,
    pub backends: Option<At<Vec<At<raw::Backend>>>>,
}

/// The backends of the upstream `label` (whose name is at `name`), and the base path they
/// share.
pub(super) fn compile<T>(
    cx: &mut Ctx<'_>,
    targets: Targets,
    name: &At<T>,
    label: &str,
) -> Option<(Vec<Backend>, String)> {
    let backends = match (targets.url, targets.mock, targets.backends) {
        (None, None, None) => {
            cx.error(
                name,
                format!("{label} needs `url:`, `mock:` or `backends:`"),
            );
            return None;
        }
        (url, mock, None) => {
            let target = target(cx, url, mock, label, name)?;
            vec![backend(target, None, 1, 0)]
        }
        (None, None, Some(list)) => list_of(cx, list, label)?,
        (_, _, Some(list)) => {
            let message = format!("{label} has `backends:` and `url:` or `mock:`; keep one");
            cx.error(&list, message);
            return None;
        }
    };
    let base_path = base_path(&backends)
        .map_err(|why| cx.error(name, format!("{label}: {why}")))
        .ok()?;
    Some((backends, base_path))
}

/// `backends:`: at least one, none named twice.
fn list_of(cx: &mut Ctx<'_>, list: At<Vec<At<raw::Backend>>>, label: &str) -> Option<Vec<Backend>> {
    if list.value.is_empty() {
        cx.error(
            &list,
            format!("{label}: `backends:` is empty; list at least one"),
        );
        return None;
    }
    let mut backends = Vec::with_capacity(list.value.len());
    let mut ok = true;
    for (i, at) in list.value.into_iter().enumerate() {
        let place = at.place();
        let what = format!("{label} backends[{i}]");
        let raw::Backend {
            url,
            mock,
            weight,
            priority,
        } = at.value;
        let weight = match weight {
            Some(w) if w.value == 0 => {
                cx.error(&w, format!("{what}: weight must be 1 or more"));
                None
            }
            w => Some(w.map_or(1, |w| w.value)),
        };
        let target = target(cx, url, mock, &what, &place);
        let (Some(target), Some(weight)) = (target, weight) else {
            ok = false;
            continue;
        };
        let made = backend(target, Some(i), weight, priority.map_or(0, |p| p.value));
        if backends.iter().any(|b: &Backend| b.label == made.label) {
            cx.error(&place, format!("{what}: {} is listed twice", made.label));
            ok = false;
        }
        backends.push(made);
    }
    ok.then_some(backends)
}

/// One server: exactly one of `url:` and `mock:`.
fn target<T>(
    cx: &mut Ctx<'_>,
    url: Option<At<String>>,
    mock: Option<At<raw::Mock>>,
    label: &str,
    place: &At<T>,
) -> Option<Target> {
    match (url, mock) {
        (Some(url), None) => http_url(&url.value)
            .map_err(|e| cx.error(&url, format!("{label}: url {e}")))
            .ok()
            .map(Target::Url),
        (None, Some(mock)) => mock_spec(cx, mock.value, label).map(Target::Mock),
        (Some(_), Some(mock)) => {
            cx.error(
                &mock,
                format!("{label} has both `url:` and `mock:`; keep one"),
            );
            None
        }
        (None, None) => {
            cx.error(place, format!("{label} needs `url:` or `mock:`"));
            None
        }
    }
}

fn backend(target: Target, place: Option<usize>, weight: u32, priority: u32) -> Backend {
    let label: Arc<str> = match (&target, place) {
        (Target::Url(uri), _) => uri.to_string().trim_end_matches('/').into(),
        (Target::Mock(_), None) => "mock".into(),
        (Target::Mock(_), Some(i)) => format!("mock#{i}").into(),
    };
    Backend {
        host: target.host(),
        target,
        weight,
        priority,
        label,
    }
}

/// The path every backend's URL ends in: requests and links are written once for all of
/// them, so they must agree (a `mock:` backend's is empty).
fn base_path(backends: &[Backend]) -> Result<String, String> {
    let path_of = |b: &Backend| match &b.target {
        Target::Url(uri) => uri.path().trim_end_matches('/').to_owned(),
        Target::Mock(_) => String::new(),
    };
    let first = path_of(&backends[0]);
    match backends.iter().find(|b| path_of(b) != first) {
        None => Ok(first),
        Some(other) => Err(format!(
            "its backends must share one base path: {} has `{}`, {} has `{}`",
            backends[0].label,
            first,
            other.label,
            path_of(other)
        )),
    }
}

/// How requests are spread over several backends.
pub(super) struct Spreading {
    pub balance: Balance,
    pub health: Health,
    pub retry_budget: f64,
}

/// `balance:`, `health:` and `retry_budget:`, as written (`None` for each left out).
pub(super) type RawSpreading = (
    Option<At<serde_json::Value>>,
    Option<At<raw::Health>>,
    Option<At<String>>,
);

/// How the upstream `label` spreads its requests; said to do nothing when it has one backend
/// (`several` false) and sets any of it.
pub(super) fn spreading(
    cx: &mut Ctx<'_>,
    (balance_at, health_at, budget_at): RawSpreading,
    label: &str,
    several: bool,
) -> Option<Spreading> {
    if !several && (balance_at.is_some() || health_at.is_some() || budget_at.is_some()) {
        let warning = format!(
            "{label}: `balance`, `health` and `retry_budget` apply only to several `backends:`; one backend ignores them"
        );
        cx.warnings.push(warning);
    }
    let balance = balance(cx, balance_at, label);
    let health = health(cx, health_at, label);
    let retry_budget = retry_budget(cx, budget_at, label);
    Some(Spreading {
        balance: balance?,
        health: health?,
        retry_budget: retry_budget?,
    })
}

/// `balance:` — `least-loaded` (the default) or `{ sticky: { header: NAME } }`.
fn balance(cx: &mut Ctx<'_>, raw: Option<At<serde_json::Value>>, label: &str) -> Option<Balance> {
    let Some(at) = raw else {
        return Some(Balance::LeastLoaded);
    };
    let header = at.value.get("sticky").and_then(|s| s.get("header"));
    let is_sticky = at.value.as_object().is_some_and(|o| o.len() == 1)
        && at.value["sticky"].as_object().is_some_and(|o| o.len() == 1);
    match (&at.value, header.and_then(|h| h.as_str())) {
        (serde_json::Value::String(s), _) if s == "least-loaded" => Some(Balance::LeastLoaded),
        (_, Some(name)) if is_sticky => match HeaderName::from_bytes(name.as_bytes()) {
            Ok(header) => Some(Balance::Sticky { header }),
            Err(_) => {
                cx.error(
                    &at,
                    format!("{label} balance: `{name}` is not a header name"),
                );
                None
            }
        },
        _ => {
            let message = format!(
                "{label} balance: write `least-loaded` or `{{ sticky: {{ header: X-Session-Id }} }}`"
            );
            cx.error(&at, message);
            None
        }
    }
}

/// `health:`, each key defaulted on its own.
fn health(cx: &mut Ctx<'_>, raw: Option<At<raw::Health>>, label: &str) -> Option<Health> {
    let raw = raw.map(|at| at.value).unwrap_or_default();
    let interval = optional(raw.interval, |d| {
        let interval = cx.duration(&d, &format!("{label} health.interval"), false)?;
        if interval < MIN_INTERVAL {
            let message = format!(
                "{label} health.interval must be {MIN_INTERVAL:?} or more: a probe is a request to each backend"
            );
            cx.error(&d, message);
            return None;
        }
        Some(interval)
    });
    let eject_for = optional(raw.eject_for, |d| {
        cx.duration(&d, &format!("{label} health.eject_for"), false)
    });
    let eject_after = match raw.eject_after {
        Some(n) if n.value == 0 => {
            cx.error(&n, format!("{label} health.eject_after must be 1 or more"));
            None
        }
        n => Some(n.map_or(DEFAULT_HEALTH.eject_after, |n| n.value)),
    };
    Some(Health {
        interval: interval?.unwrap_or(DEFAULT_HEALTH.interval),
        eject_after: eject_after?,
        eject_for: eject_for?.unwrap_or(DEFAULT_HEALTH.eject_for),
    })
}

/// `retry_budget:` — a percentage from 0% (no retries beyond the minimum) to 100%.
fn retry_budget(cx: &mut Ctx<'_>, raw: Option<At<String>>, label: &str) -> Option<f64> {
    let Some(at) = raw else {
        return Some(DEFAULT_RETRY_BUDGET);
    };
    let number = at.value.trim().strip_suffix('%').map(str::trim);
    match number.and_then(|n| n.parse::<f64>().ok()) {
        Some(p) if (0.0..=100.0).contains(&p) => Some(p / 100.0),
        _ => {
            let message = format!(
                "{label} retry_budget: `{}` is not a percentage from 0% to 100% (for example 20%)",
                at.value
            );
            cx.error(&at, message);
            None
        }
    }
}
