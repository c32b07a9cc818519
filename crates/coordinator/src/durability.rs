//! The I/O shell around `rsc_group::durability`: records rollback evidence in a group's aggregate (by
//! compare-and-set, so every replica agrees), refuses admin mutations on a suspected group, checks what
//! producers report on routing refreshes, lists suspected groups for health, and performs the audited
//! "recreate as a new group lifecycle" repair.
//!
//! Evidence comes from three places: heartbeats (a member reports a higher metadataVersion or epoch; a
//! shard reported revoking again after its release is only counted, see `member_signal`), producer routing (`observedMetadataVersion`), the store (a
//! revision lower than one this replica already read, noticed in `Coordinator::load`), all counted in
//! `stats.rs`. The suspicion is cleared only by replacing the aggregate: restoring a backup that is at least
//! as new as what was observed, or recreating the group.

use crate::cache::{Cached, GroupName, RevisionRegression};
use crate::coordinator::{Commit, Coordinator, MAX_CAS_ATTEMPTS};
use crate::error::ApiError;
use crate::metrics::snapshot::SuspectedGroup;
use crate::reconciler::INDEX_LIVE;
use crate::stats::Stats;
use crate::views::group_response;
use rsc_group::durability::{self, Signal, SignalKind};
use rsc_group::heartbeat::{Signals, Transition};
use rsc_group::model::Group;
use rsc_protocol::errors::ErrorCode;
use rsc_protocol::validate;
use rsc_protocol::wire::HeartbeatRequest;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// Body of `POST …/groups/{g}/recreate`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecreateGroupRequest {
    pub requested_by: Option<String>,
    pub reason: Option<String>,
    /// The shard count the new lifecycle starts with (the operator states it; nothing is inferred).
    pub shard_count: Option<i64>,
    /// When the old metadata is gone: the highest metadataVersion clients are known to have seen. The new
    /// lifecycle starts above it (and above anything the old document or its suspicion recorded).
    pub minimum_metadata_version: Option<i64>,
}

/// Which heartbeat evidence points at a rollback (None when the decision raised no signal).
pub fn member_signal(
    g: &Group,
    member_id: &str,
    req: &HeartbeatRequest,
    signals: &Signals,
) -> Option<Signal> {
    // A shard reported revoking after its release was recorded is counted (`rebalance_regression`), never
    // recorded as a suspicion: a delayed, duplicated or re-sent copy of the member's earlier DRAINING report
    // produces exactly that, and nothing in the request tells it from a rollback (found by the simulation).
    if !signals.metadata_regression {
        return None;
    }
    let stored_epoch = g.members.get(member_id).map_or(0, |m| m.member_epoch);
    let (kind, observed, stored) = if req.metadata_version > g.metadata_version {
        (
            SignalKind::MemberMetadataVersion,
            req.metadata_version,
            g.metadata_version,
        )
    } else {
        (SignalKind::MemberEpoch, req.member_epoch, stored_epoch)
    };
    Some(Signal {
        kind,
        observed,
        stored,
        source: member_id.to_owned(),
    })
}

impl Coordinator {
    /// Records `signal` in the group's aggregate unless it brings nothing new. Returns the written state.
    pub async fn record_suspicion(
        &self,
        name: &GroupName,
        base: &Cached,
        signal: &Signal,
    ) -> Option<Cached> {
        let next = durability::record(&base.group, signal, self.clock.now_ms())?;
        let t = Transition::new(next);
        match self.commit(name, base, t).await {
            Ok(Commit::Written(c)) => {
                Stats::bump(&self.stats.rollback_suspicions);
                tracing::error!(
                    stream = %name.stream_prefix, group = %name.consumer_group,
                    signal = %durability::describe(signal),
                    "metadata rollback suspected: admin mutations on this group now fail closed"
                );
                Some(c)
            }
            // Lost a race: the next detection decides on fresh state.
            _ => None,
        }
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
        Stats::bump(&self.stats.revision_regressions);
        tracing::error!(group = %self.keys(name).metadata, seen = r.seen, found = r.found,
            "store revision went backwards: Redis metadata was rolled back");
        let signal = Signal {
            kind: SignalKind::StoreRevision,
            observed: i64::try_from(r.seen).unwrap_or(i64::MAX),
            stored: i64::try_from(r.found).unwrap_or(i64::MAX),
            source: format!("coordinator {}", self.config.id),
        };
        self.record_suspicion(name, &cached, &signal)
            .await
            .unwrap_or(cached)
    }

    /// Admin mutations on a suspected group fail closed (409 `METADATA_ROLLBACK_SUSPECTED`).
    pub fn ensure_mutable(&self, g: &Group) -> Result<(), ApiError> {
        match durability::mutation_block(g) {
            Some(why) => Err(ApiError::new(ErrorCode::MetadataRollbackSuspected, why)),
            None => Ok(()),
        }
    }

    /// Checks what a producer reports on a routing refresh. A version above the stored one is rollback
    /// evidence: it is recorded, and this producer is refused rather than handed older routing (it must
    /// never be asked to go backwards); producers that report nothing are served as usual.
    pub async fn check_producer_observation(
        &self,
        name: &GroupName,
        observed: i64,
    ) -> Result<(), ApiError> {
        let base = self.require_group(name).await?;
        if observed <= base.group.metadata_version {
            return Ok(());
        }
        Stats::bump(&self.stats.metadata_regressions);
        let signal = Signal {
            kind: SignalKind::ProducerMetadataVersion,
            observed,
            stored: base.group.metadata_version,
            source: "producer".to_owned(),
        };
        let after = self.record_suspicion(name, &base, &signal).await;
        let g = after.as_ref().map_or(&base.group, |c| &c.group);
        Err(ApiError::new(
            ErrorCode::MetadataRollbackSuspected,
            format!(
                "this producer saw metadataVersion {observed} but Redis holds {}: the group's metadata rolled back. \
                 Routing is refused rather than moved backwards; {}",
                base.group.metadata_version,
                durability::mutation_block(g).unwrap_or_default()
            ),
        ))
    }

    /// Groups whose aggregate carries a rollback suspicion: from the metrics snapshot when it is recent and
    /// complete, otherwise by reading every group now. The second value says where the answer came from.
    pub async fn suspected_groups(&self) -> Result<(Vec<SuspectedGroup>, &'static str), ApiError> {
        if let Some(s) = self.metrics.snapshot() {
            let max_age = self.config.metrics.refresh_interval.ms().saturating_mul(3);
            // Not once a group this replica caches turned suspected (or was repaired) after the pass began:
            // health must say so at once, not at the next refresh.
            if s.complete
                && s.durability_generation == self.cache.durability_generation()
                && self.clock.now_ms() - s.taken_at_ms <= max_age.max(1_000)
            {
                return Ok((s.suspected.clone(), "background check"));
            }
        }
        let mut out = Vec::new();
        for e in self.index_entries().await? {
            if e.state != INDEX_LIVE {
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
    ) -> Result<Value, ApiError> {
        validate::validate_stream_prefix(&name.stream_prefix)?;
        validate::validate_consumer_group(&name.consumer_group)?;
        validate::validate_text(
            "requestedBy",
            req.requested_by.as_deref().unwrap_or(""),
            true,
        )?;
        validate::validate_text("reason", req.reason.as_deref().unwrap_or(""), true)?;
        let shard_count = match req.shard_count {
            Some(n) => validate::validate_shard_count("shardCount", n, 1)?,
            None => {
                return Err(ApiError::invalid(
                    "shardCount: required — state the shard count the new lifecycle starts with",
                ));
            }
        };
        let floor = req.minimum_metadata_version.unwrap_or(0);
        if floor < 0 {
            return Err(ApiError::invalid(
                "minimumMetadataVersion: must be at least 0",
            ));
        }
        self.ensure_running()?;
        let lock = self.cache.lock_for(name);
        let _guard = lock.lock().await;
        for _ in 0..MAX_CAS_ATTEMPTS {
            let base = match self.load(name).await {
                Ok(b) => b,
                Err(e) if e.code == ErrorCode::MetadataCorrupt => {
                    return Err(ApiError::new(
                        ErrorCode::MetadataCorrupt,
                        format!(
                            "{}; recreate cannot replace an unreadable key: keep a copy (DUMP), delete the key, then \
                             call recreate again",
                            e.message
                        ),
                    ));
                }
                Err(e) => return Err(e),
            };
            if let Some(b) = &base
                && b.group.rollback_suspicion.is_none()
            {
                return Err(ApiError::invalid(format!(
                    "group {}/{} is not suspected of a metadata rollback and its metadata is present; recreate \
                     is only for repairing a suspected or lost group (use DELETE and create for a healthy one)",
                    name.stream_prefix, name.consumer_group
                )));
            }
            if base.is_none() && !self.listed_live(name).await? {
                return Err(self.group_not_found(name).await);
            }
            if self.config.streams.provisioning_enabled {
                let mut conn = self.store.connection();
                crate::provision::provision(
                    &mut conn,
                    &name.stream_prefix,
                    &name.consumer_group,
                    0..shard_count,
                )
                .await
                .map_err(|e| {
                    ApiError::new(ErrorCode::RedisStreamProvisioningFailed, e.to_string())
                })?;
            }
            let now = self.clock.now_ms();
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
            );
            let written = match &base {
                Some(b) => {
                    let mut t = Transition::new(next);
                    let mut gone: BTreeSet<String> = b.group.members.keys().cloned().collect();
                    if let Ok(leases) = self.store.leases(&self.keys(name)).await {
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
                    stream = %name.stream_prefix, group = %name.consumer_group,
                    requested_by = req.requested_by.as_deref().unwrap_or(""),
                    reason = req.reason.as_deref().unwrap_or(""),
                    lifecycle = %c.group.lifecycle_id, metadata_version = c.group.metadata_version,
                    "group recreated as a new lifecycle"
                );
                let mut body = serde_json::to_value(group_response(&c.group)).unwrap_or(json!({}));
                if let Some(obj) = body.as_object_mut() {
                    obj.insert("lifecycleId".into(), json!(c.group.lifecycle_id));
                    obj.insert(
                        "previousLifecycleId".into(),
                        json!(old.map(|g| g.lifecycle_id.clone())),
                    );
                }
                return Ok(body);
            }
        }
        Err(ApiError::new(
            ErrorCode::StateVersionConflict,
            "the group kept changing while it was being recreated; retry",
        ))
    }

    async fn listed_live(&self, name: &GroupName) -> Result<bool, ApiError> {
        Ok(self.index_entries().await?.iter().any(|e| {
            e.stream_prefix == name.stream_prefix
                && e.consumer_group == name.consumer_group
                && e.state == INDEX_LIVE
        }))
    }

    /// Writes a new lifecycle where the metadata key is missing (create-only).
    async fn create_lifecycle(
        &self,
        name: &GroupName,
        group: Group,
    ) -> Result<Option<Cached>, ApiError> {
        let Some(cached) = self.create_metadata(name, group).await? else {
            // Someone wrote the key meanwhile: decide again on what is there now.
            return Ok(None);
        };
        self.put_index(name, INDEX_LIVE).await?;
        Ok(Some(cached))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsc_group::model::Member;

    fn req(epoch: i64, version: i64) -> HeartbeatRequest {
        serde_json::from_value(json!({
            "protocolVersion": 1, "requestId": "r", "memberId": "m1", "memberEpoch": epoch,
            "metadataVersion": version,
            "runtimeConsumerCapacity": {"runtimeMaxConcurrency": 1, "availableConcurrency": 1}
        }))
        .unwrap()
    }

    #[test]
    fn heartbeat_evidence_is_classified_by_what_was_ahead() {
        let mut g = Group::new("p", "g", 2, 0, "l");
        let mut m = Member::new("m1", "m1", 0);
        m.member_epoch = 4;
        g.members.insert("m1".into(), m);
        let none = Signals::default();
        assert!(member_signal(&g, "m1", &req(9, 9), &none).is_none());
        let reg = Signals {
            metadata_regression: true,
            ..Signals::default()
        };
        let s = member_signal(&g, "m1", &req(4, 9), &reg).unwrap();
        assert_eq!(
            (s.kind, s.observed, s.stored),
            (SignalKind::MemberMetadataVersion, 9, 1)
        );
        let s = member_signal(&g, "m1", &req(7, 1), &reg).unwrap();
        assert_eq!(
            (s.kind, s.observed, s.stored),
            (SignalKind::MemberEpoch, 7, 4)
        );
        let back = Signals {
            rebalance_regression: true,
            ..Signals::default()
        };
        assert!(
            member_signal(&g, "m1", &req(4, 1), &back).is_none(),
            "a shard reported revoking again is counted, not recorded"
        );
    }
}
