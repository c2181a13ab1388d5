//! The native endpoints as [`Translation`]s, so that the one driver (`proxy::run::drive`)
//! runs them like every other endpoint: [`Generation`] (`/api/chat`, `/api/generate`) and
//! [`Embed`] (`/api/embed`, `/api/embeddings`). They only tie the request translators to the
//! response translators; the clock comes in as [`Now`], so they stay pure.

use std::sync::Arc;

use bytes::Bytes;

use super::{Meta, NativeStream, Output, Stamp, Translated, embed};
use crate::base::dialect::Dialect;
use crate::base::usage::Usage;
use crate::translate::translation::{NoStream, Translation, UpstreamCall};

/// The caller's clock, shared: whole responses and every stream line read it.
pub type Now = Arc<dyn Fn() -> Stamp + Send + Sync>;

/// The NDJSON content type of native streams.
const NDJSON: &str = "application/x-ndjson";

/// An `/api/chat` or `/api/generate` request, translated (one upstream call, to
/// `/v1/chat/completions` or `/v1/completions`).
pub struct Generation {
    request: Translated,
    meta: Meta,
    now: Now,
}

// === impl Generation ===

impl Generation {
    /// An `/api/chat` request ([`super::chat::request`]).
    pub fn chat(request: Translated, now: Now) -> Self {
        Self::new(request, Output::Chat, now)
    }

    /// An `/api/generate` request ([`super::generate::request`]).
    pub fn generate(request: Translated, now: Now) -> Self {
        Self::new(request, Output::Generate, now)
    }

    fn new(request: Translated, output: Output, now: Now) -> Self {
        let meta = Meta {
            model: request.model().to_owned(),
            output,
        };
        Generation { request, meta, now }
    }

    /// What the client's request became (for the dropped options and `load_only`).
    pub fn request(&self) -> &Translated {
        &self.request
    }

    /// The response to a request with nothing to generate (see [`Translated::load_only`]):
    /// one `done_reason: "load"` line, streamed (with its newline) or whole (without).
    pub fn load_response(&self) -> Bytes {
        let mut line = self.meta.load_response(&(self.now)()).to_vec();
        if !self.request.stream() {
            line.pop();
        }
        Bytes::from(line)
    }
}

impl Translation for Generation {
    type Stream = NativeStream;
    const UPSTREAM: Dialect = Dialect::Chat;
    const STREAM_TYPE: &'static str = NDJSON;

    fn model(&self) -> &str {
        self.request.model()
    }

    fn streams(&self) -> bool {
        self.request.stream()
    }

    fn calls(&mut self, model: &str) -> Vec<UpstreamCall> {
        self.request.set_model(model);
        vec![UpstreamCall {
            path: self.request.path(),
            body: self.request.body(),
        }]
    }

    fn stream(&self, _: usize, _: usize) -> NativeStream {
        let now = Arc::clone(&self.now);
        NativeStream::new(self.meta.clone(), Box::new(move || now()))
    }

    /// Nothing: the stream's own `done: true` line closes it (no `[DONE]` for NDJSON).
    fn closing(&self, _: Option<Usage>, _: usize) -> Vec<Bytes> {
        Vec::new()
    }

    fn whole(&self, responses: &[Bytes]) -> Result<(Bytes, Usage), String> {
        let response = responses.first().ok_or("upstream sent no response")?;
        super::whole(response, &self.meta, &(self.now)())
    }

    fn upstream_error(&self, status: u16, body: &[u8]) -> (u16, String, Option<&'static str>) {
        let (status, message) = super::upstream_message(status, body);
        (status, message, None)
    }
}

/// An `/api/embed` or legacy `/api/embeddings` request, translated (one `/v1/embeddings`
/// call, never streamed).
pub struct Embed {
    request: Translated,
    legacy: bool,
    now: Now,
}

// === impl Embed ===

impl Embed {
    /// An `/api/embed` request ([`embed::request`]).
    pub fn new(request: Translated, now: Now) -> Self {
        Embed {
            request,
            legacy: false,
            now,
        }
    }

    /// A legacy `/api/embeddings` request ([`embed::legacy_request`]).
    pub fn legacy(request: Translated, now: Now) -> Self {
        Embed {
            request,
            legacy: true,
            now,
        }
    }

    /// The response to an empty input, without asking the upstream (as natively), if it is one.
    pub fn empty(&self) -> Option<Bytes> {
        let model = self.request.model();
        self.request
            .load_only()
            .then(|| embed::empty(model, self.legacy))
    }
}

impl Translation for Embed {
    type Stream = NoStream;
    const UPSTREAM: Dialect = Dialect::Chat;

    fn model(&self) -> &str {
        self.request.model()
    }

    fn streams(&self) -> bool {
        false
    }

    fn calls(&mut self, model: &str) -> Vec<UpstreamCall> {
        self.request.set_model(model);
        vec![UpstreamCall {
            path: self.request.path(),
            body: self.request.body(),
        }]
    }

    fn stream(&self, _: usize, _: usize) -> NoStream {
        NoStream(Dialect::Native)
    }

    fn closing(&self, _: Option<Usage>, _: usize) -> Vec<Bytes> {
        Vec::new()
    }

    fn whole(&self, responses: &[Bytes]) -> Result<(Bytes, Usage), String> {
        let response = responses.first().ok_or("upstream sent no response")?;
        if self.legacy {
            return embed::legacy_response(response);
        }
        embed::response(response, self.request.model(), (self.now)().elapsed)
    }

    fn upstream_error(&self, status: u16, body: &[u8]) -> (u16, String, Option<&'static str>) {
        let (status, message) = super::upstream_message(status, body);
        (status, message, None)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::translate::LineTranslator;

    fn now() -> Now {
        Arc::new(|| Stamp {
            created_at: "2026-01-01T00:00:00Z".into(),
            elapsed: Duration::from_millis(5),
        })
    }

    #[test]
    fn chat_goes_to_the_alias_target_and_streams_ndjson_without_done_frame() {
        let body = br#"{"model":"alias","messages":[{"role":"user","content":"hi"}]}"#;
        let request =
            super::super::chat::request(body, super::super::Extras::Pass, &mut String::new)
                .unwrap();
        let mut t = Generation::chat(request, now());
        assert!(t.streams(), "native stream defaults to true");
        let calls = t.calls("target");
        assert_eq!(calls[0].path, super::super::CHAT_PATH);
        let sent: serde_json::Value = serde_json::from_slice(&calls[0].body).unwrap();
        assert_eq!(sent["model"], "target");
        assert!(t.closing(None, 1).is_empty());
        let mut stream = t.stream(0, 1);
        let line =
            br#"data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#;
        let out = LineTranslator::on_line(&mut stream, line).unwrap();
        let first: serde_json::Value = serde_json::from_slice(&out[0]).unwrap();
        assert_eq!(first["model"], "alias");
        assert_eq!(first["message"]["content"], "Hi");
    }

    #[test]
    fn upstream_errors_keep_status_and_message() {
        let t = Generation::generate(
            super::super::generate::request(
                br#"{"model":"m","prompt":"x"}"#,
                super::super::Extras::Pass,
            )
            .unwrap(),
            now(),
        );
        let body = br#"{"error":{"message":"no such model","type":"invalid_request_error"}}"#;
        assert_eq!(
            t.upstream_error(404, body),
            (404, "no such model".into(), None)
        );
    }

    #[test]
    fn load_only_responds_whole_without_newline() {
        let request = super::super::chat::request(
            br#"{"model":"m","stream":false}"#,
            super::super::Extras::Pass,
            &mut String::new,
        )
        .unwrap();
        let t = Generation::chat(request, now());
        assert!(t.request().load_only());
        let response: serde_json::Value = serde_json::from_slice(&t.load_response()).unwrap();
        assert_eq!(response["done_reason"], "load");
        assert!(!t.load_response().ends_with(b"\n"));
    }

    #[test]
    fn empty_embed_input_gets_a_response_without_the_upstream() {
        let request = embed::request(br#"{"model":"e","input":[]}"#).unwrap();
        let t = Embed::new(request, now());
        assert_eq!(t.empty().unwrap(), embed::empty("e", false));
        let request = embed::legacy_request(br#"{"model":"e","prompt":"x"}"#).unwrap();
        assert!(Embed::legacy(request, now()).empty().is_none());
    }

    #[test]
    fn the_driver_sees_the_client_model_and_its_stream_choice() {
        let request = super::super::chat::request(
            br#"{"model":"alias","stream":false,"messages":[{"role":"user","content":"hi"}]}"#,
            super::super::Extras::Pass,
            &mut String::new,
        )
        .unwrap();
        let t = Generation::chat(request, now());
        assert_eq!(t.model(), "alias");
        assert!(!t.streams());
        let response = br#"{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Hi"}}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}"#;
        let (whole, usage) = t.whole(&[Bytes::from_static(response)]).unwrap();
        let whole: serde_json::Value = serde_json::from_slice(&whole).unwrap();
        assert_eq!(whole["message"]["content"], "Hi");
        assert_eq!(usage, Usage::new(1, 2));
        let embed = Embed::new(
            embed::request(br#"{"model":"e","input":"a"}"#).unwrap(),
            now(),
        );
        assert_eq!(embed.model(), "e");
        assert!(!embed.streams());
        let mut embed = embed;
        let calls = embed.calls("up");
        let sent: serde_json::Value = serde_json::from_slice(&calls[0].body).unwrap();
        assert_eq!((calls.len(), &sent["model"]), (1, &serde_json::json!("up")));
        let response = br#"{"data":[{"index":0,"embedding":[0.5]}],"usage":{"prompt_tokens":2}}"#;
        let (whole, usage) = embed.whole(&[Bytes::from_static(response)]).unwrap();
        let whole: serde_json::Value = serde_json::from_slice(&whole).unwrap();
        assert_eq!(whole["embeddings"], serde_json::json!([[0.5]]));
        assert_eq!(usage.prompt_tokens, 2);
        assert!(embed.closing(None, 1).is_empty());
        assert_eq!(
            embed.upstream_error(404, br#"{"error":{"message":"no such model"}}"#),
            (404, "no such model".into(), None)
        );
    }
}
