//! A native request translated for a chat-completions upstream: where it goes, its body, and
//! what the shell needs to know about it.

use bytes::Bytes;
use serde_json::{Map, Value};

/// The upstream request a native request became.
#[derive(Debug)]
pub struct Translated {
    pub(super) path: &'static str,
    /// The model name the client asked for.
    pub(super) model: String,
    pub(super) body: Map<String, Value>,
    pub(super) stream: bool,
    pub(super) dropped: Vec<String>,
    pub(super) load_only: bool,
}

// === impl Translated ===

impl Translated {
    /// The upstream path: [`super::CHAT_PATH`], [`super::COMPLETIONS_PATH`] or
    /// [`super::EMBEDDINGS_PATH`].
    pub fn path(&self) -> &'static str {
        self.path
    }

    /// The model name the client asked for (responses are labelled with it).
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Sets the model the upstream knows (an alias's target).
    pub fn set_model(&mut self, model: &str) {
        self.body.insert("model".into(), model.into());
    }

    /// Whether the client wants NDJSON lines (native `stream` defaults to true).
    pub fn stream(&self) -> bool {
        self.stream
    }

    /// Native options left out under [`super::Extras::Pass`] or [`super::Extras::Drop`]:
    /// for the shell to log.
    pub fn dropped(&self) -> &[String] {
        &self.dropped
    }

    /// Nothing to generate (`messages: []`, `prompt: ""`): the native server only loads the
    /// model. The shell responds with [`super::Meta::load_response`] without asking the upstream.
    pub fn load_only(&self) -> bool {
        self.load_only
    }

    /// The upstream request body.
    pub fn body(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(&self.body).unwrap_or_default())
    }

    /// The upstream request (for tests and tools).
    pub fn json(&self) -> &Map<String, Value> {
        &self.body
    }
}
