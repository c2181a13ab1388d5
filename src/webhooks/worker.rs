//! One worker per store: it claims the events due (as many as it has room for), gives each
//! to an attempt of its own (at most [`IN_FLIGHT`] at once), and otherwise waits until an
//! event is put, or a short while passes (a retry falls due, another replica puts one). A
//! store that fails is tried again after a growing pause, not in a loop. A second task keeps
//! the store's queue gauges.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::event::now_ms;
use super::{Shared, StoreHandle, attempt};

/// Attempts in flight at once, per store.
pub const IN_FLIGHT: usize = 128;

/// How long a worker with nothing to do waits before it looks again.
const POLL: Duration = Duration::from_millis(250);

/// How often the queue gauges are read.
const GAUGES: Duration = Duration::from_secs(1);

/// The longest pause after the store failed.
const MOST_BACKOFF: Duration = Duration::from_secs(10);

/// Starts `handle`'s worker and its gauges, on the current runtime, until the relay stops.
pub(super) fn start(handle: Arc<StoreHandle>, shared: Arc<Shared>) {
    drop(tokio::spawn(gauges(
        Arc::clone(&handle),
        Arc::clone(&shared),
    )));
    drop(tokio::spawn(run(handle, shared)));
}

async fn run(handle: Arc<StoreHandle>, shared: Arc<Shared>) {
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut stop = shared.stop.subscribe();
    let mut backoff = Duration::ZERO;
    while !*stop.borrow() {
        let Ok(first) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let room = 1 + slots.available_permits();
        let pause = match handle.store.claim(room, shared.stale_for(&handle.at)).await {
            Ok(events) if events.is_empty() => {
                backoff = Duration::ZERO;
                POLL
            }
            Ok(events) => {
                backoff = Duration::ZERO;
                start_attempts(events, first, &slots, &handle, &shared).await;
                continue;
            }
            Err(err) => {
                backoff = (backoff * 2).clamp(POLL, MOST_BACKOFF);
                tracing::warn!(store = %handle.label, "webhook events cannot be claimed: {err}; trying again in {}", crate::base::units::format_duration(backoff));
                backoff
            }
        };
        tokio::select! {
            () = handle.wake.notified(), if backoff.is_zero() => {}
            () = tokio::time::sleep(pause) => {}
            _ = stop.changed() => return,
        }
    }
}

/// An attempt for each of `events`, each holding a slot (the first, `first`).
async fn start_attempts(
    events: Vec<super::event::Event>,
    first: OwnedSemaphorePermit,
    slots: &Arc<Semaphore>,
    handle: &Arc<StoreHandle>,
    shared: &Arc<Shared>,
) {
    let mut first = Some(first);
    for event in events {
        let slot = match first.take() {
            Some(slot) => slot,
            // Only this loop takes slots: the room counted is there, or comes back.
            None => match Arc::clone(slots).acquire_owned().await {
                Ok(slot) => slot,
                Err(_) => return,
            },
        };
        let (handle, shared) = (Arc::clone(handle), Arc::clone(shared));
        drop(tokio::spawn(async move {
            attempt::deliver(event, &handle, &shared).await;
            drop(slot);
        }));
    }
}

/// Reads the store's depth and oldest event for the gauges, until the relay stops.
async fn gauges(handle: Arc<StoreHandle>, shared: Arc<Shared>) {
    let mut stop = shared.stop.subscribe();
    while !*stop.borrow() {
        if let Ok(depth) = handle.store.depth().await {
            let age = depth
                .oldest_ms
                .map_or(0, |t| now_ms().saturating_sub(t) / 1000);
            shared
                .metrics
                .webhooks
                .queue(&handle.label, depth.events, age);
        }
        tokio::select! {
            () = tokio::time::sleep(GAUGES) => {}
            _ = stop.changed() => return,
        }
    }
}
