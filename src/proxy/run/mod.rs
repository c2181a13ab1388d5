//! Running a plan: each way a request can go, one module each.
//!
//! [`pass`] forwards unchanged; [`webhook_relay`] points a job's webhook at lingo first; [`tunnel`] tunnels a WebSocket; [`rename`] and [`tags`] serve
//! model aliases on native routes; [`drive`] drives every translation (chat,
//! completions, [`embeddings`], and [`native`] clients over a chat-completions upstream;
//! their model listings in [`native_models`]; web-data v1 clients over a v2-only upstream
//! in [`webdata`]),
//! re-framing streams through [`reframe`]; [`models`]
//! translates the model listings; [`shared`] is what they all use.

pub mod drive;
pub mod embeddings;
pub mod models;
pub mod native;
pub mod native_models;
pub mod pass;
pub mod reframe;
pub mod rename;
pub mod shared;
pub mod tags;
pub mod tunnel;
pub mod webdata;
pub mod webhook_relay;

use super::exchange::Exchange;
use super::plan::Plan;
use crate::base::pinned;
use crate::http::message::Request;
use crate::translate::Endpoint;
use crate::upstream::Sending;

/// One way of running a plan, boxed: the same boxed future as a sending to an upstream.
pub type Running<'a> = Sending<'a>;

/// Runs the plan for one exchange: the way's own future, boxed.
///
/// Each way is boxed on its own: unboxed, every request's state would be the size of the
/// largest way (a translation's) until its response's head. Not an `async fn`: its state
/// would hold the plan and the request beside the box, in every request's pipeline state.
pub fn run<'a>(plan: Plan, x: &'a Exchange<'_>, req: Request) -> Running<'a> {
    match plan {
        Plan::Translate(Endpoint::ChatCompletions) => pinned::boxed(|| drive::chat(x, req)),
        Plan::Translate(Endpoint::Completions) => pinned::boxed(|| drive::completions(x, req)),
        Plan::Translate(Endpoint::Embeddings) => pinned::boxed(|| embeddings::handle(x, req)),
        Plan::Translate(Endpoint::Models) => pinned::boxed(|| models::list(x)),
        Plan::Translate(Endpoint::Model) => pinned::boxed(|| models::one(x, x.path())),
        Plan::Translate(Endpoint::NativeChat) => pinned::boxed(|| native::chat(x, req)),
        Plan::Translate(Endpoint::NativeGenerate) => pinned::boxed(|| native::generate(x, req)),
        Plan::Translate(Endpoint::NativeEmbed) => pinned::boxed(|| native::embed(x, req, false)),
        Plan::Translate(Endpoint::NativeEmbeddings) => {
            pinned::boxed(|| native::embed(x, req, true))
        }
        Plan::Translate(Endpoint::NativeTags) => pinned::boxed(|| native_models::tags(x)),
        Plan::Translate(Endpoint::NativeShow) => pinned::boxed(|| native_models::show(x, req)),
        Plan::Translate(Endpoint::NativePs) => {
            pinned::boxed(|| std::future::ready(native_models::ps()))
        }
        Plan::Translate(Endpoint::NativeVersion) => {
            pinned::boxed(|| std::future::ready(native_models::version()))
        }
        Plan::Translate(Endpoint::WebDataV1) => pinned::boxed(|| webdata::v1(x, req)),
        Plan::Tunnel => pinned::boxed(|| tunnel::proxy(x, req)),
        Plan::ListTags => pinned::boxed(|| tags::handle(x, req)),
        Plan::Rename => pinned::boxed(|| rename::handle(x, req)),
        Plan::Relay => pinned::boxed(|| webhook_relay::job(x, req)),
        Plan::Pass => pinned::boxed(|| pass::forward_raw(x, req)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::body::Body;

    /// The size of the future `f` returns, read from its type: nothing is called.
    fn future_size<A, B, F: Future>(_: impl FnOnce(A, B) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// The ways a native pass-through runs, each boxed on its own by [`run`], fit in a block
    /// mimalloc serves from its fast path (at most 1 KiB), as the pipeline's state does.
    #[test]
    fn a_pass_throughs_ways_fit_a_small_block() {
        let ways = [
            ("pass", future_size(pass::forward_raw::<Body>)),
            ("rename", future_size(rename::handle)),
        ];
        for (way, size) in ways {
            assert!(size <= 1024, "{way}'s state is {size} bytes");
        }
    }
}
