//! A chat completion as a [`Translation`]: `n` identical `/api/chat` requests (one per
//! choice), each response's stream through a [`ChatStream`], one usage chunk for all choices
//! when several were asked for (as the official API sends), then `data: [DONE]`.

use bytes::Bytes;

use super::request::ChatRequest;
use super::response::{ChatStream, completion, upstream_error};
use crate::base::dialect::Dialect;
use crate::base::usage::Usage;
use crate::translate::frames::Frames;
use crate::translate::ndjson::LineFramer;
use crate::translate::sse;
use crate::translate::translation::{LineTranslator, Meta, Translation, UpstreamCall};

/// One chat completion request, translated.
pub struct Chat {
    request: ChatRequest,
    meta: Meta,
}

impl Chat {
    pub fn new(request: ChatRequest, meta: Meta) -> Self {
        Chat { request, meta }
    }
}

impl Translation for Chat {
    type Stream = ChatStream;

    fn model(&self) -> &str {
        self.request.model()
    }

    fn streams(&self) -> bool {
        self.request.stream()
    }

    fn calls(&mut self, model: &str) -> Vec<UpstreamCall> {
        self.request.set_model(model);
        let body = Bytes::from(self.request.native_body());
        (0..self.request.n())
            .map(|_| UpstreamCall {
                path: "/api/chat",
                body: body.clone(),
            })
            .collect()
    }

    fn stream(&self, i: usize, count: usize) -> ChatStream {
        // One choice reports its own usage; several report one sum at the end.
        let own_usage = count == 1 && self.request.include_usage();
        ChatStream::new(&self.meta, i as u32, own_usage)
    }

    fn closing(&self, usage: Option<Usage>, count: usize) -> Vec<Bytes> {
        let mut frames = Vec::with_capacity(2);
        if let Some(usage) = usage.filter(|_| count > 1 && self.request.include_usage()) {
            frames.push(ChatStream::new(&self.meta, 0, true).usage_chunk(usage));
        }
        frames.push(sse::done());
        frames
    }

    fn whole(&self, responses: &[Bytes]) -> Result<(Bytes, Usage), String> {
        completion(responses, &self.meta)
    }

    fn upstream_error(&self, status: u16, body: &[u8]) -> (u16, String, Option<&'static str>) {
        upstream_error(status, body)
    }
}

impl LineTranslator for ChatStream {
    fn on_line(&mut self, line: &[u8]) -> Result<Vec<Bytes>, String> {
        ChatStream::on_line(self, line).map_err(|e| e.to_string())
    }

    fn frames(&mut self, line: &[u8], queue: &mut Frames) -> Result<(), String> {
        ChatStream::frames(self, line, queue).map_err(|e| e.to_string())
    }

    fn room(&self, framer: &LineFramer) -> usize {
        sse::room(self.head_len(), framer)
    }

    fn finish(&mut self) -> Result<Vec<Bytes>, String> {
        ChatStream::finish(self).map_err(|e| e.to_string())
    }

    fn dialect(&self) -> Dialect {
        Dialect::Chat
    }

    fn usage(&self) -> Option<Usage> {
        ChatStream::usage(self)
    }
}
