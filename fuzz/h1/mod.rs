//! What the differential HTTP/1.1 targets share: the runtime each input runs on, how a run
//! waits until nothing moves any more, a head's fields in a form both readers' can be compared
//! in, and a body read to its end.
//!
//! Both sides of a comparison run on one current-thread runtime, joined in one task: a wait
//! for "nothing moves" ([`settle`]) is then a wait until every side is blocked on bytes that
//! will not come, whatever the time it takes, with no timer involved.

#![allow(dead_code)] // each target uses its own half

pub mod known;
pub mod request;
pub mod response;

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Buf;
use http_body::Body;
use http_body_util::BodyExt;
use hyper::HeaderMap;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The longest a run may take (real time); past it the run has hung, which is a finding.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// How many turns in a row must pass with nothing moving before a run counts as settled.
const QUIET_TURNS: u32 = 8;
/// A run that never settles within this many turns has a loop that never waits.
const MOST_TURNS: u32 = 200_000;

thread_local! {
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
}

/// Runs `run` to its end on this thread's runtime, within [`PATIENCE`].
pub fn block_on<F: Future>(run: F) -> F::Output {
    RUNTIME.with(|rt| {
        rt.block_on(async {
            match tokio::time::timeout(PATIENCE, run).await {
                Ok(out) => out,
                Err(_) => panic!("the run hung: no end within {PATIENCE:?}"),
            }
        })
    })
}

/// A count of what moved: bytes read or written, a request or a frame seen.
#[derive(Clone, Default)]
pub struct Progress(Arc<AtomicU64>);

impl Progress {
    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Gives every other branch of the run turns until [`QUIET_TURNS`] pass with nothing moving.
/// Each turn lets the runtime poll its sockets (a yield is woken after the driver's poll).
pub async fn settle(progress: &Progress) {
    let (mut last, mut quiet, mut turns) = (progress.get(), 0, 0);
    while quiet < QUIET_TURNS {
        tokio::task::yield_now().await;
        turns += 1;
        assert!(
            turns < MOST_TURNS,
            "the run never settles: a loop that never waits"
        );
        let now = progress.get();
        if now == last {
            quiet += 1;
        } else {
            (last, quiet) = (now, 0);
        }
    }
}

/// An in-memory socket that counts what moves through it as [`Progress`].
pub struct Counted<I> {
    io: I,
    progress: Progress,
}

impl<I> Counted<I> {
    pub fn new(io: I, progress: &Progress) -> Self {
        Counted {
            io,
            progress: progress.clone(),
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Counted<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if polled.is_ready() {
            self.progress.bump();
        }
        polled
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Counted<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        if polled.is_ready() {
            self.progress.bump();
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.io).poll_shutdown(cx);
        if polled.is_ready() {
            self.progress.bump();
        }
        polled
    }
}

/// A field section as comparable: each field's name lowercased and its value as bytes,
/// ordered by name, the fields of one name in the order read. RFC 9110 §5.3: the order of
/// fields of different names carries no meaning, that of one name's does.
pub type Fields = Vec<(Octets, Octets)>;

/// Bytes, shown as a byte-string literal would write them.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Octets(pub Vec<u8>);

impl std::fmt::Debug for Octets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "b\"{}\"", self.0.escape_ascii())
    }
}

/// `fields` (name, value as read), made comparable.
pub fn comparable<'a>(fields: impl Iterator<Item = (&'a [u8], &'a [u8])>) -> Fields {
    let mut out: Fields = fields
        .map(|(name, value)| (Octets(name.to_ascii_lowercase()), Octets(value.to_vec())))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0)); // stable: one name's fields keep their order
    out
}

/// A map's fields, made comparable.
pub fn of_map(map: &HeaderMap) -> Fields {
    comparable(
        map.iter()
            .map(|(name, value)| (name.as_str().as_bytes(), value.as_bytes())),
    )
}

/// How a body ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyEnd {
    /// Read to its end: its bytes, and its trailers (none: empty).
    Whole(Octets, Fields),
    /// Its reader failed (a framing error, or the peer closed before its end).
    Failed,
    /// Neither, when the run settled after the peer's close.
    Unfinished,
}

/// Reads `body` to its end, telling each frame as [`Progress`].
pub async fn read_body<B>(mut body: B, progress: &Progress) -> BodyEnd
where
    B: Body + Unpin,
{
    let (mut data, mut trailers) = (Vec::new(), Fields::new());
    while let Some(frame) = body.frame().await {
        progress.bump();
        let Ok(frame) = frame else {
            return BodyEnd::Failed;
        };
        match frame.into_data() {
            Ok(mut bytes) => {
                while bytes.has_remaining() {
                    let chunk = bytes.chunk();
                    data.extend_from_slice(chunk);
                    let n = chunk.len();
                    bytes.advance(n);
                }
            }
            Err(frame) => {
                if let Ok(fields) = frame.into_trailers() {
                    trailers.extend(of_map(&fields));
                    trailers.sort_by(|a, b| a.0.cmp(&b.0));
                }
            }
        }
    }
    BodyEnd::Whole(Octets(data), trailers)
}

/// `bytes` as a Rust byte-string literal, for a finding's message.
pub fn escaped(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

/// Splits `bytes` into `pieces` nearly equal parts (at least one), for writing one at a time.
pub fn pieces(bytes: &[u8], pieces: usize) -> Vec<&[u8]> {
    let size = bytes.len().div_ceil(pieces.max(1)).max(1);
    bytes.chunks(size).collect()
}
