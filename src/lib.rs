//! lingo: a protocol-translating reverse proxy for model servers and web-data APIs.
//!
//! # Layout
//!
//! - [`cli`]: argv to a [`cli::Command`].
//! - [`config`]: `proxy.yaml` -> raw serde structs -> a validated [`table::RouteTable`];
//!   `lingo check` runs exactly this path.
//! - [`table`], [`router`]: the compiled table and how a path finds its route.
//! - [`reload`]: the one `ArcSwap` holding the live table; file watch and SIGHUP.
//! - [`server`]: listeners, TLS, hyper connections, graceful shutdown.
//! - [`service`]: one request's life cycle (route, auth, dispatch, access log).
//! - [`passthrough`], [`websocket`], [`rewrite`]: forwarding unchanged, tunnelling
//!   upgrades, re-basing web-data links.
//! - [`upstream`]: pooled clients and the header rules towards upstreams.
//! - [`error`], [`dialect`]: what can go wrong, and how each dialect is told.
//! - [`body`], [`timeout`], [`telemetry`]: body plumbing, idle timeouts, access log.
//!
//! # A request's life
//!
//! accept (TLS?) -> hyper -> [`service::handle`]: snapshot the table once -> normalise the
//! path ([`path`]) -> route -> client key ([`auth`]) -> route checks (translator, model
//! management, body size) -> pass-through or WebSocket tunnel -> answer streamed back through
//! the idle timeout and the access-log counter.

pub mod auth;
pub mod body;
pub mod cli;
pub mod config;
pub mod dialect;
pub mod error;
pub mod ids;
pub mod inference;
pub mod mock;
pub mod passthrough;
pub mod path;
pub mod reload;
pub mod rewrite;
pub mod router;
pub mod server;
pub mod service;
pub mod table;
pub mod telemetry;
pub mod timeout;
pub mod translate;
pub mod upstream;
pub mod websocket;
