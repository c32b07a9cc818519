//! `Coordinator`: the runtime around the pure group state machine — configuration, the store, the Redis
//! clock, the aggregate cache — and the two ways state is read and written:
//! `load` (fail closed on anything unreadable) and `commit` (compare-and-set a decided transition).
//!
//! Requests flow one way: route → validate → load group (cache or store) → pure transition → CAS write →
//! response derived from what was written. The operations themselves live in services
//! (`services`), borrowed from the runtime: `heartbeats()`, `admin()`, `reconciler()`, `resharding()`,
//! `monitoring()` and `durability()`.

pub(crate) mod batch_copies;
pub mod cluster_view;
pub(crate) mod heartbeat_state;
pub(crate) mod lapse_forecasts;
pub(crate) mod queues;
pub(crate) mod reconciler_state;
pub(crate) mod release_forecasts;
mod services;

pub use cluster_view::ClusterView;
pub use services::{Admin, Durability, Heartbeats, Monitoring, Reconciler, Resharding};

use crate::config::CoordinatorConfig;
use crate::domain_error::{CoordError, Corrupt};
use crate::observability::stats::Stats;
use crate::runtime::cache::{Cached, GroupCache, GroupName};
use crate::runtime::clock::{RedisClock, iso_ms};
use crate::runtime::kept_facts::KeptFacts;
use heartbeat_state::HeartbeatState;
use reconciler_state::ReconcilerState;
use rsc_group::heartbeat::Transition;
use rsc_group::model::{AggregateError, Group, WriteForm};
use rsc_group::replica::CommitResult;
use rsc_group::timing::Timing;
use rsc_store::{CasOutcome, CasWrite, Store, StoreError};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// How many times a transition is re-decided after losing a compare-and-set before giving up (the replica
/// core's bound, used by the admin operations' own retry loops too).
pub use rsc_group::replica::MAX_CAS_ATTEMPTS;

/// The shared runtime every service works through. Its fields are private: services reach them through
/// the read accessors below, and each service's own state (the heartbeat queues, the reconciler's wake-up)
/// is reachable only through that service (`services`).
pub struct Coordinator {
    config: CoordinatorConfig,
    timing: Timing,
    store: Store,
    clock: RedisClock,
    cache: GroupCache,
    stats: Stats,
    /// Samples of the streams whose groups this replica owns, for rates (`history.rs`).
    history: crate::runtime::history::History,
    /// Prometheus metrics (event metrics plus the background gauge snapshot).
    metrics: crate::observability::metrics::Metrics,
    terminating: AtomicBool,
    /// The heartbeat service's state: heartbeats waiting to write, and lapse forecasts, per group.
    heartbeat_state: HeartbeatState,
    /// The reconciler service's state: groups to visit early, its wake-up and its last pass.
    reconciler_state: ReconcilerState,
    /// The live replicas as this one sees them, hence what background work is its own.
    cluster: ClusterView,
    /// The deployment's cluster id, read from Redis once it answers (`cluster_id`).
    cluster_id: tokio::sync::OnceCell<String>,
}

/// The result of trying to commit one transition.
#[derive(Debug)]
pub enum Commit {
    Written(Cached),
    /// Someone else changed the group: decide again on fresh state.
    Conflict,
    /// A time or lease condition did not hold (a lease lapsed or was renewed meanwhile, or the coordinator's
    /// clock estimate ran ahead of Redis): reconcile the group's time-driven state, then decide again.
    /// `member`: whose lease condition failed (None: the time condition).
    ConditionFailed {
        member: Option<String>,
    },
}

impl Coordinator {
    /// The runtime over `store`, which names its keys under the configured key prefix from here on.
    pub fn new(config: CoordinatorConfig, store: Store) -> Arc<Coordinator> {
        let store = store.with_key_prefix(&config.store.key_prefix);
        let timing = Timing {
            heartbeat_interval_ms: config.heartbeat_interval.ms(),
            member_lease_ttl_ms: config.member_lease_ttl.ms(),
            rebalance_timeout_ms: config.rebalance_timeout.ms(),
            stale_member_retention_ms: config.stale_member_retention.ms(),
            hold_margin_ms: 1_000,
            static_member_grace_ms: config.static_member_grace().ms(),
        };
        Arc::new(Coordinator {
            timing,
            store,
            clock: RedisClock::new(),
            cache: GroupCache::default(),
            stats: Stats::default(),
            history: Default::default(),
            metrics: crate::observability::metrics::Metrics::new(),
            terminating: AtomicBool::new(false),
            heartbeat_state: HeartbeatState::default(),
            reconciler_state: ReconcilerState::default(),
            cluster: ClusterView::new(&config.id),
            cluster_id: tokio::sync::OnceCell::new(),
            config,
        })
    }

    /// The deployment's cluster id, shared by every replica through Redis (`Keyspace::cluster_id`); the
    /// first replica to ask stores a fresh one. None while Redis cannot be reached (asked again next time).
    pub async fn cluster_id(&self) -> Option<String> {
        let read = self.cluster_id.get_or_try_init(|| async {
            self.store
                .cluster_id(&uuid::Uuid::new_v4().to_string())
                .await
        });
        // Bounded: a public page must not wait for an unreachable Redis.
        match tokio::time::timeout(std::time::Duration::from_secs(1), read).await {
            Ok(Ok(id)) => Some(id.clone()),
            _ => None,
        }
    }

    pub fn config(&self) -> &CoordinatorConfig {
        &self.config
    }

    pub fn timing(&self) -> &Timing {
        &self.timing
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn clock(&self) -> &RedisClock {
        &self.clock
    }

    pub fn cache(&self) -> &GroupCache {
        &self.cache
    }

    /// The rate history this replica keeps (recorded by the metrics refresh).
    pub fn history(&self) -> &crate::runtime::history::History {
        &self.history
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    pub fn metrics(&self) -> &crate::observability::metrics::Metrics {
        &self.metrics
    }

    /// The live replicas as this one sees them, and what it owns.
    pub fn cluster(&self) -> &ClusterView {
        &self.cluster
    }

    /// Tells the replica that owns `name`'s background work that it was written (the change feed, see
    /// `rsc_store`'s cluster.rs); an empty consumer group names the stream record. A failure is only logged:
    /// the owner's sweep finds the change later.
    pub async fn announce_change(&self, stream_prefix: &str, consumer_group: &str) {
        let sent = self
            .metrics
            .time_store(
                "change_publish",
                self.store.change_publish(
                    self.config.cluster.change_feed_length,
                    stream_prefix,
                    consumer_group,
                ),
            )
            .await;
        if let Err(e) = sent {
            tracing::debug!(stream = stream_prefix, group = consumer_group, error = %e, "change not announced; the owner's sweep will find it");
        }
    }

    /// The hot path: heartbeats, their group commit and its queues.
    pub fn heartbeats(&self) -> Heartbeats<'_> {
        Heartbeats::new(self, &self.heartbeat_state)
    }

    /// Time-driven work: lease expiry, rebalance deadlines, drains, urgent visits.
    pub fn reconciler(&self) -> Reconciler<'_> {
        Reconciler::new(self, &self.reconciler_state)
    }

    /// Creating, reading, listing and deleting streams and groups; producer routing.
    pub fn admin(&self) -> Admin<'_> {
        Admin::new(self)
    }

    /// Online scale-out/in with drain, rollback, force-complete, ordering and producer quiesce.
    pub fn resharding(&self) -> Resharding<'_> {
        Resharding::new(self)
    }

    /// Read-only views: members, assignments, health, consumption, offsets, messages, metrics refresh.
    pub fn monitoring(&self) -> Monitoring<'_> {
        Monitoring::new(self)
    }

    /// Metadata-rollback suspicion, fail-closed mutations and the recreate repair.
    pub fn durability(&self) -> Durability<'_> {
        Durability::new(self)
    }

    /// Group `name`'s metadata key, as messages name the group's record (`shown_keys`).
    pub fn shown_group_key(&self, name: &GroupName) -> String {
        crate::runtime::shown_keys::group(&self.store, name)
    }

    /// The key of stream `prefix`'s record, as messages name it (`shown_keys`).
    pub fn shown_stream_record_key(&self, prefix: &str) -> String {
        crate::runtime::shown_keys::stream_record(&self.store, prefix)
    }

    pub fn begin_termination(&self) {
        self.terminating.store(true, Ordering::SeqCst);
    }

    pub fn is_terminating(&self) -> bool {
        self.terminating.load(Ordering::SeqCst)
    }

    /// Refuses once shutdown has begun: the one shutdown check (`api/shutdown.rs`) calls it for every route
    /// that changes state.
    pub fn ensure_running(&self) -> Result<(), CoordError> {
        if self.is_terminating() {
            return Err(CoordError::Terminating);
        }
        Ok(())
    }

    /// Reads a group from Redis (never from the cache) and refreshes the cache. Missing → None; unreadable,
    /// unknown schema or a revision that disagrees with the aggregate → MetadataCorrupt (fail closed). A
    /// revision below one this replica had seen before sending the read is a regression (recorded as a
    /// rollback suspicion); one that only this replica's own later writes overtook is answered with the newer
    /// aggregate they cached (`GroupCache::put_read`).
    pub async fn load(&self, name: &GroupName) -> Result<Option<Cached>, CoordError> {
        let seen_before = self.cache.seen(name);
        let Some(read) = self.read_group(name).await? else {
            self.cache.invalidate(name);
            return Ok(None);
        };
        if let Err(r) = self
            .cache
            .put_read(name, read.clone(), seen_before.as_ref())
        {
            // Counted once and recorded in the aggregate as a rollback suspicion (durability.rs).
            return Ok(Some(
                self.durability()
                    .on_revision_regression(name, read, &r)
                    .await,
            ));
        }
        Ok(Some(self.cache.get(name).unwrap_or(read)))
    }

    /// Reads and checks a group's metadata from Redis, without touching the cache and without `load`'s
    /// revision-regression check: for a retry inside that check's own path (`Durability::record_suspicion`
    /// deciding again after a lost compare-and-set), which must not record a regression in turn.
    pub(crate) async fn read_group(&self, name: &GroupName) -> Result<Option<Cached>, CoordError> {
        let stored = match self.metrics.time_store("load", self.store.load(name)).await {
            Ok(Some(s)) => s,
            Ok(None) => return Ok(None),
            Err(e) => {
                self.note_store_error(&e);
                return Err(e.into());
            }
        };
        let group = Group::from_json(&stored.aggregate)
            .map_err(|e| corrupt(&self.shown_group_key(name), &e))?;
        if group.store_revision != stored.revision
            || group.stream_prefix != name.stream_prefix
            || group.consumer_group != name.consumer_group
        {
            return Err(Corrupt::Inconsistent {
                key: self.shown_group_key(name),
                hash_revision: stored.revision,
                aggregate_revision: group.store_revision,
                stream: group.stream_prefix.clone(),
                group: group.consumer_group.clone(),
            }
            .into());
        }
        Ok(Some(Cached {
            group: Arc::new(group),
            revision: stored.revision,
            split: stored.layout == rsc_store::LAYOUT_SPLIT,
            facts: None,
        }))
    }

    /// The cached aggregate, or a fresh load when none is cached. The flag says whether it is fresh.
    pub async fn cached_or_load(
        &self,
        name: &GroupName,
    ) -> Result<(Option<Cached>, bool), CoordError> {
        if let Some(c) = self.cache.get(name) {
            return Ok((Some(c), false));
        }
        let gate = self.cache.load_gate(name);
        let _one_load_at_a_time = gate.lock().await;
        // Loaded by another request while this one waited at the gate: as fresh as a load of our own.
        if let Some(c) = self.cache.get(name) {
            return Ok((Some(c), true));
        }
        Ok((self.load(name).await?, true))
    }

    /// Whether Redis still holds the revision `cached` was read or written at: one HGET, where reloading a
    /// group of thousands of members reads and parses megabytes. What is decided on a current cache is as good
    /// as what is decided on a fresh load (the steady path's script makes the same check).
    pub(crate) async fn still_current(
        &self,
        name: &GroupName,
        cached: &Cached,
    ) -> Result<bool, StoreError> {
        match self
            .metrics
            .time_store("revision", self.store.revision(name))
            .await
        {
            Ok(revision) => Ok(revision == Some(cached.revision)),
            Err(e) => {
                self.note_store_error(&e);
                Err(e)
            }
        }
    }

    /// The cached aggregate if it is still current ([`Coordinator::still_current`]), else a fresh load.
    pub(crate) async fn current_or_load(
        &self,
        name: &GroupName,
    ) -> Result<Option<Cached>, CoordError> {
        if let Some(cached) = self.cache.get(name)
            && self.still_current(name, &cached).await?
        {
            return Ok(Some(cached));
        }
        self.load(name).await
    }

    /// Compare-and-sets a transition decided on `base`. The new aggregate carries `storeRevision = base + 1`.
    pub async fn commit(
        &self,
        name: &GroupName,
        base: &Cached,
        t: Transition,
    ) -> Result<Commit, CoordError> {
        self.commit_with_progress(name, base, t, Vec::new()).await
    }

    /// [`Coordinator::commit`], also storing heartbeats' progress documents (member, JSON) in the same script,
    /// as the steady path does: a heartbeat that changes the aggregate is a heartbeat too.
    pub async fn commit_with_progress(
        &self,
        name: &GroupName,
        base: &Cached,
        t: Transition,
        progress: Vec<(String, String)>,
    ) -> Result<Commit, CoordError> {
        // Taken by value: the aggregate of a big group is moved into the cache, never copied.
        let Some(mut group) = t.group else {
            return Ok(Commit::Conflict);
        };
        group.store_revision =
            base.revision
                .checked_add(1)
                .ok_or_else(|| Corrupt::RevisionExhausted {
                    stream: name.stream_prefix.clone(),
                    group: name.consumer_group.clone(),
                    revision: base.revision,
                })?;
        // A member the aggregate still lists (expired, fenced, left) loses its lease but keeps its last
        // progress, so monitoring still shows when it was last heard from; a pruned one loses both.
        let (drop_lease, remove): (Vec<String>, Vec<String>) = t
            .remove
            .into_iter()
            .partition(|m| group.members.contains_key(m));
        // The split layout carries the header and only the entries that changed since `base`, when Redis holds
        // `base` split already (else every entry, once), or the whole document while a rebalance changes most
        // of a large group (`rsc_group::model::WriteForm`: compressed, the document is far cheaper for Redis;
        // uncompressed it is not, so it is never chosen); the whole layout always carries the document. A
        // batch says which members it changed, so only their entries are compared with `base`.
        let store = &self.config.store;
        let form = if store.layout != crate::config::LAYOUT_SPLIT {
            WriteForm::Whole
        } else if store.aggregate_compression == crate::config::AggregateCompression::Lz4 {
            group.write_form(&base.group, base.split, t.changed_members.as_ref())
        } else if base.split {
            WriteForm::Split(match &t.changed_members {
                Some(among) => group.split_changes_among(&base.group, among),
                None => group.split_changes(&base.group),
            })
        } else {
            WriteForm::Split(group.split_full())
        };
        let (aggregate_json, split) = match form {
            WriteForm::Split(parts) => (String::new(), Some(for_store(parts))),
            WriteForm::Whole => (group.to_json(), None),
        };
        let split_layout = split.is_some();
        let write = CasWrite {
            expected_revision: base.revision,
            aggregate_json,
            split,
            updated_at: iso_ms(group.updated_at_ms),
            lease_ttl_ms: self.timing.member_lease_ttl_ms,
            not_before_ms: t.not_before_ms,
            must_be_lapsed: t.must_be_lapsed,
            must_be_live: t.must_be_live,
            renew: t.renew,
            progress,
            remove,
            drop_lease,
        };
        let outcome = self
            .metrics
            .time_store("cas", self.store.cas(name, &write))
            .await
            .map_err(|e| {
                self.note_store_error(&e);
                CoordError::from(e)
            })?;
        match outcome {
            CasOutcome::Written { revision, now_ms } => {
                self.clock.observe(now_ms);
                self.metrics.observe_rebalance(&base.group, &group);
                let (violations, facts) =
                    check_invariants(base, &group, t.changed_members.as_ref());
                if !violations.is_empty() {
                    Stats::bump(&self.stats.invariant_violations);
                    tracing::error!(
                        ?violations,
                        "invariant violated after a committed transition"
                    );
                }
                let cached = Cached {
                    group: Arc::new(group),
                    revision,
                    split: split_layout,
                    facts: Some(KeptFacts::of(facts)),
                };
                let _ = self.cache.put(name, cached.clone());
                self.announce_change(&name.stream_prefix, &name.consumer_group)
                    .await;
                Ok(Commit::Written(cached))
            }
            CasOutcome::Conflict { now_ms, .. } => {
                self.clock.observe(now_ms);
                Stats::bump(&self.stats.state_conflicts);
                self.cache.invalidate(name);
                Ok(Commit::Conflict)
            }
            CasOutcome::TooEarly { now_ms } => {
                self.clock.observe(now_ms);
                self.cache.invalidate(name);
                Ok(Commit::ConditionFailed { member: None })
            }
            CasOutcome::LeaseActive { member, now_ms }
            | CasOutcome::LeaseLapsed { member, now_ms } => {
                self.clock.observe(now_ms);
                self.cache.invalidate(name);
                Ok(Commit::ConditionFailed {
                    member: Some(member),
                })
            }
        }
    }

    /// Creates a group's metadata key (create-only) and seeds this replica's cache with it.
    /// Ok(None): the key already exists.
    pub async fn create_metadata(
        &self,
        name: &GroupName,
        group: Group,
    ) -> Result<Option<Cached>, CoordError> {
        let created = self
            .store
            .create(
                name,
                &group.to_json(),
                &iso_ms(group.updated_at_ms),
                &[],
                self.timing.member_lease_ttl_ms,
            )
            .await
            .map_err(|e| {
                self.note_store_error(&e);
                CoordError::from(e)
            })?;
        match created {
            rsc_store::CreateOutcome::Created { revision, now_ms } => {
                self.clock.observe(now_ms);
                let cached = Cached {
                    group: Arc::new(group),
                    revision,
                    split: false,
                    facts: None,
                };
                self.cache.forget(name);
                let _ = self.cache.put(name, cached.clone());
                self.announce_change(&name.stream_prefix, &name.consumer_group)
                    .await;
                Ok(Some(cached))
            }
            rsc_store::CreateOutcome::AlreadyExists => Ok(None),
        }
    }

    pub fn note_store_error(&self, e: &StoreError) {
        Stats::bump(&self.stats.redis_errors);
        tracing::warn!(error = %e, "Redis operation failed");
    }
}

/// `rsc_group::invariants::check` of `group`, a write of `base` that is in Redis, and `group`'s invariant facts:
/// `base`'s facts taken out of their cell (`kept_facts.rs`: only a written write takes them) and updated in
/// place from the members a batch changed (the cost follows the change, not the group), else counted over the
/// whole group. Debug builds (every test) also run the full check and insist they agree.
fn check_invariants(
    base: &Cached,
    group: &Group,
    changed: Option<&std::collections::BTreeSet<String>>,
) -> (Vec<String>, rsc_group::invariants::Facts) {
    let kept = base.facts.as_ref().and_then(|f| f.take());
    let (violations, facts) = match (kept, changed) {
        (Some(mut facts), Some(changed)) => {
            let violations =
                rsc_group::invariants::check_changed(&base.group, &mut facts, group, changed);
            (violations, facts)
        }
        _ => (
            rsc_group::invariants::check(group),
            rsc_group::invariants::Facts::of(group),
        ),
    };
    debug_assert_eq!(
        violations,
        rsc_group::invariants::check(group),
        "the incremental invariant check disagrees with the full one"
    );
    debug_assert!(
        facts == rsc_group::invariants::Facts::of(group),
        "the invariant facts updated in place from the changed members differ from those counted afresh"
    );
    (violations, facts)
}

/// The group crate's split of an aggregate as the store takes it.
fn for_store(parts: rsc_group::model::SplitWrite) -> rsc_store::SplitAggregate {
    rsc_store::SplitAggregate {
        header: parts.header,
        parts: rsc_group::model::SPLIT_PARTS
            .iter()
            .map(|p| (*p).to_owned())
            .collect(),
        entries: parts
            .entries
            .into_iter()
            .map(|e| rsc_store::SplitEntry {
                part: e.part.to_owned(),
                key: e.key,
                json: e.json,
            })
            .collect(),
        full: parts.full,
    }
}

fn corrupt(key: &str, e: &AggregateError) -> CoordError {
    Corrupt::Unreadable {
        key: key.to_owned(),
        cause: e.to_string(),
    }
    .into()
}

/// What a commit came to, as the replica core sees it.
pub(crate) fn commit_result(r: Result<Commit, CoordError>) -> CommitResult {
    match r {
        Ok(Commit::Written(_)) => CommitResult::Written,
        Ok(Commit::Conflict) => CommitResult::Conflict,
        Ok(Commit::ConditionFailed { member }) => CommitResult::ConditionFailed { member },
        Err(_) => CommitResult::Unavailable,
    }
}
