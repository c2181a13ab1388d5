//! `clients[].quota` and `quota_store` -> [`Limit`]s and a [`QuotaStore`]: one unit and its
//! amount per limit, its window or bucket, and what it does while the store is away.

use std::sync::Arc;
use std::time::Duration;

use super::ctx::{Ctx, optional};
use super::raw::{self, At};
use crate::base::units::format_duration;
use crate::table::quota::{
    DEFAULT_MAX_RESERVATION, DEFAULT_STORE_TIMEOUT, Limit, OnStoreError, QuotaStore, Unit,
};

/// The limits of client `name`; `routes` are the table's route labels (a limit may name
/// one). A wrong limit is recorded and left out.
pub(super) fn limits(
    cx: &mut Ctx<'_>,
    raw: Vec<At<raw::Limit>>,
    name: &str,
    routes: &[&str],
) -> Arc<[Limit]> {
    let mut out: Vec<Limit> = Vec::new();
    for at in raw {
        let what = format!("client `{name}` quota");
        let place = at.place();
        let Some(limit) = limit(cx, at, &what, routes) else {
            continue;
        };
        if out.iter().any(|l| l.id == limit.id) {
            let message = format!(
                "{what}: two limits of {} (choose one, or give one a `route:`)",
                limit.id
            );
            cx.error(&place, message);
            continue;
        }
        out.push(limit);
    }
    out.into()
}

/// One limit, checked.
fn limit(cx: &mut Ctx<'_>, at: At<raw::Limit>, what: &str, routes: &[&str]) -> Option<Limit> {
    let place = at.place();
    let raw = at.value;
    let (unit, amount) = unit(cx, &raw, &place, what)?;
    let Some(per) = &raw.per else {
        cx.error(
            &place,
            format!("{what}: a limit needs `per:` (1s, 1m, 1h, 1d, 30d)"),
        );
        return None;
    };
    let per = cx.duration(per, &format!("{what}.per"), false)?;
    let capacity = optional(raw.capacity, |c| positive(cx, c, what, "capacity"))?;
    let on_store_error = optional(raw.on_store_error, |at| on_store_error(cx, &at, what))?;
    let route = optional(raw.route, |r| route(cx, &r, what, routes))?;
    let max_reservation = optional(raw.max_reservation, |m| {
        positive(cx, m, what, "max_reservation")
    })?
    .unwrap_or(DEFAULT_MAX_RESERVATION);
    let model: Option<Arc<str>> = raw.model.map(|m| Arc::from(m.value.as_str()));
    let mut limit = Limit {
        id: id(unit, per, capacity, (route.as_deref(), model.as_deref())).into(),
        unit,
        amount,
        per,
        capacity,
        shadow: raw.shadow.unwrap_or(false),
        on_store_error: OnStoreError::Allow,
        max_reservation,
        route,
        model,
    };
    // Rate limits fall back to each replica's share; budgets are not spent blind.
    limit.on_store_error = on_store_error.unwrap_or(if limit.is_budget() {
        OnStoreError::Deny
    } else {
        OnStoreError::Local
    });
    Some(limit)
}

/// A count that must be more than 0 (`key` of the limit `what`).
fn positive(cx: &mut Ctx<'_>, at: At<u64>, what: &str, key: &str) -> Option<u64> {
    if at.value == 0 {
        cx.error(&at, format!("{what}.{key} must be more than 0"));
        return None;
    }
    Some(at.value)
}

/// The route a limit names: by its label (`prefix /api`), or its path as written (`/api`).
fn route(cx: &mut Ctx<'_>, r: &At<String>, what: &str, routes: &[&str]) -> Option<Arc<str>> {
    let named = |label: &&&str| {
        **label == r.value || label.split_once(' ').is_some_and(|(_, p)| p == r.value)
    };
    let found: Vec<&&str> = routes.iter().filter(named).collect();
    let message = match found[..] {
        [label] => return Some(Arc::from(*label)),
        [] => format!(
            "{what}.route `{}` is not a route of this table (routes: {})",
            r.value,
            routes.join(", ")
        ),
        _ => format!(
            "{what}.route `{}` names {} routes; write the one meant as `lingo check` labels it (`path {}` or `prefix {}`)",
            r.value,
            found.len(),
            r.value,
            r.value
        ),
    };
    cx.error(r, message);
    None
}

/// What a limit's counters are kept under: what makes it the same limit across reloads.
fn id(
    unit: Unit,
    per: Duration,
    capacity: Option<u64>,
    (route, model): (Option<&str>, Option<&str>),
) -> String {
    let mut id = format!("{}/{}", unit.as_str(), format_duration(per));
    if let Some(capacity) = capacity {
        id.push_str(&format!("/bucket{capacity}"));
    }
    if let Some(route) = route {
        id.push_str(&format!(" on {route}"));
    }
    if let Some(model) = model {
        id.push_str(&format!(" for {model}"));
    }
    id
}

/// The one unit key a limit has, and its amount.
fn unit(cx: &mut Ctx<'_>, raw: &raw::Limit, place: &At<()>, what: &str) -> Option<(Unit, u64)> {
    let given: Vec<(Unit, &At<u64>)> = [
        (Unit::Requests, &raw.requests),
        (Unit::Tokens, &raw.tokens),
        (Unit::InputTokens, &raw.input_tokens),
        (Unit::OutputTokens, &raw.output_tokens),
        (Unit::Credits, &raw.credits),
    ]
    .into_iter()
    .filter_map(|(unit, at)| at.as_ref().map(|at| (unit, at)))
    .collect();
    match given[..] {
        [(unit, at)] if at.value == 0 => {
            let message = format!("{what}: {} must be more than 0", unit.as_str());
            cx.error(at, message);
            None
        }
        [(unit, at)] => Some((unit, at.value)),
        _ => {
            let message = format!(
                "{what}: a limit counts one of requests, tokens, input_tokens, output_tokens or credits ({} given)",
                given.len()
            );
            cx.error(place, message);
            None
        }
    }
}

fn on_store_error(cx: &mut Ctx<'_>, at: &At<String>, what: &str) -> Option<OnStoreError> {
    match at.value.as_str() {
        "allow" => Some(OnStoreError::Allow),
        "deny" => Some(OnStoreError::Deny),
        "local" => Some(OnStoreError::Local),
        other => {
            let message = format!("{what}.on_store_error is allow, deny or local, not `{other}`");
            cx.error(at, message);
            None
        }
    }
}

/// `quota_store:`, `None` when left out (counters held in the process).
pub(super) fn store(cx: &mut Ctx<'_>, raw: Option<At<raw::QuotaStore>>) -> Option<QuotaStore> {
    let raw = raw?.value;
    let url = raw.redis.value.trim();
    if !url.starts_with("redis://") {
        let message = "quota_store.redis is a `redis://host:port` URL (lingo speaks to Redis over plain TCP; reach a TLS Redis through a local tunnel)";
        cx.error(&raw.redis, message);
        return None;
    }
    if let Err(e) = redis::Client::open(url) {
        // The URL may hold a password: the message names the key, not the value.
        let message = format!("quota_store.redis is not a Redis URL: {}", e.category());
        cx.error(&raw.redis, message);
        return None;
    }
    let timeout = optional(raw.timeout, |t| {
        cx.duration(&t, "quota_store.timeout", false)
    })?;
    Some(QuotaStore {
        redis: url.to_owned(),
        timeout: timeout.unwrap_or(DEFAULT_STORE_TIMEOUT),
        cluster: raw.cluster.unwrap_or(false),
    })
}
