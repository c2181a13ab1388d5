//! What one version of the route table is at run time: the compiled table plus, for each of
//! its upstreams, the pooled client and what lingo has learnt about it. One [`Snapshot`] is
//! swapped in by a reload and held by each request from its start to its end. A reload
//! keeps the pools of the upstreams it leaves reached the same way (see [`Snapshot::new`]),
//! and forgets what was learnt.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::table::{RouteTable, Upstream};
use crate::translate::webdata::{self, Jobs};
use crate::upstream::UpstreamClient;

/// Everything derived from one version of the file, swapped as one.
pub struct Snapshot {
    pub table: RouteTable,
    /// One per `table.upstreams`, in the same order.
    peers: Vec<Peer>,
    /// 1 for the table lingo started with, +1 per successful reload.
    pub generation: u64,
}

/// One upstream as requests use it.
pub struct Peer {
    /// Its compiled settings.
    pub spec: Arc<Upstream>,
    /// Its pooled connections (or its mock); shared with the tables before it while it is
    /// reached the same way.
    pub client: Arc<UpstreamClient>,
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
    /// by one upstream at most, its namesake first.
    pub fn new(table: RouteTable, generation: u64, before: Option<&Snapshot>) -> Self {
        let mut kept: Vec<&Peer> = before.map_or_else(Vec::new, |b| b.peers.iter().collect());
        let peers = table
            .upstreams
            .iter()
            .map(|spec| Peer {
                spec: Arc::clone(spec),
                client: keep(&mut kept, spec)
                    .unwrap_or_else(|| Arc::new(UpstreamClient::new(spec))),
                legacy_embeddings: AtomicBool::new(false),
                jobs: Mutex::new(Jobs::new(JOBS_REMEMBERED, webdata::TTL)),
            })
            .collect();
        Snapshot {
            table,
            peers,
            generation,
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

/// The client of one of `kept` that serves `spec` alike (the one named as it is first),
/// taken out of `kept`.
fn keep(kept: &mut Vec<&Peer>, spec: &Upstream) -> Option<Arc<UpstreamClient>> {
    let alike = |peer: &&Peer| peer.client.serves_alike(spec);
    let named = kept
        .iter()
        .position(|p| alike(p) && p.spec.name == spec.name);
    let at = named.or_else(|| kept.iter().position(alike))?;
    Some(Arc::clone(&kept.swap_remove(at).client))
}

// === impl Peer ===

impl Peer {
    /// Whether the upstream answered `/api/embed` with a plain 404 before.
    pub fn legacy_embeddings(&self) -> bool {
        self.legacy_embeddings.load(Ordering::Relaxed)
    }

    /// Remembers that the upstream has only the legacy `/api/embeddings`.
    pub fn learn_legacy_embeddings(&self) {
        self.legacy_embeddings.store(true, Ordering::Relaxed);
    }
}
