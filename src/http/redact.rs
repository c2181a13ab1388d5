//! Taking an upstream's key out of a response as it streams by.
//!
//! Some upstreams repeat the credential they were sent in their error responses. lingo injects
//! that key so that clients never hold it, so an error response passed through must not hand it
//! over either, however large the response and however its bytes are split into chunks. The
//! [`Redactor`] holds back the last bytes it was given, fewer than the key's length, until the
//! next chunk shows whether they start the key: memory stays bounded and nothing else waits.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Bytes, BytesMut};
use http_body::{Frame, SizeHint};
use hyper::header::{HeaderMap, HeaderValue};
use pin_project_lite::pin_project;

use crate::base::secret::Secret;

/// What an occurrence of the key becomes.
const MARK: &[u8] = b"<redacted>";

/// Replaces every occurrence of a key in a sequence of chunks. Joined, its outputs for the
/// chunks of a response equal the response with each occurrence (leftmost first, not
/// overlapping) replaced, wherever the chunks were split.
#[derive(Debug)]
pub struct Redactor {
    key: Box<[u8]>,
    /// The tail of what was fed that could still be the start of the key.
    held: BytesMut,
}

impl Redactor {
    pub fn new(key: &Secret) -> Self {
        Redactor::of(key.expose().as_bytes())
    }

    fn of(key: &[u8]) -> Self {
        Redactor {
            key: key.into(),
            held: BytesMut::new(),
        }
    }

    /// All of `bytes` at once, redacted.
    fn whole(mut self, bytes: &[u8]) -> Vec<u8> {
        let mut out = self.feed(bytes).to_vec();
        out.extend_from_slice(&self.finish());
        out
    }

    /// The output this chunk completes (possibly empty).
    pub fn feed(&mut self, chunk: &[u8]) -> Bytes {
        if self.key.is_empty() {
            return Bytes::copy_from_slice(chunk);
        }
        self.held.extend_from_slice(chunk);
        let k = self.key.len();
        let mut out = BytesMut::with_capacity(self.held.len());
        let mut start = 0; // first byte not yet decided
        let mut at = 0;
        while at + k <= self.held.len() {
            if self.held[at..at + k] == *self.key {
                out.extend_from_slice(&self.held[start..at]);
                out.extend_from_slice(MARK);
                at += k;
                start = at;
            } else {
                at += 1;
            }
        }
        // Bytes from `at` on are fewer than the key: they wait for the next chunk.
        out.extend_from_slice(&self.held[start..at]);
        let _ = self.held.split_to(at);
        out.freeze()
    }

    /// How many bytes are held back now.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// What is still held back, once the response has ended.
    pub fn finish(&mut self) -> Bytes {
        self.held.split().freeze()
    }
}

/// Redacts the key from header values (an error response's headers, its trailers).
pub fn redact_headers(headers: &mut HeaderMap, key: &Secret) {
    redact_values(headers, key.expose().as_bytes());
}

fn redact_values(headers: &mut HeaderMap, key: &[u8]) {
    if key.is_empty() {
        return;
    }
    for value in headers.values_mut() {
        if !value.as_bytes().windows(key.len()).any(|w| w == key) {
            continue;
        }
        let out = Redactor::of(key).whole(value.as_bytes());
        // The key and the mark are both valid header bytes, so this cannot fail.
        if let Ok(redacted) = HeaderValue::from_bytes(&out) {
            *value = redacted;
        }
    }
}

pin_project! {
    /// A body with the key redacted from its data (see [`Redactor`]) and its trailers. Its
    /// length can change, so it has no exact size.
    pub struct Redacting<B> {
        #[pin]
        inner: B,
        redactor: Redactor,
        // Trailers that arrived while bytes were still held back; sent after them.
        trailers: Option<Frame<Bytes>>,
        done: bool,
    }
}

impl<B> Redacting<B> {
    pub fn new(inner: B, key: &Secret) -> Self {
        Redacting {
            inner,
            redactor: Redactor::new(key),
            trailers: None,
            done: false,
        }
    }
}

impl<B: http_body::Body<Data = Bytes>> http_body::Body for Redacting<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let mut this = self.project();
        if let Some(trailers) = this.trailers.take() {
            return Poll::Ready(Some(Ok(trailers)));
        }
        while !*this.done {
            match ready!(this.inner.as_mut().poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        let out = this.redactor.feed(&data);
                        if !out.is_empty() {
                            return Poll::Ready(Some(Ok(Frame::data(out))));
                        }
                    }
                    Err(mut frame) => {
                        if let Some(trailers) = frame.trailers_mut() {
                            redact_values(trailers, &this.redactor.key);
                        }
                        let held = this.redactor.finish();
                        if held.is_empty() {
                            return Poll::Ready(Some(Ok(frame)));
                        }
                        *this.trailers = Some(frame);
                        return Poll::Ready(Some(Ok(Frame::data(held))));
                    }
                },
                Some(Err(err)) => return Poll::Ready(Some(Err(err))),
                None => *this.done = true,
            }
        }
        let held = this.redactor.finish();
        Poll::Ready((!held.is_empty()).then(|| Ok(Frame::data(held))))
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.trailers.is_none() && self.redactor.held.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use std::collections::VecDeque;

    /// A body that sends the frames it was given, then ends.
    struct Frames(VecDeque<Frame<Bytes>>);

    impl http_body::Body for Frames {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Ready(self.0.pop_front().map(Ok))
        }
    }

    /// Data split across frames, empty frames, and trailers: the key is out of all of them,
    /// the bytes held back come before the trailers, and the body ends after them.
    #[tokio::test]
    async fn the_body_redacts_data_and_trailers() {
        let key = Secret::new("sk-123");
        let mut trailers = HeaderMap::new();
        trailers.insert("x-why", HeaderValue::from_static("bad key sk-123"));
        let frames = [
            Frame::data(Bytes::from_static(b"error: sk-")),
            Frame::data(Bytes::new()),
            Frame::data(Bytes::from_static(b"123 and sk-1")),
            Frame::trailers(trailers),
        ];
        let mut body = Redacting::new(Frames(frames.into()), &key);
        let mut data = Vec::new();
        let mut seen_trailers = None;
        while let Some(frame) = body.frame().await {
            let frame = frame.unwrap();
            assert!(seen_trailers.is_none(), "nothing after the trailers");
            match frame.into_data() {
                Ok(bytes) => data.extend_from_slice(&bytes),
                Err(frame) => seen_trailers = frame.into_trailers().ok(),
            }
        }
        assert_eq!(data, b"error: <redacted> and sk-1");
        assert_eq!(seen_trailers.unwrap()["x-why"], "bad key <redacted>");
        assert!(http_body::Body::is_end_stream(&body));
    }

    /// The whole response redacted in one go: the reference the chunked runs must match.
    fn at_once(key: &str, response: &[u8]) -> Vec<u8> {
        Redactor::new(&Secret::new(key)).whole(response)
    }

    #[test]
    fn every_occurrence_is_replaced() {
        let cases: &[(&str, &[u8], &[u8])] = &[
            ("fc-key", b"no key here", b"no key here"),
            (
                "fc-key",
                b"bad key fc-key (fc-key)",
                b"bad key <redacted> (<redacted>)",
            ),
            (
                "fc-key",
                b"\xfffc-keyfc-key\xfe",
                b"\xff<redacted><redacted>\xfe",
            ),
            ("fc-key", b"fc-ke", b"fc-ke"),
            ("aa", b"aaa", b"<redacted>a"),
            ("abab", b"ababab", b"<redacted>ab"),
            ("", b"anything", b"anything"),
        ];
        for (key, response, want) in cases {
            assert_eq!(at_once(key, response), *want, "{key:?} in {response:?}");
        }
    }

    /// Split anywhere, even byte by byte, the output is the same as all at once.
    #[test]
    fn chunk_boundaries_change_nothing() {
        let key = "sk-0123456789";
        let response =
            b"{\"error\":\"key sk-0123456789 revoked; sk-01234 sk-0123456789sk-0123456789\"}";
        let want = at_once(key, response);
        assert!(!want.windows(key.len()).any(|w| w == key.as_bytes()));
        for size in 1..=response.len() {
            let mut r = Redactor::new(&Secret::new(key));
            let mut out = Vec::new();
            for chunk in response.chunks(size) {
                let piece = r.feed(chunk);
                out.extend_from_slice(&piece);
                assert!(r.held.len() < key.len(), "holds back less than the key");
            }
            out.extend_from_slice(&r.finish());
            assert_eq!(out, want, "chunks of {size}");
        }
    }
}
