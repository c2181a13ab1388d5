//! Uploads whose body says more than it sends, or less, and uploads the upstream cuts off.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use http_body::{Frame, SizeHint};

use super::*;

/// A body of `frames` that says it is `length` bytes long (or says nothing), and counts how
/// often it is asked whether it has ended.
struct Told {
    frames: VecDeque<Bytes>,
    length: Option<u64>,
    asked_end: Arc<AtomicUsize>,
}

impl Told {
    fn body(frames: &[&'static str], length: Option<u64>) -> (Body, Arc<AtomicUsize>) {
        let asked_end = Arc::new(AtomicUsize::new(0));
        let body = Told {
            frames: frames
                .iter()
                .map(|f| Bytes::from_static(f.as_bytes()))
                .collect(),
            length,
            asked_end: asked_end.clone(),
        };
        (Body::boxed(body), asked_end)
    }
}

impl http_body::Body for Told {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        Poll::Ready(
            self.get_mut()
                .frames
                .pop_front()
                .map(|f| Ok(Frame::data(f))),
        )
    }

    fn is_end_stream(&self) -> bool {
        self.asked_end.fetch_add(1, Ordering::Relaxed);
        self.frames.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        self.length.map(SizeHint::with_exact).unwrap_or_default()
    }
}

/// A body longer than the length it gave fails its upload, although the length was sent
/// whole: the upstream would read the rest as the next request.
#[tokio::test]
async fn a_body_longer_than_its_length_fails_the_upload() {
    let raw = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
    let (address, _upstream) = upstream(b"{}", raw).await;
    let (body, _) = Told::body(&["{}", "xx"], Some(2));
    let sent = send(&address, post(body), &Shelf::default()).await;
    let Err(err) = sent else {
        panic!("the upload fails")
    };
    assert!(err.to_string().contains("longer than its length"), "{err}");
}

/// A streamed body is never asked whether it has ended (a client's body answers under its
/// connection's lock): its end is the poll that finds no more.
#[tokio::test]
async fn a_streamed_body_is_never_asked_for_its_end() {
    let raw = b"HTTP/1.1 204 No Content\r\n\r\n";
    let (address, _upstream) = upstream(b"0\r\n\r\n", raw).await;
    let (body, asked_end) = Told::body(&["a", "b", "c"], None);
    let conn = Conn::open(&address, PATIENCE).await.unwrap();
    let outgoing = Outgoing::new(post(body), "up", None);
    let framed = asked_end.load(Ordering::Relaxed);
    let deadline = Instant::now() + PATIENCE;
    let sent = conn.send(outgoing, Shelf::default(), deadline, PATIENCE);
    let response = tokio::time::timeout(PATIENCE, sent).await.unwrap().unwrap();
    assert_eq!(response.status(), 204);
    assert_eq!(asked_end.load(Ordering::Relaxed), framed);
}

/// An upstream that answers, then resets the connection while the upload goes on, is heard:
/// the write that fails on the reset gives way to the response already read.
#[tokio::test]
async fn a_response_then_a_reset_during_the_upload_is_read() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let (closed_tx, closed) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        read_until(&mut stream, &mut Vec::new(), b"\r\n\r\n").await;
        let raw = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
        stream.write_all(raw).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await; // lingo reads the response
        // Closed with most of the first chunk unread: the kernel answers with a reset.
        drop(stream);
        closed_tx.send(()).unwrap();
    });
    let (mut tx, rx) = Channel::<Bytes, BoxError>::new(1);
    tokio::spawn(async move {
        tx.send_data(Bytes::from(vec![b'x'; 64 * 1024]))
            .await
            .unwrap();
        closed.await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await; // the reset arrives
        let _ = tx.send_data(Bytes::from(vec![b'y'; 1024 * 1024])).await;
    });
    let shelf = Shelf::default();
    let response = send(&address, post(Body::new(rx)), &shelf).await.unwrap();
    assert_eq!(read(response).await.unwrap(), "ok");
    assert_eq!(shelf.len(), 0, "a reset connection went home");
}
