//! `/v1/chat/completions` over a native upstream: the I/O around `translate::chat`.
//!
//! One client request becomes `n` native `/api/chat` requests, sent concurrently. Their
//! answers are checked before anything is sent to the client (an upstream error then keeps
//! its status); after that, a streamed answer is re-framed line by line (`Reframe`), and a
//! whole answer is translated once it is read.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use hyper::{Request, Response};

use super::reframe::{Merged, Reframe, Translator, UsageFrame};
use super::shared::{bad_gateway, json, read_body, resolve, send_native, upstream_failure, whole};
use crate::base::dialect::Dialect;
use crate::base::ids;
use crate::error::ProxyError;
use crate::http::body::Body;
use crate::http::join::join_all;
use crate::proxy::exchange::Exchange;
use crate::translate::chat::{self, ChatStream, ResponseMeta, RouteDefaults, Usage};

/// Serves one chat completion.
pub async fn handle(
    call: &Exchange<'_>,
    req: Request<Incoming>,
) -> Result<Response<Body>, ProxyError> {
    let (parts, body) = req.into_parts();
    let body = read_body(body, call.route.max_body).await?;
    let defaults = RouteDefaults {
        options: call.route.options.clone(),
    };
    let mut request = chat::request(&body, &defaults).map_err(invalid)?;
    let (index, upstream, model) = resolve(call, request.model());
    if upstream.speaks != Dialect::Native {
        return Err(wrong_upstream(request.model(), upstream));
    }
    let meta = ResponseMeta {
        id: format!("chatcmpl-{}", ids::random_hex()),
        created: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        model: request.model().to_owned(),
    };
    request.set_model(&model);
    let native = Bytes::from(request.native_body());
    let client = &call.snapshot.peer(index).client;
    let sends: Vec<Sending<'_>> = (0..request.n())
        .map(|_| {
            Box::pin(send_native(
                call,
                upstream,
                client,
                &parts.headers,
                "/api/chat",
                native.clone(),
            )) as _
        })
        .collect();
    let mut answers = Vec::new();
    for answer in join_all(sends).await {
        let answer = answer?;
        if !answer.status().is_success() {
            return Err(upstream_failure(upstream, answer, chat::upstream_error).await);
        }
        answers.push(answer);
    }
    if request.stream() {
        let max_line = usize::try_from(call.snapshot.table.limits.max_line).unwrap_or(usize::MAX);
        // One choice reports its own usage; several report one sum at the end.
        let single = answers.len() == 1;
        let streams = answers
            .into_iter()
            .enumerate()
            .map(|(i, answer)| {
                let stream = ChatStream::new(&meta, i as u32, single && request.include_usage());
                Reframe::new(answer.into_body(), max_line, stream).redacting(upstream)
            })
            .collect();
        let usage_frame = (!single && request.include_usage()).then(|| {
            let stream = ChatStream::new(&meta, 0, true);
            Box::new(move |usage| stream.usage_chunk(usage)) as UsageFrame
        });
        let merged = Merged::new(streams, usage_frame, Arc::clone(&call.stats));
        return Ok(sse(Body::new(merged)));
    }
    let mut wholes = Vec::with_capacity(answers.len());
    for answer in answers {
        wholes.push(whole(call, upstream, answer).await?);
    }
    let (completion, usage) =
        chat::completion(&wholes, &meta).map_err(|m| bad_gateway(upstream, m))?;
    call.stats.used(usage);
    Ok(json(completion))
}

/// A native request on its way, answered with the head of its answer.
type Sending<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Response<Body>, ProxyError>> + Send + 'a>,
>;

/// A model alias that leads to an upstream this translator cannot talk to.
pub(super) fn wrong_upstream(model: &str, upstream: &crate::table::Upstream) -> ProxyError {
    ProxyError::Invalid {
        message: format!(
            "model `{model}` is served by a {} upstream; this route needs a native one",
            upstream.speaks
        ),
        param: Some("model".into()),
    }
}

pub(super) fn invalid(err: chat::ChatError) -> ProxyError {
    ProxyError::Invalid {
        message: err.message,
        param: err.param.map(Into::into),
    }
}

/// A server-sent-events answer.
pub(super) fn sse(body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

impl Translator for ChatStream {
    fn on_line(&mut self, line: &[u8]) -> Result<Vec<Bytes>, String> {
        ChatStream::on_line(self, line).map_err(|e| e.to_string())
    }

    fn finish(&mut self) -> Result<Vec<Bytes>, String> {
        ChatStream::finish(self).map_err(|e| e.to_string())
    }

    fn error_frame(&self, message: &str) -> Bytes {
        chat::error_frame(message)
    }

    fn usage(&self) -> Option<Usage> {
        ChatStream::usage(self)
    }
}
