//! Hot reload: the one place that swaps the live route table.
//!
//! A reload reads the *configured* path again (so an editor's write-to-temp-and-rename and a
//! Kubernetes ConfigMap's `..data` symlink swap both land), compiles a whole new
//! [`Snapshot`] beside the old one, and only then stores it: a bad file is refused with its
//! reasons logged and the old table keeps serving. Requests hold the `Arc<Snapshot>` they
//! started with, so they finish on their own table.
//!
//! Triggers: a change in the config file's directory, or in the directory of any file the
//! table reads (certificates, keys, CA files, `file:` secrets), debounced, and skipped when
//! neither the table's text nor any of those files changed; and SIGHUP, which always reloads.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use arc_swap::ArcSwap;
use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::config::{self, ConfigError, ConfigErrors};
use crate::observe::Metrics;
use crate::quota::Quota;
use crate::runtime::Snapshot;
use crate::table::RouteTable;
use crate::webhooks::Relay;

/// Quiet time after the last file event before reloading: editors write in several steps.
const DEBOUNCE: Duration = Duration::from_millis(200);

/// What a reload is for, as its log line says: `SIGHUP` forces one (see [`Reloader::reload`]),
/// a file event asks for one.
const SIGHUP: &str = "SIGHUP";
const FILE_CHANGED: &str = "file changed";

/// The longest a burst of file events holds a reload back: events that never stop (a log
/// written beside the table) would otherwise hold it back for ever.
const DEBOUNCE_AT_MOST: Duration = Duration::from_secs(2);

/// The live table and how to replace it.
pub struct Reloader {
    path: PathBuf,
    current: ArcSwap<Snapshot>,
    generation: AtomicU64,
    /// What the last load (good or bad) read, to skip events that change nothing.
    last: Mutex<Option<Fingerprint>>,
    /// Outlives every table: counters keep counting across reloads.
    metrics: Arc<Metrics>,
    /// The directory watcher (once triggers are installed) and the directories it watches.
    watcher: Mutex<Option<(notify::RecommendedWatcher, HashSet<PathBuf>)>>,
    /// The listen and admin addresses of the first table: what is bound until a restart.
    bound: (Vec<SocketAddr>, Option<SocketAddr>),
    /// The webhook relay: its stores stay open across tables.
    relay: Arc<Relay>,
    /// The clients' limits: their counters outlive tables.
    quota: Quota,
}

/// The installed reload triggers: file events and SIGHUP, as one channel.
pub struct Triggers {
    rx: mpsc::UnboundedReceiver<&'static str>,
}

/// The table's text and the contents of the files it reads (`None`: unreadable).
#[derive(PartialEq, Eq)]
struct Fingerprint {
    text: Option<String>,
    files: Vec<Option<Vec<u8>>>,
}

/// Why a reload did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    #[error("{0}")]
    Invalid(#[from] ConfigErrors),
    #[error("unchanged")]
    Unchanged,
}

// === impl Reloader ===

impl Reloader {
    /// Loads the file for the first time.
    pub fn load(path: &Path) -> Result<Self, ConfigErrors> {
        let table = config::load(path)?;
        let last = Fingerprint::read(path, &table.files);
        let bound = (
            table.listeners.iter().map(|l| l.addr).collect(),
            table.admin.addr,
        );
        let metrics = Arc::new(Metrics::new());
        let relay = Arc::new(Relay::new(Arc::clone(&metrics)));
        let webhooks = relay.apply(&table).map_err(|e| store_errors(path, e))?;
        let quota = Quota::new(Arc::clone(&metrics));
        quota
            .apply(&table)
            .map_err(|e| store_errors(path, vec![e]))?;
        let mut snapshot = Snapshot::new(table, 1, None);
        snapshot.webhooks = webhooks;
        Ok(Reloader {
            bound,
            path: path.to_owned(),
            current: ArcSwap::from_pointee(snapshot),
            generation: AtomicU64::new(1),
            last: Mutex::new(Some(last)),
            metrics,
            watcher: Mutex::new(None),
            relay,
            quota,
        })
    }

    /// The clients' limits.
    pub fn quota(&self) -> &Quota {
        &self.quota
    }

    /// The webhook relay.
    pub fn relay(&self) -> &Arc<Relay> {
        &self.relay
    }

    /// Whether the first table had an admin listener (bound until a restart).
    pub fn admin_bound(&self) -> bool {
        self.bound.1.is_some()
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The table a request runs on, start to finish.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Re-reads the file and swaps the table; with `force`, even when neither the text nor a
    /// file it reads changed. (An unchanged table is not swapped in: that would only forget
    /// what was learnt of the upstreams.) A forced reload (`SIGHUP`) makes every upstream's
    /// client again, its connections opened (and its name looked up) again as requests need
    /// them: the operator's way to move traffic after a DNS change; an unforced one (a file
    /// event) keeps the pools it can (`runtime::Snapshot::new`).
    pub fn reload(&self, force: bool) -> Result<u64, ReloadError> {
        // The text is the same, so are the files it names: the current table's list.
        let now = Fingerprint::read(&self.path, &self.snapshot().table.files);
        {
            let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
            if !force && now.text.is_some() && last.as_ref() == Some(&now) {
                return Err(ReloadError::Unchanged);
            }
            *last = Some(now);
        }
        let table = config::load(&self.path).inspect_err(|_| self.metrics.reload_refused())?;
        let webhooks = (self.relay.apply(&table))
            .map_err(|e| store_errors(&self.path, e))
            .inspect_err(|_| self.metrics.reload_refused())?;
        (self.quota.apply(&table))
            .map_err(|e| store_errors(&self.path, vec![e]))
            .inspect_err(|_| self.metrics.reload_refused())?;
        // Every reload that differs from what is bound says so, until the restart.
        if self
            .bound
            .0
            .iter()
            .ne(table.listeners.iter().map(|l| &l.addr))
        {
            tracing::warn!(
                "listen addresses in {} differ from those bound; they take effect on restart",
                self.path.display()
            );
        }
        if self.bound.1 != table.admin.addr {
            tracing::warn!(
                "admin.addr in {} differs from the one bound; it takes effect on restart (until \
                 then /readyz and /metrics stay where they are)",
                self.path.display()
            );
        }
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        for warning in &table.warnings {
            tracing::warn!("{warning}");
        }
        self.watch_files(&table);
        let before = (!force).then(|| self.current.load_full());
        let mut snapshot = Snapshot::new(table, generation, before.as_deref());
        snapshot.webhooks = webhooks;
        self.current.store(Arc::new(snapshot));
        self.metrics.reloaded(generation);
        Ok(generation)
    }

    /// Reloads and logs the outcome; what SIGHUP and file events call.
    pub fn reload_and_log(&self, force: bool, why: &str) {
        match self.reload(force) {
            Ok(generation) => tracing::info!(generation, "route table reloaded ({why})"),
            Err(ReloadError::Unchanged) => tracing::debug!("{why}: file unchanged"),
            // One line: every problem in one field (one a line, which the log escapes).
            Err(ReloadError::Invalid(errors)) => tracing::error!(
                errors = %errors,
                "route table refused ({why}); still serving generation {}",
                self.snapshot().generation
            ),
        }
    }

    /// Installs the file watcher and the SIGHUP handler. Done before serving starts, so that
    /// no change made after startup can be missed. Must be called inside the runtime.
    pub fn triggers(&self) -> Triggers {
        let (tx, rx) = mpsc::unbounded_channel::<&'static str>();
        match self.start_watcher(tx.clone()) {
            Ok(watcher) => {
                let dirs = HashSet::from([dir_of(&self.path)]);
                *self.watcher.lock().unwrap_or_else(|e| e.into_inner()) = Some((watcher, dirs));
                self.watch_files(&self.snapshot().table);
            }
            Err(err) => tracing::warn!(
                "not watching {} for changes ({err}); SIGHUP still reloads",
                self.path.display()
            ),
        }
        spawn_sighup(tx);
        Triggers { rx }
    }

    /// Adds the directories of the files `table` reads to the watch (a certificate renewed in
    /// its own directory, a secret mounted elsewhere). Directories are never unwatched: a
    /// spare event only costs a comparison.
    fn watch_files(&self, table: &RouteTable) {
        let mut guard = self.watcher.lock().unwrap_or_else(|e| e.into_inner());
        let Some((watcher, dirs)) = guard.as_mut() else {
            return;
        };
        for file in &table.files {
            let dir = dir_of(file);
            if dirs.contains(&dir) {
                continue;
            }
            match watcher.watch(&dir, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    dirs.insert(dir);
                }
                Err(err) => tracing::warn!(
                    "not watching {} for changes ({err}); SIGHUP still reloads",
                    dir.display()
                ),
            }
        }
    }

    /// Reloads on every trigger until the task is dropped.
    pub async fn watch(self: Arc<Self>, triggers: Triggers) {
        let Triggers { mut rx } = triggers;
        while let Some(mut why) = rx.recv().await {
            if why != SIGHUP {
                why = settle(&mut rx, why).await;
            }
            self.reload_and_log(why == SIGHUP, why);
        }
    }

    /// Watches the file's directory, not the file: a rename over the file or a symlink swap
    /// replaces the inode a file watch would be attached to.
    fn start_watcher(
        &self,
        tx: mpsc::UnboundedSender<&'static str>,
    ) -> notify::Result<notify::RecommendedWatcher> {
        let dir = dir_of(&self.path);
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                if event.is_ok_and(|e| !e.kind.is_access() && !only_stores(&e)) {
                    let _ = tx.send(FILE_CHANGED);
                }
            })?;
        watcher.watch(&dir, RecursiveMode::NonRecursive)?;
        Ok(watcher)
    }
}

/// Debounce: waits until the directory has been quiet for [`DEBOUNCE`], or for
/// [`DEBOUNCE_AT_MOST`] in all. A SIGHUP that comes meanwhile ends the wait and forces the
/// reload, as it does at any other time (it was swallowed, and the reload then skipped as
/// unchanged). Says what the reload is for.
async fn settle(rx: &mut mpsc::UnboundedReceiver<&'static str>, why: &'static str) -> &'static str {
    let until = tokio::time::Instant::now() + DEBOUNCE_AT_MOST;
    loop {
        let left = until.saturating_duration_since(tokio::time::Instant::now());
        match tokio::time::timeout(DEBOUNCE.min(left), rx.recv()).await {
            Ok(Some(SIGHUP)) => return SIGHUP,
            Ok(Some(_)) if !left.is_zero() => {}
            _ => return why,
        }
    }
}

// === impl Fingerprint ===

impl Fingerprint {
    fn read(table: &Path, files: &[PathBuf]) -> Self {
        Fingerprint {
            text: std::fs::read_to_string(table).ok(),
            files: files.iter().map(|f| std::fs::read(f).ok()).collect(),
        }
    }
}

/// Whether an event is about webhook store files alone (`*.redb`, beside the table by
/// default), which change with every event kept and are no part of the table.
fn only_stores(event: &notify::Event) -> bool {
    let is_store = |p: &PathBuf| p.extension().is_some_and(|e| e == "redb");
    !event.paths.is_empty() && event.paths.iter().all(is_store)
}

/// Stores that could not be opened, as load errors of the table at `path`.
fn store_errors(path: &Path, messages: Vec<String>) -> ConfigErrors {
    let errors = messages.into_iter().map(|message| ConfigError {
        file: path.to_owned(),
        line: 0,
        column: 0,
        message,
    });
    ConfigErrors(errors.collect())
}

/// The directory a file lives in (`.` for a bare file name).
fn dir_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    }
}

#[cfg(unix)]
fn spawn_sighup(tx: mpsc::UnboundedSender<&'static str>) {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::hangup()) {
        Ok(mut hup) => {
            tokio::spawn(async move {
                while hup.recv().await.is_some() {
                    if tx.send(SIGHUP).is_err() {
                        break;
                    }
                }
            });
        }
        Err(err) => tracing::warn!("cannot listen for SIGHUP: {err}"),
    }
}

#[cfg(not(unix))]
fn spawn_sighup(_tx: mpsc::UnboundedSender<&'static str>) {}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::sync::mpsc;
    use tokio::time::Instant;

    use super::*;

    /// Runs [`settle`] with events sent every `every` (for ever, or until `sighup_at`, when a
    /// SIGHUP is sent): what it settled for, and after how long. Time is tokio's, paused: the
    /// figures are exact, not measured.
    async fn settled(
        every: Option<Duration>,
        sighup_at: Option<Duration>,
    ) -> (&'static str, Duration) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let start = Instant::now();
        tokio::spawn(async move {
            loop {
                let next = every.unwrap_or(Duration::from_secs(3600));
                tokio::time::sleep(next).await;
                let at = start.elapsed();
                let what = match sighup_at {
                    Some(sighup) if at >= sighup => SIGHUP,
                    _ => FILE_CHANGED,
                };
                if tx.send(what).is_err() {
                    return;
                }
            }
        });
        // Bounded, so that a debounce that never ends fails the test instead of hanging it.
        let settling = tokio::time::timeout(Duration::from_secs(60), settle(&mut rx, FILE_CHANGED));
        let why = settling.await.expect("settled within a minute");
        (why, start.elapsed())
    }

    /// A single event's reload waits for the quiet time only.
    #[tokio::test(start_paused = true)]
    async fn a_quiet_directory_settles_after_the_quiet_time() {
        assert_eq!(settled(None, None).await, (FILE_CHANGED, DEBOUNCE));
    }

    /// Events that keep coming, each within the quiet time of the last, hold a reload back
    /// no longer than the cap: then it goes ahead.
    #[tokio::test(start_paused = true)]
    async fn endless_events_hold_a_reload_back_no_longer_than_the_cap() {
        let every = Some(DEBOUNCE / 2);
        assert_eq!(settled(every, None).await, (FILE_CHANGED, DEBOUNCE_AT_MOST));
    }

    /// A SIGHUP during the wait ends it, and the reload is forced.
    #[tokio::test(start_paused = true)]
    async fn a_sighup_ends_the_wait() {
        let sighup_at = Duration::from_millis(500);
        let (why, after) = settled(Some(DEBOUNCE / 2), Some(sighup_at)).await;
        assert_eq!((why, after), (SIGHUP, sighup_at));
    }
}
