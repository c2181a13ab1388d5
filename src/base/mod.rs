//! Leaf facts that every layer shares and that import nothing of lingo's: the dialects' names,
//! secrets that cannot print, duration and size units (one parse, one format), token usage and
//! its merge rule, unguessable ids, which serving thread this is, a value boxed in place.

pub mod dialect;
pub mod ids;
pub mod pinned;
pub mod secret;
pub mod units;
pub mod usage;
pub mod worker;
