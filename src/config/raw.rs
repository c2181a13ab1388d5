//! `proxy.yaml` as written: serde structs that mirror the file, nothing resolved yet.
//!
//! This is the only module that knows the YAML crate (serde-saphyr), so moving to another one
//! is a change to this file alone. Every struct denies unknown fields, so a misspelt key is an
//! error rather than a silently ignored setting, and duplicate mapping keys are rejected by the
//! parser. Values that [`compile`](super::compile) checks later are wrapped in [`At`] so its
//! errors can point at a line and column too. Durations, sizes, URLs and dialects stay strings
//! here: their rules (and messages) live in `compile`, not in serde.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_saphyr::MessageFormatter;

/// A value and where it starts in the file (1-based; 0 when unknown).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct At<T> {
    pub value: T,
    pub line: usize,
    pub column: usize,
}

/// A YAML mapping in file order (upstreams are listed in the order they were written).
#[derive(Debug)]
pub struct Map<V>(pub Vec<(At<String>, V)>);

/// A syntax or shape error: the file is not YAML, or not the shape of a route table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    pub listen: Option<At<Vec<At<Listener>>>>,
    pub clients: Option<Vec<At<Client>>>,
    pub upstreams: Option<Map<At<Upstream>>>,
    pub models: Option<Map<At<Model>>>,
    pub routes: Option<Vec<At<Route>>>,
    pub limits: Option<Limits>,
    /// Where the clients' quota counters are shared by replicas.
    pub quota_store: Option<At<QuotaStore>>,
    /// `owned_by` of every model `/v1/models` lists.
    pub owned_by: Option<String>,
    pub admin: Option<At<Admin>>,
}

/// Where `/healthz`, `/readyz` and `/metrics` are served, and whether they need a key.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Admin {
    pub addr: Option<At<String>>,
    pub require_key: Option<At<bool>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Listener {
    pub addr: At<String>,
    pub tls: Option<At<Tls>>,
    pub public_url: Option<At<String>>,
    /// Serving beyond loopback with no client keys is meant (an open proxy).
    pub allow_open: Option<At<bool>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tls {
    pub cert: String,
    pub key: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Client {
    pub name: At<String>,
    pub key: At<Secret>,
    /// What webhooks relayed to this client are signed with.
    pub webhook_secret: Option<At<Secret>>,
    /// Its rate limits and budgets.
    pub quota: Option<Vec<At<Limit>>>,
}

/// `clients[].quota[]`: one unit key with its amount, and `per`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limit {
    pub requests: Option<At<u64>>,
    pub tokens: Option<At<u64>>,
    pub input_tokens: Option<At<u64>>,
    pub output_tokens: Option<At<u64>>,
    pub credits: Option<At<u64>>,
    pub per: Option<At<String>>,
    pub capacity: Option<At<u64>>,
    pub shadow: Option<bool>,
    pub on_store_error: Option<At<String>>,
    pub max_reservation: Option<At<u64>>,
    pub route: Option<At<String>>,
    pub model: Option<At<String>>,
}

/// `quota_store:`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuotaStore {
    pub redis: At<String>,
    pub timeout: Option<At<String>>,
    pub cluster: Option<bool>,
}

/// `{ env: VAR }`, `{ file: PATH }` or `{ value: "..." }`; "exactly one" is checked later so
/// the message can say so in plain words.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Secret {
    pub env: Option<String>,
    pub file: Option<String>,
    pub value: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Upstream {
    pub url: Option<At<String>>,
    pub mock: Option<At<Mock>>,
    /// Several servers instead of one `url:` or `mock:`.
    pub backends: Option<At<Vec<At<Backend>>>>,
    /// `least-loaded`, or `{ sticky: { header: NAME } }`.
    pub balance: Option<At<serde_json::Value>>,
    pub health: Option<At<Health>>,
    /// A share of the requests in flight: `20%`.
    pub retry_budget: Option<At<String>>,
    pub speaks: At<String>,
    pub timeouts: Option<Timeouts>,
    pub auth: Option<At<Auth>>,
    /// How https is verified: an extra CA, or (explicitly) not at all.
    pub tls: Option<At<UpstreamTls>>,
    /// Speak HTTP/2 only (h2c with prior knowledge on http:// URLs).
    pub http2: Option<At<bool>>,
    /// Its job webhooks relayed by lingo.
    pub webhooks: Option<At<Webhooks>>,
}

/// `upstreams.<name>.webhooks`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Webhooks {
    pub relay: Option<At<bool>>,
    pub receiver: Option<At<String>>,
    pub verify: Option<At<Secret>>,
    pub sign: Option<At<Secret>>,
    pub seal: Option<At<Secret>>,
    pub retry: Option<At<Vec<At<String>>>>,
    pub timeout: Option<At<String>>,
    pub allow: Option<At<Vec<At<String>>>>,
    pub store: Option<At<String>>,
    pub firecrawl_signature: Option<At<bool>>,
}

/// `upstreams.<name>.backends[]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Backend {
    pub url: Option<At<String>>,
    pub mock: Option<At<Mock>>,
    pub weight: Option<At<u32>>,
    pub priority: Option<At<u32>>,
}

/// `upstreams.<name>.health`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Health {
    pub interval: Option<At<String>>,
    pub eject_after: Option<At<u32>>,
    pub eject_for: Option<At<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamTls {
    pub ca: Option<At<String>>,
    #[serde(default)]
    pub insecure_skip_verify: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timeouts {
    pub connect: Option<At<String>>,
    pub first_byte: Option<At<String>>,
    pub idle: Option<At<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Auth {
    pub header: Option<At<String>>,
    pub bearer: Option<At<Secret>>,
    pub value: Option<At<Secret>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mock {
    pub tokens: Option<u32>,
    pub token_delay: Option<At<String>>,
    pub first_token_delay: Option<At<String>>,
    pub embedding_size: Option<u32>,
    pub page_delay: Option<At<String>>,
    pub webhook_retry: Option<At<Vec<At<String>>>>,
    pub webhook_timeout: Option<At<String>>,
    pub webhook_secret: Option<At<Secret>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    pub upstream: At<String>,
    pub model: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    pub path: Option<At<String>>,
    pub prefix: Option<At<String>>,
    pub speaks: Option<At<String>>,
    pub to: At<String>,
    #[serde(default)]
    pub allow_model_management: bool,
    pub max_body: Option<At<String>>,
    /// Default native `options` for a translating route (e.g. `num_ctx`).
    pub options: Option<At<serde_json::Map<String, serde_json::Value>>>,
    /// Native clients over chat-completions: `pass`, `drop` or `refuse` native-only options.
    pub extra_options: Option<At<String>>,
    /// WebSocket upgrades are tunnelled on every path of the route (else only the web-data
    /// job watchers are).
    #[serde(default)]
    pub websocket: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    pub max_body: Option<At<String>>,
    pub drain: Option<At<String>>,
    pub max_line: Option<At<String>>,
    pub max_response: Option<At<String>>,
    pub max_header_bytes: Option<At<String>>,
    pub max_headers: Option<At<u64>>,
    pub header_timeout: Option<At<String>>,
    pub idle_timeout: Option<At<String>>,
    pub body_timeout: Option<At<String>>,
    pub max_connections: Option<At<u64>>,
    pub max_in_flight: Option<At<u64>>,
}

/// Parses the text of a route table. serde stops at the first shape error, so this reports
/// one (told at the line itself when it comes of a mis-indented line: `indent`); the
/// semantic errors `compile` finds afterwards are all reported together.
pub fn parse(text: &str) -> Result<File, SyntaxError> {
    let is_blank = |l: &str| l.trim().is_empty() || l.trim_start().starts_with('#');
    if text.lines().all(is_blank) {
        return Err(SyntaxError {
            line: 0,
            column: 0,
            message: "the file is empty; it needs at least `listen:` and `routes:`".into(),
        });
    }
    let error = match from_str(text) {
        Ok(file) => return Ok(file),
        Err(error) => error,
    };
    let parses = |text: &str| from_str(text).err().map(|e| e.line);
    match super::indent::diagnose(text, error.line, parses) {
        Some(m) => Err(SyntaxError {
            line: m.line,
            column: m.column,
            message: m.message,
        }),
        None => Err(error),
    }
}

/// The YAML reader's verdict on `text`.
fn from_str(text: &str) -> Result<File, SyntaxError> {
    let options = serde_saphyr::options! {
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
        with_snippet: false,
    };
    serde_saphyr::from_str_with_options(text, options).map_err(|e| {
        let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
        // The user formatter words the reason without the location (we print our own) and
        // without hints aimed at developers of the YAML crate.
        let message = serde_saphyr::UserMessageFormatter.format_message(e.without_snippet());
        SyntaxError {
            line: line as usize,
            column: column as usize,
            message: message.replace(char::is_control, " "),
        }
    })
}

// === impl At ===

impl<T> At<T> {
    /// Just the place, for reporting on a value that has been taken apart.
    pub fn place(&self) -> At<()> {
        At {
            value: (),
            line: self.line,
            column: self.column,
        }
    }
}

/// The place comes from the YAML reader (serde-saphyr's `Spanned`). A deserializer that is
/// not human-readable has no place to give (the configuration reference's test walks the
/// table's keys with one): the value alone, at line 0.
impl<'de, T: Deserialize<'de>> Deserialize<'de> for At<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if !deserializer.is_human_readable() {
            let value = T::deserialize(deserializer)?;
            return Ok(At {
                value,
                line: 0,
                column: 0,
            });
        }
        let spanned = serde_saphyr::Spanned::<T>::deserialize(deserializer)?;
        Ok(At {
            value: spanned.value,
            line: spanned.referenced.line() as usize,
            column: spanned.referenced.column() as usize,
        })
    }
}

// === impl Map ===

impl<V> Default for Map<V> {
    fn default() -> Self {
        Map(Vec::new())
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Map<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MapVisitor<V>(PhantomData<V>);

        impl<'de, V: Deserialize<'de>> Visitor<'de> for MapVisitor<V> {
            type Value = Map<V>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping of names")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Map<V>, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(Map(entries))
            }
        }

        deserializer.deserialize_map(MapVisitor(PhantomData))
    }
}
