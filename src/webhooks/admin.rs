//! The relay's endpoints: the receiver (`POST /lingo/webhooks/<token>`, on every listener)
//! and, on the admin listener only, the given-up events: `GET /webhooks/given-up` lists
//! them (every store's), `POST /webhooks/replay` makes them all due again and
//! `POST /webhooks/replay/<id>` one of them.

use hyper::{Method, StatusCode};
use serde_json::{Value, json};

use super::Relay;
use super::event::Event;
use super::receive;
use super::rewrite::RECEIVER_PATH;
use super::sign::FIRECRAWL_SIGNATURE;
use crate::error::ProxyError;
use crate::http::message::{HeaderView, Request, Response};

/// One of the relay's endpoints, as a request asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// An event for the destination `token` seals, with the `X-Firecrawl-Signature` it
    /// came with.
    Receive {
        token: String,
        signature: Option<Vec<u8>>,
    },
    GivenUp,
    /// Replay one given-up event, or (`None`) all.
    Replay(Option<String>),
}

// === impl Endpoint ===

impl Endpoint {
    /// The endpoint `method` and `path` ask for on this listener, if any; `fields` are the
    /// request's (kept raw, or in its map).
    pub fn find(
        method: &Method,
        path: &str,
        on_admin: bool,
        fields: HeaderView<'_>,
    ) -> Option<Endpoint> {
        if let Some(token) = path.strip_prefix(RECEIVER_PATH) {
            let token_like = !token.is_empty() && !token.contains('/');
            return (*method == Method::POST && token_like).then(|| Endpoint::Receive {
                token: token.to_owned(),
                signature: fields.get(&FIRECRAWL_SIGNATURE).map(<[u8]>::to_vec),
            });
        }
        if !on_admin {
            return None;
        }
        match (method, path) {
            (&Method::GET, "/webhooks/given-up") => Some(Endpoint::GivenUp),
            (&Method::POST, "/webhooks/replay") => Some(Endpoint::Replay(None)),
            (&Method::POST, rest) => {
                let id = rest.strip_prefix("/webhooks/replay/")?;
                (!id.is_empty() && !id.contains('/')).then(|| Endpoint::Replay(Some(id.to_owned())))
            }
            _ => None,
        }
    }

    /// Whether it is an admin endpoint (which `admin.require_key` puts behind a key).
    pub fn is_admin(&self) -> bool {
        !matches!(self, Endpoint::Receive { .. })
    }

    /// Responds to it.
    pub async fn respond(self, relay: &Relay, req: Request) -> Result<Response, ProxyError> {
        match self {
            Endpoint::Receive { token, signature } => {
                receive::receive(relay, &token, signature.as_deref(), req).await
            }
            Endpoint::GivenUp => given_up(relay).await,
            Endpoint::Replay(id) => replay(relay, id).await,
        }
    }
}

/// Every store's given-up events, oldest first.
async fn given_up(relay: &Relay) -> Result<Response, ProxyError> {
    let mut events = Vec::new();
    for handle in relay.stores() {
        let listed = handle.store.given_up().await.map_err(store_failed)?;
        events.extend(listed.into_iter().map(|e| (handle.label.clone(), e)));
    }
    events.sort_by_key(|(_, e)| e.received_ms);
    let listed: Vec<Value> = events.iter().map(|(store, e)| listing(store, e)).collect();
    let body = json!({"events": listed}).to_string();
    Ok(Response::json(StatusCode::OK, body))
}

/// What the list says of an event: where it was going and why it was given up, not its
/// headers (which may hold the client's credentials).
fn listing(store: &str, event: &Event) -> Value {
    let kind = serde_json::from_str::<Value>(&event.body)
        .ok()
        .and_then(|b| b.get("type").cloned())
        .unwrap_or(Value::Null);
    json!({
        "id": event.id,
        "type": kind,
        "upstream": event.to.upstream,
        "route": event.to.route,
        "client": event.to.client,
        "url": event.to.url,
        "attempts": event.attempts,
        "last": event.last,
        "received": httpdate::fmt_http_date(std::time::UNIX_EPOCH + std::time::Duration::from_millis(event.received_ms)),
        "store": store,
    })
}

/// Replays one given-up event (404 when no store has it) or all.
async fn replay(relay: &Relay, id: Option<String>) -> Result<Response, ProxyError> {
    let mut replayed = 0;
    for handle in relay.stores() {
        let n = handle
            .store
            .replay(id.clone())
            .await
            .map_err(store_failed)?;
        if n > 0 {
            handle.wake();
        }
        replayed += n;
    }
    if replayed == 0 && id.is_some() {
        return Err(ProxyError::Refused {
            status: StatusCode::NOT_FOUND,
            message: "no given-up webhook event has this id".into(),
            code: None,
            details: Vec::new(),
        });
    }
    Ok(Response::json(
        StatusCode::OK,
        json!({"replayed": replayed}).to_string(),
    ))
}

fn store_failed(err: super::store::StoreError) -> ProxyError {
    ProxyError::Refused {
        status: StatusCode::SERVICE_UNAVAILABLE,
        message: format!("the webhook store cannot be read: {err}"),
        code: None,
        details: Vec::new(),
    }
}
