//! Per-replica cache of group aggregates, keyed by group, with the revision each was read or written at.
//!
//! Steady heartbeats decide on the cached aggregate and let Redis confirm the revision in the same round trip
//! that renews the lease; only when the revision moved does the replica reload. The cache also remembers the
//! highest revision seen per group lifecycle, so that a revision going backwards (Redis restored from an
//! older backup, a failover that lost writes) is detected instead of silently accepted (invariant 6).
//! Transitions of one group are serialised within a replica by a per-group async lock; nothing spans groups.

use rsc_group::model::Group;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

/// Identifies a group: `(streamPrefix, consumerGroup)`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupName {
    pub stream_prefix: String,
    pub consumer_group: String,
}

impl GroupName {
    pub fn new(p: &str, g: &str) -> Self {
        GroupName {
            stream_prefix: p.to_owned(),
            consumer_group: g.to_owned(),
        }
    }
}

/// An aggregate and the store revision it was read or written at.
#[derive(Debug, Clone)]
pub struct Cached {
    pub group: Arc<Group>,
    pub revision: u64,
}

#[derive(Debug, Default)]
pub struct GroupCache {
    entries: RwLock<HashMap<GroupName, Cached>>,
    highest: Mutex<HashMap<GroupName, (String, u64)>>,
    locks: Mutex<HashMap<GroupName, Arc<tokio::sync::Mutex<()>>>>,
    load_gates: Mutex<HashMap<GroupName, Arc<tokio::sync::Mutex<()>>>>,
}

/// A revision lower than one already seen for the same group lifecycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevisionRegression {
    pub seen: u64,
    pub found: u64,
}

impl GroupCache {
    pub fn get(&self, name: &GroupName) -> Option<Cached> {
        self.entries.read().ok()?.get(name).cloned()
    }

    /// Stores an aggregate; reports a regression if its revision is below the highest seen for its lifecycle.
    pub fn put(&self, name: &GroupName, cached: Cached) -> Result<(), RevisionRegression> {
        let regression = self.observe_revision(name, &cached.group.lifecycle_id, cached.revision);
        if let Ok(mut entries) = self.entries.write() {
            let newer = entries.get(name).is_none_or(|old| {
                old.group.lifecycle_id != cached.group.lifecycle_id
                    || old.revision <= cached.revision
            });
            if newer || regression.is_err() {
                entries.insert(name.clone(), cached);
            }
        }
        regression
    }

    fn observe_revision(
        &self,
        name: &GroupName,
        lifecycle: &str,
        revision: u64,
    ) -> Result<(), RevisionRegression> {
        let Ok(mut highest) = self.highest.lock() else {
            return Ok(());
        };
        match highest.get_mut(name) {
            Some((l, seen)) if l == lifecycle => {
                if revision < *seen {
                    return Err(RevisionRegression {
                        seen: *seen,
                        found: revision,
                    });
                }
                *seen = revision;
            }
            _ => {
                highest.insert(name.clone(), (lifecycle.to_owned(), revision));
            }
        }
        Ok(())
    }

    /// Takes `revision` as the highest seen for the group's lifecycle (an operator dismissed the regression).
    pub fn accept_revision(&self, name: &GroupName, lifecycle: &str, revision: u64) {
        if let Ok(mut highest) = self.highest.lock() {
            highest.insert(name.clone(), (lifecycle.to_owned(), revision));
        }
    }

    pub fn invalidate(&self, name: &GroupName) {
        if let Ok(mut entries) = self.entries.write() {
            entries.remove(name);
        }
    }

    /// Forgets a deleted group entirely (its next lifecycle starts afresh).
    pub fn forget(&self, name: &GroupName) {
        self.invalidate(name);
        if let Ok(mut highest) = self.highest.lock() {
            highest.remove(name);
        }
    }

    /// The lock that serialises this replica's transitions of one group.
    pub fn lock_for(&self, name: &GroupName) -> Arc<tokio::sync::Mutex<()>> {
        per_group(&self.locks, name)
    }

    /// The gate that lets one request at a time reload a group missing from the cache, so that many
    /// heartbeats finding it missing at once cause one load, not one each.
    pub fn load_gate(&self, name: &GroupName) -> Arc<tokio::sync::Mutex<()>> {
        per_group(&self.load_gates, name)
    }
}

fn per_group(
    map: &Mutex<HashMap<GroupName, Arc<tokio::sync::Mutex<()>>>>,
    name: &GroupName,
) -> Arc<tokio::sync::Mutex<()>> {
    match map.lock() {
        Ok(mut m) => m.entry(name.clone()).or_default().clone(),
        Err(_) => Arc::default(),
    }
}
