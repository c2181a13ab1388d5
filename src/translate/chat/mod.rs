//! Chat completions <-> native `/api/chat`.

mod messages;
mod native;
mod request;
mod response;

pub use request::{ChatError, ChatRequest, MAX_N, RouteDefaults, request};
pub use response::{
    ChatStream, ResponseMeta, StreamError, Usage, completion, error_frame, upstream_error,
};

#[cfg(test)]
mod tests;
