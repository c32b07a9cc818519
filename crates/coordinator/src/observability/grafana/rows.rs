//! Rows of the Grafana routes `groups`, `members`, `shards` and `assignments`, flat as the contract's
//! JSON API dashboards expect (owner lists as comma-joined strings).

use crate::domain_error::CoordError;
use crate::runtime::cache::GroupName;
use crate::runtime::coordinator::Coordinator;
use rsc_protocol::wire::grafana::{
    GrafanaAssignmentRow, GrafanaGroupRow, GrafanaMemberRow, GrafanaShardRow, ShardOwners,
};
use rsc_protocol::wire::monitoring::MemberMetadata;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Owners per shard: shard → member ids, from a `{memberId: [ShardId | {shard: ShardId}]}` map.
fn owners_by_shard(map: &Value, live: &BTreeSet<String>) -> BTreeMap<u64, Vec<String>> {
    let mut out: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for (member, shards) in map.as_object().into_iter().flatten() {
        if !live.contains(member) {
            continue;
        }
        for s in shards.as_array().into_iter().flatten() {
            let index = s
                .get("shardIndex")
                .or_else(|| s.get("shard").and_then(|x| x.get("shardIndex")))
                .and_then(Value::as_u64);
            if let Some(i) = index {
                out.entry(i).or_default().push(member.clone());
            }
        }
    }
    out
}

struct Ownership {
    target: BTreeMap<u64, Vec<String>>,
    current: BTreeMap<u64, Vec<String>>,
    revoking: BTreeMap<u64, Vec<String>>,
}

async fn ownership(c: &Coordinator, name: &GroupName) -> Result<Ownership, CoordError> {
    let members = c.monitoring().members(name).await?;
    let live: BTreeSet<String> = members
        .iter()
        .filter(|m| matches!(m.state.as_str(), "ACTIVE" | "STARTING" | "LEAVING"))
        .map(|m| m.member_id.clone())
        .collect();
    let a = serde_json::to_value(c.monitoring().assignments(name).await?).unwrap_or(Value::Null);
    Ok(Ownership {
        target: owners_by_shard(&a["targetAssignment"], &live),
        current: owners_by_shard(&a["currentAssignments"], &live),
        revoking: owners_by_shard(&a["revokeProgress"], &live),
    })
}

fn joined(map: &BTreeMap<u64, Vec<String>>, shard: u64) -> String {
    map.get(&shard).map(|v| v.join(",")).unwrap_or_default()
}

/// `groups`: one row per group.
pub async fn group_rows(
    c: &Coordinator,
    names: &[GroupName],
) -> Result<Vec<GrafanaGroupRow>, CoordError> {
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let cached = c.require_group(name).await?;
        let g = &cached.group;
        let members = c.monitoring().members(name).await?;
        let active = members.iter().filter(|m| m.state == "ACTIVE").count();
        let own = ownership(c, name).await?;
        let offsets = c.monitoring().offsets(name).await?;
        let current: usize = own.current.values().map(Vec::len).sum();
        let target: usize = own.target.values().map(Vec::len).sum();
        let revoking: usize = own.revoking.values().map(Vec::len).sum();
        // Rates from this replica's history (the same figures as describe and the rate gauges).
        let rates = c
            .history()
            .latest(&name.stream_prefix)
            .map(|p| p.rates)
            .filter(|r| r.span_ms > 0);
        let produced = rates.as_ref().and_then(|r| r.produce);
        let consumed = rates
            .as_ref()
            .and_then(|r| r.consume.get(&name.consumer_group).copied().flatten());
        out.push(GrafanaGroupRow {
            stream_prefix: g.stream_prefix.clone(),
            consumer_group: g.consumer_group.clone(),
            state: crate::http::views::group_response(g).state,
            group_epoch: g.group_epoch,
            assignment_epoch: g.assignment_epoch,
            metadata_version: g.metadata_version,
            shard_count: g.shard_count,
            active_members: active,
            total_members: members.len(),
            current_shards: current,
            target_shards: target,
            assigned_shard_ratio: format!("{current} / {}", g.shard_count),
            revoking_shards: revoking,
            total_stream_length: offsets.total_stream_length,
            total_pending_count: offsets.total_pending_count,
            total_lag: offsets.total_lag,
            produced_per_second: produced,
            consumed_per_second: consumed,
            total_memory_usage_bytes: offsets.total_memory_usage_bytes,
            memory_usage_known: offsets.memory_usage_known,
        });
    }
    Ok(out)
}

fn member_row(name: &GroupName, m: &MemberMetadata) -> GrafanaMemberRow {
    GrafanaMemberRow {
        stream_prefix: name.stream_prefix.clone(),
        consumer_group: name.consumer_group.clone(),
        member_id: m.member_id.clone(),
        member_name: m.member_name.clone(),
        state: m.state.clone(),
        member_epoch: m.member_epoch,
        metadata_version: m.metadata_version,
        current_shard_count: m.current_assignment.len(),
        revoking_shard_count: m.revoking.len(),
        runtime_max_concurrency: m.runtime_max_concurrency,
        active_consumer_workers: m.active_consumer_workers,
        last_heartbeat_at: m.last_heartbeat_at.clone(),
        member_lease_expires_at: m.member_lease_expires_at.clone(),
    }
}

/// `members`: one row per member of one group.
pub async fn member_rows(
    c: &Coordinator,
    name: &GroupName,
) -> Result<Vec<GrafanaMemberRow>, CoordError> {
    Ok(c.monitoring()
        .members(name)
        .await?
        .iter()
        .map(|m| member_row(name, m))
        .collect())
}

/// `shards`: one row per shard of each group: the offsets row plus owners and the owner state.
pub async fn shard_rows(
    c: &Coordinator,
    names: &[GroupName],
) -> Result<Vec<GrafanaShardRow>, CoordError> {
    let mut out = Vec::new();
    for name in names {
        let offsets = c.monitoring().offsets(name).await?;
        let own = ownership(c, name).await?;
        let shard_count = c.require_group(name).await?.group.shard_count;
        for row in &offsets.shards {
            let i = u64::from(row.shard.shard_index);
            let target = joined(&own.target, i);
            let current = joined(&own.current, i);
            let revoking = joined(&own.revoking, i);
            let state = if target.is_empty() {
                "UNASSIGNED"
            } else if current.is_empty() {
                "PENDING_ACK"
            } else if current == target && revoking.is_empty() {
                "CURRENT"
            } else {
                "TRANSITIONING"
            };
            out.push(GrafanaShardRow::from_offsets(
                row,
                shard_count,
                ShardOwners {
                    target,
                    current,
                    state: state.to_owned(),
                },
            ));
        }
    }
    Ok(out)
}

/// `assignments`: one row per shard of each group: target, current and revoking owners (live members).
pub async fn assignment_rows(
    c: &Coordinator,
    names: &[GroupName],
) -> Result<Vec<GrafanaAssignmentRow>, CoordError> {
    let mut out = Vec::new();
    for name in names {
        let own = ownership(c, name).await?;
        let shards = c.require_group(name).await?.group.assignable_shards();
        for s in shards {
            let i = u64::from(s);
            out.push(GrafanaAssignmentRow {
                stream_prefix: name.stream_prefix.clone(),
                consumer_group: name.consumer_group.clone(),
                shard_index: s,
                target_owners: joined(&own.target, i),
                current_owners: joined(&own.current, i),
                revoking_owners: joined(&own.revoking, i),
            });
        }
    }
    Ok(out)
}
