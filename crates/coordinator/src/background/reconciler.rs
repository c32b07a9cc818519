//! The reconciler: a background loop that advances time-driven transitions (lease expiry, rebalance-timeout
//! fencing, holds running out, pruning) and resharding passes without waiting for a heartbeat.
//!
//! Every replica runs it, each for the groups and streams it owns (`coordinator/cluster_view.rs`: rendezvous
//! hashing over the live replicas). It visits an owned group only when something is due: its next deadline
//! (`rsc_group::deadline`, kept in `reconciler/schedule.rs`) came, or it was written — on any replica, which
//! says so on the change feed — or ownership moved to this replica; a sweep every
//! `coordinator.cluster.sweep-interval` catches a write whose notice was lost. A heartbeat that finds another
//! member's lease lapsed has its group visited at once on its own replica, owned or not.
//!
//! Safety does not depend on ownership or on deadlines: each visit works on the group as Redis holds it (the
//! cached aggregate once one HGET shows its revision is still current, else a fresh load), takes the time from
//! Redis, and commits by compare-and-set with its time and lease conditions checked by Redis in the same
//! script, so replicas that both visit a group at worst lose a race and try again.

use crate::observability::stats::Stats;
use crate::runtime::cache::GroupName;
use crate::runtime::coordinator::Reconciler;
use crate::runtime::coordinator::{Coordinator, commit_result};
use rsc_group::deadline::{LeaseView, NextVisit, next_visit};
use rsc_group::replica::reconcile::{ReconcileFlow, ReconcileStep};
use rsc_store::IndexState;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

mod schedule;
use schedule::Schedule;

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
                    let mut lapsed: BTreeSet<String> =
                        match self.store().lapsed_members(name, now).await {
                            Ok(l) => l.into_iter().collect(),
                            Err(e) => return self.note_store_error(&e),
                        };
                    // A live member whose lease entry is gone (a lost or evicted lease set) can never be
                    // renewed: it is lapsed too, or it would hold its shards forever. One ZCARD tells whether
                    // any is missing; only then are the live members looked up.
                    let live = base.group.members.values().filter(|m| m.state.is_live());
                    let live_count = live.clone().count();
                    let entries = match self.store().lease_count(name).await {
                        Ok(n) => n,
                        Err(e) => return self.note_store_error(&e),
                    };
                    if entries < live_count {
                        let ids: Vec<&str> = live.map(|m| m.member_id.as_str()).collect();
                        match self.store().members_without_lease(name, &ids).await {
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

    /// Reconciles every group asked for by [`Reconciler::reconcile_soon`] since the last time (owned or not:
    /// the heartbeat that asked is on this replica).
    async fn reconcile_urgent(&self) {
        for name in &self.state().take_urgent() {
            self.reconcile_group(name).await;
        }
    }

    /// One tick of the owner's work: learn what changed (ownership, the change feed, the sweep), visit the
    /// groups that are due and run the passes of the streams that are.
    pub(crate) async fn tick(&self, pass: &mut Pass) {
        let cluster = self.cluster();
        if pass.feed_cursor.is_none() {
            // Read on from the feed's current end; everything before it is covered by the first full look.
            match self.store().change_latest_id().await {
                Ok(id) => pass.feed_cursor = Some(id),
                Err(e) => return self.note_store_error(&e),
            }
        }
        let generation = cluster.generation();
        let now = tokio::time::Instant::now();
        let sweep = now >= pass.next_sweep;
        if pass.generation != Some(generation) || sweep {
            if self.take_ownership(pass, sweep).await.is_err() {
                return;
            }
            pass.generation = Some(generation);
            if sweep {
                pass.next_sweep = now + self.config().cluster.sweep_interval.0;
            }
        }
        self.read_changes(pass).await;
        let now_ms = self.clock().now_ms();
        for name in pass.schedule.take_due(now_ms) {
            self.visit(&mut pass.schedule, &name).await;
        }
        let mut listed = std::mem::take(&mut pass.listed);
        let due_streams = pass.schedule.take_due_streams();
        self.list_groups_of(&due_streams, &mut listed).await;
        for prefix in due_streams {
            self.resharding()
                .reconcile_stream(&prefix, listed.remove(&prefix))
                .await;
            let stream = self.resharding().load_stream(&prefix).await;
            let migrating = match &stream {
                Ok(Some(s)) => s.record.active_migration.is_some(),
                Ok(None) => false,
                // Unreadable now: look again next tick.
                Err(_) => true,
            };
            if let Ok(Some(s)) = &stream {
                self.ensure_routing_ceilings(&prefix, &s.record).await;
            }
            pass.schedule.stream_every_tick(&prefix, migrating);
        }
        self.state().note_pass(self.clock().now_ms());
    }

    /// Gives every stream of `due` that `listed` has no group list for its live groups, from one read of the
    /// group index for all of them: a stream's pass lists its groups, and reading the whole index once per
    /// due stream made a tick after many writes (thousands of groups created, each making its stream due)
    /// cost O(streams × groups). Read just after the change feed, the listing is as fresh as the notices
    /// that made the streams due; a group written after it is noticed on the feed and lists again at the
    /// next tick. When the index cannot be read, the passes read it themselves.
    async fn list_groups_of(
        &self,
        due: &[String],
        listed: &mut std::collections::HashMap<String, Vec<String>>,
    ) {
        let unlisted: BTreeSet<&String> = due.iter().filter(|p| !listed.contains_key(*p)).collect();
        if unlisted.is_empty() {
            return;
        }
        let Ok(entries) = self.index_entries().await else {
            return;
        };
        for prefix in &unlisted {
            listed.insert((*prefix).clone(), Vec::new());
        }
        for e in entries.iter().filter(|e| e.state == IndexState::Live) {
            if unlisted.contains(&e.stream_prefix)
                && let Some(groups) = listed.get_mut(&e.stream_prefix)
            {
                groups.push(e.consumer_group.clone());
            }
        }
    }

    /// Makes sure every shard of the stream has its routing ceiling at the stream's routing version, once per
    /// version and replica: streams created before ceilings existed get theirs here (finding 11 of issue #32);
    /// the others had them written before their version was published.
    async fn ensure_routing_ceilings(
        &self,
        prefix: &str,
        record: &rsc_group::stream::StreamRecord,
    ) {
        let version = record.routing_version;
        if self.state().ceiling_ensured(prefix) == Some(version) {
            return;
        }
        if self
            .resharding()
            .publish_routing_ceilings(prefix, record)
            .await
            .is_ok()
        {
            self.state().note_ceiling(prefix, version);
        }
    }

    /// Brings the schedule in line with the groups this replica owns (after the live replicas changed, at
    /// start-up, and at each sweep): groups new to it are due now, groups gone or owned elsewhere are
    /// dropped; at a sweep, a quiet group whose revision moved without the feed saying so is due now.
    async fn take_ownership(&self, pass: &mut Pass, sweep: bool) -> Result<(), ()> {
        let entries = self.index_entries().await.map_err(drop)?;
        let cluster = self.cluster();
        let mut owned = std::collections::HashSet::new();
        let mut streams = BTreeSet::new();
        pass.listed.clear();
        for e in entries.iter().filter(|e| e.state == IndexState::Live) {
            let name = GroupName::new(&e.stream_prefix, &e.consumer_group);
            // A stream's pass reads every group of the stream: run it once for a stream newly owned, not at
            // every sweep (the change feed and the every-tick rule of a migration cover the rest). Its groups
            // are those listed here (the entries are sorted by stream, then group): the pass need not read
            // the whole index again, once per stream — at a takeover or start-up, once per owned stream.
            if cluster.owns_stream(&e.stream_prefix)
                && streams.insert(e.stream_prefix.clone())
                && !pass.owned_streams.contains(&e.stream_prefix)
            {
                pass.schedule.stream_touched(&e.stream_prefix);
                pass.listed.insert(e.stream_prefix.clone(), Vec::new());
            }
            if let Some(groups) = pass.listed.get_mut(&e.stream_prefix) {
                groups.push(e.consumer_group.clone());
            }
            if cluster.owns_group(&name) {
                if !pass.schedule.contains(&name) {
                    pass.schedule.due_now(&name);
                }
                owned.insert(name);
            }
        }
        pass.schedule.retain(|n| owned.contains(n));
        pass.schedule.retain_streams(|p| streams.contains(p));
        pass.owned_streams = streams;
        if sweep {
            // Pipelined: one round trip per page of groups, not one per group.
            let quiet = pass.schedule.quiet();
            for page in quiet.chunks(rsc_store::REVISIONS_PAGE) {
                let refs: Vec<_> = page.iter().map(|(name, _)| name).collect();
                match self.store().revisions(&refs).await {
                    Ok(revisions) => {
                        for ((name, seen), now) in page.iter().zip(revisions) {
                            if now != Some(*seen) {
                                pass.schedule.due_now(name);
                            }
                        }
                    }
                    Err(e) => {
                        self.note_store_error(&e);
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// Takes the change feed's new entries: an owned group written anywhere is due now, and so is the pass
    /// of an owned stream that was written or had a group written.
    async fn read_changes(&self, pass: &mut Pass) {
        let Some(cursor) = pass.feed_cursor.clone() else {
            return;
        };
        let cluster = self.cluster();
        let mut after = cursor;
        loop {
            let page = match self.store().change_read(&after, FEED_PAGE).await {
                Ok(p) => p,
                Err(e) => return self.note_store_error(&e),
            };
            for c in &page {
                if !c.consumer_group.is_empty() {
                    let name = GroupName::new(&c.stream_prefix, &c.consumer_group);
                    if cluster.owns_group(&name) {
                        pass.schedule.due_now(&name);
                    }
                }
                // A write of the stream record or of one of its groups makes the stream's pass due: a
                // group's write can be the drain or acknowledgement a migration's next step waits for. (Its
                // pass reads the index afresh: the write may be of a group the last listing did not have.)
                if cluster.owns_stream(&c.stream_prefix) {
                    pass.schedule.stream_touched(&c.stream_prefix);
                    pass.listed.remove(&c.stream_prefix);
                }
            }
            if let Some(last) = page.last() {
                after = last.id.clone();
            }
            if page.len() < FEED_PAGE {
                break;
            }
        }
        pass.feed_cursor = Some(after);
    }

    /// Reconciles one owned group and schedules its next visit from what it then is.
    async fn visit(&self, schedule: &mut Schedule, name: &GroupName) {
        self.reconcile_group(name).await;
        let retry = NextVisit::At(self.clock().now_ms() + self.tick_ms());
        let cached = match self.current_or_load(name).await {
            Ok(Some(c)) => c,
            Ok(None) => return schedule.remove(name),
            Err(_) => return schedule.set(name, retry, None),
        };
        let next = match self.store().lease_summary(name).await {
            Ok((earliest_end_ms, entries)) => next_visit(
                &cached.group,
                LeaseView {
                    earliest_end_ms,
                    entries,
                },
                self.timing(),
            ),
            Err(e) => {
                self.note_store_error(&e);
                retry
            }
        };
        // Never again within the same tick: a lease entry the tick cannot act on must not spin.
        let next = match next {
            NextVisit::At(t) => NextVisit::At(t.max(self.clock().now_ms() + 1)),
            other => other,
        };
        schedule.set(name, next, Some(cached.revision));
    }

    fn tick_ms(&self) -> i64 {
        self.config().reconciler.tick_interval.ms()
    }

    /// Redis time of the last completed pass over every group (0 = never).
    pub fn last_pass_ms(&self) -> i64 {
        self.state().last_pass_ms()
    }

    /// Resolves once a pass over every group has completed (at once if one has).
    pub async fn first_pass(&self) {
        self.state().first_pass().await
    }
}

/// The owner's state between ticks: its schedule, the live-replica generation it last took ownership at,
/// where it is in the change feed, and when it next sweeps.
#[derive(Debug)]
pub(crate) struct Pass {
    schedule: Schedule,
    /// The streams this replica owned at its last look at ownership.
    owned_streams: BTreeSet<String>,
    /// Streams newly owned at that look, with their live groups as the index listed them then: for their
    /// passes in the same tick.
    listed: std::collections::HashMap<String, Vec<String>>,
    generation: Option<u64>,
    feed_cursor: Option<String>,
    next_sweep: tokio::time::Instant,
}

impl Pass {
    fn new(sweep_interval: Duration) -> Self {
        Pass {
            schedule: Schedule::default(),
            owned_streams: BTreeSet::new(),
            listed: std::collections::HashMap::new(),
            generation: None,
            feed_cursor: None,
            next_sweep: tokio::time::Instant::now() + sweep_interval,
        }
    }
}

/// Change feed entries read per round trip.
const FEED_PAGE: usize = 1_000;

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
    let mut pass = Pass::new(coordinator.config().cluster.sweep_interval.0);
    loop {
        tokio::select! {
            _ = ticker.tick() => coordinator.reconciler().tick(&mut pass).await,
            // The live replicas changed: take up the groups that are now this replica's without waiting.
            _ = coordinator.cluster().live_set_changed() => coordinator.reconciler().tick(&mut pass).await,
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
