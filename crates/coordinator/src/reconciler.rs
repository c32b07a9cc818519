//! The reconciler: a background loop that advances time-driven transitions (lease expiry, rebalance-timeout
//! fencing, holds running out, pruning) without waiting for a heartbeat.
//!
//! Every replica runs it. Safety does not depend on there being one: each pass works on the group as Redis
//! holds it (the cached aggregate once one HGET shows its revision is still current, else a fresh load), takes
//! the time from Redis, and commits by compare-and-set with its time and lease conditions checked by Redis in
//! the same script, so concurrent passes at worst lose a race and try again next tick.

use crate::cache::GroupName;
use crate::coordinator::Reconciler;
use crate::coordinator::{Coordinator, commit_result};
use crate::stats::Stats;
use rsc_group::replica::reconcile::{ReconcileFlow, ReconcileStep};
use rsc_store::IndexState;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

impl Reconciler<'_> {
    /// One reconciliation of one group, driving the replica core's pass (`rsc_group::replica::reconcile`).
    /// Errors are logged and retried on the next tick.
    pub async fn reconcile_group(&self, name: &GroupName) {
        let lock = self.cache().lock_for(name);
        let _guard = lock.lock().await;
        let (mut flow, mut step) = ReconcileFlow::start(self.timing());
        loop {
            step = match step {
                ReconcileStep::Read => {
                    flow.on_read(self.current_or_load(name).await.ok().flatten())
                }
                ReconcileStep::Observe(base) => {
                    let now = match self.store().server_time_ms().await {
                        Ok(now) => now,
                        Err(e) => return self.note_store_error(&e),
                    };
                    self.clock().observe(now);
                    let keys = self.keys(name);
                    let mut lapsed: BTreeSet<String> =
                        match self.store().lapsed_members(&keys, now).await {
                            Ok(l) => l.into_iter().collect(),
                            Err(e) => return self.note_store_error(&e),
                        };
                    // A live member whose lease entry is gone (a lost or evicted lease set) can never be
                    // renewed: it is lapsed too, or it would hold its shards forever. One ZCARD tells whether
                    // any is missing; only then are the live members looked up.
                    let live = base.group.members.values().filter(|m| m.state.is_live());
                    let live_count = live.clone().count();
                    let entries = match self.store().lease_count(&keys).await {
                        Ok(n) => n,
                        Err(e) => return self.note_store_error(&e),
                    };
                    if entries < live_count {
                        let ids: Vec<&str> = live.map(|m| m.member_id.as_str()).collect();
                        match self.store().members_without_lease(&keys, &ids).await {
                            Ok(missing) => {
                                for m in &missing {
                                    tracing::warn!(group = %name, member = %m,
                                        "member has no lease entry in Redis (lease set lost?): treated as lapsed");
                                }
                                lapsed.extend(missing);
                            }
                            Err(e) => return self.note_store_error(&e),
                        }
                    }
                    flow.on_observed(base, now, &lapsed)
                }
                ReconcileStep::Commit {
                    base,
                    transition,
                    report,
                } => {
                    let result = commit_result(self.commit(name, &base, *transition).await);
                    flow.on_committed(result, report)
                }
                ReconcileStep::Done(Some(report)) => {
                    for m in &report.expired {
                        Stats::bump(&self.stats().member_expired);
                        self.metrics()
                            .count_expired(&name.stream_prefix, &name.consumer_group);
                        tracing::info!(group = %name, member = %m, "member lease expired");
                    }
                    for m in &report.fenced {
                        Stats::bump(&self.stats().members_fenced);
                        tracing::warn!(group = %name, member = %m, "member fenced at rebalance timeout");
                    }
                    for i in &report.reserved {
                        tracing::info!(group = %name, group_instance_id = %i, "static member's shards reserved for its instance");
                    }
                    for i in &report.reservations_lapsed {
                        tracing::info!(group = %name, group_instance_id = %i, "static member's reservation lapsed; its shards are rebalanced");
                    }
                    if report.correction_closed {
                        tracing::info!(group = %name, "metadata-correction round closed: no live member was left to synchronise");
                    }
                    return;
                }
                ReconcileStep::Done(None) => return,
                ReconcileStep::Exhausted(e) => {
                    return tracing::error!(group = ?name, error = %e, "group not reconciled");
                }
            };
        }
    }

    /// Asks the reconciler to visit `name` now (a heartbeat saw another member's lease lapsed).
    pub fn reconcile_soon(&self, name: &GroupName) {
        self.state().mark_urgent(name);
    }

    /// Reconciles every group asked for by [`Reconciler::reconcile_soon`] since the last time.
    async fn reconcile_urgent(&self) {
        for name in &self.state().take_urgent() {
            self.reconcile_group(name).await;
        }
    }

    /// One pass over every group in the index.
    pub async fn reconcile_all(&self) {
        let Ok(entries) = self.index_entries().await else {
            return;
        };
        let mut prefixes = std::collections::BTreeSet::new();
        for e in entries.iter().filter(|e| e.state == IndexState::Live) {
            self.reconcile_group(&GroupName::new(&e.stream_prefix, &e.consumer_group))
                .await;
            prefixes.insert(e.stream_prefix.clone());
        }
        for prefix in prefixes {
            self.resharding().reconcile_stream(&prefix).await;
        }
        self.state().note_pass(self.clock().now_ms());
    }

    /// Redis time of the last completed pass over every group (0 = never).
    pub fn last_pass_ms(&self) -> i64 {
        self.state().last_pass_ms()
    }
}

/// Early visits happen at most this often, so a lease entry the tick cannot act on (one whose expiry is
/// already recorded but not yet cleaned up) cannot turn every heartbeat into a reconciliation.
const URGENT_MIN_GAP: Duration = Duration::from_millis(100);

/// Runs the reconciler every `tick_interval`, and early for groups a heartbeat found with a lapsed lease,
/// until `stop` turns true.
pub async fn run(coordinator: Arc<Coordinator>, mut stop: watch::Receiver<bool>) {
    let interval = coordinator
        .config()
        .reconciler
        .tick_interval
        .0
        .max(Duration::from_millis(10));
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => coordinator.reconciler().reconcile_all().await,
            _ = coordinator.reconciler().state().woken() => {
                coordinator.reconciler().reconcile_urgent().await;
                tokio::time::sleep(URGENT_MIN_GAP).await;
            }
            _ = stop.changed() => return,
        }
        if *stop.borrow() {
            return;
        }
    }
}
