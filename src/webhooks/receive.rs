//! The receiver: `POST /lingo/webhooks/<token>`, what the upstream sends a relayed job's
//! events to. The token says where the events go (it is all the authentication there is:
//! the upstream has no lingo key); with the upstream's `verify` secret, the signature is
//! checked on the raw body before anything is kept. The event is stored (durably) before
//! the response, within [`STORE_TIME`], well inside the 10 seconds the upstream waits; a
//! store that fails is a 503, so the upstream sends it again. An event whose `webhookId`
//! was stored before gets a 200 and stored once.

use std::time::Duration;

use bytes::Bytes;
use hyper::StatusCode;
use serde_json::{Map, Value};

use super::event::{Event, now_ms};
use super::seal::Destination;
use super::sign;
use super::{Relay, Relaying};
use crate::base::base64;
use crate::error::ProxyError;
use crate::http::body;
use crate::http::message::{Request, Response};
use crate::translate::webdata;

/// The longest a store may take to keep an event before the upstream gets a 503.
pub const STORE_TIME: Duration = Duration::from_secs(5);

/// The largest event body taken: the web-data API's own JSON limit.
const MAX_EVENT: usize = 10 * 1024 * 1024;

/// Receives one event for the destination `token` seals.
pub async fn receive(
    relay: &Relay,
    token: &str,
    signature: Option<&[u8]>,
    req: Request,
) -> Result<Response, ProxyError> {
    let metrics = &relay.metrics().webhooks;
    let settings = relay.settings();
    let Some((relaying, to)) = settings.open(token) else {
        metrics.received("-", "refused");
        return Err(refused(
            StatusCode::NOT_FOUND,
            "no webhook receiver at this address",
        ));
    };
    let upstream = relaying.upstream.as_str();
    let Ok(body) = body::read_all(req.into_body(), MAX_EVENT).await else {
        metrics.received(upstream, "refused");
        return Err(refused(
            StatusCode::BAD_REQUEST,
            "the event's body could not be read",
        ));
    };
    let verified = match &relaying.spec.verify {
        None => "unverified",
        Some(secret) => {
            if !signature.is_some_and(|h| sign::verify_firecrawl(secret, h, &body)) {
                metrics.received(upstream, "refused");
                let why = "the event's X-Firecrawl-Signature is missing or wrong";
                return Err(refused(StatusCode::UNAUTHORIZED, why));
            }
            "verified"
        }
    };
    let Some(event) = event(token, to, &body) else {
        metrics.received(upstream, "refused");
        return Err(refused(
            StatusCode::BAD_REQUEST,
            "the event is not a JSON object",
        ));
    };
    metrics.received(upstream, verified);
    let fresh = store(&relaying, event).await?;
    metrics.stored(upstream, fresh);
    Ok(Response::json(StatusCode::OK, r#"{"success":true}"#))
}

/// Keeps `event`, within [`STORE_TIME`]: whether it is new (not a repeat).
async fn store(relaying: &Relaying, event: Event) -> Result<bool, ProxyError> {
    let handle = &relaying.store;
    match tokio::time::timeout(STORE_TIME, handle.store.put(event)).await {
        Ok(Ok(fresh)) => {
            if fresh {
                handle.wake();
            }
            Ok(fresh)
        }
        Ok(Err(err)) => {
            tracing::error!(store = %handle.label, "a webhook event could not be stored: {err}");
            Err(unavailable())
        }
        Err(_) => {
            tracing::error!(store = %handle.label, "a webhook event was not stored within {STORE_TIME:?}");
            Err(unavailable())
        }
    }
}

/// The event to keep: the body as the client reads it, its id the upstream's `webhookId`
/// (or, when there is none, one made from the token and the body, the same for a repeat).
fn event(token: &str, to: Destination, body: &Bytes) -> Option<Event> {
    let Ok(Value::Object(mut payload)) = serde_json::from_slice::<Value>(body) else {
        return None;
    };
    let id = match payload.get("webhookId").and_then(Value::as_str) {
        Some(id) if !id.is_empty() && id.len() <= 200 => id.to_owned(),
        _ => derived_id(token, body),
    };
    let translated = to.shape.json_as().and_then(|json_as| {
        v1_pages(&mut payload, json_as).then(|| Value::Object(payload).to_string())
    });
    let body = match translated {
        Some(translated) => translated,
        None => String::from_utf8(body.to_vec()).ok()?,
    };
    let now = now_ms();
    Some(Event {
        id,
        to,
        body,
        received_ms: now,
        attempts: 0,
        due_ms: now,
        last: None,
        handle: None,
    })
}

/// A page event's documents in v1's shape (json results where the job's v1 formats put
/// them), as the status pages give them; whether anything changed.
fn v1_pages(payload: &mut Map<String, Value>, json_as: webdata::JsonAs) -> bool {
    let is_page = payload
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| t.ends_with(".page"));
    match payload.get_mut("data") {
        Some(data) if is_page => webdata::documents_v1(data, json_as),
        _ => false,
    }
}

/// An id for an event that carries none: a digest of the token and the body, so that the
/// upstream sending it again is known as a repeat.
fn derived_id(token: &str, body: &[u8]) -> String {
    let mut digest = ring::digest::Context::new(&ring::digest::SHA256);
    digest.update(token.as_bytes());
    digest.update(b"\n");
    digest.update(body);
    format!(
        "lingo_{}",
        base64::encode_url(&digest.finish().as_ref()[..18])
    )
}

fn refused(status: StatusCode, message: &str) -> ProxyError {
    ProxyError::Refused {
        status,
        message: message.to_owned(),
        code: None,
        details: Vec::new(),
    }
}

/// The response when the event could not be kept: the upstream sends it again.
fn unavailable() -> ProxyError {
    refused(
        StatusCode::SERVICE_UNAVAILABLE,
        "the event could not be stored; send it again",
    )
}
