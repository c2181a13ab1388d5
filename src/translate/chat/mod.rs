//! Chat completions <-> native `/api/chat`.

mod messages;
mod native;
mod request;
mod response;
mod translation;

pub use request::{ChatRequest, MAX_N, RouteDefaults, request};
pub use response::{ChatStream, StreamError, Usage, completion, upstream_error};
pub use translation::Chat;

#[cfg(test)]
mod tests;
