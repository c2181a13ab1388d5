//! The one-screen report `lingo check` prints for a table that loads.
//!
//! It shows what the table *means* after defaults and resolution (timeouts filled in, the
//! dialect each route really speaks, which routes translate) so a reader can confirm intent
//! without running the proxy. Secrets appear only as where they come from, never as values.

use std::fmt::Write;

use super::routes::translator_status;
use crate::base::dialect::Dialect;
use crate::base::units::{format_duration, format_size};
use crate::table::quota::{Limit, OnStoreError};
use crate::table::{Backend, Balance, PathMatch, RouteTable, Target, Upstream, WebhookSpec};
use crate::translate::native::Extras;

/// Renders the report; one section per part of the table, routes in file order.
pub fn summary(table: &RouteTable) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail; `let _` keeps the sections readable.
    let _ = writeln!(out, "{}: OK", table.source.display());
    listeners(&mut out, table);
    admin(&mut out, table);
    clients(&mut out, table);
    upstreams(&mut out, table);
    models(&mut out, table);
    routes(&mut out, table);
    let limits = &table.limits;
    let (max_body, drain) = (format_size(limits.max_body), format_duration(limits.drain));
    let _ = writeln!(out, "\nlimits: max_body {max_body}, drain {drain}");
    if !table.warnings.is_empty() {
        let _ = writeln!(out, "\nwarnings");
        for w in &table.warnings {
            let _ = writeln!(out, "  {w}");
        }
    }
    out
}

/// The widest of `items`, to align a column.
fn width<T>(items: &[T], len: impl Fn(&T) -> usize) -> usize {
    items.iter().map(len).max().unwrap_or(0)
}

fn listeners(out: &mut String, table: &RouteTable) {
    let _ = writeln!(out, "\nlisten");
    let width = width(&table.listeners, |l| l.addr.to_string().len());
    for l in &table.listeners {
        let scheme = if l.tls.is_some() {
            "https (tls)"
        } else {
            "http"
        };
        let public = l
            .public_url
            .as_ref()
            .map(|u| format!("  public_url {u}"))
            .unwrap_or_default();
        let _ = writeln!(out, "  {:<width$}  {scheme}{public}", l.addr.to_string());
    }
}

/// Where `/healthz`, `/readyz` and `/metrics` are served, and whether they need a key.
fn admin(out: &mut String, table: &RouteTable) {
    let admin = &table.admin;
    let key = if admin.require_key {
        "; /readyz and /metrics need a client key"
    } else {
        ""
    };
    match admin.addr {
        Some(addr) => {
            let _ = writeln!(
                out,
                "\nadmin: {addr}  http  /healthz, /readyz, /metrics{key}"
            );
        }
        None => {
            let _ = writeln!(
                out,
                "\nadmin: no listener of its own; /healthz, /readyz, /metrics on the listen addresses{key}"
            );
        }
    }
}

fn clients(out: &mut String, table: &RouteTable) {
    let names: Vec<&str> = table.clients.iter().map(|c| c.name.as_str()).collect();
    match names.len() {
        0 => out.push_str("\nclients: none (open proxy: anyone who reaches lingo may call it)\n"),
        n => {
            let _ = writeln!(out, "\nclients: {n} ({})", names.join(", "));
        }
    }
    for client in table.clients.iter().filter(|c| !c.quota.is_empty()) {
        let shared = table.quota_store.is_some();
        let limits: Vec<String> = client.quota.iter().map(|l| limit(l, shared)).collect();
        let _ = writeln!(out, "  {} limits: {}", client.name, limits.join("; "));
    }
    if let Some(store) = &table.quota_store {
        let (url, timeout) = (store.shown(), format_duration(store.timeout));
        let at = if store.cluster {
            "the Redis Cluster of"
        } else {
            "Redis at"
        };
        let _ = writeln!(out, "  limits shared in {at} {url}, timeout {timeout}");
    }
}

/// One limit as `lingo check` says it: `600 requests per 60s`, then what it adds (what it
/// does while the store is away, when the counters are `shared`).
fn limit(limit: &Limit, shared: bool) -> String {
    let mut text = format!(
        "{} {} per {}",
        limit.amount,
        limit.unit.as_str(),
        format_duration(limit.per)
    );
    if let Some(capacity) = limit.capacity {
        let _ = write!(text, " (a bucket of {capacity})");
    }
    if let Some(route) = &limit.route {
        let _ = write!(text, " on {route}");
    }
    if let Some(model) = &limit.model {
        let _ = write!(text, " for {model}");
    }
    let kind = if limit.is_budget() { "budget" } else { "rate" };
    let fallback = match limit.on_store_error {
        OnStoreError::Allow => "allow",
        OnStoreError::Deny => "deny",
        OnStoreError::Local => "local",
    };
    let _ = write!(text, ", {kind}");
    if limit.shadow {
        text.push_str(", shadow");
    }
    if shared {
        let _ = write!(text, ", on_store_error {fallback}");
    }
    text
}

fn where_is(backend: &Backend) -> String {
    match &backend.target {
        Target::Url(url) => url.to_string(),
        Target::Mock(_) => "mock (built in)".to_owned(),
    }
}

/// An upstream's backends, each with its weight and priority, and how they are used.
fn backends(out: &mut String, u: &Upstream) {
    for b in &u.backends {
        let _ = writeln!(
            out,
            "    backend {}  weight {}, priority {}",
            where_is(b),
            b.weight,
            b.priority
        );
    }
    let balance = match &u.balance {
        Balance::LeastLoaded => "least-loaded".to_owned(),
        Balance::Sticky { header } => format!("sticky on {header}"),
    };
    let h = &u.health;
    let _ = writeln!(
        out,
        "    balance {balance}; probed every {}, ejected after {} failures for {}; retry budget {}%",
        format_duration(h.interval),
        h.eject_after,
        format_duration(h.eject_for),
        (u.retry_budget * 100.0).round()
    );
}

fn upstreams(out: &mut String, table: &RouteTable) {
    let _ = writeln!(out, "\nupstreams");
    let width = width(&table.upstreams, |u| u.name.len());
    for u in &table.upstreams {
        let target = match &u.backends[..] {
            [one] => where_is(one),
            several => format!("{} backends", several.len()),
        };
        let t = &u.timeouts;
        let _ = writeln!(out, "  {:<width$}  {target}  speaks {}", u.name, u.speaks);
        if u.backends.len() > 1 {
            backends(out, u);
        }
        let _ = writeln!(
            out,
            "    timeouts: connect {}, first_byte {}, idle {}",
            format_duration(t.connect),
            format_duration(t.first_byte),
            format_duration(t.idle)
        );
        if let Some(auth) = &u.auth {
            let _ = writeln!(out, "    auth: {} (key from {})", auth.header, auth.source);
        }
        if let Some(hooks) = &u.webhooks {
            webhooks(out, hooks);
        }
    }
}

/// An upstream's webhook relay: whether jobs are pointed at lingo's receiver, which
/// signatures are checked and made, the schedule, where deliveries may go and the store.
fn webhooks(out: &mut String, hooks: &WebhookSpec) {
    let relay = if hooks.relay {
        "relayed through lingo's receiver"
    } else {
        "passed through (stored events still delivered)"
    };
    let receiver = hooks.receiver.as_ref().map_or_else(
        || "the listener's public_url, else the address the client used".to_owned(),
        |r| r.to_string(),
    );
    let _ = writeln!(out, "    webhooks: {relay}; receiver {receiver}");
    let verify = if hooks.verify.is_some() {
        "checked"
    } else {
        "not checked"
    };
    let sign = if hooks.sign.is_some() {
        "signed (a client's webhook_secret, else sign)"
    } else {
        "signed with a client's webhook_secret only"
    };
    let _ = writeln!(
        out,
        "      upstream's signature {verify}; deliveries {sign}"
    );
    let retry: Vec<String> = hooks.retry.iter().map(|d| format_duration(*d)).collect();
    let allow: Vec<String> = hooks.allow.iter().map(ToString::to_string).collect();
    let allow = if allow.is_empty() {
        "none".to_owned()
    } else {
        allow.join(", ")
    };
    let _ = writeln!(
        out,
        "      retry [{}], timeout {}, private destinations allowed: {allow}; store {}",
        retry.join(", "),
        format_duration(hooks.timeout),
        hooks.store
    );
}

fn models(out: &mut String, table: &RouteTable) {
    if table.models.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nmodels");
    let mut aliases: Vec<_> = table.models.iter().collect();
    aliases.sort_by_key(|(alias, _)| alias.as_str());
    for (alias, m) in aliases {
        let upstream = &table.upstream(m.upstream).name;
        let _ = writeln!(out, "  {alias} -> {upstream} as {}", m.model);
    }
}

/// Whether a route takes web-data v1 calls (which a v2-only upstream gets translated).
fn covers_v1(matcher: &PathMatch) -> bool {
    match matcher {
        PathMatch::Exact(p) | PathMatch::Prefix(p) if p.starts_with("/v1/") => true,
        m => m.covers("/v1/scrape"),
    }
}

fn routes(out: &mut String, table: &RouteTable) {
    let _ = writeln!(out, "\nroutes");
    let width = width(&table.routes, |r| r.matcher.to_string().len());
    for r in &table.routes {
        let upstream = table.upstream(r.upstream);
        let mode = match translator_status(r.speaks, upstream.speaks, &r.matcher) {
            _ if !r.translates(upstream) => "pass-through",
            _ if upstream.speaks == Dialect::WebDataV2 && covers_v1(&r.matcher) => {
                crate::translate::webdata::SUMMARY
            }
            _ if upstream.speaks == Dialect::WebDataV2 => "pass-through (version 2)",
            None => "translate",
            Some(s) if s.starts_with("only") => "translate (in part: see warnings)",
            Some(_) => "translate (not yet: responds with 501)",
        };
        let mut extras = String::new();
        if r.max_body != table.limits.max_body {
            let _ = write!(extras, "  max_body {}", format_size(r.max_body));
        }
        if r.allow_model_management {
            extras.push_str("  model management allowed");
        }
        if r.websocket {
            extras.push_str("  WebSockets tunnelled");
        }
        match r.extras {
            Extras::Pass => {}
            Extras::Drop => extras.push_str("  native-only options dropped"),
            Extras::Refuse => extras.push_str("  native-only options refused"),
        }
        let matcher = r.matcher.to_string();
        let (speaks, name, their) = (r.speaks, &upstream.name, upstream.speaks);
        let _ = writeln!(
            out,
            "  {matcher:<width$}  {speaks} -> {name} ({their})  {mode}{extras}"
        );
    }
}
