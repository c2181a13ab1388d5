//! HTTP plumbing below every handler: the one boxed body type, batching frames already
//! available into one write, the idle timeout between frames, streaming key redaction,
//! HTTP/1.1 framing rules, path normalisation, futures joined on one task, and listening
//! sockets. Nothing here knows a route or a dialect.

pub mod batch;
pub mod body;
pub mod framing;
pub mod idle;
pub mod join;
pub mod path;
pub mod redact;
pub mod socket;
