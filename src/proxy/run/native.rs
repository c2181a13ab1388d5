//! Native clients over a chat-completions upstream, through the one translation
//! driver: `/api/chat`, `/api/generate`, `/api/embed` and `/api/embeddings`.
//!
//! The I/O left here is what the pure translators are handed: the client's body, the clock
//! (a [`Now`] reading the wall clock and the time since the request arrived), ids for history
//! tool calls without one, and the log line for options the upstream is not sent. A request
//! with nothing to generate (or embed) gets a response without asking the upstream, as natively.

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::drive::{run, streaming, target};
use super::shared::{json, read_body};
use crate::base::ids;
use crate::error::ProxyError;
use crate::http::body::Body;
use crate::http::message::{HeaderView, Request, Response};
use crate::proxy::exchange::Exchange;
use crate::translate::Translation;
use crate::translate::models::rfc3339_nanos;
use crate::translate::native::{self, Embed, Generation, NativeError, Now, Stamp, Translated};

type ResponseResult = Result<Response, ProxyError>;

/// Serves `/api/chat`.
pub async fn chat(x: &Exchange<'_>, req: Request) -> ResponseResult {
    let now = clock(Instant::now());
    let (head, body) = req.into_parts();
    let body = read_body(body, x.route.max_body).await?;
    let mut call_ids = || format!("call_{}", &ids::random_hex()[..24]);
    let request = native::chat::request(&body, x.route.extras, &mut call_ids).map_err(refused)?;
    generation(x, head.headers(), Generation::chat(request, now)).await
}

/// Serves `/api/generate`.
pub async fn generate(x: &Exchange<'_>, req: Request) -> ResponseResult {
    let now = clock(Instant::now());
    let (head, body) = req.into_parts();
    let body = read_body(body, x.route.max_body).await?;
    let request = native::generate::request(&body, x.route.extras).map_err(refused)?;
    generation(x, head.headers(), Generation::generate(request, now)).await
}

/// Serves `/api/embed` (`legacy: false`) and `/api/embeddings` (`legacy: true`).
pub async fn embed(x: &Exchange<'_>, req: Request, legacy: bool) -> ResponseResult {
    let now = clock(Instant::now());
    let (head, body) = req.into_parts();
    let body = read_body(body, x.route.max_body).await?;
    let t = if legacy {
        Embed::legacy(native::embed::legacy_request(&body).map_err(refused)?, now)
    } else {
        Embed::new(native::embed::request(&body).map_err(refused)?, now)
    };
    if let Some(empty) = t.empty() {
        // The model must still be one this route can serve.
        target(x, t.model(), Embed::UPSTREAM)?;
        return Ok(json(empty));
    }
    run(x, head.headers(), t).await
}

/// Runs a chat or generate translation, or responds to a load-only request itself.
async fn generation(x: &Exchange<'_>, headers: HeaderView<'_>, t: Generation) -> ResponseResult {
    log_dropped(t.request());
    if t.request().load_only() {
        target(x, t.model(), Generation::UPSTREAM)?;
        let response = t.load_response();
        if t.streams() {
            return Ok(streaming(Body::full(response), Generation::STREAM_TYPE));
        }
        return Ok(json(response));
    }
    run(x, headers, t).await
}

/// Options the upstream is not sent are logged, so an operator sees what a client asked for.
fn log_dropped(request: &Translated) {
    if !request.dropped().is_empty() {
        tracing::info!(
            options = %request.dropped().join(", "),
            "native options not sent to the chat-completions upstream"
        );
    }
}

/// The wall clock and the time since `started`, for the responses' `created_at` and durations.
fn clock(started: Instant) -> Now {
    Arc::new(move || Stamp {
        created_at: rfc3339_nanos(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default(),
        ),
        elapsed: started.elapsed(),
    })
}

/// A native request lingo refuses: rendered `{"error": ...}` with the route's (native)
/// dialect; every refusal of the native translators is a 400.
fn refused(err: NativeError) -> ProxyError {
    ProxyError::Invalid {
        message: err.message,
        param: None,
    }
}
