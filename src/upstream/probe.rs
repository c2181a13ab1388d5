//! Active health: each backend of an upstream with several gets a free request of its dialect
//! every `health.interval`, on a connection of its own (a probe never takes a request's
//! pooled connection), within that interval. A native server's `/api/ps` and `/api/tags` also
//! say which models it has loaded and listed.

use std::future::poll_fn;
use std::sync::{Arc, Weak};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::header::{HOST, HeaderValue};
use hyper::{Method, StatusCode};
use tower_service::Service;

use super::backends::Backends;
use super::headers::Forwarding;
use super::health::{Models, Names};
use super::{Pool, UpstreamClient, absolute, request_uri};
use crate::base::dialect::Dialect;
use crate::http::body::Body;
use crate::http::message::Request;
use crate::mock;
use crate::table::{Backend, Upstream};

/// Probes `backends` of `upstream` until they are dropped (their table replaced).
pub fn spawn(upstream: Arc<Upstream>, backends: Weak<Backends>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        let mut tick = tokio::time::interval(upstream.health.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            // The members, not the set: a table replaced during a round is let go at once.
            let Some(members) = backends.upgrade().map(|b| {
                let each = b.members().iter();
                each.map(|m| (Arc::clone(&m.client), Arc::clone(&m.state)))
                    .collect::<Vec<_>>()
            }) else {
                return;
            };
            let each = (members.iter().zip(&upstream.backends)).map(|((client, state), b)| {
                let (upstream, backends) = (&upstream, &backends);
                async move {
                    let (ok, models) = probe(upstream, b, client).await;
                    state.probed(ok, models);
                    if let Some(backends) = backends.upgrade() {
                        backends.note_models();
                    }
                }
            });
            futures_util::future::join_all(each).await;
        }
    });
}

/// Whether `backend` answered as a working server, and the models it has (native only).
async fn probe(
    upstream: &Upstream,
    backend: &Backend,
    client: &UpstreamClient,
) -> (bool, Option<Models>) {
    let limit = upstream.health.interval;
    let path = match upstream.speaks {
        Dialect::Native => "/api/ps",
        Dialect::Chat => "/v1/models",
        _ => "/",
    };
    let Ok(Ok((status, body))) =
        tokio::time::timeout(limit, get(upstream, backend, client, path)).await
    else {
        return (false, None);
    };
    let ok = !status.is_server_error();
    // Only a listing says which models it has; any other answer keeps what the last one said.
    if !status.is_success() || upstream.speaks != Dialect::Native {
        return (ok, None);
    }
    let listed =
        match tokio::time::timeout(limit, get(upstream, backend, client, "/api/tags")).await {
            Ok(Ok((status, tags))) if status.is_success() => names(&tags),
            _ => Names::default(),
        };
    let models = Models {
        loaded: names(&body),
        listed,
    };
    (true, Some(models))
}

/// What a probe says of itself in the fields lingo adds to every request.
static PROBE_ADDRESS: HeaderValue = HeaderValue::from_static("127.0.0.1");
static PROBE_ID: HeaderValue = HeaderValue::from_static("lingo-probe");

/// `GET path`: the response's status and body (at most 1 MiB). Over lingo's own HTTP/1.1
/// client, on a connection of its own (a pooled connection belongs to the serving thread that
/// opened it); over hyper-util's (TLS, HTTP/2), through its pool, which speaks the upstream's
/// protocol.
async fn get(
    upstream: &Upstream,
    backend: &Backend,
    client: &UpstreamClient,
    path: &str,
) -> Result<(StatusCode, Bytes), crate::http::body::BoxError> {
    let origin = request_uri(upstream, path);
    let uri = absolute(backend, &origin);
    let mut request = Request::new(Body::empty());
    *request.method_mut() = Method::GET;
    *request.uri_mut() = origin;
    let headers = request.headers_mut();
    headers.insert(HOST, backend.host.clone());
    if let Some(auth) = &upstream.auth {
        headers.insert(auth.header.clone(), auth.value.clone());
    }
    let response = match client {
        UpstreamClient::Mock(knobs) => match mock::handle(knobs, request).await {
            mock::Handled::Response(response) => response.into_hyper(),
            _ => return Err("the mock cut the probe".into()),
        },
        UpstreamClient::Http {
            pool: Pool::Legacy(_),
            ..
        } => {
            let rules = Forwarding {
                host: &backend.host,
                client_ip: &PROBE_ADDRESS,
                proto: "http",
                client_host: None,
                request_id: &PROBE_ID,
                auth: upstream.auth.as_ref(),
                upgrade: false,
                identity: true,
                json: false,
                raw_response: false,
                client: None,
            };
            client
                .send(upstream, backend, request, &rules, 0)
                .await?
                .into_hyper()
        }
        UpstreamClient::Http { ws_connector, .. } => {
            let mut connector = ws_connector.clone();
            poll_fn(|cx| connector.poll_ready(cx)).await?;
            let stream = connector.call(uri).await?;
            let (mut sender, conn) = hyper::client::conn::http1::handshake(stream).await?;
            tokio::spawn(conn);
            sender
                .send_request(request.into_hyper())
                .await?
                .map(Body::new)
        }
    };
    let status = response.status();
    let body = http_body_util::Limited::new(response.into_body(), 1024 * 1024);
    Ok((status, body.collect().await?.to_bytes()))
}

/// The model names a native `/api/ps` or `/api/tags` lists, each also without its `:latest`
/// tag (a request for `llama3.2` is served by `llama3.2:latest`).
fn names(body: &[u8]) -> Names {
    #[derive(serde::Deserialize)]
    struct Listing {
        models: Vec<Entry>,
    }
    #[derive(serde::Deserialize)]
    struct Entry {
        name: Option<String>,
        model: Option<String>,
    }
    let Ok(listing) = serde_json::from_slice::<Listing>(body) else {
        return Names::default();
    };
    let mut names = Vec::new();
    for entry in listing.models {
        for name in [entry.name, entry.model].into_iter().flatten() {
            if let Some(short) = name.strip_suffix(":latest") {
                names.push(short.to_owned());
            }
            names.push(name);
        }
    }
    names.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_names_each_model_with_and_without_latest() {
        let body = br#"{"models":[{"name":"llama3.2:latest","model":"llama3.2:latest"},{"name":"qwen:7b"}]}"#;
        let listed = names(body);
        let got: Vec<&str> = listed.iter().collect();
        assert_eq!(got, ["llama3.2", "llama3.2:latest", "qwen:7b"]);
        assert_eq!(names(b"not json").iter().count(), 0);
    }
}
