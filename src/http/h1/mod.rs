//! HTTP/1.1 pieces both of lingo's connections use (the server for clients, `server::h1`,
//! and the client for upstreams, `upstream::h1`). Pure.
//!
//! - [`fields`]: a head's fields built into a map, and what they say about framing;
//! - [`raw`]: a response's raw header fields, for a response passed on unchanged;
//! - [`decode`]: a body's framing (by length, chunked, close-delimited) decoded from the
//!   bytes read;
//! - [`read`]: how much room a connection's next read gets.

pub mod decode;
pub mod fields;
pub mod raw;
pub mod read;

#[cfg(test)]
mod edges;
