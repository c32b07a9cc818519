//! The replicas as this one sees them — the live set last read from the registry (`crate::runtime::cluster` keeps it
//! current) — and so which groups' and streams' background work is this replica's (rendezvous hashing,
//! `rsc_group::ownership`). Also the change feed's hint sent after each write, so the owner hears of it.
//!
//! Nothing here is a safety condition: a wrong view costs duplicate or late background work, never a wrong
//! write (every write is a compare-and-set checked by Redis).

use crate::runtime::cache::GroupName;
use rsc_group::ownership::{ReplicaSet, group_work, stream_work};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

#[derive(Debug)]
pub struct ClusterView {
    me: String,
    replicas: RwLock<Arc<ReplicaSet>>,
    /// Bumped whenever the live set changes, so the reconciler knows to look at ownership again.
    generation: AtomicU64,
    /// Wakes the reconciler when the live set changes, so a dead replica's groups are taken up at once rather
    /// than at the next tick.
    changed: tokio::sync::Notify,
}

impl ClusterView {
    /// Before the registry was read, a replica counts only itself: it owns everything.
    pub(crate) fn new(me: &str) -> Self {
        ClusterView {
            me: me.to_owned(),
            replicas: RwLock::new(Arc::new(ReplicaSet::default().with(me))),
            generation: AtomicU64::new(0),
            changed: tokio::sync::Notify::new(),
        }
    }

    /// This replica's id (`coordinator.id`).
    pub fn me(&self) -> &str {
        &self.me
    }

    /// The live replicas in this view (this one always included).
    pub fn replicas(&self) -> Arc<ReplicaSet> {
        self.replicas
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Changes with every change of the live set.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Takes the live set read from the registry; true when it differs from the last one.
    pub fn set_live(&self, ids: Vec<String>) -> bool {
        let next = ReplicaSet::new(ids).with(&self.me);
        let mut current = self.replicas.write().unwrap_or_else(|p| p.into_inner());
        if **current == next {
            return false;
        }
        *current = Arc::new(next);
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.changed.notify_one();
        true
    }

    /// Returns once the live set changed (at once if it changed since the last call returned).
    pub async fn live_set_changed(&self) {
        self.changed.notified().await
    }

    /// The replica that owns `name`'s background work in this view.
    pub fn group_owner(&self, name: &GroupName) -> String {
        self.replicas()
            .owner(&group_work(&name.stream_prefix, &name.consumer_group))
            .unwrap_or(&self.me)
            .to_owned()
    }

    pub fn owns_group(&self, name: &GroupName) -> bool {
        self.replicas().owns(
            &self.me,
            &group_work(&name.stream_prefix, &name.consumer_group),
        )
    }

    pub fn owns_stream(&self, stream_prefix: &str) -> bool {
        self.replicas().owns(&self.me, &stream_work(stream_prefix))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replica_alone_owns_everything_and_shares_once_it_sees_others() {
        let v = ClusterView::new("a");
        let g = GroupName::new("p", "g");
        assert!(v.owns_group(&g) && v.owns_stream("p"));
        assert!(v.set_live(vec!["b".into(), "c".into()]));
        assert_eq!(v.replicas().len(), 3, "itself included");
        assert!(!v.set_live(vec!["c".into(), "a".into(), "b".into()]));
        let owned = (0..300)
            .filter(|i| v.owns_group(&GroupName::new("p", &format!("g{i}"))))
            .count();
        assert!((50..150).contains(&owned), "{owned} of 300");
        assert_eq!(v.generation(), 1);
    }
}
