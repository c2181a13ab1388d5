//! Which v1 formats each crawl or batch job asked for, so that its status pages (polled on
//! any connection, for a day) put json results where the client reads them. Bounded in
//! entries and in time; the clock is passed in, so this stays sans-IO.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::JsonAs;

/// How long a job is remembered: crawl data expires upstream after 24 hours by default.
pub const TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// The longest job id remembered.
pub const MAX_ID: usize = 128;

/// A bounded, expiring `job id -> JsonAs` memory. Only jobs whose response differs from the
/// stateless default need remembering; forgetting one costs an extra `extract` copy, not a
/// wrong response.
#[derive(Debug)]
pub struct Jobs {
    entries: HashMap<String, (JsonAs, Instant)>,
    /// Ids in the order remembered, oldest first (the clock only moves forward).
    order: VecDeque<(String, Instant)>,
    capacity: usize,
    ttl: Duration,
}

// === impl Jobs ===

impl Jobs {
    pub fn new(capacity: usize, ttl: Duration) -> Self {
        Jobs {
            entries: HashMap::new(),
            order: VecDeque::new(),
            capacity,
            ttl,
        }
    }

    /// Remembers `id`'s formats at `now`, forgetting expired and (past capacity) oldest jobs.
    /// The order list bounds the entries, stale places (a re-remembered id) included.
    pub fn remember(&mut self, id: &str, json_as: JsonAs, now: Instant) {
        // Ids come from the upstream's response: a v2 id is a UUID, so a long one is not kept
        // (the capacity bounds entries, this their bytes).
        if self.capacity == 0 || json_as == JsonAs::Unknown || id.len() > MAX_ID {
            return;
        }
        self.expire(now);
        while self.order.len() >= self.capacity {
            let Some((old, at)) = self.order.pop_front() else {
                break;
            };
            self.forget(&old, at);
        }
        self.entries.insert(id.to_owned(), (json_as, now));
        self.order.push_back((id.to_owned(), now));
    }

    /// What `id` asked for, or [`JsonAs::Unknown`] if it is not (or no longer) remembered.
    pub fn recall(&self, id: &str, now: Instant) -> JsonAs {
        match self.entries.get(id) {
            Some((json_as, at)) if now.duration_since(*at) < self.ttl => *json_as,
            _ => JsonAs::Unknown,
        }
    }

    /// How many jobs are remembered.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn expire(&mut self, now: Instant) {
        while let Some((id, at)) = self.order.front() {
            if now.duration_since(*at) < self.ttl {
                break;
            }
            let (id, at) = (id.clone(), *at);
            self.order.pop_front();
            self.forget(&id, at);
        }
    }

    /// Forgets `id` if the entry is the one remembered at `at` (not a later re-remembering).
    fn forget(&mut self, id: &str, at: Instant) {
        if self.entries.get(id).is_some_and(|(_, when)| *when == at) {
            self.entries.remove(id);
        }
    }
}

/// The job id of a crawl or batch start response (`{"success": true, "id": ...}`).
pub fn job_id(response: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(response).ok()?;
    v.get("id")?.as_str().map(str::to_owned)
}

/// The job id in a v1 status path: `/v1/crawl/:id` or `/v1/batch/scrape/:id`.
pub fn status_id(path: &str) -> Option<&str> {
    let rest = path
        .strip_prefix("/v1/crawl/")
        .or_else(|| path.strip_prefix("/v1/batch/scrape/"))?;
    let id = rest.trim_end_matches('/');
    (!id.is_empty() && !id.contains('/')).then_some(id)
}
