//! The built-in deterministic backend: native, chat-completions and web-data dialects, with
//! knobs.
//!
//! It runs two ways: inside lingo, as an upstream with `mock:` in the table (so the shipped
//! `proxy.yaml` responds on a machine with no model server), and on its own as
//! `lingo mock --listen ADDR` (a load-test backend in its own process). Both call
//! [`handle`]. Knobs (see [`knobs`]) come from the table or flags, and per request from an
//! `X-Mock` header or a `model@knob=value` model name. A `mock:` upstream responses in the
//! dialect it `speaks` (the `speaks` knob): chat-completions mocks serve the official `/v1/*`
//! inference paths (`chat/`); web-data-v2 mocks serve version 2 of the web-data API only
//! (`webdata/v2.rs`); the others, and the standalone mock, respond to `/api/*` natively and
//! everything else as the web-data API.

mod chat;
pub mod knobs;
mod native;
mod stream;
mod webdata;
pub mod webhook;

use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::{BodyExt, Limited};
use hyper::Method;
use hyper::header::{CONTENT_TYPE, HOST, HeaderName, HeaderValue};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::base::dialect::Dialect;
use crate::http::body::{Body, BoxError};
use crate::http::message::{Request, Response, text};
use knobs::Knobs;

/// Largest request body the mock reads.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// What the mock does with a request.
pub enum Handled {
    Response(Response<Body>),
    /// Drop the connection without a response (`cut_after` on a non-streamed request).
    Cut,
    /// The request body could not be read (it broke off, was malformed, or went over a
    /// limit): the caller's fault, not the mock's, and no response of the mock's own. In
    /// process, lingo responds to it as it would a real upstream's failed upload (400
    /// `invalid_request_body`, or 413 over the route's `max_body`) in the route's dialect.
    BadBody(BoxError),
}

// === impl Response ===

impl Handled {
    fn ok(content_type: &'static str, body: Body) -> Handled {
        let mut response = Response::new(body);
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        Handled::Response(response)
    }

    fn cut() -> Handled {
        Handled::Cut
    }
}

fn respond_json(status: u16, value: &Value) -> Handled {
    Handled::Response(json_response(status, value))
}

fn json_response(status: u16, value: &Value) -> Response<Body> {
    let mut response = Response::new(Body::full(value.to_string()));
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    *response.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    response
}

/// What a native server says with a 503 when it has more requests queued than it takes.
const SERVER_BUSY: &str = "server busy, please try again.  maximum pending requests exceeded";

/// Whether a request to `path` runs a model (what a busy server refuses; its listings it
/// still answers).
fn runs_a_model(path: &str) -> bool {
    matches!(
        path,
        "/api/chat"
            | "/api/generate"
            | "/api/embed"
            | "/api/embeddings"
            | "/v1/chat/completions"
            | "/v1/completions"
            | "/v1/embeddings"
    )
}

/// An error in the native (`{"error"}`) or web-data (`{"success":false,"error"}`) shape.
fn respond_error(status: u16, message: &str, webdata: bool) -> Handled {
    Handled::Response(error_response(status, message, webdata))
}

fn error_response(status: u16, message: &str, webdata: bool) -> Response<Body> {
    let body = if webdata {
        json!({"success": false, "error": message})
    } else {
        json!({"error": message})
    };
    json_response(status, &body)
}

/// An error in the shape of the dialect `knobs` speak at `path`.
fn refuse(knobs: &Knobs, path: &str, status: u16, message: &str) -> Handled {
    match knobs.speaks {
        Some(Dialect::Chat) => chat::error(status, message),
        _ => respond_error(status, message, !path.starts_with("/api/")),
    }
}

/// Serves one request with `defaults` overridden by the request's own knobs.
pub async fn handle(defaults: &Knobs, req: Request<Body>) -> Handled {
    let (head, body) = req.into_parts();
    let path = head.uri().path();
    let bytes = match Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err) => return Handled::BadBody(err),
    };
    let request: Value = if bytes.is_empty() {
        Value::Null
    } else {
        match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => return refuse(defaults, path, 400, &e.to_string()),
        }
    };
    let mut knobs = defaults.clone();
    let x_mock = HeaderName::from_static("x-mock");
    let header = head.headers().get(&x_mock).and_then(text);
    let (model, model_knobs) = knobs::split_model(request["model"].as_str().unwrap_or(""));
    for spec in [header, model_knobs].into_iter().flatten() {
        if let Err(e) = knobs.apply(spec) {
            return refuse(&knobs, path, 400, &e);
        }
    }
    if !knobs.first_token_delay.is_zero() {
        tokio::time::sleep(knobs.first_token_delay).await;
    }
    if let Some(status) = knobs.status {
        let message = format!("mock failure: status {status}");
        return refuse(&knobs, path, status, &message);
    }
    if knobs.busy && runs_a_model(path) {
        return refuse(&knobs, path, 503, SERVER_BUSY);
    }
    if knobs.speaks == Some(Dialect::Chat) {
        return chat::route(head.method(), path, &request, &knobs, model);
    }
    let host = head
        .headers()
        .get(&HOST)
        .and_then(text)
        .unwrap_or("localhost");
    if knobs.speaks == Some(Dialect::WebDataV2) {
        let query = head.uri().query().unwrap_or("");
        return webdata::v2::handle(head.method(), path, query, &request, host, &knobs);
    }
    route(
        head.method(),
        path,
        head.uri().query().unwrap_or(""),
        &request,
        &knobs,
        model,
        host,
    )
}

fn route(
    method: &Method,
    path: &str,
    query: &str,
    request: &Value,
    knobs: &Knobs,
    model: &str,
    host: &str,
) -> Handled {
    match (method, path) {
        (&Method::POST, "/api/chat") => native::chat(request, knobs, model),
        (&Method::POST, "/api/generate") => native::generate(request, knobs, model),
        (&Method::POST, "/api/embed") => native::embed(request, knobs, model),
        (&Method::POST, "/api/embeddings") => native::embeddings(request, knobs, model),
        (&Method::GET, "/api/tags") => native::tags(),
        (&Method::POST, "/api/show") => native::show(request),
        (&Method::GET, "/api/version") => {
            respond_json(200, &json!({"version": "0.0.0-lingo-mock"}))
        }
        (&Method::GET, "/api/ps") => native::ps(&knobs.loaded),
        (_, p) if p.starts_with("/api/") => respond_error(404, "404 page not found", false),
        _ => webdata::handle(method, path, query, request, host, knobs),
    }
}

/// `lingo mock --listen ADDR`: serves the mock on its own until the process ends.
pub async fn serve(addr: SocketAddr, defaults: Knobs) -> std::io::Result<()> {
    let listener = crate::http::socket::bind(addr)?;
    tracing::info!("mock backend listening on {}", listener.local_addr()?);
    serve_on(listener, defaults).await
}

/// Serves the mock on a bound listener (tests bind port 0 first).
pub async fn serve_on(listener: TcpListener, defaults: Knobs) -> std::io::Result<()> {
    let defaults = Arc::new(defaults);
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(pair) => pair,
            Err(err) => {
                tracing::warn!("accept failed: {err}");
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let defaults = Arc::clone(&defaults);
        tokio::spawn(async move {
            let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let defaults = Arc::clone(&defaults);
                async move {
                    let req = Request::from(req.map(Body::new));
                    match handle(&defaults, req).await {
                        Handled::Response(r) => Ok::<_, MockCut>(r.into_hyper()),
                        Handled::Cut => Err(MockCut),
                        Handled::BadBody(err) => Ok(bad_body(err.as_ref()).into_hyper()),
                    }
                }
            });
            let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            // A load-test target: any number of streams on one HTTP/2 connection.
            builder.http2().max_concurrent_streams(None);
            let _ = builder
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// The mock's own response to an upload it could not read (when it serves on its own socket):
/// 413 over its limit, else 400, in the native shape (what the real server responds).
fn bad_body(err: &(dyn std::error::Error + 'static)) -> Response<Body> {
    let chain = || std::iter::successors(Some(err), |&e| e.source());
    if chain().any(|e| e.is::<http_body_util::LengthLimitError>()) {
        error_response(413, "request body too large for the mock", false)
    } else {
        let message = format!("the request body could not be read: {err}");
        error_response(400, &message, false)
    }
}

/// The service error that makes hyper drop a connection without responding.
#[derive(Debug, thiserror::Error)]
#[error("mock backend cut the connection (cut_after)")]
pub struct MockCut;
