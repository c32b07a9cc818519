//! Rows of the Grafana routes `groups`, `members`, `shards` and `assignments`, flat as the contract's
//! JSON API dashboards expect (owner lists as comma-joined strings).

use super::rates;
use crate::cache::GroupName;
use crate::coordinator::Coordinator;
use crate::domain_error::CoordError;
use rsc_protocol::wire::monitoring::MemberMetadata;
use serde_json::{Value, json};
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
pub async fn group_rows(c: &Coordinator, names: &[GroupName]) -> Result<Vec<Value>, CoordError> {
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
        let (produced, consumed) = rates::observe(
            (name.stream_prefix.clone(), name.consumer_group.clone()),
            offsets.total_stream_length,
            offsets.total_lag,
        );
        out.push(json!({
            "streamPrefix": g.stream_prefix, "consumerGroup": g.consumer_group,
            "state": crate::views::group_response(g).state,
            "groupEpoch": g.group_epoch, "assignmentEpoch": g.assignment_epoch,
            "metadataVersion": g.metadata_version, "shardCount": g.shard_count,
            "activeMembers": active, "totalMembers": members.len(),
            "currentShards": current, "targetShards": target,
            "assignedShardRatio": format!("{current} / {}", g.shard_count),
            "revokingShards": revoking,
            "totalStreamLength": offsets.total_stream_length,
            "totalPendingCount": offsets.total_pending_count,
            "totalLag": offsets.total_lag,
            "producedPerSecond": produced, "consumedPerSecond": consumed,
            "totalMemoryUsageBytes": offsets.total_memory_usage_bytes,
            "memoryUsageKnown": offsets.memory_usage_known,
        }));
    }
    Ok(out)
}

fn member_row(name: &GroupName, m: &MemberMetadata) -> Value {
    json!({
        "streamPrefix": name.stream_prefix, "consumerGroup": name.consumer_group,
        "memberId": m.member_id, "memberName": m.member_name, "state": m.state,
        "memberEpoch": m.member_epoch, "metadataVersion": m.metadata_version,
        "currentShardCount": m.current_assignment.len(), "revokingShardCount": m.revoking.len(),
        "runtimeMaxConcurrency": m.runtime_max_concurrency,
        "activeConsumerWorkers": m.active_consumer_workers,
        "lastHeartbeatAt": m.last_heartbeat_at, "memberLeaseExpiresAt": m.member_lease_expires_at,
    })
}

/// `members`: one row per member of one group.
pub async fn member_rows(c: &Coordinator, name: &GroupName) -> Result<Vec<Value>, CoordError> {
    Ok(c.monitoring()
        .members(name)
        .await?
        .iter()
        .map(|m| member_row(name, m))
        .collect())
}

/// `shards`: one row per shard of each group: the offsets row plus owners and the owner state.
pub async fn shard_rows(c: &Coordinator, names: &[GroupName]) -> Result<Vec<Value>, CoordError> {
    let mut out = Vec::new();
    for name in names {
        let offsets = c.monitoring().offsets(name).await?;
        let own = ownership(c, name).await?;
        let shard_count = c.require_group(name).await?.group.shard_count;
        for row in &offsets.shards {
            let i = u64::from(row.shard.shard_index);
            let mut v = serde_json::to_value(row).unwrap_or(Value::Null);
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
            if let Some(o) = v.as_object_mut() {
                o.insert("shardCount".into(), json!(shard_count));
                o.insert("shardIndex".into(), json!(i));
                o.insert("shardLabel".into(), json!(format!(":{i}")));
                o.insert("lagKnown".into(), json!(row.lag.is_some()));
                o.insert("producedPerSecond".into(), Value::Null);
                o.insert("consumedPerSecond".into(), Value::Null);
                o.insert(
                    "memoryUsageKnown".into(),
                    json!(row.memory_usage_bytes.is_some()),
                );
                o.insert("targetOwnerMemberIds".into(), json!(target));
                o.insert("currentOwnerMemberIds".into(), json!(current));
                o.insert("ownerState".into(), json!(state));
                o.insert(
                    "ownerMemberIds".into(),
                    json!(row.owner_member_ids.join(",")),
                );
            }
            out.push(v);
        }
    }
    Ok(out)
}

/// `assignments`: one row per shard of each group: target, current and revoking owners (live members).
pub async fn assignment_rows(
    c: &Coordinator,
    names: &[GroupName],
) -> Result<Vec<Value>, CoordError> {
    let mut out = Vec::new();
    for name in names {
        let own = ownership(c, name).await?;
        let shards = c.require_group(name).await?.group.assignable_shards();
        for s in shards {
            let i = u64::from(s);
            out.push(json!({
                "streamPrefix": name.stream_prefix, "consumerGroup": name.consumer_group,
                "shardIndex": i, "targetOwners": joined(&own.target, i),
                "currentOwners": joined(&own.current, i), "revokingOwners": joined(&own.revoking, i),
            }));
        }
    }
    Ok(out)
}
