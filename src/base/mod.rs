//! Leaf facts that every layer shares and that import nothing of lingo's: the dialects' names,
//! secrets that cannot print, duration and size units (one parse, one format), token usage and
//! its merge rule, unguessable ids, which serving thread this is, the time read once a poll, a
//! value boxed in place, base64 and address ranges (and, for tests that generate their
//! cases, deterministic picks).

pub mod base64;
pub mod cidr;
pub mod clock;
pub mod dialect;
pub mod ids;
#[cfg(test)]
pub mod picks;
pub mod pinned;
pub mod secret;
pub mod units;
pub mod usage;
pub mod worker;
