//! Counters held in the process: the store of one replica, and each replica's own share while
//! the shared store is away. Lost at a restart (docs/limits.md says so).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::count::{Check, State};
use super::{Ask, Charge};

/// Every client's counters, by client name and limit id.
#[derive(Debug, Default)]
pub struct Local {
    clients: Mutex<HashMap<Arc<str>, Counters>>,
}

/// One client's counters, by limit id.
type Counters = HashMap<Arc<str>, State>;

// === impl Local ===

impl Local {
    /// Asks each counter of `client` for its cost, all or nothing: when one enforced ask does
    /// not fit, none is charged.
    pub fn admit(&self, client: &str, asks: &[Ask], now_ms: u64) -> Vec<Check> {
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        let counters = match clients.get_mut(client) {
            Some(counters) => counters,
            None => clients.entry(Arc::from(client)).or_default(),
        };
        let state = |id: &str| counters.get(id).copied().unwrap_or_default();
        let tried: Vec<(State, Check)> = (asks.iter())
            .map(|ask| {
                ask.shape
                    .admit(state(&ask.id), ask.cost, now_ms, !ask.shadow)
            })
            .collect();
        let refused = (asks.iter().zip(&tried)).any(|(ask, (_, check))| check.over && !ask.shadow);
        if !refused {
            for (ask, (after, _)) in asks.iter().zip(&tried) {
                match counters.get_mut(&*ask.id) {
                    Some(state) => *state = *after,
                    None => {
                        counters.insert(Arc::clone(&ask.id), *after);
                    }
                }
            }
        }
        tried.into_iter().map(|(_, check)| check).collect()
    }

    /// Adds each charge's difference to its counter.
    pub fn settle(&self, client: &str, charges: &[Charge], now_ms: u64) {
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        let Some(counters) = clients.get_mut(client) else {
            return;
        };
        for charge in charges {
            if let Some(state) = counters.get_mut(&*charge.id) {
                *state =
                    charge
                        .shape
                        .settle(*state, (charge.mark, charge.cost), charge.delta, now_ms);
            }
        }
    }
}
