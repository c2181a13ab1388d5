//! What one version of the route table is at run time: the compiled table plus, for each of
//! its upstreams, the pooled client and what lingo has learnt about it. One [`Snapshot`] is
//! swapped in by a reload and held by each request from its start to its end. A reload by a
//! file change keeps the pools of the upstreams it leaves reached the same way (see
//! [`Snapshot::new`]; `SIGHUP` keeps none), and every reload forgets what was learnt.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::table::{Backend, RouteTable, Upstream};
use crate::translate::webdata::{self, Jobs};
use crate::upstream::backends::{Backends, Member};
use crate::upstream::health::BackendState;
use crate::upstream::{UpstreamClient, probe};
use crate::webhooks::Settings;

/// Everything derived from one version of the file, swapped as one.
pub struct Snapshot {
    pub table: RouteTable,
    /// One per `table.upstreams`, in the same order.
    peers: Vec<Peer>,
    /// 1 for the table lingo started with, +1 per successful reload.
    pub generation: u64,
    /// The webhook relays of this table (set by the reload that makes it current).
    pub webhooks: Arc<Settings>,
}

/// One upstream as requests use it.
pub struct Peer {
    /// Its compiled settings.
    pub spec: Arc<Upstream>,
    /// Its backends: each one's pooled connections (or its mock), shared with the tables
    /// before it while it is reached the same way, and its state, kept while it stays.
    pub backends: Arc<Backends>,
    /// Learnt that it has only the legacy `/api/embeddings` (forgotten on reload).
    legacy_embeddings: AtomicBool,
    /// The v1 formats of the crawls and batches web-data v1 clients started on it (a
    /// v2-only upstream), for their status pages. Forgotten on reload: status pages then
    /// give json results under both names.
    pub jobs: Mutex<Jobs>,
}

/// How many web-data jobs an upstream's [`Peer::jobs`] remembers.
pub const JOBS_REMEMBERED: usize = 10_000;

// === impl Snapshot ===

impl Snapshot {
    /// The snapshot of `table`. `before`, the one it replaces: the client of each of its
    /// upstreams that serves one of `table`'s alike (`UpstreamClient::serves_alike`: lingo's
    /// own pool to the same address) is kept, and with it the connections it holds, so that
    /// a reload does not make every request after it open a connection again. Each is kept
    /// by one upstream at most: by its namesake if that one is served alike, else by the
    /// first in table order that is.
    pub fn new(table: RouteTable, generation: u64, before: Option<&Snapshot>) -> Self {
        let mut kept = Before::of(before.map_or(&[], |b| &b.peers[..])).keep(&table.upstreams);
        let peers = (table.upstreams.iter().zip(&mut kept))
            .map(|(spec, kept)| {
                let mut kept = kept.drain(..);
                let keep = |_: &Backend| kept.next().unwrap_or_default();
                let backends = Arc::new(Backends::new(spec, keep));
                if backends.members().len() > 1 {
                    probe::spawn(Arc::clone(spec), Arc::downgrade(&backends));
                }
                Peer {
                    spec: Arc::clone(spec),
                    backends,
                    legacy_embeddings: AtomicBool::new(false),
                    jobs: Mutex::new(Jobs::new(JOBS_REMEMBERED, webdata::TTL)),
                }
            })
            .collect();
        Snapshot {
            table,
            peers,
            generation,
            webhooks: Arc::default(),
        }
    }

    /// The upstream at `index` of the table (route and alias targets are such indexes).
    pub fn peer(&self, index: usize) -> &Peer {
        &self.peers[index]
    }

    pub fn peers(&self) -> &[Peer] {
        &self.peers
    }
}

/// What a new backend keeps of one before: its client (its pooled connections) and its
/// state.
type Kept = (Option<Arc<UpstreamClient>>, Option<Arc<BackendState>>);

/// The backends of a table before, each one's client until a new backend keeps it.
struct Before<'a> {
    /// (its upstream, its spec, it while its client is not kept)
    backends: Vec<(&'a Upstream, &'a Backend, &'a Member, bool)>,
}

impl<'a> Before<'a> {
    fn of(peers: &'a [Peer]) -> Before<'a> {
        let backends = (peers.iter())
            .flat_map(|p| {
                let members = p.backends.members().iter();
                let specs = p.spec.backends.iter().zip(members);
                specs.map(move |(b, m)| (&*p.spec, b, m, true))
            })
            .collect();
        Before { backends }
    }

    /// What each backend of `upstreams` keeps: the state of its namesake (the same upstream,
    /// the same label), and the client of one before that serves it alike: its namesake's
    /// upstream's first, then any other's, so that an upstream listed before its namesake
    /// never takes the namesake's pool. Each client is kept by one backend at most.
    fn keep(mut self, upstreams: &[Arc<Upstream>]) -> Vec<Vec<Kept>> {
        let mut kept: Vec<Vec<Kept>> = (upstreams.iter())
            .map(|u| {
                u.backends
                    .iter()
                    .map(|b| (None, self.state(u, b)))
                    .collect()
            })
            .collect();
        for named in [true, false] {
            for (u, kept) in upstreams.iter().zip(&mut kept) {
                for (b, kept) in u.backends.iter().zip(kept.iter_mut()) {
                    if kept.0.is_none() {
                        kept.0 = self.client(u, b, named);
                    }
                }
            }
        }
        kept
    }

    fn state(&self, upstream: &Upstream, backend: &Backend) -> Option<Arc<BackendState>> {
        (self.backends.iter())
            .find(|(u, b, ..)| u.name == upstream.name && b.label == backend.label)
            .map(|(_, _, m, _)| Arc::clone(&m.state))
    }

    fn client(
        &mut self,
        upstream: &Upstream,
        backend: &Backend,
        named: bool,
    ) -> Option<Arc<UpstreamClient>> {
        let fits = |(u, _, m, left): &(&Upstream, &Backend, &Member, bool)| {
            *left && (!named || u.name == upstream.name) && m.client.serves_alike(upstream, backend)
        };
        let at = self.backends.iter().position(fits)?;
        self.backends[at].3 = false;
        Some(Arc::clone(&self.backends[at].2.client))
    }
}

// === impl Peer ===

impl Peer {
    /// Whether the upstream responded to `/api/embed` with a plain 404 before.
    pub fn legacy_embeddings(&self) -> bool {
        self.legacy_embeddings.load(Ordering::Relaxed)
    }

    /// Remembers that the upstream has only the legacy `/api/embeddings`.
    pub fn learn_legacy_embeddings(&self) {
        self.legacy_embeddings.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config;

    /// A snapshot of upstreams named and placed as `upstreams` says (`name: url`).
    fn snapshot(upstreams: &[(&str, &str)], before: Option<&Snapshot>) -> Snapshot {
        let mut yaml = String::from("listen:\n  - addr: 127.0.0.1:0\nupstreams:\n");
        for (name, url) in upstreams {
            yaml.push_str(&format!("  {name}: {{ url: \"{url}\", speaks: native }}\n"));
        }
        yaml.push_str("routes:\n");
        for (i, (name, _)) in upstreams.iter().enumerate() {
            yaml.push_str(&format!("  - {{ prefix: /p{i}, to: {name} }}\n"));
        }
        let table = config::load_str(&yaml, Path::new("proxy.yaml")).unwrap();
        Snapshot::new(table, 1, before)
    }

    /// Which of `before`'s upstreams each of `after`'s kept the client of, by name.
    fn kept_from(before: &Snapshot, after: &Snapshot) -> Vec<Option<String>> {
        let by = |peer: &Peer| {
            let client = |p: &Peer| Arc::clone(&p.backends.members()[0].client);
            let same = |old: &&Peer| Arc::ptr_eq(&client(old), &client(peer));
            before
                .peers()
                .iter()
                .find(same)
                .map(|old| old.spec.name.to_string())
        };
        after.peers().iter().map(by).collect()
    }

    #[test]
    fn a_pool_goes_to_its_namesake_first_then_to_one_upstream_at_most() {
        let (x, y) = ("http://127.0.0.1:9", "http://127.0.0.1:10");
        let before = snapshot(&[("a", x), ("c", "https://127.0.0.1:9")], None);
        // The new table's upstreams (name, URL), and whose pool each keeps.
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a [Option<&'a str>]);
        let cases: &[Case] = &[
            // Listed before its namesake, `b` does not take `a`'s pool.
            (&[("b", x), ("a", x)], &[None, Some("a")]),
            // Renamed: kept; a second upstream at the address gets a pool of its own.
            (&[("b", x), ("d", x)], &[Some("a"), None]),
            // Another address, or an https one (never kept): made again.
            (&[("a", y), ("c", "https://127.0.0.1:9")], &[None, None]),
        ];
        for &(upstreams, want) in cases {
            let after = snapshot(upstreams, Some(&before));
            let want: Vec<_> = want.iter().map(|w| w.map(str::to_owned)).collect();
            assert_eq!(kept_from(&before, &after), want, "{upstreams:?}");
        }
    }
}
