//! Running a plan: each way a request can go, one module each.
//!
//! [`pass`] forwards unchanged; [`tunnel`] tunnels a WebSocket; [`rename`] and [`tags`] serve
//! model aliases on native routes; [`chat`], [`completions`], [`embeddings`] and [`models`]
//! translate, re-framing streams through [`reframe`]; [`shared`] is what they all use.

pub mod chat;
pub mod completions;
pub mod embeddings;
pub mod models;
pub mod pass;
pub mod reframe;
pub mod rename;
pub mod shared;
pub mod tags;
pub mod tunnel;
