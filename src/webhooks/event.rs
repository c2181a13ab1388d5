//! One event as the stores keep it: what to send where (the body as the client receives it,
//! and the [`Destination`] it came with), and how its delivery has gone so far.

use serde::{Deserialize, Serialize};

use super::seal::Destination;

/// A webhook event to deliver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// The upstream's `webhookId` (one made from the token and body when it sent none): the
    /// delivery's `webhook-id`, the same on every attempt, and what a repeat is known by.
    pub id: String,
    pub to: Destination,
    /// The JSON body, as the client receives it.
    pub body: String,
    /// When it was received, in Unix milliseconds.
    pub received_ms: u64,
    /// Attempts made so far.
    pub attempts: u32,
    /// When the next attempt is due, in Unix milliseconds.
    pub due_ms: u64,
    /// How the last attempt went, for the given-up list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<String>,
    /// The store's own handle on it while it is being delivered (a Redis stream entry's id).
    #[serde(skip)]
    pub handle: Option<String>,
}

// === impl Event ===

impl Event {
    /// The event as JSON bytes, as stores keep it.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<Event> {
        serde_json::from_slice(bytes).ok()
    }

    /// The same event, due again now with its attempts counted afresh (a replay).
    pub fn replayed(mut self, now_ms: u64) -> Event {
        self.attempts = 0;
        self.due_ms = now_ms;
        self.last = None;
        self.handle = None;
        self
    }
}

/// The time now, in Unix milliseconds.
pub fn now_ms() -> u64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}
