//! An upstream on a raw TCP socket that records every byte it is ever sent, on every
//! connection, before it parses any of them: the honest judge of what reached an upstream
//! (a parsing server would hide what it could not read, or what came after an upgrade).
//!
//! It responds to each request head (and the `Content-Length` body after it) with a small JSON
//! `200`, or with `101 Switching Protocols` when the head asks for a WebSocket; after a 101
//! it only records. A head whose body never comes all the way never gets a response.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const OK: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{\"ok\":true}";
const SWITCHING: &[u8] = b"HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\n\
    upgrade: websocket\r\nsec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";

/// Guards a wait against a hang; never a performance threshold.
const PATIENCE: Duration = Duration::from_secs(20);

/// The recording upstream.
pub struct Recording {
    pub addr: SocketAddr,
    bytes: Arc<Mutex<Vec<u8>>>,
    closed: Arc<AtomicUsize>,
}

impl Recording {
    pub async fn start() -> Recording {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let closed = Arc::new(AtomicUsize::new(0));
        let (record, ended) = (Arc::clone(&bytes), Arc::clone(&closed));
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (record, ended) = (Arc::clone(&record), Arc::clone(&ended));
                tokio::spawn(async move {
                    serve(stream, &record).await;
                    ended.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        Recording {
            addr,
            bytes,
            closed,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every byte received so far, all connections in the order the reads came.
    pub fn received(&self) -> String {
        String::from_utf8_lossy(&self.bytes.lock().unwrap()).into_owned()
    }

    /// How many connections lingo has closed.
    pub fn closed(&self) -> usize {
        self.closed.load(Ordering::SeqCst)
    }

    /// Waits until `holds` holds of what was received (failing the test after a long
    /// guard); what was received then.
    pub async fn received_when(&self, holds: impl Fn(&str) -> bool) -> String {
        let waited = tokio::time::timeout(PATIENCE, async {
            loop {
                let received = self.received();
                if holds(&received) {
                    return received;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        waited
            .await
            .unwrap_or_else(|_| panic!("never received it: {:?}", self.received()))
    }

    /// Waits until lingo has closed `n` connections (failing the test after a long guard).
    pub async fn closed_when(&self, n: usize) {
        let waited = tokio::time::timeout(PATIENCE, async {
            while self.closed() < n {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        assert!(waited.await.is_ok(), "{} closed, not {n}", self.closed());
    }
}

/// One connection: every read recorded, then each whole request served; after a 101,
/// only recorded.
async fn serve(mut stream: TcpStream, record: &Mutex<Vec<u8>>) {
    let (mut pending, mut switched) = (Vec::new(), false);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        record.lock().unwrap().extend_from_slice(&buf[..n]);
        if switched {
            continue;
        }
        pending.extend_from_slice(&buf[..n]);
        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&pending[..end]).to_ascii_lowercase();
            let whole = end + 4 + content_length(&head);
            if pending.len() < whole {
                break;
            }
            pending.drain(..whole);
            switched = head.contains("upgrade: websocket");
            let response = if switched { SWITCHING } else { OK };
            if stream.write_all(response).await.is_err() {
                return;
            }
            if switched {
                break;
            }
        }
    }
}

fn content_length(head: &str) -> usize {
    head.lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap())
}
