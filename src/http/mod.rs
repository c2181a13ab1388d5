//! HTTP plumbing below every handler: the one boxed body type, requests and responses with
//! the one way to read their header fields (`message`), the idle timeout between frames,
//! streaming key redaction, HTTP/1.1 framing rules, hop-by-hop fields, path normalisation,
//! futures joined on one task, a future polled only when its own waker fired, listening
//! sockets, and the buffer in which an HTTP/1.1 body's frames are joined into writes
//! (`write_buf`). Nothing here knows a route or a dialect.

pub mod body;
pub mod framing;
pub mod gated;
pub mod h1;
pub mod hop;
pub mod idle;
pub mod join;
pub mod message;
pub mod path;
pub mod redact;
pub mod socket;
pub mod upgrade;
pub mod write_buf;
