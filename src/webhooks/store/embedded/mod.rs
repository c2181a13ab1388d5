//! The embedded store: one `redb` file (a B-tree database with ACID transactions, each commit
//! on disk before it returns), in this process alone.
//!
//! Tables: `events` (id -> the event as JSON, until delivered or given up), `due`
//! ((due time, id): the order attempts are made in), `received` ((receipt time, id): the
//! queue's depth and its oldest event), `seen` and `seen_order` (every id received in the
//! last [`SEEN_FOR`], so that a repeat is stored once), `given_up` (id -> event).
//!
//! Every change goes through one writer thread (`writer`), which commits all the changes
//! waiting for it in one transaction: a burst of events costs one write to disk, not one
//! each. Reads are snapshots of their own, on the blocking pool. Events being delivered are
//! held in memory (`Embedded::in_flight`), so a claim skips them; after a restart there are
//! none, and every event not settled is due again.

mod writer;

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use tokio::sync::{mpsc, oneshot};

use super::{Depth, Pending, SEEN_FOR, Store, StoreError};
use crate::webhooks::event::{Event, now_ms};
use writer::{Change, Done};

pub(super) const EVENTS: TableDefinition<&str, &[u8]> = TableDefinition::new("events");
pub(super) const DUE: TableDefinition<(u64, &str), ()> = TableDefinition::new("due");
pub(super) const RECEIVED: TableDefinition<(u64, &str), ()> = TableDefinition::new("received");
pub(super) const SEEN: TableDefinition<&str, u64> = TableDefinition::new("seen");
pub(super) const SEEN_ORDER: TableDefinition<(u64, &str), ()> = TableDefinition::new("seen_order");
pub(super) const GIVEN_UP: TableDefinition<&str, &[u8]> = TableDefinition::new("given_up");

/// The embedded store.
pub struct Embedded {
    db: Arc<Database>,
    changes: mpsc::UnboundedSender<(Change, oneshot::Sender<Result<Done, StoreError>>)>,
    /// The ids of the events claimed and not yet settled.
    in_flight: Arc<Mutex<HashSet<String>>>,
}

// === impl Embedded ===

impl Embedded {
    /// Opens (or creates) the database at `path`, with its tables, and starts its writer.
    pub fn open(path: &Path) -> Result<Embedded, String> {
        let db = Database::create(path).map_err(|e| e.to_string())?;
        writer::create_tables(&db).map_err(|e| e.0)?;
        let db = Arc::new(db);
        let (changes, rx) = mpsc::unbounded_channel();
        let name = format!("lingo-webhooks {}", path.display());
        let thread_db = Arc::clone(&db);
        std::thread::Builder::new()
            .name(name.chars().take(15).collect())
            .spawn(move || writer::run(&thread_db, rx))
            .map_err(|e| format!("cannot start its writer thread: {e}"))?;
        Ok(Embedded {
            db,
            changes,
            in_flight: Arc::default(),
        })
    }

    /// Asks the writer for `change` and waits for its commit.
    fn change(&self, change: Change) -> Pending<'_, Done> {
        let (tx, rx) = oneshot::channel();
        let sent = self.changes.send((change, tx));
        Box::pin(async move {
            sent.map_err(|_| StoreError("the webhook store's writer has stopped".into()))?;
            rx.await
                .map_err(|_| StoreError("the webhook store's writer has stopped".into()))?
        })
    }

    /// Settles a claimed event with `change`: once it is committed (or failed), the event
    /// may be claimed again.
    fn settle(&self, event: &Event, change: Change) -> Pending<'_, ()> {
        let id = event.id.clone();
        let done = self.change(change);
        Box::pin(async move {
            let result = done.await.map(|_| ());
            let mut in_flight = self
                .in_flight
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            in_flight.remove(&id);
            result
        })
    }

    /// Runs `read` on a snapshot, on the blocking pool.
    fn read<T: Send + 'static>(
        &self,
        read: impl FnOnce(&Database) -> Result<T, redb::Error> + Send + 'static,
    ) -> Pending<'_, T> {
        let db = Arc::clone(&self.db);
        Box::pin(async move {
            let done = tokio::task::spawn_blocking(move || read(&db)).await;
            let read = done.map_err(|e| StoreError(format!("a webhook store read failed: {e}")))?;
            read.map_err(|e| StoreError(format!("the webhook store cannot be read: {e}")))
        })
    }
}

impl Store for Embedded {
    fn put(&self, event: Event) -> Pending<'_, bool> {
        let done = self.change(Change::Put(event));
        Box::pin(async move { Ok(matches!(done.await?, Done::Stored)) })
    }

    fn claim(&self, max: usize, _stale: Duration) -> Pending<'_, Vec<Event>> {
        let in_flight = Arc::clone(&self.in_flight);
        self.read(move |db| due_now(db, max, &in_flight))
    }

    fn delivered(&self, event: &Event) -> Pending<'_, ()> {
        self.settle(event, Change::Delivered(event.id.clone()))
    }

    fn retry(&self, event: &Event) -> Pending<'_, ()> {
        self.settle(event, Change::Retry(event.clone()))
    }

    fn give_up(&self, event: &Event) -> Pending<'_, ()> {
        self.settle(event, Change::GiveUp(event.clone()))
    }

    fn given_up(&self) -> Pending<'_, Vec<Event>> {
        self.read(|db| {
            let txn = db.begin_read()?;
            let table = txn.open_table(GIVEN_UP)?;
            let mut events = Vec::new();
            for entry in table.iter()? {
                let (_, value) = entry?;
                events.extend(Event::from_bytes(value.value()));
            }
            Ok(events)
        })
    }

    fn replay(&self, id: Option<String>) -> Pending<'_, usize> {
        let done = self.change(Change::Replay(id, now_ms()));
        Box::pin(async move {
            match done.await? {
                Done::Replayed(n) => Ok(n),
                _ => Ok(0),
            }
        })
    }

    fn depth(&self) -> Pending<'_, Depth> {
        self.read(|db| {
            let txn = db.begin_read()?;
            let table = txn.open_table(RECEIVED)?;
            let oldest = table.first()?.map(|(key, _)| key.value().0);
            Ok(Depth {
                events: table.len()?,
                oldest_ms: oldest,
            })
        })
    }
}

/// Up to `max` events due now and not in flight, each then marked in flight.
///
/// The in-flight set is locked before the snapshot is taken: an event settled after the
/// snapshot leaves the set only once this is done, so it is never taken for due again.
fn due_now(
    db: &Database,
    max: usize,
    in_flight: &Mutex<HashSet<String>>,
) -> Result<Vec<Event>, redb::Error> {
    let mut held = in_flight.lock().unwrap_or_else(PoisonError::into_inner);
    let txn = db.begin_read()?;
    let (due, events) = (txn.open_table(DUE)?, txn.open_table(EVENTS)?);
    let mut claimed = Vec::new();
    for entry in due.range::<(u64, &str)>(..(now_ms().saturating_add(1), ""))? {
        if claimed.len() >= max {
            break;
        }
        let (key, _) = entry?;
        let id = key.value().1;
        if held.contains(id) {
            continue;
        }
        if let Some(event) = events.get(id)?.and_then(|v| Event::from_bytes(v.value())) {
            held.insert(id.to_owned());
            claimed.push(event);
        }
    }
    Ok(claimed)
}

#[cfg(test)]
mod tests;
