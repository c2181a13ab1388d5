//! Delivering one event: the body serialised once (what is signed is exactly what is sent),
//! a first attempt the job waits for (so a healthy receiver sees a job's events in order),
//! then the retries on a task of their own, each after its delay, until one gets a response
//! with a 2xx or the schedule ends.

use std::time::Duration;

use bytes::Bytes;
use hyper::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use hyper::{HeaderMap, Uri};
use ring::hmac;
use serde_json::Value;
use tokio::sync::Semaphore;

use super::{Delivery, Webhook, send};

/// Attempts in flight at once, over every job of the process: a load test can start
/// thousands of jobs, and each attempt holds a connection. The others wait their turn.
const IN_FLIGHT: usize = 256;

static SLOTS: Semaphore = Semaphore::const_new(IN_FLIGHT);

const SIGNATURE: HeaderName = HeaderName::from_static("x-firecrawl-signature");

/// One event, ready to send as often as it takes.
struct Prepared {
    url: Uri,
    headers: HeaderMap,
    body: Bytes,
    /// The payload's `webhookId`, for the log.
    id: String,
}

/// Delivers `payload` to `hook` as `delivery` says: returns after the first attempt, and
/// leaves the retries, if it failed, to a task of their own.
pub async fn deliver(hook: &Webhook, delivery: &Delivery, payload: &Value) {
    let event = Prepared::new(hook, delivery, payload);
    if event.attempt(delivery.timeout, 1).await {
        return;
    }
    let (schedule, timeout) = (delivery.retry, delivery.timeout);
    drop(tokio::spawn(async move {
        for (n, delay) in (2..).zip(schedule.delays()) {
            tokio::time::sleep(*delay).await;
            if event.attempt(timeout, n).await {
                return;
            }
        }
        tracing::warn!(url = %event.url, webhook_id = %event.id, "mock webhook given up");
    }));
}

// === impl Prepared ===

impl Prepared {
    fn new(hook: &Webhook, delivery: &Delivery, payload: &Value) -> Prepared {
        let body = Bytes::from(payload.to_string());
        let mut headers = HeaderMap::with_capacity(hook.headers.len() + 2);
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        // A `Content-Type` of the webhook's own replaces the one above.
        for (name, value) in &hook.headers {
            headers.insert(name, value.clone());
        }
        if let Some(secret) = &delivery.secret {
            let key = hmac::Key::new(hmac::HMAC_SHA256, secret.expose().as_bytes());
            let tag = hmac::sign(&key, &body);
            let value = format!("sha256={}", hex(tag.as_ref()));
            let value = HeaderValue::from_str(&value).expect("hex digits are a header value");
            headers.insert(SIGNATURE, value);
        }
        Prepared {
            url: hook.url.clone(),
            headers,
            body,
            id: payload["webhookId"].as_str().unwrap_or_default().to_owned(),
        }
    }

    /// Attempt number `n`: whether a 2xx came back within `timeout`. Waiting for a slot
    /// (see [`IN_FLIGHT`]) is not counted in the time.
    async fn attempt(&self, timeout: Duration, n: usize) -> bool {
        let Ok(_slot) = SLOTS.acquire().await else {
            return false; // never closed
        };
        let sent = send::post(&self.url, &self.headers, self.body.clone());
        let outcome = match tokio::time::timeout(timeout, sent).await {
            Ok(Ok(status)) if status.is_success() => return true,
            Ok(Ok(status)) => format!("responded with {status}"),
            Ok(Err(err)) => err.to_string(),
            Err(_) => format!("no response within {timeout:?}"),
        };
        tracing::debug!(url = %self.url, webhook_id = %self.id, attempt = n, %outcome, "mock webhook attempt failed");
        false
    }
}

/// Lowercase hex, as the signature header carries it.
fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}
