//! Raw table -> [`RouteTable`]: defaults filled in, names resolved, secrets read, every
//! problem collected.
//!
//! Each part is checked even when an earlier part failed, so one run of `lingo check` lists
//! every mistake. A part that failed yields `None` (its error is already recorded) and the
//! table is only assembled when no error was recorded at all.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

use super::ctx::{Ctx, EnvLookup, http_url, optional};
use super::error::ConfigErrors;
use super::raw::{self, At};
use super::{Secrets, quota, routes, tls, upstream};
use crate::base::ids::FnvMap;
use crate::table::{
    Admin, ClientKey, DEFAULT_BODY_TIMEOUT, DEFAULT_DRAIN, DEFAULT_HEADER_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_BODY, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_HEADER_BYTES,
    DEFAULT_MAX_HEADERS, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_LINE, DEFAULT_MAX_RESPONSE, Limits,
    Listener, ModelAlias, RouteTable,
};
use crate::translate::splice::LiteralScan;

/// Compiles a parsed table. `source` names the file in errors; relative `file:` secrets and
/// TLS paths resolve against its directory; `secrets` says whether secrets are read.
pub fn compile(
    file: raw::File,
    source: &Path,
    env: EnvLookup<'_>,
    secrets: Secrets,
) -> Result<RouteTable, ConfigErrors> {
    let dir = source.parent().unwrap_or(Path::new(""));
    let mut cx = Ctx::new(source, dir, env, secrets);

    let limits = limits(&mut cx, file.limits);
    let (listeners, exposed) = listeners(&mut cx, file.listen);
    let raw_clients = file.clients.unwrap_or_default();
    // Whether the file names clients at all (one whose key fails to load is its own error).
    let names_clients = !raw_clients.is_empty();
    let (mut clients, quotas) = clients(&mut cx, raw_clients);
    open_proxy(&mut cx, exposed, names_clients);
    let admin = admin(&mut cx, file.admin, &listeners, names_clients);
    let upstreams: Vec<_> = file
        .upstreams
        .unwrap_or_default()
        .0
        .into_iter()
        .map(|(name, raw)| upstream::compile(&mut cx, name, raw))
        .collect();
    let models = models(&mut cx, file.models.unwrap_or_default().0, &upstreams);
    let routes = routes::compile(&mut cx, file.routes.unwrap_or_default(), &upstreams, limits);
    small_responses(&mut cx, &routes, &upstreams, &limits);
    let labels: Vec<&str> = routes.iter().map(|r| &*r.label).collect();
    for (client, raw) in clients.iter_mut().zip(quotas) {
        client.quota = quota::limits(&mut cx, raw, &client.name, &labels);
    }
    let quota_store = quota::store(&mut cx, file.quota_store);

    let (warnings, files) = cx.finish()?;
    Ok(RouteTable {
        source: source.to_path_buf(),
        listeners,
        clients,
        // No error was recorded, so every upstream was built.
        upstreams: upstreams.into_iter().filter_map(|u| u.built).collect(),
        alias_literals: LiteralScan::new(models.keys().map(String::as_str)),
        models,
        routes,
        limits,
        quota_store,
        admin,
        owned_by: file.owned_by.unwrap_or_else(|| "lingo".into()),
        warnings,
        files,
    })
}

/// The largest response the web-data API sends in one piece: a crawl status page.
const WEB_DATA_PAGE: u64 = 10 * 1024 * 1024;

/// A warning when v1 web-data calls are translated and `limits.max_response` is under a status
/// page: such a response cannot be read to translate, so it is a 502 (which the SDKs retry).
fn small_responses(
    cx: &mut Ctx<'_>,
    routes: &[crate::table::Route],
    upstreams: &[upstream::Declared],
    limits: &Limits,
) {
    use crate::base::dialect::Dialect;
    let translates_v1 = routes.iter().any(|r| {
        r.speaks == Dialect::WebData
            && upstreams.get(r.upstream).and_then(|u| u.speaks) == Some(Dialect::WebDataV2)
    });
    if translates_v1 && limits.max_response < WEB_DATA_PAGE {
        cx.warnings.push(format!(
            "limits.max_response is {}: a web-data status page can reach 10MiB, and a translated v1 response larger than the limit gets a 502",
            crate::base::units::format_size(limits.max_response)
        ));
    }
}

fn limits(cx: &mut Ctx<'_>, raw: Option<raw::Limits>) -> Limits {
    let raw = raw.unwrap_or_default();
    let size = |cx: &mut Ctx<'_>, at: Option<At<String>>, key: &str, default| {
        at.and_then(|s| cx.size(&s, &format!("limits.{key}")))
            .unwrap_or(default)
    };
    let duration = |cx: &mut Ctx<'_>, at: Option<At<String>>, key: &str, zero_ok, default| {
        at.and_then(|d| cx.duration(&d, &format!("limits.{key}"), zero_ok))
            .unwrap_or(default)
    };
    Limits {
        max_body: size(cx, raw.max_body, "max_body", DEFAULT_MAX_BODY),
        drain: duration(cx, raw.drain, "drain", true, DEFAULT_DRAIN),
        max_line: size(cx, raw.max_line, "max_line", DEFAULT_MAX_LINE),
        max_response: size(cx, raw.max_response, "max_response", DEFAULT_MAX_RESPONSE),
        max_header_bytes: size(
            cx,
            raw.max_header_bytes,
            "max_header_bytes",
            DEFAULT_MAX_HEADER_BYTES,
        ),
        max_headers: cx.count(raw.max_headers, "limits.max_headers", DEFAULT_MAX_HEADERS),
        header_timeout: duration(
            cx,
            raw.header_timeout,
            "header_timeout",
            false,
            DEFAULT_HEADER_TIMEOUT,
        ),
        idle_timeout: duration(
            cx,
            raw.idle_timeout,
            "idle_timeout",
            false,
            DEFAULT_IDLE_TIMEOUT,
        ),
        body_timeout: duration(
            cx,
            raw.body_timeout,
            "body_timeout",
            false,
            DEFAULT_BODY_TIMEOUT,
        ),
        max_connections: cx.count(
            raw.max_connections,
            "limits.max_connections",
            DEFAULT_MAX_CONNECTIONS,
        ),
        max_in_flight: cx.count(
            raw.max_in_flight,
            "limits.max_in_flight",
            DEFAULT_MAX_IN_FLIGHT,
        ),
    }
}

/// A listen entry as [`open_proxy`] judges it: its address, where it is written, and its
/// `allow_open`.
struct Exposed {
    addr: SocketAddr,
    place: At<()>,
    allow_open: Option<At<bool>>,
}

/// A table with no client keys lets anyone who reaches a listener use the upstreams, with
/// the keys lingo holds for them: refused on an address beyond loopback unless its entry says
/// `allow_open: true`, and then warned about on every load.
fn open_proxy(cx: &mut Ctx<'_>, exposed: Vec<Exposed>, names_clients: bool) {
    for Exposed {
        addr,
        place,
        allow_open,
    } in exposed
    {
        let allowed = allow_open.as_ref().is_some_and(|a| a.value);
        if names_clients {
            if allowed {
                cx.warnings.push(format!(
                    "listen {addr}: allow_open has no effect: the table has client keys, which every request must present"
                ));
            }
        } else if is_loopback(addr) {
            continue;
        } else if allowed {
            cx.warnings.push(format!(
                "OPEN PROXY: listen {addr} has `allow_open: true` and the table has no client keys: anyone who reaches {addr} may use every upstream, with the keys lingo holds for them"
            ));
        } else {
            cx.error(
                &place,
                format!(
                    "listen {addr} is an open proxy: the table has no client keys, so anyone who reaches this address may use every upstream, with the keys lingo holds for them; add keys under `clients:`, or `allow_open: true` on this listen entry if that is meant"
                ),
            );
        }
    }
}

/// Whether only this host can connect to `addr` (127.0.0.0/8, ::1, or ::ffff:127.x.y.z).
fn is_loopback(addr: SocketAddr) -> bool {
    match addr.ip() {
        IpAddr::V4(ip) => ip.is_loopback(),
        IpAddr::V6(ip) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// The listeners, and each entry's address for [`open_proxy`].
fn listeners(
    cx: &mut Ctx<'_>,
    raw: Option<At<Vec<At<raw::Listener>>>>,
) -> (Vec<Listener>, Vec<Exposed>) {
    let raw = raw.unwrap_or_default();
    if raw.value.is_empty() {
        cx.error(
            &raw,
            "no listeners: add `listen: [{ addr: 127.0.0.1:8080 }]`",
        );
    }
    let mut seen: HashMap<SocketAddr, usize> = HashMap::new();
    let mut out = Vec::new();
    let mut exposed = Vec::new();
    for listener in raw.value {
        let place = listener.place();
        let l = listener.value;
        let Some(addr) = listen_addr(cx, &l.addr) else {
            continue;
        };
        exposed.push(Exposed {
            addr,
            place,
            allow_open: l.allow_open,
        });
        if let Some(first) = seen.insert(addr, l.addr.line) {
            cx.error(
                &l.addr,
                format!("listen address {addr} is already used on line {first}"),
            );
        }
        let tls = optional(l.tls, |t| {
            let (cert, key) = (cx.path(&t.value.cert), cx.path(&t.value.key));
            let config = tls::server_config(&cert, &key);
            config
                .map_err(|e| cx.error(&t, format!("listen {addr}: {e}")))
                .ok()
        });
        let public_url = optional(l.public_url, |u| {
            let url = http_url(&u.value);
            url.map_err(|e| cx.error(&u, format!("listen {addr}: public_url {e}")))
                .ok()
        });
        if let (Some(tls), Some(public_url)) = (tls, public_url) {
            out.push(Listener {
                addr,
                tls,
                public_url,
            });
        }
    }
    (out, exposed)
}

fn listen_addr(cx: &mut Ctx<'_>, at: &At<String>) -> Option<SocketAddr> {
    let addr = at.value.parse::<SocketAddr>();
    if addr.is_err() {
        let text = &at.value;
        let message =
            format!("listen address `{text}` is not IP:PORT (for example 127.0.0.1:8080)");
        cx.error(at, message);
    }
    addr.ok()
}

fn admin(
    cx: &mut Ctx<'_>,
    raw: Option<At<raw::Admin>>,
    listeners: &[Listener],
    names_clients: bool,
) -> Admin {
    let Some(raw) = raw else {
        return Admin::default();
    };
    let raw::Admin { addr, require_key } = raw.value;
    // With no client keys there is nothing to require: refused rather than left open while
    // the file says it is closed.
    let require_key = require_key.is_some_and(|at| {
        if at.value && !names_clients {
            let message = "admin.require_key needs at least one entry in `clients` (there is no key to require)";
            cx.error(&at, message.to_owned());
        }
        at.value
    });
    let addr = addr.and_then(|at| match at.value.parse::<SocketAddr>() {
        Ok(addr) if addr.port() != 0 && listeners.iter().any(|l| l.addr == addr) => {
            let message =
                format!("admin address {addr} is also a `listen` address; use another port");
            cx.error(&at, message);
            None
        }
        Ok(addr) => Some(addr),
        Err(_) => {
            let message = format!(
                "admin address `{}` is not IP:PORT (for example 127.0.0.1:9090)",
                at.value
            );
            cx.error(&at, message);
            None
        }
    });
    Admin { addr, require_key }
}

/// The clients whose keys were read, each with its `quota:` as written (compiled once the
/// routes it may name are).
fn clients(
    cx: &mut Ctx<'_>,
    raw: Vec<At<raw::Client>>,
) -> (Vec<ClientKey>, Vec<Vec<At<raw::Limit>>>) {
    let mut names: HashMap<String, usize> = HashMap::new();
    let mut out: Vec<(ClientKey, usize)> = Vec::new();
    let mut quotas = Vec::new();
    for client in raw {
        let raw::Client {
            name,
            key,
            webhook_secret,
            quota,
        } = client.value;
        if name.value.is_empty() {
            cx.error(&name, "a client needs a non-empty `name:`");
        } else if let Some(first) = names.insert(name.value.clone(), name.line) {
            cx.error(
                &name,
                format!(
                    "client name `{}` is already used on line {first}",
                    name.value
                ),
            );
        }
        let webhook_secret = optional(webhook_secret, |s| {
            let what = format!("client `{}` webhook_secret", name.value);
            cx.secret(&s, &what).map(|(secret, _)| secret)
        });
        let Some((key_value, source)) = cx.secret(&key, &format!("client `{}` key", name.value))
        else {
            continue;
        };
        if let Some((other, line)) = out.iter().find(|(c, _)| c.key == key_value) {
            let message = format!(
                "client `{}` has the same key as client `{}` (line {line}); each client needs its own key",
                name.value, other.name
            );
            cx.error(&key, message);
        }
        out.push((
            ClientKey {
                name: name.value,
                key: key_value,
                source,
                webhook_secret: webhook_secret.flatten(),
                quota: Arc::from([]),
            },
            name.line,
        ));
        quotas.push(quota.unwrap_or_default());
    }
    (out.into_iter().map(|(c, _)| c).collect(), quotas)
}

fn models(
    cx: &mut Ctx<'_>,
    raw: Vec<(At<String>, At<raw::Model>)>,
    upstreams: &[upstream::Declared],
) -> FnvMap<String, ModelAlias> {
    let mut out = FnvMap::default();
    for (alias, model) in raw {
        let raw::Model { upstream, model } = model.value;
        if model.is_empty() {
            cx.error(
                &alias,
                format!("model alias `{}` needs a non-empty `model:`", alias.value),
            );
        }
        let what = format!("model alias `{}`", alias.value);
        if let Some(index) = upstream::find(cx, upstreams, &upstream, &what) {
            out.insert(
                alias.value,
                ModelAlias {
                    upstream: index,
                    model,
                },
            );
        }
    }
    out
}
