//! Per-replica cache of group aggregates, keyed by group, with the revision each was read or written at.
//!
//! Steady heartbeats decide on the cached aggregate and let Redis confirm the revision in the same round trip
//! that renews the lease; only when the revision moved does the replica reload. The cache also remembers the
//! highest revision seen per group lifecycle, so that a revision going backwards (Redis restored from an
//! older backup, a failover that lost writes) is detected instead of silently accepted (invariant 6).
//! Transitions of one group are serialised within a replica by a per-group async lock; nothing spans groups.

use crate::runtime::kept_facts::KeptFacts;
use rsc_group::model::Group;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// Identifies a group: `(streamPrefix, consumerGroup)`: the ids the store names its keys by.
pub use rsc_store::GroupName;

/// An aggregate and the store revision it was read or written at.
#[derive(Debug, Clone)]
pub struct Cached {
    pub group: Arc<Group>,
    pub revision: u64,
    /// Redis holds this revision in the split layout ("4"), entry by entry as `group` has them: the next write
    /// may send only what changed (`Coordinator::commit`).
    pub split: bool,
    /// What the invariant check depends on, counted over `group` (`rsc_group::invariants::Facts`), when a
    /// write of this replica produced it: the write that replaces this revision takes them and updates them in
    /// place from the members it changed instead of walking the group (`kept_facts.rs`). None after a load
    /// (the next write counts them).
    pub facts: Option<Arc<KeptFacts>>,
}

impl rsc_group::replica::Snapshot for Cached {
    fn group(&self) -> &Group {
        &self.group
    }

    fn revision(&self) -> u64 {
        self.revision
    }
}

#[derive(Debug, Default)]
pub struct GroupCache {
    entries: RwLock<HashMap<GroupName, Cached>>,
    highest: Mutex<HashMap<GroupName, (String, u64)>>,
    locks: Mutex<HashMap<GroupName, Arc<tokio::sync::Mutex<()>>>>,
    load_gates: Mutex<HashMap<GroupName, Arc<tokio::sync::Mutex<()>>>>,
    /// Whether each group was suspected of a metadata rollback when last cached.
    suspected: Mutex<HashMap<GroupName, bool>>,
    /// Moves whenever a group cached here turns suspected or stops being suspected, so health knows at once
    /// that a durability answer computed before (the metrics snapshot's) is out of date.
    durability_generation: AtomicU64,
}

/// The highest revision seen of a group lifecycle ([`GroupCache::seen`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenRevision {
    pub lifecycle: String,
    pub revision: u64,
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

    /// Stores an aggregate this replica wrote (or created); reports a regression if its revision is below the
    /// highest seen for its lifecycle.
    pub fn put(&self, name: &GroupName, cached: Cached) -> Result<(), RevisionRegression> {
        let regression = self.observe_revision(name, &cached.group.lifecycle_id, cached.revision);
        self.insert(name, cached, regression.is_err());
        regression
    }

    /// The highest revision seen of a group, with its lifecycle: taken before a read is sent, and handed to
    /// [`GroupCache::put_read`] with what the read found.
    pub fn seen(&self, name: &GroupName) -> Option<SeenRevision> {
        let highest = self.highest.lock().ok()?;
        let (lifecycle, revision) = highest.get(name)?;
        Some(SeenRevision {
            lifecycle: lifecycle.clone(),
            revision: *revision,
        })
    }

    /// Stores an aggregate read from Redis. `seen_before`: [`GroupCache::seen`] taken before the read was
    /// sent. Only a revision below that is a regression: Redis had acknowledged it before it answered the
    /// read. A revision below only what was seen since is a read that this replica's own writes overtook while
    /// it was under way (a large group under a stream of joins writes faster than it loads): not a regression,
    /// and the newer aggregate stays cached.
    pub fn put_read(
        &self,
        name: &GroupName,
        cached: Cached,
        seen_before: Option<&SeenRevision>,
    ) -> Result<(), RevisionRegression> {
        let below_what_was_acknowledged = seen_before.is_some_and(|seen| {
            seen.lifecycle == cached.group.lifecycle_id && cached.revision < seen.revision
        });
        if below_what_was_acknowledged {
            return self.put(name, cached);
        }
        // Overtaken or not, the highest seen moves only up; an error here is the overtaking, not a regression.
        let _ = self.observe_revision(name, &cached.group.lifecycle_id, cached.revision);
        self.insert(name, cached, false);
        Ok(())
    }

    /// Caches `cached` unless a newer revision of the same lifecycle is cached (`replace`: in any case).
    fn insert(&self, name: &GroupName, cached: Cached, replace: bool) {
        if let Ok(mut entries) = self.entries.write() {
            let newer = entries.get(name).is_none_or(|old| {
                old.group.lifecycle_id != cached.group.lifecycle_id
                    || old.revision <= cached.revision
            });
            if newer || replace {
                self.note_suspicion(name, cached.group.rollback_suspicion.is_some());
                entries.insert(name.clone(), cached);
            }
        }
    }

    fn note_suspicion(&self, name: &GroupName, suspected: bool) {
        let Ok(mut known) = self.suspected.lock() else {
            return;
        };
        let before = if suspected {
            known.insert(name.clone(), true)
        } else {
            known.remove(name)
        };
        if before.unwrap_or(false) != suspected {
            self.durability_generation.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Changes whenever a group this replica caches becomes suspected of a metadata rollback or is repaired.
    pub fn durability_generation(&self) -> u64 {
        self.durability_generation.load(Ordering::SeqCst)
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
        self.note_suspicion(name, false);
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

#[cfg(test)]
mod tests {
    use super::{Cached, GroupCache, GroupName, RevisionRegression, SeenRevision};
    use rsc_group::durability::Signal;
    use rsc_group::model::Group;
    use rsc_group::model::SignalKind;
    use std::sync::Arc;

    #[test]
    fn the_durability_generation_moves_only_when_a_suspicion_appears_or_goes() {
        let cache = GroupCache::default();
        let name = GroupName::new("p", "g");
        let healthy = Group::new("p", "g", 4, 1_000, "life");
        let put = |g: &Group, revision: u64| {
            let _ = cache.put(
                &name,
                Cached {
                    group: Arc::new(g.clone()),
                    revision,
                    split: false,
                    facts: None,
                },
            );
        };
        put(&healthy, 1);
        assert_eq!(cache.durability_generation(), 0);
        let signal = Signal {
            kind: SignalKind::ProducerMetadataVersion,
            observed: 99,
            stored: 1,
            source: "producer".into(),
            principal: Some("app".into()),
        };
        let suspected = rsc_group::durability::record(&healthy, &signal, 2_000).unwrap();
        put(&suspected, 2);
        assert_eq!(cache.durability_generation(), 1);
        // Reloading the same suspected state (say after an invalidation) is no change.
        cache.invalidate(&name);
        put(&suspected, 2);
        assert_eq!(cache.durability_generation(), 1);
        put(&healthy, 3);
        assert_eq!(cache.durability_generation(), 2);
    }

    fn at(g: &Group, revision: u64) -> Cached {
        Cached {
            group: Arc::new(g.clone()),
            revision,
            split: false,
            facts: None,
        }
    }

    #[test]
    fn a_read_that_this_replicas_own_writes_overtook_is_no_regression_and_the_newer_aggregate_stays()
     {
        let cache = GroupCache::default();
        let name = GroupName::new("p", "g");
        let g = Group::new("p", "g", 4, 1_000, "life");
        cache.put(&name, at(&g, 5)).unwrap();
        let before_the_read = cache.seen(&name);
        // The read is under way; two writes of this replica land and are cached.
        cache.put(&name, at(&g, 6)).unwrap();
        cache.put(&name, at(&g, 7)).unwrap();
        // The read finds revision 6: Redis answered it between the two writes.
        assert_eq!(
            cache.put_read(&name, at(&g, 6), before_the_read.as_ref()),
            Ok(())
        );
        assert_eq!(
            cache.get(&name).map(|c| c.revision),
            Some(7),
            "the newer stays"
        );
        assert_eq!(cache.seen(&name).map(|s| s.revision), Some(7));
        // The same read taken after revision 7 was acknowledged: a regression, and Redis's state is cached.
        let after_seven = cache.seen(&name);
        assert_eq!(
            cache.put_read(&name, at(&g, 6), after_seven.as_ref()),
            Err(RevisionRegression { seen: 7, found: 6 })
        );
        assert_eq!(cache.get(&name).map(|c| c.revision), Some(6));
    }

    #[test]
    fn a_read_of_another_lifecycle_is_no_regression() {
        let cache = GroupCache::default();
        let name = GroupName::new("p", "g");
        cache
            .put(&name, at(&Group::new("p", "g", 4, 1_000, "old"), 9))
            .unwrap();
        let before = cache.seen(&name);
        let recreated = Group::new("p", "g", 4, 2_000, "new");
        assert_eq!(
            cache.put_read(&name, at(&recreated, 1), before.as_ref()),
            Ok(())
        );
        assert_eq!(
            cache.seen(&name),
            Some(SeenRevision {
                lifecycle: "new".into(),
                revision: 1
            })
        );
    }

    #[test]
    fn a_group_name_displays_as_prefix_slash_group() {
        assert_eq!(
            GroupName::new("orders", "orders-consumer").to_string(),
            "orders/orders-consumer"
        );
    }
}
