//! WebSocket upgrades (the web-data API's crawl watchers), tunnelled through lingo.
//!
//! The upgrade request gets the same header treatment as any request, plus one rule for the
//! web-data JS SDK, which sends its key as the WebSocket subprotocol: when the upstream has a
//! key, the offered subprotocol is replaced by that key going up, and the 101 response names the
//! client's own offer coming down, so the client's handshake succeeds and the upstream key
//! never reaches it. After the 101, bytes are copied both ways until either side closes.

use std::future::poll_fn;

use hyper::body::Incoming;
use hyper::header::{HeaderValue, SEC_WEBSOCKET_EXTENSIONS, SEC_WEBSOCKET_PROTOCOL};
use hyper::{HeaderMap, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tower_service::Service;

use crate::auth;
use crate::error::{ProxyError, TimeoutKind};
use crate::http::body::{Body, BoxError};
use crate::http::idle::Idle;
use crate::http::message::{Request, Response};
use crate::http::upgrade::{self, NotUpgraded, Upgraded};
use crate::proxy::exchange::Exchange;
use crate::proxy::run::pass::forwarding;
use crate::table::Auth;
use crate::translate::webdata::Frames;
use crate::upstream::{self, UpstreamClient, headers};

/// Tunnels a WebSocket upgrade to the call's upstream: connect, send the handshake with the
/// key swapped in, and once both sides have switched protocols, copy bytes both ways.
pub async fn proxy(call: &Exchange<'_>, req: Request) -> Result<Response, ProxyError> {
    open(call, req, None).await
}

/// A web-data v1 watcher on a v2-only upstream: tunnelled like [`proxy`], but the
/// upstream's text frames are rewritten by `frames` on the way down. No extension (compression)
/// is offered, so that the frames stay readable.
pub async fn watcher(
    call: &Exchange<'_>,
    req: Request,
    frames: Frames,
) -> Result<Response, ProxyError> {
    open(call, req, Some(frames)).await
}

async fn open(
    call: &Exchange<'_>,
    mut req: Request,
    frames: Option<Frames>,
) -> Result<Response, ProxyError> {
    let upstream = call.upstream;
    // A tunnel is not sent twice: its backend is the pick's, once.
    let at = call.backends.one(upstream, call.path());
    let client_upgrade = upgrade::on(&mut req);
    let (mut head, _) = req.into_parts();
    // The handshake is made in the map, which hyper's client writes.
    let fields = head.headers_mut();
    if frames.is_some() {
        fields.remove(SEC_WEBSOCKET_EXTENSIONS);
    }
    let offer = fields.get(SEC_WEBSOCKET_PROTOCOL).cloned();
    let rules = headers::Forwarding {
        host: &upstream.backends[at].host,
        ..forwarding(call, true)
    };
    headers::to_upstream(fields, &rules);
    // The handshake goes up without a body, so it must not announce one.
    fields.remove(hyper::header::CONTENT_LENGTH);
    let keys: Vec<&str> = (call.snapshot.table.clients.iter())
        .map(|c| c.key.expose())
        .collect();
    let altered = swap_offer(fields, upstream.auth.as_ref(), &keys);
    *head.version_mut() = hyper::Version::HTTP_11;
    *head.uri_mut() = upstream::request_uri(upstream, &call.path_and_query);
    // Connecting and the handshake are the upstream's time, as a pooled call's are.
    let waiting = call.stats.waiting();
    let request = Request::from_parts(head, Body::empty()).into_hyper();
    let response = handshake(call, at, request).await;
    drop(waiting);
    let mut response = response?;
    let switching = response.status() == StatusCode::SWITCHING_PROTOCOLS;
    let upstream_upgrade = switching.then(|| hyper::upgrade::on(&mut response));
    let mut response = Response::from(response);
    headers::to_client(response.headers_mut(), switching);
    if let Some(auth) = &upstream.auth {
        scrub(response.headers_mut(), auth, offer.as_ref(), altered);
    }
    let Some(upstream_upgrade) = upstream_upgrade else {
        let idle = upstream.timeouts.idle;
        return Ok(response.map(|b| Body::boxed(Idle::new(b, idle))));
    };
    tokio::spawn(relay(client_upgrade, upstream_upgrade, frames));
    Ok(response.map(|_| Body::empty()))
}

/// Opens a connection of its own to the upstream (an upgraded connection cannot go back to
/// the pool) and sends the handshake, each step under its timeout.
async fn handshake(
    call: &Exchange<'_>,
    at: usize,
    request: hyper::Request<Body>,
) -> Result<hyper::Response<Incoming>, ProxyError> {
    let upstream = call.upstream;
    let backend = &upstream.backends[at];
    let uri = upstream::absolute(
        backend,
        &upstream::request_uri(upstream, &call.path_and_query),
    );
    let mut connector = match &*call.backends.members()[at].client {
        UpstreamClient::Http { ws_connector, .. } => ws_connector.clone(),
        UpstreamClient::Mock(_) => {
            return Err(ProxyError::Unreachable {
                upstream: upstream.name.to_string(),
                reason: "the mock backend does not serve WebSockets".into(),
                detail: String::new(),
            });
        }
    };
    let connect = async {
        poll_fn(|cx| connector.poll_ready(cx)).await?;
        connector.call(uri).await
    };
    let limit = upstream.timeouts.connect;
    let stream = match tokio::time::timeout(limit, connect).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(err)) => return Err(upstream::classify(upstream, err.as_ref(), 0)),
        Err(_) => return Err(timeout(upstream, TimeoutKind::Connect, limit)),
    };
    let (mut sender, conn) = hyper::client::conn::http1::handshake(stream)
        .await
        .map_err(|e| upstream::classify(upstream, &e, 0))?;
    tokio::spawn(conn.with_upgrades());
    let limit = upstream.timeouts.first_byte;
    match tokio::time::timeout(limit, sender.send_request(request)).await {
        Ok(Ok(response)) => Ok(response),
        Ok(Err(err)) => Err(upstream::classify(upstream, &err, 0)),
        Err(_) => Err(timeout(upstream, TimeoutKind::FirstByte, limit)),
    }
}

/// Copies bytes both ways once both sides have switched protocols (through `frames` on the
/// way down, when given).
async fn relay(
    client: impl Future<Output = Result<Upgraded, NotUpgraded>>,
    upstream: hyper::upgrade::OnUpgrade,
    frames: Option<Frames>,
) {
    let both = async { Ok::<_, BoxError>((client.await?, upstream.await?)) };
    match both.await {
        Ok((mut client, upstream)) => {
            let mut upstream = TokioIo::new(upstream);
            let copied = match frames {
                Some(frames) => relay_retelling(&mut client, &mut upstream, frames).await,
                None => tokio::io::copy_bidirectional(&mut client, &mut upstream)
                    .await
                    .map(drop),
            };
            if let Err(err) = copied {
                tracing::debug!("websocket tunnel closed: {err}");
            }
        }
        Err(err) => tracing::warn!("websocket upgrade failed: {err}"),
    }
}

/// Client bytes up unchanged; upstream bytes down through `frames`. Each side's end shuts
/// the other side's write half, as `copy_bidirectional` does.
async fn relay_retelling<C, U>(
    client: &mut C,
    upstream: &mut U,
    mut frames: Frames,
) -> std::io::Result<()>
where
    C: AsyncRead + AsyncWrite + Unpin,
    U: AsyncRead + AsyncWrite + Unpin,
{
    let (mut client_read, mut client_write) = tokio::io::split(client);
    let (mut upstream_read, mut upstream_write) = tokio::io::split(upstream);
    let up = async {
        tokio::io::copy(&mut client_read, &mut upstream_write).await?;
        upstream_write.shutdown().await
    };
    let down = async {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = upstream_read.read(&mut buf).await?;
            let out = if n == 0 {
                frames.finish()
            } else {
                frames.push(&buf[..n])
            };
            client_write.write_all(&out).await?;
            if n == 0 {
                return client_write.shutdown().await;
            }
        }
    };
    tokio::try_join!(up, down).map(drop)
}

/// Replaces the client's subprotocol offer going up: with the upstream's key when it has one
/// (the web-data API reads its key there), or without lingo's client keys when it has none.
/// Returns whether the offer was changed.
fn swap_offer(headers: &mut HeaderMap, auth: Option<&Auth>, client_keys: &[&str]) -> bool {
    if !headers.contains_key(SEC_WEBSOCKET_PROTOCOL) {
        return false;
    }
    if let Some(auth) = auth {
        let mut key = HeaderValue::from_str(auth.key.expose())
            .unwrap_or_else(|_| HeaderValue::from_static(""));
        key.set_sensitive(true);
        headers.insert(SEC_WEBSOCKET_PROTOCOL, key);
        return true;
    }
    let offered: Vec<String> = auth::subprotocols((&*headers).into())
        .map(str::to_owned)
        .collect();
    let kept: Vec<&str> = offered
        .iter()
        .map(String::as_str)
        .filter(|p| !client_keys.contains(p))
        .collect();
    if kept.len() == offered.len() {
        return false;
    }
    headers.remove(SEC_WEBSOCKET_PROTOCOL);
    if let Ok(value) = HeaderValue::from_str(&kept.join(", "))
        && !kept.is_empty()
    {
        headers.insert(SEC_WEBSOCKET_PROTOCOL, value);
    }
    true
}

/// Keeps the upstream's key out of the response: any header carrying it is dropped, and when
/// lingo changed the offer, the response names the client's first offered subprotocol.
fn scrub(headers: &mut HeaderMap, auth: &Auth, offer: Option<&HeaderValue>, altered: bool) {
    let key = auth.key.expose().as_bytes();
    let leaking: Vec<_> = headers
        .iter()
        .filter(|(_, v)| v.as_bytes().windows(key.len().max(1)).any(|w| w == key))
        .map(|(name, _)| name.clone())
        .collect();
    for name in leaking {
        headers.remove(name);
    }
    let first = offer
        .and_then(|o| o.to_str().ok())
        .and_then(|o| o.split(',').next())
        .and_then(|p| HeaderValue::from_str(p.trim()).ok());
    if altered && let Some(first) = first {
        headers.insert(SEC_WEBSOCKET_PROTOCOL, first);
    }
}

fn timeout(
    upstream: &crate::table::Upstream,
    kind: TimeoutKind,
    limit: std::time::Duration,
) -> ProxyError {
    ProxyError::Timeout {
        upstream: upstream.name.to_string(),
        kind,
        limit,
    }
}
