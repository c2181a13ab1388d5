//! The compiled route table: immutable, validated, and what the hot-reload `ArcSwap` holds.
//!
//! Nothing here is parsed at request time: `config::compile` resolves every name, secret,
//! duration and URL once, so a request only looks things up.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hyper::Uri;
use hyper::header::{HeaderName, HeaderValue};

use crate::base::dialect::Dialect;
use crate::base::ids::FnvMap;
use crate::base::secret::{Secret, SecretSource};
use crate::translate::native::Extras;
use crate::translate::splice::LiteralScan;

pub mod quota;
pub mod router;
pub mod webhooks;

pub use quota::{Limit, QuotaStore};
pub use webhooks::{StoreAt, WebhookSpec};

/// Default request body limit: the web-data API itself refuses JSON bodies over 10 MB.
pub const DEFAULT_MAX_BODY: u64 = 10 * 1024 * 1024;
/// Default time a graceful shutdown waits for requests in flight.
pub const DEFAULT_DRAIN: Duration = Duration::from_secs(30);
/// Default cap on one upstream NDJSON line: far above any token event, small enough that a
/// runaway upstream cannot grow lingo's buffer without bound.
pub const DEFAULT_MAX_LINE: u64 = 1024 * 1024;
/// Default cap on an upstream response lingo reads whole (translated non-streamed responses,
/// web-data responses whose links it re-bases): above any real response, a bound on memory.
pub const DEFAULT_MAX_RESPONSE: u64 = 64 * 1024 * 1024;
/// Default upstream timeouts.
pub const DEFAULT_MAX_HEADER_BYTES: u64 = 64 * 1024;
pub const DEFAULT_MAX_HEADERS: usize = 100;
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(30);
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(75);
/// nginx's `client_body_timeout`.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(60);
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;
pub const DEFAULT_MAX_IN_FLIGHT: usize = 10_000;
pub const DEFAULT_CONNECT: Duration = Duration::from_secs(5);
pub const DEFAULT_FIRST_BYTE: Duration = Duration::from_secs(300);
pub const DEFAULT_IDLE: Duration = Duration::from_secs(120);

/// A validated route table.
#[derive(Debug)]
pub struct RouteTable {
    /// The file this table was loaded from (for logs and `lingo check`).
    pub source: PathBuf,
    pub listeners: Vec<Listener>,
    /// Client keys; empty means an open proxy.
    pub clients: Vec<ClientKey>,
    /// Upstreams by name, in file order.
    pub upstreams: Vec<Arc<Upstream>>,
    /// Client-facing model name -> where it goes.
    pub models: FnvMap<String, ModelAlias>,
    /// The aliases' searchers, for tables with a few (see `translate::splice::may_name`).
    pub alias_literals: Option<LiteralScan>,
    /// Routes in file order; see [`RouteTable::find`] for precedence.
    pub routes: Vec<Route>,
    pub limits: Limits,
    /// Where the clients' quota counters are shared; `None`: held in the process.
    pub quota_store: Option<QuotaStore>,
    pub admin: Admin,
    /// The `owned_by` of the models `/v1/models` lists (`owned_by:` in the table).
    pub owned_by: String,
    /// Non-fatal findings (`lingo check` prints them; reload logs them).
    pub warnings: Vec<String>,
    /// Every file the table was built from besides itself (certificates, keys, CA files,
    /// `file:` secrets): reload watches them too, so a renewed certificate lands by itself.
    pub files: Vec<PathBuf>,
}

/// One socket lingo accepts connections on.
#[derive(Debug)]
pub struct Listener {
    pub addr: SocketAddr,
    /// rustls server config (certificate and key already read and checked), ALPN h2 + http/1.1.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The address clients use to reach lingo (`https://proxy.example.com`), for rewriting
    /// absolute URLs in upstream responses. When absent it is built from the listener's scheme
    /// and the client's `Host` header.
    pub public_url: Option<Uri>,
}

/// A named client key.
#[derive(Debug)]
pub struct ClientKey {
    pub name: String,
    pub key: Secret,
    /// Where the key came from, for `lingo check` (never the key itself).
    pub source: SecretSource,
    /// What webhooks relayed to this client are signed with (`webhook_secret`).
    pub webhook_secret: Option<Secret>,
    /// Its rate limits and budgets (`quota:`), none when empty.
    pub quota: Arc<[Limit]>,
}

/// Something lingo forwards to.
#[derive(Debug)]
pub struct Upstream {
    /// Shared, not copied, by each request's access record and metric labels.
    pub name: Arc<str>,
    /// Where it is served: one backend for `url:` or `mock:`, else `backends:` in file order.
    pub backends: Vec<Backend>,
    /// The URLs' own path prefix (no trailing `/`; empty for the mock), the same for every
    /// backend: prepended to what lingo sends, and carried by the links the upstream writes.
    pub base_path: String,
    pub speaks: Dialect,
    pub timeouts: Timeouts,
    pub auth: Option<Auth>,
    /// How https URLs are verified (bundled roots, plus an extra CA, or not at all).
    pub tls: Arc<rustls::ClientConfig>,
    /// HTTP/2 only: prior knowledge on http:// URLs, `h2` by ALPN on https://.
    pub http2: bool,
    /// Its job webhooks relayed by lingo (`webhooks:`; web-data upstreams only).
    pub webhooks: Option<Arc<WebhookSpec>>,
    /// How a request's backend is chosen among several (`balance:`).
    pub balance: Balance,
    /// When a backend is taken out of service and probed (`health:`).
    pub health: Health,
    /// Retries in flight allowed, as a share of the requests in flight (`retry_budget:`).
    pub retry_budget: f64,
}

/// One server of an upstream.
#[derive(Debug)]
pub struct Backend {
    pub target: Target,
    /// The `Host` it is addressed by (see [`Target::host`]), made once.
    pub host: HeaderValue,
    /// Its share of the requests against the others of its priority (at least 1).
    pub weight: u32,
    /// 0 is served first; a higher one only while no backend of a lower one is in service.
    pub priority: u32,
    /// How logs, metrics and `lingo check` name it: its URL, or `mock` and its place.
    pub label: Arc<str>,
}

/// How a backend is chosen for a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Balance {
    /// The less loaded of two picked at random (requests in flight over weight).
    LeastLoaded,
    /// The same backend for the same session (this header's value, else the conversation's
    /// first messages), unless it is much busier than the others.
    Sticky { header: HeaderName },
}

/// When a backend is taken out of service, and how it is probed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Health {
    /// Time between two probes of each backend.
    pub interval: Duration,
    /// Consecutive failures (connect errors, timeouts, 5xx) that eject a backend.
    pub eject_after: u32,
    /// How long a first ejection lasts; each one after it in a row lasts twice the last, up to
    /// [`MAX_EJECTION`].
    pub eject_for: Duration,
}

pub const DEFAULT_HEALTH: Health = Health {
    interval: Duration::from_secs(5),
    eject_after: 3,
    eject_for: Duration::from_secs(30),
};
/// The longest an ejection lasts, however often a backend failed.
pub const MAX_EJECTION: Duration = Duration::from_secs(300);
pub const DEFAULT_RETRY_BUDGET: f64 = 0.2;

/// Where an upstream is.
#[derive(Debug)]
pub enum Target {
    /// `url:` — scheme `http` or `https`, authority, and an optional base path (no query).
    Url(Uri),
    /// `mock:` — the built-in deterministic backend, run inside lingo.
    Mock(MockSpec),
}

/// Knobs of the built-in mock backend (`mock:` in an upstream).
#[derive(Debug, Clone, Default)]
pub struct MockSpec {
    pub tokens: Option<u32>,
    pub token_delay: Option<Duration>,
    pub first_token_delay: Option<Duration>,
    pub embedding_size: Option<u32>,
    /// Delay before each page of a web-data job (crawl, batch scrape, extract).
    pub page_delay: Option<Duration>,
    /// The successive delays between a webhook event's attempts (at most
    /// [`MAX_WEBHOOK_RETRIES`]).
    pub webhook_retry: Option<Vec<Duration>>,
    /// The time a webhook receiver has to response.
    pub webhook_timeout: Option<Duration>,
    /// The secret webhook deliveries are signed with.
    pub webhook_secret: Option<Secret>,
}

/// The most retries a mock's webhook schedule may have: a mock is for tests, and eight
/// retries already cover any schedule worth rehearsing.
pub const MAX_WEBHOOK_RETRIES: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// TCP (and TLS) connect.
    pub connect: Duration,
    /// From sending the request to the response head.
    pub first_byte: Duration,
    /// Longest silence between two body chunks of the response.
    pub idle: Duration,
}

/// The credential lingo injects on every request to an upstream.
#[derive(Debug)]
pub struct Auth {
    /// Header to set (default `Authorization`).
    pub header: HeaderName,
    /// The full header value (`Bearer <secret>` for `bearer:`), marked sensitive.
    pub value: HeaderValue,
    /// The bare key (without a `Bearer ` scheme word), for `Sec-WebSocket-Protocol`.
    pub key: Secret,
    /// Where the key came from, for `lingo check` (never the key itself).
    pub source: SecretSource,
}

/// A client-facing model name.
#[derive(Debug, Clone)]
pub struct ModelAlias {
    /// Index into [`RouteTable::upstreams`].
    pub upstream: usize,
    /// The model name the upstream knows.
    pub model: String,
}

/// How a route matches a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathMatch {
    /// `path:` — the whole path, exactly.
    Exact(String),
    /// `prefix:` — whole leading segments; stored without a trailing `/` (`/` itself is "").
    Prefix(String),
}

#[derive(Debug)]
pub struct Route {
    pub matcher: PathMatch,
    /// `matcher` as the access line and the metric labels say it, written once.
    pub label: Arc<str>,
    /// The client's dialect on this route (the upstream's when `speaks:` was left out).
    pub speaks: Dialect,
    /// Index into [`RouteTable::upstreams`].
    pub upstream: usize,
    /// Native pass-through only: let `/api/pull`, `/api/delete`, ... through.
    pub allow_model_management: bool,
    /// WebSocket upgrades are tunnelled on every path (`websocket: true`); without it, only
    /// the web-data job watchers are (see `proxy::plan::tunnels`).
    pub websocket: bool,
    /// Request body limit for this route.
    pub max_body: u64,
    /// Native `options` this route sends unless the client sets them (translating routes).
    pub options: serde_json::Map<String, serde_json::Value>,
    /// Native clients over a chat-completions upstream: what becomes of the native-only
    /// options (`top_k`, `num_ctx`, ...) that upstream may not take (`extra_options`).
    pub extras: Extras,
    /// Line in the file, for logs and `check`.
    pub line: usize,
}

/// lingo's own endpoints (`admin:`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Admin {
    /// A separate listener for `/healthz`, `/readyz` and `/metrics`; when set, `/readyz` and
    /// `/metrics` are served there only.
    pub addr: Option<SocketAddr>,
    /// `/readyz` and `/metrics` need a client key (`/healthz` never does).
    pub require_key: bool,
}

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Default request body limit (`limits.max_body`).
    pub max_body: u64,
    /// How long a graceful shutdown waits for requests in flight (`limits.drain`).
    pub drain: Duration,
    /// Longest NDJSON line accepted from an upstream while translating (`limits.max_line`).
    pub max_line: u64,
    /// Longest upstream response lingo reads whole (`limits.max_response`).
    pub max_response: u64,
    /// Request header bytes (names, values and line overhead) a request may carry (431).
    pub max_header_bytes: u64,
    /// Header fields a request may carry (431).
    pub max_headers: usize,
    /// Time a client has to send a request's headers (slow-loris guard).
    pub header_timeout: Duration,
    /// How long a connection with no request in flight is kept open.
    pub idle_timeout: Duration,
    /// The longest silence while a request's body is read (408 past it).
    pub body_timeout: Duration,
    /// Open connections per listener; more get a 503 and are closed.
    pub max_connections: usize,
    /// Requests in flight per listener; more get a 503 with `Retry-After`.
    pub max_in_flight: usize,
}

// === impl RouteTable ===

impl Target {
    /// The `Host` an upstream is addressed by: its URL's authority (`lingo-mock` for the mock,
    /// which is reached without a socket).
    pub fn host(&self) -> HeaderValue {
        let host = match self {
            Target::Url(uri) => uri.authority().and_then(|a| a.as_str().parse().ok()),
            Target::Mock(_) => None,
        };
        host.unwrap_or_else(|| HeaderValue::from_static("lingo-mock"))
    }
}

impl RouteTable {
    pub fn upstream(&self, index: usize) -> &Arc<Upstream> {
        &self.upstreams[index]
    }

    /// The route for a (normalised) request path: an exact match beats any prefix, a longer
    /// prefix beats a shorter one, and on a tie the first in the file wins.
    pub fn find(&self, path: &str) -> Option<&Route> {
        router::find(&self.routes, path)
    }

    /// The aliases a native client can use: those on native upstreams (a native request for
    /// an alias on another dialect's upstream is refused, so listing it would offer a name
    /// that fails).
    pub fn native_aliases(&self) -> impl Iterator<Item = (&str, &ModelAlias)> {
        self.models
            .iter()
            .filter(|(_, alias)| self.upstream(alias.upstream).speaks == Dialect::Native)
            .map(|(name, alias)| (name.as_str(), alias))
    }
}

// === impl PathMatch ===

impl PathMatch {
    /// Whether a request for exactly `path` would match.
    pub fn covers(&self, path: &str) -> bool {
        match self {
            PathMatch::Exact(p) => p == path,
            PathMatch::Prefix(p) => path
                .strip_prefix(p.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/')),
        }
    }
}

// === impl Route ===

impl Route {
    /// True when the client's dialect differs from the upstream's, so a translator is needed.
    pub fn translates(&self, upstream: &Upstream) -> bool {
        // A v2-only web-data client of an upstream that serves both versions just passes.
        let v2_on_both = self.speaks == Dialect::WebDataV2 && upstream.speaks == Dialect::WebData;
        self.speaks != upstream.speaks && !v2_on_both
    }
}

impl std::fmt::Display for PathMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathMatch::Exact(p) => write!(f, "path {p}"),
            PathMatch::Prefix(p) if p.is_empty() => f.write_str("prefix /"),
            PathMatch::Prefix(p) => write!(f, "prefix {p}"),
        }
    }
}
