//! JSON views of resharding: a migration, the scale response, and the migration detail route.

use super::*;

/// The state of the stream's active migration as its groups' migration views show it (a group drains on
/// its own, so the stream record's `ACTIVE` can be `DRAINING` there): one state when every group agrees,
/// else each group's.
pub(super) fn migration_state_in_groups(m: &Migration, groups: &[Cached]) -> String {
    let states: Vec<(&str, &'static str)> = groups
        .iter()
        .map(|c| {
            let state = c
                .group
                .migration(&m.resharding_id)
                .map_or(m.state, |gm| gm.state);
            (c.group.consumer_group.as_str(), state.as_str())
        })
        .collect();
    match states.first() {
        None => m.state.as_str().to_owned(),
        Some((_, first)) if states.iter().all(|(_, s)| s == first) => (*first).to_owned(),
        Some(_) => states
            .iter()
            .map(|(g, s)| format!("{s} in group {g}"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

pub(super) fn migration_json(m: &Migration) -> Value {
    let iso = |ms: Option<i64>| ms.map(crate::clock::iso_ms);
    json!({
        "reshardingId": m.resharding_id,
        "fromShardCount": m.from_shard_count,
        "toShardCount": m.to_shard_count,
        "state": m.state.as_str(),
        "createdAt": crate::clock::iso_ms(m.created_at_ms),
        "updatedAt": crate::clock::iso_ms(m.updated_at_ms),
        "requestedBy": m.requested_by,
        "reason": m.reason,
        "activatedAt": iso(m.activated_at_ms),
        "drainingAt": iso(m.draining_at_ms),
        "completedAt": iso(m.completed_at_ms),
        "endReason": m.end_reason,
    })
}

impl Coordinator {
    pub(super) fn scale_response(
        &self,
        prefix: &str,
        target: u32,
        groups: &[GroupName],
        migrations: &[Migration],
    ) -> Value {
        // One migration per group, in the order of `affectedConsumerGroups`, each naming its group.
        let migrations: Vec<Value> = groups
            .iter()
            .zip(migrations)
            .map(|(g, m)| {
                let mut v = migration_json(m);
                v["consumerGroup"] = json!(g.consumer_group);
                v
            })
            .collect();
        json!({
            "streamPrefix": prefix,
            "targetShardCount": target,
            "affectedConsumerGroups": groups.iter().map(|g| g.consumer_group.clone()).collect::<Vec<_>>(),
            "migrations": migrations,
        })
    }

    /// `GET …/migrations/{id}`: phase, age, per-shard drain progress, rollback eligibility and triage facts.
    pub async fn migration_detail(&self, name: &GroupName, id: &str) -> Result<Value, ApiError> {
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
                .ok_or_else(|| ApiError::from(MigrationError::NotFound(id.to_owned())))?,
        };
        let mut detail = migration_json(&m);
        let removed: Vec<u32> =
            (m.to_shard_count..m.from_shard_count.max(m.to_shard_count)).collect();
        let mut shards = Vec::new();
        for s in removed.iter().copied().chain(
            g.draining_shards
                .iter()
                .copied()
                .filter(|s| !removed.contains(s)),
        ) {
            let owner: Vec<&str> = g
                .members
                .values()
                .filter(|x| x.state.is_live() && x.holds(s))
                .map(|x| x.member_id.as_str())
                .collect();
            let info = self
                .shard_group_info(
                    &shard_stream_key(&name.stream_prefix, s),
                    &name.consumer_group,
                )
                .await;
            shards.push(json!({
                "shardIndex": s, "streamKey": shard_stream_key(&name.stream_prefix, s),
                "draining": g.draining_shards.contains(&s),
                "streamLength": info.length, "pending": info.pending, "lag": info.lag,
                "owners": owner,
                "inCurrentAssignments": g.members.values().any(|x| x.state.is_live() && x.reported_owned.contains(&s)),
                "inRevokeProgress": g.members.values().any(|x| x.state.is_live() && x.revoking.contains_key(&s)),
            }));
        }
        let now = self.clock.now_ms();
        detail["ageSeconds"] = json!((now - m.created_at_ms) as f64 / 1000.0);
        // Drain evidence is ignored until producers' cached routing has certainly expired (drain-grace).
        detail["drainEvidenceFrom"] = json!(crate::clock::iso_ms(self.drain_evidence_from_ms(g)));
        detail["rollbackAllowed"] = json!(
            migration::rollback_check(g, id).is_ok() && m.state != MigrationState::RolledBack
        );
        detail["routingShardCount"] = json!(
            stream
                .as_ref()
                .map_or(g.shard_count, |s| s.record.shard_count)
        );
        detail["consumersConverged"] = json!(g.state != rsc_group::model::GroupState::Reconciling);
        detail["removedShards"] = json!(shards);
        Ok(detail)
    }
}
