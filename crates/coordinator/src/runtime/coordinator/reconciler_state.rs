//! The reconciler service's own state: groups it should visit before its next tick (a steady heartbeat saw
//! another member's lease lapsed), its wake-up, when its last full pass ended, and the routing version whose
//! routing ceilings it last made sure of, per stream.

use crate::runtime::cache::GroupName;
use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

#[derive(Debug, Default)]
pub(crate) struct ReconcilerState {
    urgent: Mutex<BTreeSet<GroupName>>,
    wake: tokio::sync::Notify,
    /// Redis time of the last completed pass over every group (0 = never).
    last_pass_ms: AtomicI64,
    /// Woken when a pass completes (the metrics task waits for the first).
    passed: tokio::sync::Notify,
    /// Per stream, the routing version whose ceilings are known written on every shard.
    ceilings: Mutex<HashMap<String, i64>>,
}

impl ReconcilerState {
    /// Adds a group to visit early; wakes the reconciler when it was not already waiting to be visited.
    pub(crate) fn mark_urgent(&self, name: &GroupName) {
        let mut groups = self.urgent.lock().unwrap_or_else(|p| p.into_inner());
        if groups.insert(name.clone()) {
            self.wake.notify_one();
        }
    }

    /// The groups marked since the last call.
    pub(crate) fn take_urgent(&self) -> BTreeSet<GroupName> {
        std::mem::take(&mut *self.urgent.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Resolves when a group was marked urgent.
    pub(crate) async fn woken(&self) {
        self.wake.notified().await
    }

    pub(crate) fn note_pass(&self, now_ms: i64) {
        self.last_pass_ms.store(now_ms, Ordering::Relaxed);
        self.passed.notify_waiters();
    }

    /// Resolves once a pass has completed (at once if one has).
    pub(crate) async fn first_pass(&self) {
        let passed = self.passed.notified();
        tokio::pin!(passed);
        // Registered before the check, so a pass completing in between still wakes it.
        passed.as_mut().enable();
        if self.last_pass_ms() > 0 {
            return;
        }
        passed.await;
    }

    pub(crate) fn last_pass_ms(&self) -> i64 {
        self.last_pass_ms.load(Ordering::Relaxed)
    }

    /// The routing version whose ceilings were made sure of for `prefix` (None: not yet, by this replica).
    pub(crate) fn ceiling_ensured(&self, prefix: &str) -> Option<i64> {
        let map = self.ceilings.lock().unwrap_or_else(|p| p.into_inner());
        map.get(prefix).copied()
    }

    pub(crate) fn note_ceiling(&self, prefix: &str, version: i64) {
        let mut map = self.ceilings.lock().unwrap_or_else(|p| p.into_inner());
        map.insert(prefix.to_owned(), version);
    }
}
