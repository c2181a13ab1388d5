//! The metrics of each route and upstream pair, found again by the names' addresses.
//!
//! A metric family finds a series by hashing its labels (SipHash over the route's and the
//! upstream's names) under a lock: three lookups a request, and two more (with a copy of the
//! client's name) for the tokens of a translated one. The names are shared with the route table
//! (`Arc<str>`), so a request's pair is found here by comparing two pointers, its request
//! and tokens series by their few labels, and every series is a handle cloned from its
//! family once. Each entry holds its names, so an address is never reused by another name
//! while the entry lives. A reload makes new names; the cache is emptied when it is full,
//! which only costs the next requests a family lookup again.

use std::sync::{Arc, Mutex};

use prometheus_client::metrics::counter::Counter;

use super::Outcome;
use super::timing::Timing;
use crate::base::dialect::Dialect;

/// Most pairs kept; then the cache starts again.
const MAX_PAIRS: usize = 256;
/// Most request series (status, dialect, outcome) kept per pair; past it, the family is asked.
const MAX_SERIES: usize = 64;

/// A request series' labels besides the pair: status, dialect (`-` when none) and outcome.
pub type SeriesKey = (u16, Option<Dialect>, Outcome);

/// One route and upstream pair's handles.
pub struct Pair {
    route: Arc<str>,
    upstream: Arc<str>,
    pub duration: Timing,
    pub overhead: Timing,
    requests: Vec<(SeriesKey, Counter)>,
    /// Tokens counters (in, out) by client name.
    tokens: Vec<(String, [Counter; 2])>,
}

/// The pairs seen lately (see the module's doc).
#[derive(Default)]
pub struct Handles {
    pairs: Mutex<Vec<Pair>>,
}

impl Pair {
    /// The requests counter for `key`, made by `make` (a family lookup) the first time.
    pub fn requests(&mut self, key: SeriesKey, make: impl FnOnce() -> Counter) -> Counter {
        found_or_made(&mut self.requests, |k| *k == key, || key, make)
    }

    /// The requests counter for `key` if the pair keeps it already (no series is made).
    pub fn kept_requests(&self, key: SeriesKey) -> Option<Counter> {
        let found = self.requests.iter().find(|(k, _)| *k == key);
        found.map(|(_, counter)| counter.clone())
    }

    /// The tokens counters (in, out) of `client`'s requests, made by `make` (two family
    /// lookups) the first time. Client names are few (the table's keys, or `-`).
    pub fn tokens(&mut self, client: &str, make: impl FnOnce() -> [Counter; 2]) -> [Counter; 2] {
        found_or_made(
            &mut self.tokens,
            |c| c == client,
            || client.to_owned(),
            make,
        )
    }
}

/// The handle kept under the key that `is` picks, or a new one from `make`, kept while the
/// list has fewer than [`MAX_SERIES`].
fn found_or_made<K, V: Clone>(
    list: &mut Vec<(K, V)>,
    is: impl Fn(&K) -> bool,
    key: impl FnOnce() -> K,
    make: impl FnOnce() -> V,
) -> V {
    if let Some((_, value)) = list.iter().find(|(k, _)| is(k)) {
        return value.clone();
    }
    let value = make();
    if list.len() < MAX_SERIES {
        list.push((key(), value.clone()));
    }
    value
}

impl Handles {
    /// Runs `f` on the pair's handles; `make` gives the duration and overhead histograms of a
    /// pair not seen yet.
    pub fn with<R>(
        &self,
        route: &Arc<str>,
        upstream: &Arc<str>,
        make: impl FnOnce() -> (Timing, Timing),
        f: impl FnOnce(&mut Pair) -> R,
    ) -> R {
        let mut pairs = self.pairs.lock().unwrap_or_else(|e| e.into_inner());
        let found = pairs
            .iter()
            .position(|p| Arc::ptr_eq(&p.route, route) && Arc::ptr_eq(&p.upstream, upstream));
        let at = match found {
            Some(at) => at,
            None => {
                if pairs.len() >= MAX_PAIRS {
                    pairs.clear();
                }
                let (duration, overhead) = make();
                pairs.push(Pair {
                    route: Arc::clone(route),
                    upstream: Arc::clone(upstream),
                    duration,
                    overhead,
                    requests: Vec::new(),
                    tokens: Vec::new(),
                });
                pairs.len() - 1
            }
        };
        f(&mut pairs[at])
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.pairs.lock().unwrap().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histograms() -> (Timing, Timing) {
        let h = || Timing::exponential(1.0, 2.0, 1);
        (h(), h())
    }

    #[test]
    fn a_pair_is_found_by_its_names_addresses_and_made_once() {
        let handles = Handles::default();
        let (route, upstream) = (Arc::<str>::from("chat"), Arc::<str>::from("models"));
        let mut made = 0;
        for _ in 0..3 {
            handles.with(
                &route,
                &upstream,
                || {
                    made += 1;
                    histograms()
                },
                |_| (),
            );
        }
        assert_eq!(made, 1);
        // The same text in another allocation (a reloaded table) is another entry.
        let reloaded = Arc::<str>::from("chat");
        handles.with(&reloaded, &upstream, histograms, |_| ());
        assert_eq!(handles.len(), 2);
    }

    #[test]
    fn a_series_counter_is_made_once_per_key_and_counts_where_the_family_does() {
        let handles = Handles::default();
        let (route, upstream) = (Arc::<str>::from("chat"), Arc::<str>::from("models"));
        let family_ok = Counter::default();
        let family_404 = Counter::default();
        for (status, family) in [(200, &family_ok), (200, &family_ok), (404, &family_404)] {
            handles.with(&route, &upstream, histograms, |pair| {
                pair.requests((status, Some(Dialect::Native), Outcome::Complete), || {
                    family.clone()
                })
                .inc();
            });
        }
        assert_eq!((family_ok.get(), family_404.get()), (2, 1));
    }

    #[test]
    fn the_cache_is_bounded() {
        let handles = Handles::default();
        let upstream = Arc::<str>::from("models");
        let routes: Vec<Arc<str>> = (0..MAX_PAIRS + 10)
            .map(|i| Arc::from(format!("r{i}")))
            .collect();
        for route in &routes {
            handles.with(route, &upstream, histograms, |_| ());
        }
        assert!(handles.len() <= MAX_PAIRS, "{}", handles.len());
        let family = Counter::default();
        handles.with(&routes[0], &upstream, histograms, |pair| {
            for status in 0..u16::try_from(MAX_SERIES).unwrap() + 10 {
                pair.requests((status, Some(Dialect::Native), Outcome::Complete), || {
                    family.clone()
                })
                .inc();
            }
            assert!(pair.requests.len() <= MAX_SERIES);
        });
        assert_eq!(family.get(), u64::try_from(MAX_SERIES).unwrap() + 10);
    }

    #[test]
    fn tokens_counters_are_made_once_per_client() {
        let handles = Handles::default();
        let (route, upstream) = (Arc::<str>::from("chat"), Arc::<str>::from("models"));
        let (team, other) = (
            [Counter::default(), Counter::default()],
            [Counter::default(), Counter::default()],
        );
        let mut made = 0;
        for (client, family) in [("team", &team), ("team", &team), ("-", &other)] {
            handles.with(&route, &upstream, histograms, |pair| {
                let [tokens_in, tokens_out] = pair.tokens(client, || {
                    made += 1;
                    family.clone()
                });
                tokens_in.inc_by(2);
                tokens_out.inc_by(5);
            });
        }
        assert_eq!(made, 2);
        assert_eq!((team[0].get(), team[1].get()), (4, 10));
        assert_eq!((other[0].get(), other[1].get()), (2, 5));
    }
}
