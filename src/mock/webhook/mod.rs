//! Webhooks as the web-data contract sends them: a job started with a `webhook` has its
//! events (`<kind>.started`, a `<kind>.page` per page, `<kind>.completed` or
//! `<kind>.failed`) POSTed to the webhook's URL as JSON, with its headers and a signature
//! when the mock has a secret; an attempt that gets no 2xx response within the reply
//! time is retried on the schedule, then given up.
//!
//! `config` checks a request's `webhook` ([`parse`]); `deliver` sends events ([`deliver()`]:
//! a cap on attempts in flight, the retries, the signature); `send` is one attempt over its
//! own connection. The job that has the events is `webdata::job`'s.

mod config;
mod deliver;
mod schedule;
mod send;

use hyper::{HeaderMap, Uri};
use serde_json::{Value, json};

use crate::base::ids;

pub use config::parse;
pub use deliver::deliver;
pub use schedule::{CONTRACT_TIMEOUT, Delivery, Schedule};

/// What a failed job's status and `failed` event say.
pub const JOB_FAILED: &str = "mock failure: the job failed (job_fail_after)";

/// A job's `webhook`: where its events go and which of them.
#[derive(Debug, Clone)]
pub struct Webhook {
    pub url: Uri,
    /// Added to every delivery (checked: none the sender sets itself).
    pub headers: HeaderMap,
    /// Echoed in every payload: a `{string: string}` object.
    pub metadata: Value,
    /// The [`Event`]s delivered, one bit each.
    events: u8,
}

/// The job families that report by webhook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Crawl,
    BatchScrape,
    Extract,
}

/// What happened to a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Started,
    Page,
    Completed,
    Failed,
}

// === impl Webhook ===

impl Webhook {
    /// A webhook of just a URL: no headers, no metadata, every event.
    fn to(url: Uri) -> Webhook {
        Webhook {
            url,
            headers: HeaderMap::new(),
            metadata: json!({}),
            events: Event::ALL,
        }
    }

    /// Whether the `events` filter lets `event` through.
    pub fn wants(&self, event: Event) -> bool {
        self.events & event.bit() != 0
    }

    /// The payload of one event of job `id`: `data` as the contract has it for the event (a
    /// page's one document, `[]` for started and completed crawls), `error` when the job
    /// failed, the webhook's `metadata`, and a fresh `webhookId` that its retries keep.
    pub fn payload(&self, kind: Kind, event: Event, id: &str, data: Value) -> Value {
        let mut payload = json!({
            "success": event != Event::Failed,
            "type": format!("{}.{}", kind.name(), event.name()),
            "id": id,
            "webhookId": uuid_like(),
            "data": data,
            "metadata": self.metadata,
        });
        if event == Event::Failed {
            payload["error"] = JOB_FAILED.into();
        }
        payload
    }
}

// === impl Kind ===

impl Kind {
    pub const EACH: [Kind; 3] = [Kind::Crawl, Kind::BatchScrape, Kind::Extract];

    /// The first half of its event types: `crawl`, `batch_scrape`, `extract`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Crawl => "crawl",
            Kind::BatchScrape => "batch_scrape",
            Kind::Extract => "extract",
        }
    }
}

// === impl Event ===

impl Event {
    pub const EACH: [Event; 4] = [Event::Started, Event::Page, Event::Completed, Event::Failed];

    /// Every event's bit: what a webhook without `events` delivers.
    const ALL: u8 = 0b1111;

    /// The second half of its type, and its name in an `events` filter.
    pub fn name(self) -> &'static str {
        match self {
            Event::Started => "started",
            Event::Page => "page",
            Event::Completed => "completed",
            Event::Failed => "failed",
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// A random UUID's shape (version 4, variant 1) from [`ids::random_id`]'s unguessable hex.
fn uuid_like() -> String {
    let hex = ids::random_id();
    let hex = std::str::from_utf8(&hex).expect("hex digits are ASCII");
    format!(
        "{}-{}-4{}-8{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_carry_the_type_the_id_and_a_fresh_webhook_id() {
        let hook = Webhook {
            metadata: json!({"m": "n"}),
            ..Webhook::to(Uri::from_static("http://h/"))
        };
        let page = hook.payload(Kind::BatchScrape, Event::Page, "job", json!([{"a": 1}]));
        assert_eq!(page["type"], "batch_scrape.page");
        assert_eq!(
            (&page["id"], &page["success"]),
            (&json!("job"), &json!(true))
        );
        assert_eq!(page["metadata"], json!({"m": "n"}));
        assert!(page.get("error").is_none());
        let failed = hook.payload(Kind::Crawl, Event::Failed, "job", json!([]));
        assert_eq!(
            (&failed["type"], &failed["success"]),
            (&json!("crawl.failed"), &json!(false))
        );
        assert!(failed["error"].is_string());
        let (a, b) = (
            page["webhookId"].as_str().unwrap(),
            failed["webhookId"].as_str().unwrap(),
        );
        assert_ne!(a, b);
        let groups: Vec<usize> = a.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12], "{a}");
        assert!(a.bytes().all(|c| c == b'-' || c.is_ascii_hexdigit()));
    }
}
