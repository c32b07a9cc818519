//! The I/O shell around `rsc_group::durability`: records rollback evidence in a group's aggregate (by
//! compare-and-set, so every replica agrees), refuses admin mutations on a suspected group, checks what
//! producers report on routing refreshes, lists suspected groups for health, and performs the audited
//! repairs: "recreate as a new group lifecycle" and "dismiss a suspicion the evidence does not support".
//!
//! Evidence comes from three places: heartbeats (a member reports a higher metadataVersion or epoch; a
//! shard reported revoking again after its release is only counted, see
//! `rsc_group::durability::member_signal`), producer routing (`observedMetadataVersion`), the store (a revision lower than one this replica already read, noticed in
//! `Coordinator::load`), all counted in `stats.rs`.
//!
//! A suspicion freezes a group's admin mutations, so who may raise one is limited: the application's
//! principals (MEMBER: producers and consumers) and ADMIN. A READ/MONITOR/WRITE-only principal's observation
//! is counted and logged, and that producer is still refused older routing, but nothing is recorded; so is a
//! MEMBER principal's with no stake in the group (no live member in it, and no producer of its stream first
//! seen before the group's routing last changed: `Durability::stake`).
//! Heartbeats served without authentication (`authenticate-member-api = false`) raise suspicions as before.
//! Each principal raises at most [`SUSPICIONS_PER_PRINCIPAL`] per [`SUSPICION_WINDOW_MS`] (a Redis window
//! shared by all replicas); every piece of evidence records the principal, the time and the values.
//!
//! The suspicion is cleared only by replacing the aggregate (restoring a backup that is at least as new as
//! what was observed, or recreating the group) or by an operator's audited dismissal, which changes no
//! version.

pub mod views;

use crate::domain_error::{
    BadRequest, Conflict, CoordError, Corrupt, Exhausted, ObservationNote, Provisioning, Suspected,
    Unrecorded,
};
use crate::http::views::group_response;
use crate::observability::metrics::snapshot::SuspectedGroup;
use crate::observability::stats::Stats;
use crate::runtime::cache::{Cached, GroupName, RevisionRegression};
use crate::runtime::coordinator::Durability;
use crate::runtime::coordinator::{Commit, MAX_CAS_ATTEMPTS};
use crate::security::principal::Principal;
use crate::security::roles::Role;
use crate::security::window;
use rsc_group::durability::{self, DismissError, Signal};
use rsc_group::heartbeat::Transition;
use rsc_group::model::Group;
use rsc_group::model::SignalKind;
use rsc_protocol::validate;
use rsc_store::IndexState;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeSet;
use views::{DismissResponse, RecreateResponse, durability_view};

/// At most this many suspicions (new evidence written to a group) are raised per principal per window.
pub const SUSPICIONS_PER_PRINCIPAL: i64 = 5;
/// The window of [`SUSPICIONS_PER_PRINCIPAL`].
pub const SUSPICION_WINDOW_MS: i64 = 10 * 60 * 1000;

/// Whether a principal's observations count as rollback evidence: the application's principals (MEMBER) and
/// ADMIN. A READ, MONITOR or WRITE-only principal cannot freeze a group's admin mutations.
pub fn may_raise_suspicion(p: &Principal) -> bool {
    p.roles.contains(Role::Member) || p.roles.contains(Role::Admin)
}

/// Whether a MEMBER principal's observation counts as rollback evidence on a group ([`Durability::stake`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stake {
    Yes,
    /// No live member in the group and no producer of its stream.
    None,
    /// A producer of the stream, first seen (at the earliest) at `first_seen_ms`, not before the group's
    /// routing last changed (`cutoff_ms`).
    LateProducer {
        first_seen_ms: i64,
        cutoff_ms: i64,
    },
}

/// What became of rollback evidence handed to [`Durability::record_suspicion`].
#[derive(Debug)]
pub enum Recording {
    /// Written by this call: the state written.
    Written(Cached),
    /// Nothing to write: the group as last read (the state the evidence was decided on, or a fresh read after
    /// a lost compare-and-set) already holds evidence at least this strong, or a dismissal covers it.
    Unchanged(Cached),
    /// Not written (counted and logged): why.
    NotRecorded(Unrecorded),
}

/// Body of `POST …/groups/{g}/durability/dismiss`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DismissSuspicionRequest {
    pub requested_by: Option<String>,
    pub reason: Option<String>,
    /// The suspicion reviewed: its `updatedAt` as the durability view shows it (ISO-8601, or epoch ms). If
    /// evidence arrived since, nothing is dismissed (409). Omitted: whatever is recorded now.
    #[schema(schema_with = string_or_epoch_ms)]
    pub expected_updated_at: Option<Value>,
}

impl rsc_protocol::wire::AdminBody for DismissSuspicionRequest {
    const FIELDS: &'static [&'static str] = &["requestedBy", "reason", "expectedUpdatedAt"];
}

/// `expectedUpdatedAt`'s schema: an ISO-8601 string or epoch milliseconds.
fn string_or_epoch_ms() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
    OneOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::String))
        .item(ObjectBuilder::new().schema_type(Type::Integer))
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .build()
        .into()
}

/// Body of `POST …/groups/{g}/recreate`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecreateGroupRequest {
    pub requested_by: Option<String>,
    pub reason: Option<String>,
    /// The shard count the new lifecycle starts with (the operator states it; nothing is inferred).
    pub shard_count: Option<i64>,
    /// When the old metadata is gone: the highest metadataVersion clients are known to have seen. The new
    /// lifecycle starts above it (and above anything the old document or its suspicion recorded).
    pub minimum_metadata_version: Option<i64>,
}

impl rsc_protocol::wire::AdminBody for RecreateGroupRequest {
    const FIELDS: &'static [&'static str] = &[
        "requestedBy",
        "reason",
        "shardCount",
        "minimumMetadataVersion",
    ];
}

impl Durability<'_> {
    /// Records `signal` in the group's aggregate unless it brings nothing new, or its principal has used up
    /// its budget of suspicions (counted once per suspicion, however many attempts it takes). A write that
    /// loses its compare-and-set to another write of the group (a batch, the reconciler's tick) is decided
    /// again on the group as Redis now holds it, at most [`MAX_CAS_ATTEMPTS`] times: the evidence that made
    /// the caller refuse a request is not dropped because something else wrote the group meanwhile. The
    /// re-read skips `load`'s revision-regression check, whose own evidence comes through here.
    pub async fn record_suspicion(
        &self,
        name: &GroupName,
        base: &Cached,
        signal: &Signal,
    ) -> Recording {
        let mut base = base.clone();
        let mut counted = false;
        for attempt in 1..=MAX_CAS_ATTEMPTS {
            if attempt > 1 {
                base = match self.reread_for_suspicion(name, &base, signal).await {
                    Ok(fresh) => fresh,
                    Err(why) => return Recording::NotRecorded(why),
                };
            }
            let now = self.clock().now_ms();
            if durability::quieted(&base.group, signal, now) {
                Stats::bump(&self.stats().rollback_observations_ignored);
                tracing::warn!(
                    stream = ?name.stream_prefix, group = ?name.consumer_group, principal = ?signal.principal,
                    signal = ?durability::describe(signal),
                    "rollback evidence not recorded: an operator dismissed this principal's evidence on the \
                     group within the last hour"
                );
                return Recording::NotRecorded(Unrecorded::Quieted);
            }
            let Some(next) = durability::record(&base.group, signal, now) else {
                return Recording::Unchanged(base);
            };
            if !counted {
                counted = true;
                if let Some(principal) = &signal.principal
                    && !self.within_suspicion_budget(name, principal).await
                {
                    return Recording::NotRecorded(Unrecorded::OverBudget);
                }
            }
            match self.commit(name, &base, Transition::new(next)).await {
                Ok(Commit::Written(c)) => {
                    Stats::bump(&self.stats().rollback_suspicions);
                    tracing::error!(
                        stream = ?name.stream_prefix, group = ?name.consumer_group,
                        signal = ?durability::describe(signal), principal = ?signal.principal,
                        "metadata rollback suspected: admin mutations on this group now fail closed"
                    );
                    return Recording::Written(c);
                }
                Ok(Commit::Conflict | Commit::ConditionFailed { .. }) => {}
                Err(e) => {
                    return Recording::NotRecorded(self.unrecorded(
                        name,
                        signal,
                        Unrecorded::Unavailable,
                        &e.to_string(),
                    ));
                }
            }
        }
        Recording::NotRecorded(self.unrecorded(
            name,
            signal,
            Unrecorded::KeptChanging,
            "every compare-and-set lost to another write of the group",
        ))
    }

    /// The group as Redis holds it now, for deciding a lost suspicion again; `Err` when there is nothing left
    /// to record it in (the group was deleted or recreated as a new lifecycle) or it cannot be read.
    async fn reread_for_suspicion(
        &self,
        name: &GroupName,
        base: &Cached,
        signal: &Signal,
    ) -> Result<Cached, Unrecorded> {
        match self.read_group(name).await {
            Ok(Some(fresh)) if fresh.group.lifecycle_id == base.group.lifecycle_id => Ok(fresh),
            Ok(_) => Err(self.unrecorded(
                name,
                signal,
                Unrecorded::Replaced,
                "the group was deleted or recreated while the evidence was being written",
            )),
            Err(e) => Err(self.unrecorded(name, signal, Unrecorded::Unavailable, &e.to_string())),
        }
    }

    /// Counts and logs evidence that may raise a suspicion but was not written (`detail`: what happened).
    fn unrecorded(
        &self,
        name: &GroupName,
        signal: &Signal,
        why: Unrecorded,
        detail: &str,
    ) -> Unrecorded {
        Stats::bump(&self.stats().rollback_observations_ignored);
        tracing::error!(
            stream = ?name.stream_prefix, group = ?name.consumer_group, principal = ?signal.principal,
            signal = ?durability::describe(signal), reason = %why, detail,
            "rollback evidence NOT recorded in the group: it is only in this log"
        );
        why
    }

    /// Counts one suspicion raised by `principal` in its Redis window; false (not recorded, counted, logged)
    /// once it has raised [`SUSPICIONS_PER_PRINCIPAL`] in the window, or when the window cannot be read.
    async fn within_suspicion_budget(&self, name: &GroupName, principal: &str) -> bool {
        let part = window::key_part(principal);
        let within = match window::hit(
            self.store(),
            window::Window::Suspicion(&part),
            SUSPICION_WINDOW_MS,
        )
        .await
        {
            Ok(c) => c.count <= SUSPICIONS_PER_PRINCIPAL,
            Err(e) => {
                tracing::warn!(error = %e, "could not count a rollback suspicion; not recorded");
                false
            }
        };
        if !within {
            Stats::bump(&self.stats().rollback_observations_ignored);
            tracing::warn!(
                stream = ?name.stream_prefix, group = ?name.consumer_group, principal = ?principal,
                limit = SUSPICIONS_PER_PRINCIPAL, window_ms = SUSPICION_WINDOW_MS,
                "rollback evidence not recorded: this principal raised too many suspicions in the window"
            );
        }
        within
    }

    /// A revision lower than one already seen was read: count it once, record it, return the state to use.
    pub(crate) async fn on_revision_regression(
        &self,
        name: &GroupName,
        cached: Cached,
        r: &RevisionRegression,
    ) -> Cached {
        let already = cached
            .group
            .rollback_suspicion
            .as_ref()
            .is_some_and(|s| s.kinds.contains(&SignalKind::StoreRevision));
        if already {
            return cached;
        }
        // An operator dismissed a suspicion that covered this regression: accept the revision Redis holds.
        if let Some(d) = &cached.group.rollback_dismissal
            && d.suspicion.kinds.contains(&SignalKind::StoreRevision)
            && i64::try_from(r.seen).is_ok_and(|seen| seen <= d.suspicion.highest_observed_revision)
        {
            self.cache()
                .accept_revision(name, &cached.group.lifecycle_id, cached.revision);
            return cached;
        }
        Stats::bump(&self.stats().revision_regressions);
        tracing::error!(group = ?self.shown_group_key(name), seen = r.seen, found = r.found,
            "store revision went backwards: Redis metadata was rolled back");
        let signal = Signal {
            kind: SignalKind::StoreRevision,
            observed: i64::try_from(r.seen).unwrap_or(i64::MAX),
            stored: i64::try_from(r.found).unwrap_or(i64::MAX),
            source: format!("coordinator {}", self.config().id),
            principal: None,
        };
        match self.record_suspicion(name, &cached, &signal).await {
            Recording::Written(c) | Recording::Unchanged(c) => c,
            Recording::NotRecorded(_) => cached,
        }
    }

    /// Admin mutations on a suspected group fail closed (409 `METADATA_ROLLBACK_SUSPECTED`).
    pub fn ensure_mutable(&self, g: &Group) -> Result<(), CoordError> {
        match durability::mutation_block(g) {
            Some(why) => Err(Suspected::MutationsBlocked { why }.into()),
            None => Ok(()),
        }
    }

    /// Checks what a producer reports on a routing refresh. A version above the stored one is rollback
    /// evidence: it is recorded when `principal` may raise a suspicion ([`may_raise_suspicion`]; None = the
    /// request was not authenticated), and this producer is refused rather than handed older routing (it must
    /// never be asked to go backwards) either way; producers that report nothing are served as usual.
    pub async fn check_producer_observation(
        &self,
        name: &GroupName,
        observed: i64,
        principal: Option<&Principal>,
    ) -> Result<(), CoordError> {
        let base = self.require_group(name).await?;
        if observed <= base.group.metadata_version {
            return Ok(());
        }
        Stats::bump(&self.stats().metadata_regressions);
        let stored = base.group.metadata_version;
        let stake = match principal {
            Some(p) if may_raise_suspicion(p) => self.stake(name, &base.group, p).await,
            _ => Stake::Yes,
        };
        let note = match (principal, stake) {
            (Some(p), Stake::None) => {
                Stats::bump(&self.stats().rollback_observations_ignored);
                tracing::warn!(
                    stream = ?name.stream_prefix, group = ?name.consumer_group, principal = ?p.username,
                    observed, stored,
                    "a producer observation from a principal with no member in the group and no producer of \
                     its stream was not recorded as rollback evidence"
                );
                ObservationNote::NoStake {
                    principal: p.username.clone(),
                }
            }
            (
                Some(p),
                Stake::LateProducer {
                    first_seen_ms,
                    cutoff_ms,
                },
            ) => {
                Stats::bump(&self.stats().rollback_observations_ignored);
                tracing::warn!(
                    stream = ?name.stream_prefix, group = ?name.consumer_group, principal = ?p.username,
                    observed, stored, first_seen = %crate::runtime::clock::iso_ms(first_seen_ms),
                    routing_changed = %crate::runtime::clock::iso_ms(cutoff_ms),
                    "a producer observation from a principal first seen producing to the stream after the \
                     group's routing last changed was not recorded as rollback evidence"
                );
                ObservationNote::LateProducer {
                    principal: p.username.clone(),
                    first_seen_ms,
                    cutoff_ms,
                }
            }
            (Some(p), _) if !may_raise_suspicion(p) => {
                Stats::bump(&self.stats().rollback_observations_ignored);
                tracing::warn!(
                    stream = ?name.stream_prefix, group = ?name.consumer_group, principal = ?p.username,
                    observed, stored,
                    "a producer observation from a principal without MEMBER or ADMIN was not recorded as \
                     rollback evidence"
                );
                ObservationNote::NoRole {
                    principal: p.username.clone(),
                }
            }
            _ => {
                let signal = Signal {
                    kind: SignalKind::ProducerMetadataVersion,
                    observed,
                    stored,
                    source: "producer".to_owned(),
                    principal: principal.map(|p| p.username.clone()),
                };
                match self.record_suspicion(name, &base, &signal).await {
                    Recording::Written(c) | Recording::Unchanged(c) => ObservationNote::Recorded {
                        block: durability::mutation_block(&c.group),
                    },
                    Recording::NotRecorded(why) => ObservationNote::NotRecorded {
                        why,
                        block: durability::mutation_block(&base.group),
                    },
                }
            }
        };
        Err(Suspected::ProducerAhead {
            observed,
            stored,
            note,
        }
        .into())
    }

    /// Whether `p` has a stake in the group: an ADMIN, a principal with a live member in it, or one whose
    /// routing reads registered a producer of its stream first seen before the group's routing last changed
    /// (`durability::producer_stake_cutoff_ms`). Issue #32, finding 12: any MEMBER principal froze any group
    /// with one routing read and then one with an observation; a producer sighting made after the last scale
    /// (or, for a group that never scaled, after its creation) gives no stake. An unreadable sighting hash
    /// gives none either.
    async fn stake(&self, name: &GroupName, group: &Group, p: &Principal) -> Stake {
        if p.roles.contains(Role::Admin) {
            return Stake::Yes;
        }
        if group
            .members
            .values()
            .any(|m| m.state.is_live() && m.owner.as_deref() == Some(p.username.as_str()))
        {
            return Stake::Yes;
        }
        let Ok(all) = self.store().producers(&name.stream_prefix).await else {
            return Stake::None;
        };
        let cutoff_ms = durability::producer_stake_cutoff_ms(group, self.clock().now_ms());
        let mine = all
            .values()
            .filter(|e| e.principal.as_deref() == Some(p.username.as_str()));
        let mut earliest: Option<i64> = None;
        for e in mine {
            if durability::producer_sighting_has_stake(e.first_seen_ms, e.last_seen_ms, cutoff_ms) {
                return Stake::Yes;
            }
            let first = e.first_seen_ms.unwrap_or(e.last_seen_ms);
            earliest = Some(earliest.map_or(first, |x| x.min(first)));
        }
        match earliest {
            Some(first_seen_ms) => Stake::LateProducer {
                first_seen_ms,
                cutoff_ms,
            },
            None => Stake::None,
        }
    }

    /// `POST …/groups/{g}/durability/dismiss`: removes a suspicion the evidence does not support. WRITE,
    /// audited; compare-and-set on the aggregate (and on the suspicion reviewed, when named); no epoch or
    /// version changes. The dismissal (who, when, why, what) stays in the aggregate, and evidence it covered
    /// raises no new suspicion.
    pub async fn dismiss_suspicion(
        &self,
        name: &GroupName,
        req: &DismissSuspicionRequest,
        principal: &str,
    ) -> Result<DismissResponse, CoordError> {
        let (requested_by, reason) = validate::validate_attribution(
            req.requested_by.as_deref(),
            req.reason.as_deref(),
            validate::Reason::Required,
        )?;
        let expected = req
            .expected_updated_at
            .as_ref()
            .map(expected_instant)
            .transpose()?;
        let lock = self.cache().lock_for(name);
        let _guard = lock.lock().await;
        for _ in 0..MAX_CAS_ATTEMPTS {
            let base = self.require_group(name).await?;
            let now = self.clock().now_ms();
            let next = match durability::dismiss(
                &base.group,
                expected,
                principal,
                requested_by,
                reason,
                now,
            ) {
                Ok(next) => next,
                Err(DismissError::NotSuspected) => {
                    return Err(BadRequest::NotSuspected {
                        stream: name.stream_prefix.clone(),
                        group: name.consumer_group.clone(),
                    }
                    .into());
                }
                Err(DismissError::Changed {
                    current_updated_at_ms,
                }) => {
                    return Err(Conflict::SuspicionChanged {
                        updated_at_ms: current_updated_at_ms,
                    }
                    .into());
                }
            };
            match self.commit(name, &base, Transition::new(next)).await? {
                Commit::Written(c) => {
                    tracing::warn!(
                        stream = ?name.stream_prefix, group = ?name.consumer_group, principal = ?principal,
                        requested_by = ?requested_by, reason = ?reason,
                        "metadata rollback suspicion dismissed by an operator"
                    );
                    return Ok(DismissResponse {
                        stream_prefix: name.stream_prefix.clone(),
                        consumer_group: name.consumer_group.clone(),
                        metadata_durability: durability_view(&c.group),
                    });
                }
                Commit::Conflict | Commit::ConditionFailed { .. } => continue,
            }
        }
        Err(Conflict::DismissKeptChanging.into())
    }

    /// Groups whose aggregate carries a rollback suspicion: from the metrics snapshot when it is recent and
    /// complete, otherwise by reading every group now. The second value says where the answer came from.
    pub async fn suspected_groups(
        &self,
    ) -> Result<(Vec<SuspectedGroup>, &'static str), CoordError> {
        if let Some(s) = self.metrics().snapshot() {
            let max_age = self
                .config()
                .metrics
                .refresh_interval
                .ms()
                .saturating_mul(3);
            // Not once a group this replica caches turned suspected (or was repaired) after the pass began:
            // health must say so at once, not at the next refresh.
            if s.complete
                && s.durability_generation == self.cache().durability_generation()
                && self.clock().now_ms() - s.taken_at_ms <= max_age.max(1_000)
            {
                return Ok((s.suspected.clone(), "background check"));
            }
        }
        let mut out = Vec::new();
        for e in self.index_entries().await? {
            if e.state != IndexState::Live {
                continue;
            }
            let name = GroupName::new(&e.stream_prefix, &e.consumer_group);
            if let Some(c) = self.load(&name).await?
                && let Some(s) = &c.group.rollback_suspicion
            {
                out.push(SuspectedGroup {
                    stream_prefix: e.stream_prefix.clone(),
                    consumer_group: e.consumer_group.clone(),
                    kinds: s.kinds.iter().map(|k| k.as_str().to_owned()).collect(),
                    last_signal: s.last_signal.clone(),
                });
            }
        }
        Ok((out, "direct check"))
    }

    /// `POST …/groups/{g}/recreate`: replaces a suspected group (or one whose metadata key is missing) with a
    /// new lifecycle. Audited like every admin mutation; never available for a healthy group.
    pub async fn recreate_group(
        &self,
        name: &GroupName,
        req: &RecreateGroupRequest,
    ) -> Result<RecreateResponse, CoordError> {
        validate::validate_attribution(
            req.requested_by.as_deref(),
            req.reason.as_deref(),
            validate::Reason::Required,
        )?;
        let shard_count = match req.shard_count {
            Some(n) => validate::validate_shard_count(
                "shardCount",
                n,
                rsc_protocol::bounds::INITIAL_SHARD_COUNT.min(),
            )?,
            None => {
                return Err(BadRequest::ShardCountRequired.into());
            }
        };
        let floor = validate::validate_observed(
            "minimumMetadataVersion",
            req.minimum_metadata_version.unwrap_or(0),
            0,
        )?;
        let lock = self.cache().lock_for(name);
        let _guard = lock.lock().await;
        for _ in 0..MAX_CAS_ATTEMPTS {
            let base = match self.load(name).await {
                Ok(b) => b,
                Err(CoordError::MetadataCorrupt(corrupt)) => {
                    return Err(Corrupt::Unreplaceable(Box::new(corrupt)).into());
                }
                Err(e) => return Err(e),
            };
            if let Some(b) = &base
                && b.group.rollback_suspicion.is_none()
            {
                return Err(BadRequest::NotRecreatable {
                    stream: name.stream_prefix.clone(),
                    group: name.consumer_group.clone(),
                }
                .into());
            }
            if base.is_none() && !self.listed_live(name).await? {
                return Err(self.group_not_found(name).await);
            }
            if self.config().streams.provisioning_enabled {
                crate::services::provision::provision(
                    self.store(),
                    &name.stream_prefix,
                    &name.consumer_group,
                    0..shard_count,
                )
                .await
                .map_err(|e| Provisioning::Shards {
                    cause: e.to_string(),
                })?;
            }
            let now = self.clock().now_ms();
            let lifecycle = uuid::Uuid::new_v4().to_string();
            let old = base.as_ref().map(|b| &*b.group);
            let next = durability::new_lifecycle(
                old,
                floor,
                &name.stream_prefix,
                &name.consumer_group,
                shard_count,
                now,
                &lifecycle,
            )
            .map_err(|overflow| Exhausted::Recreate {
                overflow,
                stream: name.stream_prefix.clone(),
                group: name.consumer_group.clone(),
            })?;
            let written = match &base {
                Some(b) => {
                    let mut t = Transition::new(next);
                    let mut gone: BTreeSet<String> = b.group.members.keys().cloned().collect();
                    if let Ok(leases) = self.store().leases(name).await {
                        gone.extend(leases.into_iter().map(|(m, _)| m));
                    }
                    t.remove = gone.into_iter().collect();
                    match self.commit(name, b, t).await? {
                        Commit::Written(c) => Some(c),
                        Commit::Conflict | Commit::ConditionFailed { .. } => None,
                    }
                }
                None => self.create_lifecycle(name, next).await?,
            };
            if let Some(c) = written {
                tracing::warn!(
                    stream = ?name.stream_prefix, group = ?name.consumer_group,
                    requested_by = ?req.requested_by.as_deref().unwrap_or(""),
                    reason = ?req.reason.as_deref().unwrap_or(""),
                    lifecycle = %c.group.lifecycle_id, metadata_version = c.group.metadata_version,
                    "group recreated as a new lifecycle"
                );
                return Ok(RecreateResponse {
                    group: group_response(&c.group),
                    lifecycle_id: c.group.lifecycle_id.clone(),
                    previous_lifecycle_id: old.map(|g| g.lifecycle_id.clone()),
                });
            }
        }
        Err(Conflict::RecreateKeptChanging.into())
    }

    async fn listed_live(&self, name: &GroupName) -> Result<bool, CoordError> {
        Ok(self.index_entries().await?.iter().any(|e| {
            e.stream_prefix == name.stream_prefix
                && e.consumer_group == name.consumer_group
                && e.state == IndexState::Live
        }))
    }

    /// Writes a new lifecycle where the metadata key is missing (create-only).
    async fn create_lifecycle(
        &self,
        name: &GroupName,
        group: Group,
    ) -> Result<Option<Cached>, CoordError> {
        let Some(cached) = self.create_metadata(name, group).await? else {
            // Someone wrote the key meanwhile: decide again on what is there now.
            return Ok(None);
        };
        self.put_index(name, IndexState::Live).await?;
        Ok(Some(cached))
    }
}

/// `expectedUpdatedAt`: an ISO-8601 instant as the durability view shows it, or epoch milliseconds.
fn expected_instant(v: &Value) -> Result<i64, CoordError> {
    let parsed = match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => {
            time::OffsetDateTime::parse(s.trim(), &time::format_description::well_known::Rfc3339)
                .ok()
                .and_then(|t| i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok())
        }
        _ => None,
    };
    parsed.ok_or_else(|| {
        BadRequest::ExpectedUpdatedAt {
            given: v.to_string(),
        }
        .into()
    })
}
