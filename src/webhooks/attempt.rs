//! One delivery attempt, and what follows it: the event's body POSTed to the client's URL
//! with the client's headers and the signatures, acknowledged with a 2xx within the relay's
//! `timeout` or failed; then the event is forgotten (delivered), due again after the next
//! delay of the schedule (or the response's `Retry-After`, when longer, up to
//! [`RETRY_AFTER_AT_MOST`]), or given up (its schedule is over, or its destination is one
//! lingo does not deliver to). Each attempt is counted and writes its access line.

use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE, HOST, HeaderName, HeaderValue, RETRY_AFTER};
use hyper::{HeaderMap, Uri};

use super::client::{self, Failure};
use super::event::{Event, now_ms};
use super::sign::{FIRECRAWL_SIGNATURE, WEBHOOK_ID, WEBHOOK_SIGNATURE, WEBHOOK_TIMESTAMP};
use super::{Relaying, Shared, StoreHandle};
use crate::http::hop;
use crate::http::message::{self, HeaderView};
use crate::observe::webhooks::Attempt;

/// The longest wait a receiver's `Retry-After` can ask for.
pub const RETRY_AFTER_AT_MOST: Duration = Duration::from_secs(60 * 60);

/// The most of a response's body read (so its connection can carry the next delivery).
const RESPONSE_READ: usize = 64 * 1024;

/// How an attempt went.
#[derive(Debug)]
struct Tried {
    /// `delivered`, `status`, `timeout`, `unreachable` or `refused`.
    outcome: &'static str,
    status: u16,
    retry_after: Option<Duration>,
    error: String,
}

/// Attempts `event` and settles it in `handle`'s store.
pub(super) async fn deliver(mut event: Event, handle: &StoreHandle, shared: &Shared) {
    let settings = shared.settings.load_full();
    let Some(relay) = settings.of(&event.to.upstream) else {
        let why = format!(
            "upstream `{}` has no webhook relay in the route table",
            event.to.upstream
        );
        give_up(event, why, handle, shared).await;
        return;
    };
    event.attempts += 1;
    let started = tokio::time::Instant::now();
    let tried = attempt(relay, &event).await;
    let path = event.to.url.parse::<Uri>().map(|u| u.path().to_owned());
    shared.metrics.webhooks.attempted(&Attempt {
        id: &event.id,
        upstream: &event.to.upstream,
        route: &event.to.route,
        client: event.to.client.as_deref(),
        path: path.as_deref().unwrap_or("-"),
        attempt: event.attempts,
        status: tried.status,
        bytes: event.body.len() as u64,
        duration_ms: started.elapsed().as_micros() as f64 / 1000.0,
        outcome: tried.outcome,
        error: &tried.error,
    });
    settle(event, tried, relay, handle, shared).await;
}

/// Forgets, reschedules or gives up the event after an attempt.
async fn settle(
    mut event: Event,
    tried: Tried,
    relay: &Relaying,
    handle: &StoreHandle,
    shared: &Shared,
) {
    if tried.outcome == "delivered" {
        if let Err(err) = handle.store.delivered(&event).await {
            tracing::error!(webhook_id = %event.id, "a delivered webhook event could not be settled (it may be delivered again): {err}");
        }
        return;
    }
    let next = next_wait(&relay.spec.retry, event.attempts, tried.retry_after);
    let Some(wait) = next.filter(|_| tried.outcome != "refused") else {
        give_up(event, tried.error, handle, shared).await;
        return;
    };
    event.due_ms = now_ms().saturating_add(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX));
    event.last = Some(tried.error);
    if let Err(err) = handle.store.retry(&event).await {
        tracing::error!(webhook_id = %event.id, "a webhook event could not be rescheduled: {err}");
    }
}

/// The wait before the next attempt after `attempts` failed ones: the schedule's next delay,
/// or the response's `Retry-After` when that is longer (up to [`RETRY_AFTER_AT_MOST`]);
/// `None` when the schedule is over.
fn next_wait(
    schedule: &[Duration],
    attempts: u32,
    retry_after: Option<Duration>,
) -> Option<Duration> {
    let index = usize::try_from(attempts).ok()?.checked_sub(1)?;
    let delay = *schedule.get(index)?;
    Some(retry_after.map_or(delay, |asked| delay.max(asked.min(RETRY_AFTER_AT_MOST))))
}

/// Keeps the event as given up, and says why.
async fn give_up(mut event: Event, why: String, handle: &StoreHandle, shared: &Shared) {
    tracing::warn!(
        webhook_id = %event.id,
        upstream = %event.to.upstream,
        client = %event.to.client.as_deref().unwrap_or("-"),
        attempts = event.attempts,
        "webhook event given up: {why}; kept for replay (the admin listener's /webhooks/given-up)"
    );
    shared.metrics.webhooks.given_up(&event.to.upstream);
    event.last = Some(why);
    if let Err(err) = handle.store.give_up(&event).await {
        tracing::error!(webhook_id = %event.id, "a given-up webhook event could not be kept: {err}");
    }
}

/// One POST of `event`, within the relay's `timeout`.
async fn attempt(relay: &Relaying, event: &Event) -> Tried {
    let Ok(url) = event.to.url.parse::<Uri>() else {
        return Tried::failed("refused", "the webhook URL is not a URL".into());
    };
    let headers = headers(relay, event);
    let body = Bytes::from(event.body.clone());
    let sent = async {
        let response = relay.deliverer.post(&url, headers, body).await?;
        let (head, mut body) = response.into_parts();
        let mut read = 0;
        while read <= RESPONSE_READ {
            match body.frame().await {
                Some(Ok(frame)) => read += frame.data_ref().map_or(0, Bytes::len),
                _ => break,
            }
        }
        Ok::<_, Failure>(head)
    };
    match tokio::time::timeout(relay.spec.timeout, sent).await {
        Err(_) => Tried::failed(
            "timeout",
            format!(
                "no response within {}",
                crate::base::units::format_duration(relay.spec.timeout)
            ),
        ),
        Ok(Err(Failure::Refused(refused))) => Tried::failed("refused", client::refusal(&refused)),
        Ok(Err(Failure::Unreachable(why))) => Tried::failed("unreachable", why),
        Ok(Ok(head)) if head.status().is_success() => Tried {
            outcome: "delivered",
            status: head.status().as_u16(),
            retry_after: None,
            error: String::new(),
        },
        Ok(Ok(head)) => Tried {
            outcome: "status",
            status: head.status().as_u16(),
            retry_after: retry_after(head.headers()),
            error: format!("responded with {}", head.status()),
        },
    }
}

/// The delivery's fields: JSON, the client's own headers (none lingo sets itself, none
/// holding one of lingo's keys), and the signatures when the client has a key.
fn headers(relay: &Relaying, event: &Event) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for (name, value) in &event.to.headers {
        let Ok(name) = HeaderName::from_bytes(name.as_bytes()) else {
            continue;
        };
        let own =
            name == HOST || name == CONTENT_LENGTH || hop::is_hop_by_hop(name.as_str().as_bytes());
        let signature = [
            &WEBHOOK_ID,
            &WEBHOOK_TIMESTAMP,
            &WEBHOOK_SIGNATURE,
            &FIRECRAWL_SIGNATURE,
        ]
        .contains(&&name);
        if own || signature || relay.holds_a_key(value) {
            continue;
        }
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.insert(name, value);
        }
    }
    let id = HeaderValue::from_str(&event.id).unwrap_or(HeaderValue::from_static("-"));
    headers.insert(WEBHOOK_ID, id);
    let Some(key) = relay.key_for(event.to.client.as_deref()) else {
        return headers;
    };
    let timestamp = now_ms() / 1000;
    headers.insert(WEBHOOK_TIMESTAMP, HeaderValue::from(timestamp));
    let body = event.body.as_bytes();
    headers.insert(WEBHOOK_SIGNATURE, key.standard(&event.id, timestamp, body));
    if relay.spec.firecrawl_signature {
        headers.insert(FIRECRAWL_SIGNATURE, key.firecrawl(body));
    }
    headers
}

/// A response's `Retry-After`: seconds, or an HTTP date.
fn retry_after(headers: HeaderView<'_>) -> Option<Duration> {
    let text = message::text(headers.get(&RETRY_AFTER)?)?.trim();
    if let Ok(seconds) = text.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(text).ok()?;
    Some(at.duration_since(SystemTime::now()).unwrap_or_default())
}

// === impl Tried ===

impl Tried {
    fn failed(outcome: &'static str, error: String) -> Tried {
        Tried {
            outcome,
            status: 0,
            retry_after: None,
            error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_is_followed_and_retry_after_honoured_up_to_its_cap() {
        let s = Duration::from_secs;
        let schedule = [s(60), s(300), s(900)];
        assert_eq!(next_wait(&schedule, 1, None), Some(s(60)));
        assert_eq!(next_wait(&schedule, 3, None), Some(s(900)));
        assert_eq!(next_wait(&schedule, 4, None), None, "four attempts in all");
        assert_eq!(next_wait(&schedule, 1, Some(s(120))), Some(s(120)));
        assert_eq!(
            next_wait(&schedule, 2, Some(s(10))),
            Some(s(300)),
            "never sooner"
        );
        let asked = Some(s(24 * 3600));
        assert_eq!(next_wait(&schedule, 1, asked), Some(RETRY_AFTER_AT_MOST));
        assert_eq!(next_wait(&[], 1, asked), None);
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(HeaderView::from(&headers)), None);
        headers.insert(RETRY_AFTER, HeaderValue::from_static("120"));
        assert_eq!(
            retry_after(HeaderView::from(&headers)),
            Some(Duration::from_secs(120))
        );
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(600));
        headers.insert(RETRY_AFTER, HeaderValue::from_str(&later).unwrap());
        let wait = retry_after(HeaderView::from(&headers)).unwrap();
        assert!(
            wait > Duration::from_secs(590) && wait <= Duration::from_secs(600),
            "{wait:?}"
        );
        headers.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(HeaderView::from(&headers)), None);
    }
}
