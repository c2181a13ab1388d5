//! A chat-completions SSE stream -> native NDJSON, line by line.
//!
//! It takes the upstream's *lines* (the `LineFramer` splits the body; blank lines never
//! arrive), so each `data:` line is taken as one whole event: the official API and the
//! servers that copy it send one JSON object per `data:` line. Comments (`: ...`) and other
//! SSE fields (`event:`, `id:`, `retry:`) are skipped.
//!
//! One native line per upstream chunk that says something, as it arrives (a chunk with only
//! a `role`, or only `usage`, says nothing). Tool calls come in fragments (`id` and name
//! first, `arguments` in pieces after), kept per `index`; a call is emitted whole, on the
//! line of the chunk that completes it: the one where a higher `index` starts, or the one
//! with `finish_reason`. The closing `done: true` line comes at `data: [DONE]` (after the
//! usage chunk, which lingo always asks for), or at the end of the body if a `finish_reason`
//! came; an end before either, or an `{"error": ...}` event, is an `Err`, so the shell ends
//! with one `{"error": ...}` line and no `done: true` line. Only choice 0 is read: lingo asks
//! for one.

use std::time::Duration;

use bytes::Bytes;

use super::chunk::{Call, Choice, Chunk};
use super::response::{self, End, Meta, Piece, Stamp};
use crate::base::usage::Usage;
use crate::translate::chat::StreamError;

/// The caller's clock: called once per line written.
pub type Clock = Box<dyn FnMut() -> Stamp + Send>;

/// A tool call being assembled.
#[derive(Debug, Default)]
struct Partial {
    index: u64,
    id: String,
    name: String,
    arguments: String,
}

pub struct NativeStream {
    meta: Meta,
    clock: Clock,
    calls: Vec<Partial>,
    /// How many calls have been emitted: the native `index` of the next.
    emitted: usize,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    /// When the first generated piece arrived.
    first: Option<Duration>,
    ended: bool,
}

// === impl NativeStream ===

impl NativeStream {
    pub fn new(meta: Meta, clock: Clock) -> Self {
        NativeStream {
            meta,
            clock,
            calls: Vec::new(),
            emitted: 0,
            finish_reason: None,
            usage: None,
            first: None,
            ended: false,
        }
    }

    /// The native lines for one upstream line.
    pub fn on_line(&mut self, line: &[u8]) -> Result<Vec<Bytes>, StreamError> {
        let Some(data) = line.strip_prefix(b"data:") else {
            return Ok(Vec::new());
        };
        let data = data.trim_ascii();
        if self.ended {
            return Ok(Vec::new());
        }
        if data == b"[DONE]" {
            return self.close().map(|line| vec![line]);
        }
        let chunk = Chunk::parse(data).map_err(StreamError::Malformed)?;
        if let Some(error) = chunk.error() {
            return Err(StreamError::Upstream(error));
        }
        if let Some(usage) = &chunk.usage {
            self.usage = Some(usage.into());
        }
        let Some(choice) = chunk.choice_zero() else {
            return Ok(Vec::new());
        };
        let piece = self.piece(choice)?;
        if piece.is_empty() {
            return Ok(Vec::new());
        }
        let stamp = (self.clock)();
        self.first.get_or_insert(stamp.elapsed);
        Ok(vec![self.meta.line(&stamp, &piece, None)])
    }

    /// What one choice adds: its text, reasoning, and the tool calls it completes.
    fn piece<'a>(&mut self, choice: &'a Choice<'_>) -> Result<Piece<'a>, StreamError> {
        let delta = choice.delta.as_ref();
        let mut piece = Piece::of(choice, delta);
        let fragments = delta.and_then(|d| d.tool_calls.as_deref()).unwrap_or(&[]);
        for fragment in fragments {
            self.fragment(fragment, &mut piece)?;
        }
        if let Some(reason) = choice.finish_reason.as_deref() {
            self.finish_reason = Some(reason.to_owned());
            self.complete(|_| true, &mut piece)?;
        }
        Ok(piece)
    }

    /// Adds one fragment; a fragment of a higher `index` completes the calls before it.
    fn fragment(&mut self, fragment: &Call<'_>, piece: &mut Piece<'_>) -> Result<(), StreamError> {
        let last = self.calls.last().map(|c| c.index);
        let index = fragment.index.unwrap_or_else(|| match last {
            // No index: a fragment with an id starts a new call, else continues the last.
            Some(i) if fragment.id.is_none() => i,
            Some(i) => i + 1,
            None => 0,
        });
        self.complete(|c| c.index < index, piece)?;
        let at = match self.calls.iter().position(|c| c.index == index) {
            Some(at) => at,
            None => {
                self.calls.push(Partial {
                    index,
                    ..Partial::default()
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[at];
        let function = fragment.function.as_ref();
        if call.id.is_empty() {
            call.id = fragment.id.as_deref().unwrap_or("").to_owned();
        }
        if call.name.is_empty() {
            call.name = function
                .and_then(|f| f.name.as_deref())
                .unwrap_or("")
                .to_owned();
        }
        call.arguments
            .push_str(function.and_then(|f| f.arguments.as_deref()).unwrap_or(""));
        Ok(())
    }

    /// Moves the calls `done` selects, whole, into `piece`.
    fn complete(
        &mut self,
        done: impl Fn(&Partial) -> bool,
        piece: &mut Piece<'_>,
    ) -> Result<(), StreamError> {
        let (ready, rest) = std::mem::take(&mut self.calls)
            .into_iter()
            .partition(|c| done(c));
        self.calls = rest;
        for call in ready {
            let native = response::native_call(self.emitted, &call.id, &call.name, &call.arguments);
            piece
                .tool_calls
                .push(native.map_err(StreamError::Malformed)?);
            self.emitted += 1;
        }
        Ok(())
    }

    /// The closing `done: true` line (calls still open ride on it).
    fn close(&mut self) -> Result<Bytes, StreamError> {
        let mut piece = Piece::default();
        self.complete(|_| true, &mut piece)?;
        self.ended = true;
        let stamp = (self.clock)();
        let reason = response::done_reason(self.finish_reason.as_deref());
        let end = End::new(
            reason,
            stamp.elapsed,
            self.first,
            self.usage.unwrap_or_default(),
        );
        Ok(self.meta.line(&stamp, &piece, Some(&end)))
    }

    /// At the end of the upstream body: the closing line if a `finish_reason` came but no
    /// `[DONE]`; an error if neither came.
    pub fn finish(&mut self) -> Result<Vec<Bytes>, StreamError> {
        match (self.ended, &self.finish_reason) {
            (true, _) => Ok(Vec::new()),
            (false, Some(_)) => self.close().map(|line| vec![line]),
            (false, None) => Err(StreamError::Incomplete),
        }
    }

    /// The line that ends a broken stream: `{"error": message}`.
    pub fn error_frame(&self, message: &str) -> Bytes {
        let mut line = super::error_body(message).to_vec();
        line.push(b'\n');
        Bytes::from(line)
    }

    /// The token counts, once the stream has ended cleanly (missing counts are 0).
    pub fn usage(&self) -> Option<Usage> {
        self.ended.then(|| self.usage.unwrap_or_default())
    }
}
impl crate::translate::LineTranslator for NativeStream {
    fn on_line(&mut self, line: &[u8]) -> Result<Vec<Bytes>, String> {
        NativeStream::on_line(self, line).map_err(|e| e.to_string())
    }

    fn finish(&mut self) -> Result<Vec<Bytes>, String> {
        NativeStream::finish(self).map_err(|e| e.to_string())
    }

    fn dialect(&self) -> crate::base::dialect::Dialect {
        crate::base::dialect::Dialect::Native
    }

    fn usage(&self) -> Option<Usage> {
        NativeStream::usage(self)
    }
}
