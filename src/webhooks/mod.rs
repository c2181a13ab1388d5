//! The webhook relay: a web-data upstream cannot reach a client's webhook URL (a private
//! network, a sidecar), so lingo gives the upstream a URL of its own instead, keeps each
//! event the upstream sends there, and delivers it to the client's URL, signed, until the
//! client's receiver takes it.
//!
//! - [`rewrite`]: a job request's `webhook` pointed at lingo's receiver, its destination
//!   sealed into the URL ([`seal`]); an address lingo would never deliver to is refused here.
//! - [`receive`]: `POST /lingo/webhooks/<token>` on every listener: the token opened, the
//!   upstream's signature checked ([`sign`]), the event stored before the response.
//! - [`store`]: where events wait (an embedded file, or Redis for replicas).
//! - `worker` and [`attempt`]: delivery, one worker per store: bounded attempts, each
//!   timed, signed and sent by [`client`] to an address [`dest`] allows; retries on the
//!   schedule; given-up events kept, listed and replayed by [`admin`].
//!
//! [`Relay`] outlives every table: stores stay open across reloads (kept by their path or
//! URL), and each reload makes new [`Settings`] current, which deliveries read per attempt.

pub mod admin;
pub mod attempt;
pub mod client;
pub mod dest;
pub mod event;
pub mod receive;
pub mod rewrite;
pub mod seal;
pub mod sign;
pub mod store;
mod worker;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use arc_swap::ArcSwap;
use tokio::sync::{Notify, watch};

use crate::base::secret::Secret;
use crate::observe::Metrics;
use crate::table::{RouteTable, StoreAt, WebhookSpec};
use client::Deliverer;
use seal::{Destination, Sealer};
use sign::SigningKey;
use store::Store;

pub use admin::Endpoint;

/// The relay, for the life of the process.
pub struct Relay {
    shared: Arc<Shared>,
    /// Every store opened, by where it is.
    stores: Mutex<BTreeMap<StoreAt, Arc<StoreHandle>>>,
}

/// What the workers share with the relay.
struct Shared {
    settings: ArcSwap<Settings>,
    metrics: Arc<Metrics>,
    stop: watch::Sender<bool>,
}

/// One open store.
pub struct StoreHandle {
    pub at: StoreAt,
    /// As logs and metric labels name it (no password).
    pub label: String,
    pub store: Arc<dyn Store>,
    /// Woken when an event is put: its worker claims at once.
    wake: Notify,
}

/// The relays of one table (and of the upstreams earlier tables had, so that their stored
/// events are still delivered and their tokens still open), by upstream name.
#[derive(Default)]
pub struct Settings {
    relays: BTreeMap<String, Arc<Relaying>>,
}

/// One upstream's relay as deliveries use it.
pub struct Relaying {
    pub upstream: String,
    pub spec: Arc<WebhookSpec>,
    sealer: Option<Sealer>,
    pub store: Arc<StoreHandle>,
    pub deliverer: Deliverer,
    /// Each client's key (its `webhook_secret`), by name.
    keys: HashMap<String, SigningKey>,
    /// The upstream's `sign`, for clients without a key of their own.
    fallback: Option<SigningKey>,
    /// lingo's keys (the clients' and the upstreams'): never sent to a client's URL.
    forbidden: Arc<[Secret]>,
}

// === impl Relay ===

impl Relay {
    pub fn new(metrics: Arc<Metrics>) -> Relay {
        Relay {
            shared: Arc::new(Shared {
                settings: ArcSwap::from_pointee(Settings::default()),
                metrics,
                stop: watch::Sender::new(false),
            }),
            stores: Mutex::default(),
        }
    }

    /// Opens the stores `table` names (those already open stay as they are), and makes its
    /// relays current; what could not be opened, as messages.
    pub fn apply(&self, table: &RouteTable) -> Result<Arc<Settings>, Vec<String>> {
        let mut errors = Vec::new();
        let forbidden: Arc<[Secret]> = forbidden(table).into();
        let before = self.shared.settings.load_full();
        let mut relays = before.relays.clone();
        for upstream in &table.upstreams {
            let Some(spec) = &upstream.webhooks else {
                continue;
            };
            match self.store(&spec.store) {
                Ok(store) => {
                    let relay = Relaying::new(table, &upstream.name, spec, store, &forbidden);
                    relays.insert(upstream.name.to_string(), Arc::new(relay));
                }
                Err(e) => errors.push(format!("upstream `{}` webhooks.store: {e}", upstream.name)),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let settings = Arc::new(Settings { relays });
        self.shared.settings.store(Arc::clone(&settings));
        Ok(settings)
    }

    /// The relays now in force.
    pub fn settings(&self) -> Arc<Settings> {
        self.shared.settings.load_full()
    }

    pub fn metrics(&self) -> &Metrics {
        &self.shared.metrics
    }

    /// Every store open.
    pub fn stores(&self) -> Vec<Arc<StoreHandle>> {
        let stores = self.stores.lock().unwrap_or_else(PoisonError::into_inner);
        stores.values().cloned().collect()
    }

    /// Stops the workers: attempts in flight are dropped, their events left as stored (due
    /// again when lingo next runs).
    pub fn stop(&self) {
        self.shared.stop.send_replace(true);
    }

    /// The store at `at`, opened (and its worker started) the first time.
    fn store(&self, at: &StoreAt) -> Result<Arc<StoreHandle>, String> {
        let mut stores = self.stores.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(handle) = stores.get(at) {
            return Ok(Arc::clone(handle));
        }
        let handle = Arc::new(StoreHandle {
            at: at.clone(),
            label: at.to_string(),
            store: store::open(at)?,
            wake: Notify::new(),
        });
        stores.insert(at.clone(), Arc::clone(&handle));
        if tokio::runtime::Handle::try_current().is_ok() {
            worker::start(Arc::clone(&handle), Arc::clone(&self.shared));
        }
        Ok(handle)
    }
}

/// Every key lingo holds: its clients' and its upstreams'.
fn forbidden(table: &RouteTable) -> Vec<Secret> {
    let clients = table.clients.iter().map(|c| c.key.clone());
    let upstreams = table.upstreams.iter().filter_map(|u| u.auth.as_ref());
    clients
        .chain(upstreams.map(|a| a.key.clone()))
        .filter(|k| !k.expose().is_empty())
        .collect()
}

// === impl Shared ===

impl Shared {
    /// How long an event claimed elsewhere may go unsettled before this replica takes it
    /// over: a live holder settles within its attempt's time, so one that has not, well past
    /// the longest attempt time of the store's relays, has died.
    fn stale_for(&self, at: &StoreAt) -> Duration {
        let settings = self.settings.load();
        let longest = settings
            .relays
            .values()
            .filter(|r| &r.store.at == at)
            .map(|r| r.spec.timeout)
            .max()
            .unwrap_or(crate::table::webhooks::DEFAULT_TIMEOUT);
        longest + Duration::from_secs(5)
    }
}

// === impl StoreHandle ===

impl StoreHandle {
    /// An event was put: the worker should look.
    pub fn wake(&self) {
        self.wake.notify_one();
    }
}

// === impl Settings ===

impl Settings {
    /// The relay of `upstream`, if it has one.
    pub fn of(&self, upstream: &str) -> Option<&Arc<Relaying>> {
        self.relays.get(upstream)
    }

    /// The relay and destination a receiver token names: opened with each relay's key
    /// (one that opens it must be the relay of the upstream it names).
    pub fn open(&self, token: &str) -> Option<(Arc<Relaying>, Destination)> {
        self.relays.values().find_map(|relay| {
            let destination = relay.sealer.as_ref()?.open(token)?;
            (destination.upstream == relay.upstream).then(|| (Arc::clone(relay), destination))
        })
    }
}

// === impl Relaying ===

impl Relaying {
    fn new(
        table: &RouteTable,
        upstream: &str,
        spec: &Arc<WebhookSpec>,
        store: Arc<StoreHandle>,
        forbidden: &Arc<[Secret]>,
    ) -> Relaying {
        let keys = table.clients.iter().filter_map(|client| {
            let key = SigningKey::new(client.webhook_secret.as_ref()?);
            Some((client.name.clone(), key))
        });
        Relaying {
            upstream: upstream.to_owned(),
            spec: Arc::clone(spec),
            sealer: spec.seal.as_ref().map(Sealer::new),
            store,
            deliverer: Deliverer::new(&spec.allow),
            keys: keys.collect(),
            fallback: spec.sign.as_ref().map(SigningKey::new),
            forbidden: Arc::clone(forbidden),
        }
    }

    /// The token for `destination`, when the relay has a key to seal it with.
    pub fn seal(&self, destination: &Destination) -> Option<String> {
        Some(self.sealer.as_ref()?.seal(destination))
    }

    /// What deliveries to `client` are signed with: its own key, else the upstream's.
    pub fn key_for(&self, client: Option<&str>) -> Option<&SigningKey> {
        client
            .and_then(|name| self.keys.get(name))
            .or(self.fallback.as_ref())
    }

    /// Whether `value` holds one of lingo's keys.
    pub fn holds_a_key(&self, value: &str) -> bool {
        self.forbidden.iter().any(|k| value.contains(k.expose()))
    }
}
