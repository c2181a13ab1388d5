//! lingo: a protocol-translating reverse proxy for model servers and web-data APIs.
//!
//! # Layout
//!
//! - [`cli`]: argv to a [`cli::Command`].
//! - [`config`]: `proxy.yaml` -> raw serde structs -> a validated [`table::RouteTable`];
//!   `lingo check` runs exactly this path.
//! - [`table`], [`router`]: the compiled table and how a path finds its route.
//! - [`reload`]: the one `ArcSwap` holding the live table; file watch and SIGHUP.
//! - [`server`]: listeners, TLS, hyper connections, idle and graceful shutdown; [`limits`]:
//!   connection and in-flight pools per listener, header limits.
//! - [`service`]: one request's life cycle (route, auth, dispatch, access log).
//! - [`passthrough`], [`websocket`], [`rewrite`]: forwarding unchanged, tunnelling
//!   upgrades, re-basing web-data links.
//! - [`translate`]: the pure translators (chat, completions, embeddings, models), the NDJSON
//!   line framer and the SSE frames; [`inference`]: their I/O shell (alias resolution, fan-out,
//!   `Reframe`, native aliases).
//! - [`mock`]: the built-in deterministic backend (`mock:` upstreams, `lingo mock`).
//! - [`framing`], [`path`], [`auth`], [`ids`], [`splice`]: HTTP/1.1 framing rules, path
//!   normalisation, client keys, unguessable ids, one JSON value replaced in place.
//! - [`upstream`]: pooled clients and the header rules towards upstreams.
//! - [`error`], [`dialect`]: what can go wrong, and how each dialect is told.
//! - [`body`], [`timeout`], [`telemetry`]: body plumbing, idle timeouts, access log.
//! - [`admin`], [`metrics`]: `/healthz`, `/readyz`, `/metrics`, and what is counted.
//!
//! # A request's life
//!
//! accept (TLS?) -> hyper -> [`service::handle`]: snapshot the table once -> normalise the
//! path ([`path`]) -> route -> client key ([`auth`]) -> route checks (translator, model
//! management, body size) -> a translator for the endpoint, or pass-through, or a WebSocket
//! tunnel -> answer streamed back through the idle timeout and the access-log counter.

pub mod admin;
pub mod auth;
pub mod base;
pub mod cli;
pub mod config;
pub mod error;
pub mod http;
pub mod limits;
pub mod mock;
pub mod observe;
pub mod proxy;
pub mod reload;
pub mod runtime;
pub mod server;
pub mod table;
pub mod translate;
pub mod upstream;
