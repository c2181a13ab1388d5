//! Which backend serves a request: a pure choice over what is known of each at that moment.
//!
//! Among the backends not yet tried for the request, those in service (all of them when none
//! is: a backend is never refused on its health alone), of the best priority among them,
//! that have the request's model as well as any of them do (loaded beats listed beats not
//! known), one is chosen: the less loaded of two drawn by weight (load: requests in flight
//! over weight), or with a session key, the first in the key's own order of them whose load
//! is within [`STICKY_SLACK`] of the mean (consistent hashing with bounded loads).

/// How far over the mean load a sticky backend may be before the session goes elsewhere.
pub const STICKY_SLACK: f64 = 1.25;

/// What the pick knows of one backend.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    pub in_flight: usize,
    pub weight: u32,
    pub priority: u32,
    pub in_service: bool,
    pub model: ModelFit,
    /// Already tried for this request.
    pub tried: bool,
    /// A hash of the backend's name, for the sticky order (the same on every replica).
    pub name_hash: u64,
}

/// How well a backend has the request's model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ModelFit {
    /// Not known to have it (or the request names none).
    Unknown,
    /// Listed among its models.
    Listed,
    /// Loaded in its memory: no cold load.
    Loaded,
}

/// The index of the backend to send to, or `None` when every one has been tried. `random`
/// is fresh random bits; `sticky` the hash of the request's session key, if it has one.
pub fn pick(seen: &[Candidate], random: u64, sticky: Option<u64>) -> Option<usize> {
    let untried = || seen.iter().enumerate().filter(|(_, s)| !s.tried);
    let any_in_service = untried().any(|(_, s)| s.in_service);
    let usable = |s: &Candidate| !s.tried && (s.in_service || !any_in_service);
    let tier = seen
        .iter()
        .filter(|s| usable(s))
        .map(|s| s.priority)
        .min()?;
    let fit = (seen.iter().filter(|s| usable(s) && s.priority == tier))
        .map(|s| s.model)
        .max()?;
    let chosen: Vec<usize> = (0..seen.len())
        .filter(|&i| usable(&seen[i]) && seen[i].priority == tier && seen[i].model == fit)
        .collect();
    match sticky {
        Some(key) => Some(bounded(seen, &chosen, key)),
        None => Some(two_choices(seen, &chosen, random)),
    }
}

/// Load as compared between backends: in flight (this request counted) over weight.
fn load(s: &Candidate) -> f64 {
    (s.in_flight as f64 + 1.0) / f64::from(s.weight)
}

/// The less loaded of two of `chosen` drawn by weight (the first drawn on a tie).
fn two_choices(seen: &[Candidate], chosen: &[usize], random: u64) -> usize {
    if chosen.len() == 1 {
        return chosen[0];
    }
    let a = draw(seen, chosen, random as u32, None);
    let b = draw(seen, chosen, (random >> 32) as u32, Some(a));
    match load(&seen[b]) < load(&seen[a]) {
        true => b,
        false => a,
    }
}

/// One of `chosen` (but `not`), drawn with chances in proportion to the weights.
fn draw(seen: &[Candidate], chosen: &[usize], random: u32, not: Option<usize>) -> usize {
    let weight = |i: &usize| u64::from(seen[*i].weight);
    let total: u64 = chosen.iter().filter(|&&i| Some(i) != not).map(weight).sum();
    let mut at = u64::from(random) % total.max(1);
    for &i in chosen.iter().filter(|&&i| Some(i) != not) {
        match at.checked_sub(weight(&i)) {
            Some(rest) => at = rest,
            None => return i,
        }
    }
    chosen[0]
}

/// The first of `chosen` in the key's order (rendezvous hashing) whose load is within the
/// slack of the mean; the least loaded when none is.
fn bounded(seen: &[Candidate], chosen: &[usize], key: u64) -> usize {
    let mut order = chosen.to_vec();
    order.sort_by_key(|&i| std::cmp::Reverse(mix(key ^ seen[i].name_hash)));
    let weights: f64 = chosen.iter().map(|&i| f64::from(seen[i].weight)).sum();
    let in_flight: f64 = chosen.iter().map(|&i| seen[i].in_flight as f64).sum();
    let room = |i: usize| {
        let share = f64::from(seen[i].weight) / weights;
        (STICKY_SLACK * (in_flight + 1.0) * share).ceil()
    };
    let fits = order
        .iter()
        .find(|&&i| (seen[i].in_flight as f64) < room(i));
    match fits {
        Some(&i) => i,
        None => two_choices(seen, chosen, key),
    }
}

/// A 64-bit mix (splitmix64's finaliser): close keys land far apart.
pub fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// FNV-1a of `bytes`: the same on every replica and every build.
pub fn hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(in_flight: usize) -> Candidate {
        Candidate {
            in_flight,
            weight: 1,
            priority: 0,
            in_service: true,
            model: ModelFit::Unknown,
            tried: false,
            name_hash: hash(format!("b{in_flight}").as_bytes()),
        }
    }

    /// How often each backend is picked over many draws.
    fn counts(backends: &[Candidate], sticky: Option<u64>) -> Vec<usize> {
        let mut counts = vec![0; backends.len()];
        for i in 0..10_000u64 {
            if let Some(at) = pick(backends, mix(i), sticky) {
                counts[at] += 1;
            }
        }
        counts
    }

    #[test]
    fn each_rule_narrows_the_choice_in_its_order() {
        let out = Candidate {
            in_service: false,
            ..seen(0)
        };
        let tried = Candidate {
            tried: true,
            ..seen(0)
        };
        let backup = Candidate {
            priority: 1,
            ..seen(0)
        };
        let loaded = Candidate {
            model: ModelFit::Loaded,
            ..seen(9)
        };
        let listed = Candidate {
            model: ModelFit::Listed,
            ..seen(0)
        };
        // (backends, the only one that may be picked)
        let cases: Vec<(Vec<Candidate>, Option<usize>)> = vec![
            (vec![out, seen(5)], Some(1)),
            (vec![tried, seen(5)], Some(1)),
            (vec![tried, tried], None),
            // None in service: used anyway, never refused on health alone.
            (vec![tried, out], Some(1)),
            (vec![backup, seen(7)], Some(1)),
            (vec![backup, out], Some(0)),
            // The model loaded beats the lighter load; listed beats not known.
            (vec![seen(0), loaded, listed], Some(1)),
            (vec![seen(0), listed], Some(1)),
            // A loaded model on a backup does not beat the first tier.
            (
                vec![
                    seen(3),
                    Candidate {
                        priority: 1,
                        ..loaded
                    },
                ],
                Some(0),
            ),
        ];
        for (backends, want) in cases {
            let got = counts(&backends, None);
            let only: Vec<usize> = (0..got.len()).filter(|&i| got[i] > 0).collect();
            assert_eq!(only, want.into_iter().collect::<Vec<_>>(), "{backends:?}");
        }
    }

    #[test]
    fn two_choices_favour_the_lighter_and_the_heavier_weight() {
        let got = counts(&[seen(0), seen(10), seen(10)], None);
        // The idle one wins every draw it is in: two draws of three.
        assert!(got[0] > 6_000, "{got:?}");
        let heavy = Candidate {
            weight: 3,
            ..seen(1)
        };
        let got = counts(&[seen(1), heavy], None);
        assert!(got[1] > 9_000, "{got:?}");
        // Equal loads and weights: spread evenly.
        let got = counts(&[seen(2), seen(2)], None);
        assert!(got.iter().all(|&n| n > 4_000), "{got:?}");
    }

    #[test]
    fn a_session_returns_to_its_backend_until_that_one_is_too_busy() {
        let mut backends = vec![seen(1), seen(1), seen(1)];
        for (i, b) in backends.iter_mut().enumerate() {
            b.name_hash = hash(format!("backend {i}").as_bytes());
        }
        let key = hash(b"session-7");
        let home = pick(&backends, 1, Some(key)).unwrap();
        for random in 0..100 {
            assert_eq!(pick(&backends, random, Some(key)), Some(home));
        }
        // Other sessions land elsewhere too.
        let homes: std::collections::HashSet<_> = (0..64u64)
            .map(|k| pick(&backends, 0, Some(mix(k))).unwrap())
            .collect();
        assert_eq!(homes.len(), 3);
        // Swamped (over 1.25x the mean): the session goes to another.
        backends[home].in_flight = 20;
        let moved = pick(&backends, 1, Some(key)).unwrap();
        assert_ne!(moved, home);
        // Its backend out of service: another.
        backends[home] = Candidate {
            in_service: false,
            ..backends[home]
        };
        assert_ne!(pick(&backends, 1, Some(key)), Some(home));
    }
}
