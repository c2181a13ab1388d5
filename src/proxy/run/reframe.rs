//! Re-framing a native NDJSON response into server-sent events, as it arrives.
//!
//! `Reframe` is the only I/O around the sans-IO translators: it feeds each frame of the
//! upstream body to the line framer and each complete line to the translator, and hands the
//! frames of one read on as one frame before it reads again, so every token leaves as soon
//! as it came in (`http::write_buf` tells a frame's whole way). A failure (an upstream
//! `{"error"}` line, a cut connection, an idle timeout, a line over the cap) becomes one
//! error frame and the end of the stream, without `[DONE]`, so no client mistakes a cut
//! response for a complete one. `Merged` interleaves the `n` streams of one request and adds
//! the final `data: [DONE]` when (and only when) everything ended cleanly. The same
//! machinery runs the other direction (a chat-completions SSE response re-framed as native
//! NDJSON lines): the translator and its closing decide the frames, and a native
//! translation's closing is empty, so a native stream never gets `data: [DONE]`.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::Frame;
use pin_project_lite::pin_project;

use crate::base::secret::Secret;
use crate::base::usage::{Tally, Usage};
use crate::http::body::{Body, BoxError};
use crate::observe::{Outcome, RequestStats};
use crate::proxy::respond;
use crate::table::Upstream;
use crate::translate::LineTranslator;
use crate::translate::frames::Frames;
use crate::translate::ndjson::{FrameError, LineFramer};

/// What is sent after every stream of a request ended cleanly, given the request's usage
/// (a usage chunk when asked for, then `data: [DONE]`).
pub type Closing = Box<dyn FnOnce(Option<Usage>) -> Vec<Bytes> + Send>;

/// Where a stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Streaming,
    /// Ended cleanly: everything was translated.
    Complete,
    /// Ended with an error frame.
    Failed,
}

pin_project! {
    /// One upstream NDJSON body re-framed as SSE (without the final `[DONE]`).
    pub struct Reframe<T> {
        #[pin]
        inner: Body,
        framer: LineFramer,
        translator: T,
        queue: Frames,
        state: State,
        // The upstream's key, kept out of the error messages lingo translates.
        key: Option<Secret>,
        // Where a failure is reported, so the access line and metrics tell it.
        stats: Option<Arc<RequestStats>>,
    }
}

/// Why a stream ends with an error frame.
struct Failure {
    outcome: Outcome,
    message: String,
}

impl Failure {
    /// The upstream's own error, or a response lingo could not read.
    fn upstream(message: String) -> Self {
        Failure {
            outcome: Outcome::UpstreamFailed,
            message,
        }
    }

    fn framing(err: FrameError) -> Self {
        Failure {
            outcome: Outcome::LineCap,
            message: err.to_string(),
        }
    }
}

// === impl Reframe ===

impl<T: LineTranslator> Reframe<T> {
    pub fn new(inner: Body, max_line: usize, translator: T) -> Self {
        Reframe {
            inner,
            framer: LineFramer::new(max_line),
            translator,
            queue: Frames::default(),
            state: State::Streaming,
            key: None,
            stats: None,
        }
    }

    /// Reports a failure to the request's stats (the access line, the metrics).
    pub fn reporting(mut self, stats: &Arc<RequestStats>) -> Self {
        self.stats = Some(Arc::clone(stats));
        self
    }

    /// Keeps `upstream`'s key out of the error frame (an upstream may echo it in an error).
    pub fn redacting(mut self, upstream: &Upstream) -> Self {
        self.key = upstream.auth.as_ref().map(|auth| auth.key.clone());
        self
    }

    fn failed(&self) -> bool {
        self.state == State::Failed
    }
}

impl<T: LineTranslator> http_body::Body for Reframe<T> {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let mut this = self.project();
        loop {
            if let Some(frame) = this.queue.take() {
                return Poll::Ready(Some(Ok(Frame::data(frame))));
            }
            if *this.state != State::Streaming {
                return Poll::Ready(None);
            }
            // Ok(true): the upstream body ended and everything was translated.
            let result = match this.inner.as_mut().poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        this.framer.push(&data);
                    }
                    match drain(this.framer, this.translator, this.queue) {
                        Ok(()) if this.inner.is_end_stream() => {
                            end(this.framer, this.translator, this.queue).map(|()| true)
                        }
                        other => other.map(|()| false),
                    }
                }
                Poll::Ready(Some(Err(err))) => Err(Failure {
                    outcome: Outcome::of_error(err.as_ref()),
                    message: format!(
                        "upstream stream failed: {}",
                        crate::upstream::reason(err.as_ref())
                    ),
                }),
                Poll::Ready(None) => end(this.framer, this.translator, this.queue).map(|()| true),
            };
            match result {
                Ok(true) => *this.state = State::Complete,
                Ok(false) => {}
                Err(Failure { outcome, message }) => {
                    let message = match this.key {
                        Some(key) => key.redact(&message).into_owned(),
                        None => message,
                    };
                    tracing::warn!("stream ended with an error: {message}");
                    if let Some(stats) = this.stats {
                        stats.stream_failed(outcome, &message);
                    }
                    this.queue
                        .push(respond::stream_error(this.translator.dialect(), &message));
                    *this.state = State::Failed;
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.state != State::Streaming && self.queue.is_empty()
    }
}

/// Translates every complete line the framer holds.
fn drain<T: LineTranslator>(
    framer: &mut LineFramer,
    translator: &mut T,
    queue: &mut Frames,
) -> Result<(), Failure> {
    queue.reserve(translator.room(framer));
    while let Some(line) = framer.next_line() {
        let line = line.map_err(Failure::framing)?;
        translator.frames(line, queue).map_err(Failure::upstream)?;
    }
    Ok(())
}

/// The upstream body ended: the last line (maybe without a newline), then the translator's end.
fn end<T: LineTranslator>(
    framer: &mut LineFramer,
    translator: &mut T,
    queue: &mut Frames,
) -> Result<(), Failure> {
    drain(framer, translator, queue)?;
    if let Some(line) = framer.finish() {
        let line = line.map_err(Failure::framing)?;
        translator.frames(line, queue).map_err(Failure::upstream)?;
    }
    queue.extend(translator.finish().map_err(Failure::upstream)?);
    Ok(())
}

/// The `n` re-framed streams of one request, interleaved as their frames arrive, then
/// `data: [DONE]` if every one of them ended cleanly. When one fails, its error frame is the
/// last frame: the others are dropped, which cancels their upstream requests.
pub struct Merged<T> {
    streams: Vec<Pin<Box<Reframe<T>>>>,
    /// Where the next poll starts, so that no stream starves the others.
    next: usize,
    finished: bool,
    usage: Tally,
    closing_frames: Option<Closing>,
    /// Frames left to send after the last stream ended.
    closing: VecDeque<Bytes>,
    /// Where the summed usage is reported (lingo's token counters).
    stats: Arc<RequestStats>,
}

// === impl Merged ===

impl<T: LineTranslator> Merged<T> {
    pub fn new(streams: Vec<Reframe<T>>, closing: Closing, stats: Arc<RequestStats>) -> Self {
        Merged {
            streams: streams
                .into_iter()
                .map(|stream| Box::pin(stream.reporting(&stats)))
                .collect(),
            next: 0,
            finished: false,
            usage: Tally::default(),
            closing_frames: Some(closing),
            closing: VecDeque::new(),
            stats,
        }
    }

    /// Everything ended cleanly: the usage is counted, then the closing frames.
    fn close(&mut self) {
        self.finished = true;
        let usage = (!self.usage.is_empty()).then(|| self.usage.total());
        if let Some(usage) = usage {
            self.stats.used(usage);
        }
        if let Some(closing) = self.closing_frames.take() {
            self.closing.extend(closing(usage));
        }
    }
}

impl<T: LineTranslator> http_body::Body for Merged<T> {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if this.finished {
            return Poll::Ready(this.closing.pop_front().map(|f| Ok(Frame::data(f))));
        }
        let count = this.streams.len();
        let mut i = 0;
        while i < count.min(this.streams.len()) {
            let at = (this.next + i) % this.streams.len();
            match this.streams[at].as_mut().poll_frame(cx) {
                Poll::Ready(Some(frame)) => {
                    if this.streams[at].failed() && this.streams[at].is_end_stream() {
                        // Its error frame is the last thing the client gets.
                        this.streams.clear();
                        this.finished = true;
                    } else {
                        this.next = (at + 1) % this.streams.len().max(1);
                    }
                    return Poll::Ready(Some(frame));
                }
                Poll::Ready(None) => {
                    let ended = this.streams.remove(at);
                    if let Some(usage) = ended.translator.usage() {
                        this.usage.add(ended.translator.prompt(), usage);
                    }
                    if this.streams.is_empty() {
                        this.close();
                        return Poll::Ready(this.closing.pop_front().map(|f| Ok(Frame::data(f))));
                    }
                }
                Poll::Pending => i += 1,
            }
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.finished && self.closing.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::pin::pin;
    use std::task::Waker;

    use super::*;
    use crate::translate::Meta;
    use crate::translate::chat::ChatStream;

    fn chat(pieces: &[&'static str]) -> Reframe<ChatStream> {
        chat_with_usage(pieces, false)
    }

    fn chat_with_usage(pieces: &[&'static str], usage: bool) -> Reframe<ChatStream> {
        let meta = Meta {
            id: "chatcmpl-t".into(),
            created: 1,
            model: "m".into(),
        };
        let body = Body::pieces(
            pieces
                .iter()
                .map(|p| Bytes::from_static(p.as_bytes()))
                .collect(),
        );
        Reframe::new(body, 1 << 20, ChatStream::new(&meta, 0, usage))
    }

    /// The frames of the lines one read brought leave as one frame, written in place: the
    /// same bytes, in the same order, as each line's frames made whole.
    #[test]
    fn the_frames_of_one_read_leave_together_as_written() {
        const LINES: &str = concat!(
            "{\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"done\":false}\n",
            "{\"message\":{\"role\":\"assistant\",\"content\":\"ho\"},\"done\":false}\n",
            "{\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"eval_count\":2}\n",
        );
        for usage in [false, true] {
            let mut body = pin!(chat_with_usage(&[LINES], usage));
            let mut cx = Context::from_waker(Waker::noop());
            let mut frames = Vec::new();
            while let Poll::Ready(Some(frame)) = http_body::Body::poll_frame(body.as_mut(), &mut cx)
            {
                frames.push(frame.unwrap().into_data().unwrap());
            }
            let mut one_by_one = chat_with_usage(&[], usage).translator;
            let whole: Vec<Bytes> = LINES
                .split_inclusive('\n')
                .flat_map(|line| one_by_one.on_line(line.as_bytes()).unwrap())
                .collect();
            // Role and hi, ho, the finish, and the usage chunk when asked for.
            assert_eq!(whole.len(), 3 + usize::from(usage));
            assert_eq!(frames, [whole.concat()], "usage: {usage}");
        }
    }

    /// The room made for a read holds its frames, and not twice over (a frame handed on is
    /// shrunk in place, within half): 16 tokens and the end in one read, as a native server
    /// sends them, for chat and for completions, with and without the usage chunk.
    #[test]
    fn a_reads_room_holds_its_frames() {
        let meta = Meta {
            id: "chatcmpl-4f9a0c1e2b3d4a5f6e7d8c9b".into(),
            created: 1_764_187_200,
            model: "gpt-4o-mini".into(),
        };
        let at = r#"{"model":"llama3.2","created_at":"2026-11-26T20:00:00.123456Z","#;
        let end = r#""done":true,"done_reason":"stop","total_duration":4883583458,"prompt_eval_count":26,"eval_count":16}"#;
        let chat: String = (0..16)
            .map(|i| format!("{at}\"message\":{{\"role\":\"assistant\",\"content\":\" tok{i}\"}},\"done\":false}}\n"))
            .chain([format!("{at}\"message\":{{\"role\":\"assistant\",\"content\":\"\"}},{end}\n")])
            .collect();
        let generate: String = (0..16)
            .map(|i| format!("{at}\"response\":\" tok{i}\",\"done\":false}}\n"))
            .chain([format!("{at}\"response\":\"\",{end}\n")])
            .collect();
        fn check(mut stream: impl LineTranslator, read: &str) {
            let mut framer = LineFramer::new(1 << 20);
            framer.push(read.as_bytes());
            let room = stream.room(&framer);
            let mut frames = Frames::default();
            for line in read.lines() {
                stream.frames(line.as_bytes(), &mut frames).unwrap();
            }
            let written = frames.take().unwrap().len();
            assert!(
                room >= written && room < 2 * written,
                "{room} for {written}"
            );
        }
        for usage in [false, true] {
            check(ChatStream::new(&meta, 0, usage), &chat);
            let stream =
                crate::translate::completions::CompletionStream::new(&meta, 0, usage, None);
            check(stream, &generate);
        }
    }

    /// One read that brings tokens and then the stream's failure: the failure's error frame
    /// is still the last thing sent, after those tokens, with no `[DONE]`, and the other
    /// stream of the request says nothing after it.
    #[test]
    fn a_failure_read_with_tokens_is_still_the_last_frame() {
        const TOKEN: &str =
            "{\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"done\":false}\n";
        const TOKENS_THEN_ERROR: &str = concat!(
            "{\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"done\":false}\n",
            "{\"message\":{\"role\":\"assistant\",\"content\":\"ho\"},\"done\":false}\n",
            "{\"error\":\"boom\"}\n"
        );
        let failing = chat(&[TOKENS_THEN_ERROR]);
        let other = chat(&[TOKEN, TOKEN, TOKEN]);
        let mut body = pin!(Merged::new(
            vec![failing, other],
            Box::new(|_| vec![crate::translate::sse::done()]),
            RequestStats::new(),
        ));
        let mut cx = Context::from_waker(Waker::noop());
        let mut frames = Vec::new();
        while let Poll::Ready(Some(frame)) = http_body::Body::poll_frame(body.as_mut(), &mut cx) {
            frames.push(frame.unwrap().into_data().unwrap());
        }
        let last = String::from_utf8(frames.last().unwrap().to_vec()).unwrap();
        assert!(last.ends_with("\n\n") && last.contains("boom"), "{last}");
        let tokens_then_error = ["\"hi\"", "\"ho\"", "boom"].map(|s| last.find(s));
        assert!(
            tokens_then_error.is_sorted() && tokens_then_error[0].is_some(),
            "{last}"
        );
        let all: Vec<u8> = frames.concat();
        let all = String::from_utf8(all).unwrap();
        assert!(!all.contains("[DONE]"), "{all}");
        assert_eq!(all.matches("boom").count(), 1, "{all}");
        assert!(
            frames.iter().all(|f| f.ends_with(b"\n\n")),
            "frames end on events"
        );
    }
}
