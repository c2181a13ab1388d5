//! lingo: a protocol-translating reverse proxy for model servers and web-data APIs.
//!
//! # Layout
//!
//! Each module uses only the ones above it in this list, never one below: the arrows
//! between modules form no cycle.
//!
//! - [`base`]: leaf facts, no lingo imports: dialect names, secrets that cannot print,
//!   duration and size units, token usage and its merge rule, unguessable ids, the time
//!   read once a poll, a value built in its box.
//! - [`http`]: plumbing: the one boxed [`http::body::Body`], requests and responses with the
//!   one way to read their header fields ([`http::message`]: a map, or kept raw), the
//!   idle timeout, streaming key redaction, HTTP/1.1 framing rules, path normalisation,
//!   futures joined on one task, listening sockets, a client connection handed to a
//!   WebSocket after its 101, the HTTP/1.1 pieces lingo's server and client share (fields,
//!   body framing), the write buffer a connection joins frames in ([`http::write_buf`]).
//! - [`translate`]: the pure translators (sans-IO: bytes in, bytes out; ids and clocks passed
//!   in): the [`translate::Translation`] trait every endpoint implements (chat, completions,
//!   embeddings, native clients over chat-completions), web-data v1 over v2, the NDJSON
//!   framer, SSE frames, the one-pass JSON readers beside serde, link re-basing, in-place
//!   JSON splicing.
//! - [`error`]: [`error::ProxyError`], every error lingo responds with, with its status.
//! - [`table`]: the compiled, immutable route table and its router; knows nothing of config.
//! - [`config`]: `proxy.yaml` -> raw serde structs -> checked -> a [`table::RouteTable`]
//!   (one way); `lingo check` runs exactly this path.
//! - [`auth`], [`limits`]: client keys; connection and in-flight pools, header limits, a
//!   connection's idle and head timer.
//! - [`mock`]: the built-in deterministic backend (`mock:` upstreams, `lingo mock`).
//! - [`upstream`]: pooled clients (lingo's own HTTP/1.1 client for plain `http://`),
//!   connecting, the header rules towards upstreams.
//! - [`observe`]: one record per request, told as the access line and as metrics when its
//!   response ends.
//! - [`webhooks`]: the webhook relay: job webhooks pointed at lingo's receiver, events kept
//!   in a store (an embedded file, or Redis) and delivered, signed, to the clients' URLs.
//! - [`quota`]: rate limits and budgets per client: a request's reservation and its
//!   settlement, counters held in the process or shared by replicas in Redis.
//! - [`runtime`], [`reload`]: what one table is at run time (a [`runtime::Snapshot`] of
//!   peers: settings, client, what was learnt), and the one `ArcSwap` that swaps it (file
//!   watch, SIGHUP).
//! - [`admin`]: `/healthz`, `/readyz`, `/metrics`.
//! - [`proxy`]: a request's life (below).
//! - [`server`]: listeners, worker threads, TLS, connections (lingo's own HTTP/1.1 server,
//!   hyper's HTTP/2), graceful drain; [`cli`]: argv.
//!
//! The binary adds `main` (exit codes) and `allocator` (mimalloc: the one module with
//! `unsafe`, which the library forbids).
//!
//! # A request's life
//!
//! accept (TLS?) -> the connection (HTTP/1.1: `server::h1`; HTTP/2: hyper) ->
//! [`proxy::pipeline::handle`]: snapshot the table once ->
//! **admit** (in-flight slot; lingo's own endpoints first) -> **route** (normalise the path,
//! find the route: from here errors speak the route's dialect) -> **authenticate** (header
//! limits, client key) -> **plan** ([`proxy::plan::Plan`], decided once: translate an
//! endpoint, tunnel a WebSocket, list or rename native aliases, or pass through) -> for a
//! client with limits, its likely cost reserved ([`proxy::limited`]) -> **run**
//! ([`proxy::run`]: the translation driver, pass-through, ...) -> **respond**
//! ([`proxy::respond`], the only place an error becomes a response) -> the response streams
//! back through the idle timeout and [`observe::Ended`], which writes the request's record
//! when it ends (and, for a limited client, [`quota::settling`], which settles the
//! reservation).

// No `unsafe` in the library; the binary's allocator is the one place that needs it.
#![forbid(unsafe_code)]

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
pub mod quota;
pub mod reload;
pub mod runtime;
pub mod server;
pub mod table;
pub mod translate;
pub mod upstream;
pub mod webhooks;
