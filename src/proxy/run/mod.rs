//! Running a plan: each way a request can go, one module each.
//!
//! [`pass`] forwards unchanged; [`tunnel`] tunnels a WebSocket; [`rename`] and [`tags`] serve
//! model aliases on native routes; [`translate`] drives every translation (chat,
//! completions, [`embeddings`], and [`native`] clients over a chat-completions upstream;
//! their model listings in [`native_models`]; web-data v1 clients over a v2-only upstream
//! in [`webdata`]),
//! re-framing streams through [`reframe`]; [`models`]
//! translates the model listings; [`shared`] is what they all use.

pub mod embeddings;
pub mod models;
pub mod native;
pub mod native_models;
pub mod pass;
pub mod reframe;
pub mod rename;
pub mod shared;
pub mod tags;
pub mod translate;
pub mod tunnel;
pub mod webdata;

use hyper::body::Incoming;
use hyper::{Request, Response};

use super::exchange::Exchange;
use super::plan::Plan;
use crate::error::ProxyError;
use crate::http::body::Body;
use crate::translate::Endpoint;

/// Runs the plan for one exchange.
pub async fn run(
    plan: Plan,
    x: &Exchange<'_>,
    req: Request<Incoming>,
) -> Result<Response<Body>, ProxyError> {
    match plan {
        Plan::Translate(Endpoint::ChatCompletions) => translate::chat(x, req).await,
        Plan::Translate(Endpoint::Completions) => translate::completions(x, req).await,
        Plan::Translate(Endpoint::Embeddings) => embeddings::handle(x, req).await,
        Plan::Translate(Endpoint::Models) => models::list(x).await,
        Plan::Translate(Endpoint::Model) => models::one(x, x.path()).await,
        Plan::Translate(Endpoint::NativeChat) => native::chat(x, req).await,
        Plan::Translate(Endpoint::NativeGenerate) => native::generate(x, req).await,
        Plan::Translate(Endpoint::NativeEmbed) => native::embed(x, req, false).await,
        Plan::Translate(Endpoint::NativeEmbeddings) => native::embed(x, req, true).await,
        Plan::Translate(Endpoint::NativeTags) => native_models::tags(x).await,
        Plan::Translate(Endpoint::NativeShow) => native_models::show(x, req).await,
        Plan::Translate(Endpoint::NativePs) => native_models::ps(),
        Plan::Translate(Endpoint::NativeVersion) => native_models::version(),
        Plan::Translate(Endpoint::WebDataV1) => webdata::v1(x, req).await,
        Plan::Tunnel => tunnel::proxy(x, req).await,
        Plan::ListTags => tags::handle(x, req).await,
        Plan::Rename => rename::handle(x, req).await,
        Plan::Pass => pass::forward(x, req).await,
    }
}
