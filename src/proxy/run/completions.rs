//! `/v1/completions` over a native upstream: one `/api/generate` per prompt, concurrently.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::{Request, Response};

use super::chat::{invalid, sse, wrong_upstream};
use super::reframe::{Merged, Reframe, Translator, UsageFrame};
use super::shared::{bad_gateway, json, read_body, resolve, send_native, upstream_failure, whole};
use crate::base::dialect::Dialect;
use crate::base::ids;
use crate::error::ProxyError;
use crate::http::body::Body;
use crate::http::join::join_all;
use crate::proxy::exchange::Exchange;
use crate::translate::chat::{self, Usage};
use crate::translate::completions::{self, CompletionStream, Meta};

type Answer = Result<Response<Body>, ProxyError>;

/// Serves one completions request (a prompt, or a batch of them).
pub async fn handle(call: &Exchange<'_>, req: Request<Incoming>) -> Answer {
    let (parts, body) = req.into_parts();
    let body = read_body(body, call.route.max_body).await?;
    let request = completions::request(&body, &call.route.options).map_err(invalid)?;
    let (index, upstream, model) = resolve(call, &request.model);
    if upstream.speaks != Dialect::Native {
        return Err(wrong_upstream(&request.model, upstream));
    }
    let meta = Meta {
        id: format!("cmpl-{}", ids::random_hex()),
        created: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        model: request.model.clone(),
    };
    let client = &call.snapshot.peer(index).client;
    let sends: Vec<std::pin::Pin<Box<dyn std::future::Future<Output = Answer> + Send + '_>>> = (0
        ..request.prompts.len())
        .map(|i| {
            Box::pin(send_native(
                call,
                upstream,
                client,
                &parts.headers,
                "/api/generate",
                request.native_body(&model, i),
            )) as _
        })
        .collect();
    let mut answers = Vec::with_capacity(request.prompts.len());
    for answer in join_all(sends).await {
        let answer = answer?;
        if !answer.status().is_success() {
            return Err(upstream_failure(upstream, answer, chat::upstream_error).await);
        }
        answers.push(answer);
    }
    if request.stream {
        let max_line = usize::try_from(call.snapshot.table.limits.max_line).unwrap_or(usize::MAX);
        let single = answers.len() == 1;
        let streams = answers
            .into_iter()
            .enumerate()
            .map(|(i, answer)| {
                let echo = request.echo.then(|| request.prompts[i].clone());
                let stream =
                    CompletionStream::new(&meta, i as u32, single && request.include_usage, echo);
                Reframe::new(answer.into_body(), max_line, stream).redacting(upstream)
            })
            .collect();
        let usage_frame = (!single && request.include_usage).then(|| {
            let stream = CompletionStream::new(&meta, 0, true, None);
            Box::new(move |usage| stream.usage_chunk(usage)) as UsageFrame
        });
        let merged = Merged::new(streams, usage_frame, Arc::clone(&call.stats));
        return Ok(sse(Body::new(merged)));
    }
    let mut wholes = Vec::with_capacity(answers.len());
    for answer in answers {
        wholes.push(whole(call, upstream, answer).await?);
    }
    let (body, usage) =
        completions::completion(&wholes, &request, &meta).map_err(|m| bad_gateway(upstream, m))?;
    call.stats.used(usage);
    Ok(json(body))
}

impl Translator for CompletionStream {
    fn on_line(&mut self, line: &[u8]) -> Result<Vec<Bytes>, String> {
        CompletionStream::on_line(self, line)
    }

    fn finish(&mut self) -> Result<Vec<Bytes>, String> {
        CompletionStream::finish(self)
    }

    fn error_frame(&self, message: &str) -> Bytes {
        chat::error_frame(message)
    }

    fn usage(&self) -> Option<Usage> {
        CompletionStream::usage(self)
    }

    fn prompt(&self) -> usize {
        CompletionStream::prompt(self)
    }
}
