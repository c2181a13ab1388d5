//! Leaf facts that every layer shares and that import nothing of lingo's: the dialects' names,
//! secrets that cannot print, duration and size units (one parse, one format), token usage and
//! its merge rule, unguessable ids, which serving thread this is, the time read once a poll, a
//! value boxed in place (and, for tests that generate their cases, deterministic picks).

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
