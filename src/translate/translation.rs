//! What a translation is, for the one I/O shell that drives them all (`proxy::run::drive`).
//!
//! A client request, once read, becomes a [`Translation`]: the upstream requests it makes,
//! the [`LineTranslator`] each response's stream goes through, the closing frames, and the
//! whole response made from whole upstream responses. Usage from several responses is added up by
//! [`crate::base::usage::Tally`]. Everything here is pure: ids and clocks come in through
//! [`Meta`].

use bytes::Bytes;

use super::frames::Frames;
use super::ndjson::LineFramer;

use crate::base::dialect::Dialect;
use crate::base::usage::Usage;

/// What every chunk and response of one translated response shares.
#[derive(Debug, Clone)]
pub struct Meta {
    /// `chatcmpl-` or `cmpl-` + a random token.
    pub id: String,
    /// Unix seconds.
    pub created: u64,
    /// The model name the client asked for.
    pub model: String,
}

/// The `system_fingerprint` of lingo's chat-completions responses.
pub const FINGERPRINT: &str = "fp_lingo";

/// A client request a translator refuses: a 400 in the client's dialect, naming the
/// parameter at fault (every translator's request errors are this one type).
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidRequest {
    pub message: String,
    pub param: Option<&'static str>,
}

/// One upstream request a translation makes (a `POST` of a JSON body).
#[derive(Debug, Clone)]
pub struct UpstreamCall {
    pub path: &'static str,
    pub body: Bytes,
}

/// A per-stream translator: upstream lines in, client frames out.
pub trait LineTranslator: Send + 'static {
    /// Frames for one complete upstream line; `Err(message)` ends the stream with an error.
    fn on_line(&mut self, line: &[u8]) -> Result<Vec<Bytes>, String>;
    /// [`LineTranslator::on_line`], its frames put at the end of the stream's queue: a
    /// translator on a token's path writes them there itself, with no list or frame made per
    /// line.
    fn frames(&mut self, line: &[u8], queue: &mut Frames) -> Result<(), String> {
        queue.extend(self.on_line(line)?);
        Ok(())
    }
    /// Room to make, before a read's lines are translated, for the frames the complete
    /// lines `framer` holds become when written in place ([`Frames::reserve`]); 0 (and the
    /// lines not even counted) for a translator that makes its frames whole.
    fn room(&self, _framer: &LineFramer) -> usize {
        0
    }
    /// Frames at the clean end of the upstream body; `Err` when the response was incomplete.
    fn finish(&mut self) -> Result<Vec<Bytes>, String>;
    /// The dialect its frames are in (a failed stream's last frame is told in it).
    fn dialect(&self) -> Dialect;
    /// The token counts the stream reported, once it has ended.
    fn usage(&self) -> Option<Usage>;
    /// Which prompt of the request the stream responses: the `n` choices of a chat completion
    /// all response prompt 0; a completions batch has one prompt per stream.
    fn prompt(&self) -> usize {
        0
    }
}

/// One client request, translated.
pub trait Translation: Send + 'static {
    /// What each response's stream goes through.
    type Stream: LineTranslator;
    /// The dialect the upstream must speak (an alias may point at another upstream; the
    /// shell refuses one that speaks something else). Most translations go to native servers.
    const UPSTREAM: Dialect = Dialect::Native;
    /// The content type of a streamed response: server-sent events unless the client's dialect
    /// streams something else (native clients read NDJSON).
    const STREAM_TYPE: &'static str = "text/event-stream";
    /// The model the client named (the shell resolves aliases).
    fn model(&self) -> &str;
    /// Whether the client asked for a stream.
    fn streams(&self) -> bool;
    /// The upstream requests, naming the upstream's `model`.
    fn calls(&mut self, model: &str) -> Vec<UpstreamCall>;
    /// The translator for response `i`'s stream, of `count`.
    fn stream(&self, i: usize, count: usize) -> Self::Stream;
    /// The frames after every stream ended cleanly, with the request's usage if any stream
    /// reported one.
    fn closing(&self, usage: Option<Usage>, count: usize) -> Vec<Bytes>;
    /// The whole response from the upstream's whole responses, and its usage.
    fn whole(&self, responses: &[Bytes]) -> Result<(Bytes, Usage), String>;
    /// An upstream's error response rewritten: `(status, message, code)`.
    fn upstream_error(&self, status: u16, body: &[u8]) -> (u16, String, Option<&'static str>);
}

/// The stream of a translation that never streams (embeddings): the driver never asks for
/// one, and if a change ever made it, the client gets an error in its dialect, not a panic.
#[derive(Debug)]
pub struct NoStream(pub Dialect);

impl LineTranslator for NoStream {
    fn on_line(&mut self, _: &[u8]) -> Result<Vec<Bytes>, String> {
        Err(NO_STREAM.to_owned())
    }

    fn finish(&mut self) -> Result<Vec<Bytes>, String> {
        Err(NO_STREAM.to_owned())
    }

    fn dialect(&self) -> Dialect {
        self.0
    }

    fn usage(&self) -> Option<Usage> {
        None
    }
}

const NO_STREAM: &str = "this endpoint does not stream its responses";

/// A tool call's id when the upstream gave none: derived from the response's own random id,
/// the choice and the call's number, so that the translator stays pure and the ids stay
/// unique and unguessable (`call_` + 24 hex, the official length).
pub fn call_id(meta: &Meta, choice: u32, n: u32) -> String {
    let random: String = meta
        .id
        .rsplit('-')
        .next()
        .unwrap_or_default()
        .chars()
        .filter(char::is_ascii_hexdigit)
        .take(16)
        .collect();
    format!(
        "call_{random:0>16}{:02x}{:06x}",
        choice & 0xff,
        n & 0xff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A translation that never streams fails a stream it is asked for, in the client's
    /// dialect, instead of panicking.
    #[test]
    fn no_stream_fails_in_its_dialect() {
        for dialect in [Dialect::Chat, Dialect::Native] {
            let mut stream = NoStream(dialect);
            assert_eq!(stream.dialect(), dialect);
            assert_eq!(stream.on_line(b"{}"), Err(NO_STREAM.to_owned()));
            assert_eq!(stream.finish(), Err(NO_STREAM.to_owned()));
            assert_eq!(stream.usage(), None);
        }
    }

    #[test]
    fn call_ids_are_official_length_and_distinct() {
        let meta = Meta {
            id: "chatcmpl-0123456789abcdef0123456789abcdef".into(),
            created: 0,
            model: "m".into(),
        };
        let ids = [
            call_id(&meta, 0, 0),
            call_id(&meta, 0, 1),
            call_id(&meta, 1, 0),
        ];
        assert_eq!(ids[0], "call_0123456789abcdef00000000");
        assert!(ids.iter().all(|id| id.len() == 29));
        assert_ne!(ids[1], ids[2]);
    }
}
