//! Raw table -> [`RouteTable`]: defaults filled in, names resolved, secrets read, every
//! problem collected.
//!
//! Each part is checked even when an earlier part failed, so one run of `lingo check` lists
//! every mistake. A part that failed yields `None` (its error is already recorded) and the
//! table is only assembled when no error was recorded at all.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hyper::Uri;

use super::error::{ConfigError, ConfigErrors};
use super::raw::{self, At};
use super::secret::{Secret, SecretSource};
use super::{routes, tls, units, upstream};
use crate::dialect::Dialect;
use crate::table::{
    Admin, ClientKey, DEFAULT_DRAIN, DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_ANSWER, DEFAULT_MAX_BODY, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_HEADER_BYTES,
    DEFAULT_MAX_HEADERS, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_LINE, Limits, Listener, ModelAlias,
    RouteTable,
};

/// Looks up an environment variable; injectable so tests need not touch the process
/// environment (`set_var` is unsafe in edition 2024).
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// What the parts of a compilation share: where relative paths start, how to read the
/// environment, and the errors and warnings found so far.
pub(super) struct Ctx<'a> {
    source: &'a Path,
    dir: &'a Path,
    env: EnvLookup<'a>,
    errors: Vec<ConfigError>,
    pub warnings: Vec<String>,
    /// Every file read besides the table itself.
    files: Vec<PathBuf>,
}

/// Compiles a parsed table. `source` names the file in errors; relative `file:` secrets and
/// TLS paths resolve against its directory.
pub fn compile(
    file: raw::File,
    source: &Path,
    env: EnvLookup<'_>,
) -> Result<RouteTable, ConfigErrors> {
    let dir = source.parent().unwrap_or(Path::new(""));
    let mut cx = Ctx {
        source,
        dir,
        env,
        errors: Vec::new(),
        warnings: Vec::new(),
        files: Vec::new(),
    };

    let limits = limits(&mut cx, file.limits);
    let listeners = listeners(&mut cx, file.listen);
    let raw_clients = file.clients.unwrap_or_default();
    // Whether the file names clients at all (one whose key fails to load is its own error).
    let names_clients = !raw_clients.is_empty();
    let clients = clients(&mut cx, raw_clients);
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

    if !cx.errors.is_empty() {
        return Err(ConfigErrors::sorted(cx.errors));
    }
    Ok(RouteTable {
        source: source.to_path_buf(),
        listeners,
        clients,
        // No error was recorded, so every upstream was built.
        upstreams: upstreams.into_iter().filter_map(|u| u.built).collect(),
        models,
        routes,
        limits,
        admin,
        owned_by: file.owned_by.unwrap_or_else(|| "lingo".into()),
        warnings: cx.warnings,
        files: cx.files,
    })
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
        max_answer: size(cx, raw.max_answer, "max_answer", DEFAULT_MAX_ANSWER),
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

fn listeners(cx: &mut Ctx<'_>, raw: Option<At<Vec<At<raw::Listener>>>>) -> Vec<Listener> {
    let raw = raw.unwrap_or_default();
    if raw.value.is_empty() {
        cx.error(
            &raw,
            "no listeners: add `listen: [{ addr: 127.0.0.1:8080 }]`",
        );
    }
    let mut seen: HashMap<SocketAddr, usize> = HashMap::new();
    let mut out = Vec::new();
    for listener in raw.value {
        let l = listener.value;
        let addr = match l.addr.value.parse::<SocketAddr>() {
            Ok(addr) => addr,
            Err(_) => {
                let text = &l.addr.value;
                cx.error(
                    &l.addr,
                    format!("listen address `{text}` is not IP:PORT (for example 127.0.0.1:8080)"),
                );
                continue;
            }
        };
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
    out
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

fn clients(cx: &mut Ctx<'_>, raw: Vec<At<raw::Client>>) -> Vec<ClientKey> {
    let mut names: HashMap<String, usize> = HashMap::new();
    let mut out: Vec<(ClientKey, usize)> = Vec::new();
    for client in raw {
        let raw::Client { name, key } = client.value;
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
            },
            name.line,
        ));
    }
    out.into_iter().map(|(c, _)| c).collect()
}

fn models(
    cx: &mut Ctx<'_>,
    raw: Vec<(At<String>, At<raw::Model>)>,
    upstreams: &[upstream::Declared],
) -> HashMap<String, ModelAlias> {
    let mut out = HashMap::new();
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

/// Checks an optional setting: `Some(None)` when it is absent, `None` when it is present but
/// wrong (`check` has recorded why), so callers can tell "not set" from "failed".
pub(super) fn optional<T, U>(
    raw: Option<T>,
    check: impl FnOnce(T) -> Option<U>,
) -> Option<Option<U>> {
    match raw {
        None => Some(None),
        Some(raw) => check(raw).map(Some),
    }
}

/// Parses an absolute `http`/`https` URL with a host and no query, fragment or credentials;
/// a trailing `/` on the path is dropped (the root path stays `/`: a `Uri` cannot be emptier).
/// The message completes a sentence starting with the URL's role ("url ...").
pub(super) fn http_url(text: &str) -> Result<Uri, String> {
    let uri: Uri = text
        .parse()
        .map_err(|_| format!("`{text}` is not a URL (for example http://127.0.0.1:11434)"))?;
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
        return Err(format!("`{text}` must start with http:// or https://"));
    };
    if scheme != "http" && scheme != "https" {
        return Err(format!("`{text}` must start with http:// or https://"));
    }
    if authority.as_str().contains('@') {
        // Not echoed: the part before `@` is a credential.
        return Err("must not carry credentials; use `auth:` instead".into());
    }
    if authority.host().is_empty() {
        return Err(format!("`{text}` has no host"));
    }
    if text.contains(['?', '#']) {
        return Err(format!("`{text}` must not have a query or fragment"));
    }
    let path = match uri.path().trim_end_matches('/') {
        "" => "/",
        path => path,
    };
    Uri::builder()
        .scheme(scheme)
        .authority(authority.clone())
        .path_and_query(path)
        .build()
        .map_err(|_| format!("`{text}` is not a URL"))
}

// === impl Ctx ===

impl Ctx<'_> {
    pub fn error<T>(&mut self, at: &At<T>, message: impl Into<String>) {
        self.errors.push(ConfigError {
            file: self.source.to_path_buf(),
            line: at.line,
            column: at.column,
            message: message.into(),
        });
    }

    /// A file the table reads (certificate, key, CA, secret): relative paths start at the
    /// table's directory. Recorded, since a change to it is a change to the table.
    pub fn path(&mut self, path: &str) -> PathBuf {
        let path = self.dir.join(path);
        self.files.push(path.clone());
        path
    }

    /// Parses a dialect name; `what` says whose (`upstream \`models\``).
    pub fn dialect(&mut self, at: &At<String>, what: &str) -> Option<Dialect> {
        let dialect = Dialect::parse(&at.value);
        if dialect.is_none() {
            let names: Vec<_> = Dialect::ALL.iter().map(|d| d.as_str()).collect();
            let message = format!(
                "{what}: unknown dialect `{}`; speaks is one of {}",
                at.value,
                names.join(", ")
            );
            self.error(at, message);
        }
        dialect
    }

    /// Parses a duration; zero is refused unless `zero_ok` (a zero timeout would fail
    /// every request).
    pub fn duration(&mut self, at: &At<String>, what: &str, zero_ok: bool) -> Option<Duration> {
        match units::parse_duration(&at.value) {
            Ok(d) if d.is_zero() && !zero_ok => {
                self.error(at, format!("{what} must be more than 0"))
            }
            Ok(d) => return Some(d),
            Err(e) => self.error(at, format!("{what}: {e}")),
        }
        None
    }

    /// Parses a size; zero is refused (it would refuse every request body).
    pub fn size(&mut self, at: &At<String>, what: &str) -> Option<u64> {
        match units::parse_size(&at.value) {
            Ok(0) => self.error(at, format!("{what} must be more than 0")),
            Ok(n) => return Some(n),
            Err(e) => self.error(at, format!("{what}: {e}")),
        }
        None
    }

    /// A count that must be at least 1 (a zero limit would refuse everything).
    pub fn count(&mut self, at: Option<At<u64>>, what: &str, default: usize) -> usize {
        match at {
            None => default,
            Some(at) if at.value == 0 => {
                self.error(&at, format!("{what} must be more than 0"));
                default
            }
            Some(at) => usize::try_from(at.value).unwrap_or(usize::MAX),
        }
    }

    /// Resolves a secret. Messages name the variable or file, never the value.
    pub fn secret(&mut self, at: &At<raw::Secret>, what: &str) -> Option<(Secret, SecretSource)> {
        let (value, source) = match &at.value {
            raw::Secret {
                env: Some(var),
                file: None,
                value: None,
            } => match (self.env)(var) {
                Some(value) => (value, SecretSource::Env(var.clone())),
                None => {
                    self.error(
                        at,
                        format!("{what}: environment variable `{var}` is not set"),
                    );
                    return None;
                }
            },
            raw::Secret {
                env: None,
                file: Some(path),
                value: None,
            } => {
                let path = self.path(path);
                match std::fs::read_to_string(&path) {
                    Ok(text) => (text.trim_end().to_owned(), SecretSource::File(path)),
                    Err(e) => {
                        self.error(
                            at,
                            format!("{what}: cannot read secret file `{}`: {e}", path.display()),
                        );
                        return None;
                    }
                }
            }
            raw::Secret {
                env: None,
                file: None,
                value: Some(value),
            } => (value.clone(), SecretSource::Inline),
            _ => {
                let message = format!(
                    "{what}: a secret is exactly one of {{ env: VAR }}, {{ file: PATH }} or {{ value: \"...\" }}"
                );
                self.error(at, message);
                return None;
            }
        };
        if value.is_empty() {
            let empty = match &source {
                SecretSource::Env(var) => format!("environment variable `{var}` is empty"),
                SecretSource::File(path) => format!("secret file `{}` is empty", path.display()),
                SecretSource::Inline => "the inline secret is empty".to_owned(),
            };
            self.error(at, format!("{what}: {empty}"));
            return None;
        }
        Some((Secret::new(value), source))
    }
}
