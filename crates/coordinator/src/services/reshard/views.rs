//! Views of resharding: the scale response (its shape is the contract's, `rsc_protocol::wire::resharding`)
//! and the migration detail route's answer (the contract's Migration plus rsc's triage facts).

use crate::domain_error::CoordError;
use crate::http::views::migration_response;
use crate::runtime::cache::{Cached, GroupName};
use crate::runtime::coordinator::Resharding;
use crate::runtime::shown_keys;
use rsc_group::migration::{MigrationError, rollback_check};
use rsc_group::model::{Migration, MigrationState};
use rsc_protocol::wire::resharding::{MigrationResponse, ScaleResponse};
use rsc_store::Shard;
use serde::Serialize;

/// `GET …/migrations/{id}`: the Migration, its age, per-shard drain progress of removed and draining
/// shards, rollback eligibility and the facts an operator needs to see why it has not finished.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrationDetail {
    #[serde(flatten)]
    pub migration: MigrationResponse,
    pub age_seconds: f64,
    /// Drain evidence is ignored until producers' cached routing has certainly expired (drain-grace).
    pub drain_evidence_from: String,
    pub rollback_allowed: bool,
    pub routing_shard_count: u32,
    pub consumers_converged: bool,
    pub removed_shards: Vec<RemovedShard>,
    /// The scale's producer quiesce, when it asked for one (`quiesce.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub producer_quiesce: Option<super::QuiesceView>,
    /// Ordered streams: the stream's ordering option, and this group's child shards that no member may
    /// read yet, with what each parent they wait for still holds for this group.
    pub ordering: &'static str,
    pub ordering_gates: Vec<super::OrderingGate>,
    /// Guarded publish: the old shards of the stream's latest switch, each with its switch point and the
    /// plain-XADD appends after it (`unorderedAppendsAfterSwitch`, `boundary.rs`). Empty for a migration
    /// that is not the stream's latest or has not switched routing.
    pub switched_shards: Vec<super::SwitchedShard>,
    /// Why the migration has not ended in this group, and the ways out (`hold.rs`); null once it has.
    pub held_by: Option<super::MigrationHold>,
}

/// One removed or draining shard of a migration: what Redis and the members say about it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RemovedShard {
    pub shard_index: u32,
    pub stream_key: String,
    pub draining: bool,
    pub stream_length: Option<i64>,
    pub pending: Option<i64>,
    pub lag: Option<i64>,
    pub owners: Vec<String>,
    pub in_current_assignments: bool,
    pub in_revoke_progress: bool,
}

/// The state of the stream's active migration as its groups' migration views show it (a group drains on
/// its own, so the stream record's `ACTIVE` can be `DRAINING` there): one state when every group agrees,
/// else each group's.
pub(super) fn migration_state_in_groups(
    m: &Migration,
    groups: &[Cached],
) -> Vec<(String, MigrationState)> {
    groups
        .iter()
        .map(|c| {
            let state = c
                .group
                .migration(&m.resharding_id)
                .map_or(m.state, |gm| gm.state);
            (c.group.consumer_group.clone(), state)
        })
        .collect()
}

impl Resharding<'_> {
    pub(super) fn scale_response(
        &self,
        prefix: &str,
        target: u32,
        groups: &[GroupName],
        migrations: &[Migration],
    ) -> ScaleResponse {
        // One migration per group, in the order of `affectedConsumerGroups`, each naming its group.
        let migrations = groups
            .iter()
            .zip(migrations)
            .map(|(g, m)| MigrationResponse {
                consumer_group: Some(g.consumer_group.clone()),
                ..migration_response(m)
            })
            .collect();
        ScaleResponse {
            stream_prefix: prefix.to_owned(),
            target_shard_count: target,
            affected_consumer_groups: groups.iter().map(|g| g.consumer_group.clone()).collect(),
            migrations,
        }
    }

    /// `GET …/migrations/{id}`: phase, age, per-shard drain progress, rollback eligibility and triage facts.
    pub async fn migration_detail(
        &self,
        name: &GroupName,
        id: &str,
    ) -> Result<MigrationDetail, CoordError> {
        let c = self.require_group(name).await?;
        let g = &c.group;
        let stream = self.load_stream(&name.stream_prefix).await?;
        let m = match g.migration(id) {
            Some(m) => m.clone(),
            None => stream
                .as_ref()
                .and_then(|s| {
                    s.record
                        .active_migration
                        .iter()
                        .chain(&s.record.history)
                        .find(|m| m.resharding_id == id)
                        .cloned()
                })
                .ok_or_else(|| CoordError::from(MigrationError::NotFound(id.to_owned())))?,
        };
        let removed: Vec<u32> =
            (m.to_shard_count..m.from_shard_count.max(m.to_shard_count)).collect();
        let mut shards = Vec::new();
        for s in removed.iter().copied().chain(
            g.draining_shards
                .iter()
                .copied()
                .filter(|s| !removed.contains(s)),
        ) {
            let owners: Vec<String> = g
                .members
                .values()
                .filter(|x| x.state.is_live() && x.holds(s))
                .map(|x| x.member_id.clone())
                .collect();
            let shard = Shard::new(name.stream_prefix.as_str(), s);
            let info = self.shard_group_info(&shard, &name.consumer_group).await;
            shards.push(RemovedShard {
                shard_index: s,
                stream_key: shown_keys::shard_stream(&shard),
                draining: g.draining_shards.contains(&s),
                stream_length: info.length,
                pending: info.pending,
                lag: info.lag,
                owners,
                in_current_assignments: g
                    .members
                    .values()
                    .any(|x| x.state.is_live() && x.reported_owned.contains(&s)),
                in_revoke_progress: g
                    .members
                    .values()
                    .any(|x| x.state.is_live() && x.revoking.contains_key(&s)),
            });
        }
        let latest = stream.as_ref().and_then(|s| {
            s.record
                .active_migration
                .as_ref()
                .or(s.record.history.last())
        });
        let switched_shards = match latest {
            Some(l) if l.resharding_id == m.resharding_id && m.activated_at_ms.is_some() => {
                self.switched_shards(&name.stream_prefix, m.from_shard_count)
                    .await
            }
            _ => Vec::new(),
        };
        let now = self.clock().now_ms();
        let producer_quiesce = self
            .quiesce_view(&name.stream_prefix, stream.as_ref(), id)
            .await;
        let rollback_allowed =
            rollback_check(g, id).is_ok() && m.state != MigrationState::RolledBack;
        let consumers_converged = g.state != rsc_group::model::GroupState::Reconciling;
        let drain_evidence_from_ms = self.drain_evidence_from_ms(g);
        let held_by = super::hold::diagnose(&super::hold::HoldFacts {
            stream_prefix: &name.stream_prefix,
            consumer_group: &name.consumer_group,
            resharding_id: &m.resharding_id,
            state: m.state,
            from_shard_count: m.from_shard_count,
            to_shard_count: m.to_shard_count,
            live_consumers: g.members.values().filter(|x| x.state.is_live()).count(),
            consumers_converged,
            quiesce_waiting: producer_quiesce.as_ref().is_some_and(|q| q.waiting),
            rollback_allowed,
            drain_evidence_from_ms,
            now_ms: now,
            shards: shards
                .iter()
                .map(|s| (s.shard_index, s.lag, s.pending))
                .collect(),
        });
        Ok(MigrationDetail {
            migration: migration_response(&m),
            age_seconds: (now - m.created_at_ms) as f64 / 1000.0,
            drain_evidence_from: crate::runtime::clock::iso_ms(drain_evidence_from_ms),
            rollback_allowed,
            routing_shard_count: stream
                .as_ref()
                .map_or(g.shard_count, |s| s.record.shard_count),
            consumers_converged,
            removed_shards: shards,
            producer_quiesce,
            ordering: stream
                .as_ref()
                .map_or("NONE", |s| s.record.ordering.as_str()),
            ordering_gates: self.ordering_gates_view(g).await,
            switched_shards,
            held_by,
        })
    }
}
