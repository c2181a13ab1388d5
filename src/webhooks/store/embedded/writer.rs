//! The embedded store's one writer: it takes every change waiting, makes them in one write
//! transaction, commits it (on disk when the commit returns) and only then acknowledges each.

use redb::{Database, ReadableTable, Table, WriteTransaction};
use tokio::sync::{mpsc, oneshot};

use super::{DUE, EVENTS, GIVEN_UP, RECEIVED, SEEN, SEEN_FOR, SEEN_ORDER};
use crate::webhooks::event::{Event, now_ms};
use crate::webhooks::store::StoreError;

/// The most changes committed in one transaction.
const MOST_AT_ONCE: usize = 4096;

/// The most remembered ids forgotten in one transaction.
const FORGET_AT_ONCE: usize = 10_000;

/// A change to make.
pub enum Change {
    Put(Event),
    Delivered(String),
    Retry(Event),
    GiveUp(Event),
    /// The given-up event with this id, or all of them, due at this time.
    Replay(Option<String>, u64),
}

/// What a change did.
pub enum Done {
    Stored,
    Repeated,
    Settled,
    Replayed(usize),
}

type PendingChange = (Change, oneshot::Sender<Result<Done, StoreError>>);

/// Makes changes until every sender is gone.
pub fn run(db: &Database, mut rx: mpsc::UnboundedReceiver<PendingChange>) {
    while let Some(first) = rx.blocking_recv() {
        let mut batch = vec![first];
        while batch.len() < MOST_AT_ONCE {
            match rx.try_recv() {
                Ok(pending) => batch.push(pending),
                Err(_) => break,
            }
        }
        let (changes, responses): (Vec<Change>, Vec<_>) = batch.into_iter().unzip();
        match commit(db, changes) {
            Ok(dones) => {
                for (response, done) in responses.into_iter().zip(dones) {
                    let _ = response.send(Ok(done));
                }
            }
            Err(err) => {
                tracing::error!("the webhook store could not commit: {err}");
                for response in responses {
                    let _ = response.send(Err(StoreError(err.to_string())));
                }
            }
        }
    }
}

/// Creates the tables a read opens, so that a read of a new store finds them.
pub fn create_tables(db: &Database) -> Result<(), StoreError> {
    let made = || -> Result<(), redb::Error> {
        let txn = db.begin_write()?;
        {
            txn.open_table(EVENTS)?;
            txn.open_table(DUE)?;
            txn.open_table(RECEIVED)?;
            txn.open_table(SEEN)?;
            txn.open_table(SEEN_ORDER)?;
            txn.open_table(GIVEN_UP)?;
        }
        txn.commit()?;
        Ok(())
    };
    made().map_err(|e| StoreError(e.to_string()))
}

/// The tables a write transaction changes.
struct Tables<'t> {
    events: Table<'t, &'static str, &'static [u8]>,
    due: Table<'t, (u64, &'static str), ()>,
    received: Table<'t, (u64, &'static str), ()>,
    seen: Table<'t, &'static str, u64>,
    seen_order: Table<'t, (u64, &'static str), ()>,
    given_up: Table<'t, &'static str, &'static [u8]>,
}

/// Makes `changes` in one transaction, and forgets ids seen too long ago.
fn commit(db: &Database, changes: Vec<Change>) -> Result<Vec<Done>, redb::Error> {
    let txn = db.begin_write()?;
    let dones = {
        let mut t = Tables::open(&txn)?;
        let dones = changes
            .into_iter()
            .map(|change| t.make(change))
            .collect::<Result<Vec<_>, _>>()?;
        t.forget_seen(now_ms().saturating_sub(ms(SEEN_FOR)))?;
        dones
    };
    txn.commit()?;
    Ok(dones)
}

fn ms(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

// === impl Tables ===

impl<'t> Tables<'t> {
    fn open(txn: &'t WriteTransaction) -> Result<Tables<'t>, redb::Error> {
        Ok(Tables {
            events: txn.open_table(EVENTS)?,
            due: txn.open_table(DUE)?,
            received: txn.open_table(RECEIVED)?,
            seen: txn.open_table(SEEN)?,
            seen_order: txn.open_table(SEEN_ORDER)?,
            given_up: txn.open_table(GIVEN_UP)?,
        })
    }

    fn make(&mut self, change: Change) -> Result<Done, redb::Error> {
        match change {
            Change::Put(event) => self.put(&event),
            Change::Delivered(id) => {
                self.remove(&id)?;
                Ok(Done::Settled)
            }
            Change::Retry(event) => {
                if let Some(old) = self.remove(&event.id)? {
                    self.keep(&Event {
                        received_ms: old.received_ms,
                        ..event
                    })?;
                }
                Ok(Done::Settled)
            }
            Change::GiveUp(event) => {
                if self.remove(&event.id)?.is_some() {
                    self.given_up
                        .insert(event.id.as_str(), event.to_bytes().as_slice())?;
                }
                Ok(Done::Settled)
            }
            Change::Replay(id, now) => self.replay(id, now),
        }
    }

    /// A new event, unless its id was seen.
    fn put(&mut self, event: &Event) -> Result<Done, redb::Error> {
        let id = event.id.as_str();
        if self.seen.get(id)?.is_some() || self.events.get(id)?.is_some() {
            return Ok(Done::Repeated);
        }
        self.seen.insert(id, event.received_ms)?;
        self.seen_order.insert((event.received_ms, id), ())?;
        self.keep(event)?;
        Ok(Done::Stored)
    }

    /// Writes `event` as waiting, due at its `due_ms`.
    fn keep(&mut self, event: &Event) -> Result<(), redb::Error> {
        let id = event.id.as_str();
        self.events.insert(id, event.to_bytes().as_slice())?;
        self.due.insert((event.due_ms, id), ())?;
        self.received.insert((event.received_ms, id), ())?;
        Ok(())
    }

    /// Takes a waiting event out (of `events`, `due` and `received`); what it was.
    fn remove(&mut self, id: &str) -> Result<Option<Event>, redb::Error> {
        let Some(old) = self.events.remove(id)? else {
            return Ok(None);
        };
        let old = Event::from_bytes(old.value());
        if let Some(old) = &old {
            self.due.remove((old.due_ms, id))?;
            self.received.remove((old.received_ms, id))?;
        }
        Ok(old)
    }

    /// Given-up events (the one with `id`, or all) waiting again, due at `now`.
    fn replay(&mut self, id: Option<String>, now: u64) -> Result<Done, redb::Error> {
        let ids: Vec<String> = match id {
            Some(id) => vec![id],
            None => {
                let keys = self
                    .given_up
                    .iter()?
                    .map(|e| e.map(|(k, _)| k.value().to_owned()));
                keys.collect::<Result<_, _>>()?
            }
        };
        let mut replayed = 0;
        for id in ids {
            let removed = self.given_up.remove(id.as_str())?;
            let Some(event) = removed.and_then(|bytes| Event::from_bytes(bytes.value())) else {
                continue;
            };
            self.keep(&event.replayed(now))?;
            replayed += 1;
        }
        Ok(Done::Replayed(replayed))
    }

    /// Forgets ids received before `before` (a bounded number at a time).
    fn forget_seen(&mut self, before: u64) -> Result<(), redb::Error> {
        let old: Vec<(u64, String)> = self
            .seen_order
            .range::<(u64, &str)>(..(before, ""))?
            .take(FORGET_AT_ONCE)
            .map(|e| e.map(|(k, _)| (k.value().0, k.value().1.to_owned())))
            .collect::<Result<_, _>>()?;
        for (at, id) in old {
            self.seen_order.remove((at, id.as_str()))?;
            self.seen.remove(id.as_str())?;
        }
        Ok(())
    }
}
