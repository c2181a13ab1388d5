//! A webhook receiver: records each request it gets (when, where, its headers and body)
//! and responds as its script says (a status, after a delay; a 3xx points elsewhere).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use hyper::{HeaderMap, Response};
use serde_json::Value;
use tokio::time::Instant;

use super::Backend;
use lingo::http::body::Body;

/// The longest a test waits for deliveries: a guard against a hang, not a measurement.
const PATIENCE: Duration = Duration::from_secs(30);

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Hit {
    /// When its body had been read.
    pub at: Instant,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// A scripted receiver on a port of its own.
pub struct Receiver {
    backend: Backend,
    hits: Arc<Mutex<Vec<Hit>>>,
}

impl Hit {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {self:?}"))
    }
}

impl Receiver {
    /// Responds to each request with `script(hits)`, a status after a delay, where `hits` is
    /// every request it got so far (over every path), this one last.
    pub async fn start(
        script: impl Fn(&[Hit]) -> (u16, Duration) + Send + Sync + 'static,
    ) -> Receiver {
        Receiver::with_headers(move |hits| {
            let (status, delay) = script(hits);
            (status, delay, Vec::new())
        })
        .await
    }

    /// The same, the response also carrying the header fields the script gives.
    pub async fn with_headers(
        script: impl Fn(&[Hit]) -> (u16, Duration, Vec<(&'static str, String)>) + Send + Sync + 'static,
    ) -> Receiver {
        let hits = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&hits);
        let backend = Backend::start(move |seen| {
            let hit = Hit {
                at: Instant::now(),
                path: seen.uri.clone(),
                headers: seen.headers,
                body: seen.body,
            };
            let (status, delay, fields) = {
                let mut hits = record.lock().unwrap();
                hits.push(hit);
                script(&hits)
            };
            async move {
                tokio::time::sleep(delay).await;
                let mut response = Response::builder().status(status);
                if (300..400).contains(&status) {
                    response = response.header("location", "/redirected");
                }
                for (name, value) in fields {
                    response = response.header(name, value);
                }
                response.body(Body::empty()).unwrap()
            }
        })
        .await;
        Receiver { backend, hits }
    }

    /// A receiver that responds to every request with 200 at once.
    pub async fn ok() -> Receiver {
        Receiver::start(|_| (200, Duration::ZERO)).await
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.backend.url())
    }

    /// What `path` got so far, in order.
    pub fn hits(&self, path: &str) -> Vec<Hit> {
        let hits = self.hits.lock().unwrap();
        hits.iter().filter(|h| h.path == path).cloned().collect()
    }

    /// Waits until `path` has got `n` requests, and gives them.
    pub async fn wait(&self, path: &str, n: usize) -> Vec<Hit> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let hits = self.hits(path);
            if hits.len() >= n {
                return hits;
            }
            assert!(
                Instant::now() < deadline,
                "{path} got {} of {n} requests: {hits:?}",
                hits.len()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
