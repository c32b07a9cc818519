//! Operator views of one group beyond members and assignments (coord/v1 contract): consumption progress
//! as members report it, per-shard offsets as Redis reports them, the group's migrations, and the group
//! summary with its metadata-durability state. Read-only; every value comes from Redis at request time.

use crate::cache::GroupName;
use crate::clock::iso_ms;
use crate::coordinator::Coordinator;
use crate::error::ApiError;
use crate::offsets::read_shard;
use crate::views::group_response;
use rsc_group::migration::Migration;
use rsc_group::model::Group;
use rsc_protocol::errors::ErrorCode;
use rsc_protocol::wire::ShardId;
use serde_json::{Value, json};
use std::collections::HashMap;

/// Offsets of groups with more shards than this are refused (ask per shard via the messages API instead).
pub const MAX_OFFSET_SHARDS: usize = 4096;

/// The contract's Migration object, with the phase timestamps rsc also keeps.
pub fn migration_view(m: &Migration) -> Value {
    json!({
        "reshardingId": m.resharding_id,
        "fromShardCount": m.from_shard_count,
        "toShardCount": m.to_shard_count,
        "state": m.state.as_str(),
        "createdAt": iso_ms(m.created_at_ms),
        "updatedAt": iso_ms(m.updated_at_ms),
        "activatedAt": m.activated_at_ms.map(iso_ms),
        "drainingAt": m.draining_at_ms.map(iso_ms),
        "completedAt": m.completed_at_ms.map(iso_ms),
        "requestedBy": m.requested_by,
        "reason": m.reason,
        "endReason": m.end_reason,
    })
}

/// One piece of rollback evidence: what, by whom, when.
fn evidence_view(e: &rsc_group::durability::Evidence) -> Value {
    json!({
        "signal": e.kind.as_str(),
        "observed": e.observed,
        "stored": e.stored,
        "source": e.source,
        "principal": e.principal,
        "at": iso_ms(e.at_ms),
    })
}

/// The durability part of a group's monitoring: suspicion (with who raised it), the last dismissal and
/// an open correction round.
pub fn durability_view(g: &Group) -> Value {
    let suspicion = g.rollback_suspicion.as_ref().map(|s| {
        json!({
            "signals": s.kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>(),
            "detectedAt": iso_ms(s.detected_at_ms),
            "updatedAt": iso_ms(s.updated_at_ms),
            "storedMetadataVersion": s.stored_metadata_version,
            "highestObservedMetadataVersion": s.highest_observed_metadata_version,
            "highestObservedEpoch": s.highest_observed_epoch,
            "highestObservedRevision": s.highest_observed_revision,
            "lastSignal": s.last_signal,
            "raisedBy": s.evidence.first().map(evidence_view),
            "evidence": s.evidence.iter().map(evidence_view).collect::<Vec<_>>(),
            "mutationsBlocked": true,
        })
    });
    let dismissal = g.rollback_dismissal.as_ref().map(|d| {
        json!({
            "principal": d.principal,
            "requestedBy": d.requested_by,
            "reason": d.reason,
            "at": iso_ms(d.at_ms),
            "signals": d.suspicion.kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>(),
            "detectedAt": iso_ms(d.suspicion.detected_at_ms),
            "highestObservedMetadataVersion": d.suspicion.highest_observed_metadata_version,
            "highestObservedEpoch": d.suspicion.highest_observed_epoch,
            "highestObservedRevision": d.suspicion.highest_observed_revision,
            "evidence": d.suspicion.evidence.iter().map(evidence_view).collect::<Vec<_>>(),
        })
    });
    let correction = g.metadata_correction.as_ref().map(|c| {
        json!({
            "targetMetadataVersion": c.target_metadata_version,
            "observedMetadataVersion": c.observed_metadata_version,
            "requestedAt": iso_ms(c.requested_at_ms),
            "updatedAt": iso_ms(c.updated_at_ms),
            "acknowledgedMembers": c.acknowledged_members,
        })
    });
    json!({
        "status": if g.rollback_suspicion.is_some() { "SUSPECTED_ROLLBACK" } else { "OK" },
        "lifecycleId": g.lifecycle_id,
        "storeRevision": g.store_revision,
        "rollbackSuspicion": suspicion,
        "lastDismissal": dismissal,
        "metadataCorrection": correction,
    })
}

impl Coordinator {
    /// `GET /coord/v1/monitoring/streams/{p}/groups/{g}`: GroupResponse plus `metadataDurability`.
    pub async fn monitoring_group(&self, name: &GroupName) -> Result<Value, ApiError> {
        let c = self.require_group(name).await?;
        let mut body = serde_json::to_value(group_response(&c.group)).unwrap_or(json!({}));
        if let Some(obj) = body.as_object_mut() {
            obj.insert("metadataDurability".into(), durability_view(&c.group));
        }
        Ok(body)
    }

    /// `GET …/consumption`: every member's reported shard progress, sorted by member then shard.
    pub async fn consumption(&self, name: &GroupName) -> Result<Value, ApiError> {
        let c = self.require_group(name).await?;
        let g = &c.group;
        let progress = self
            .metrics
            .time_store("progress", self.store.progress_all(&self.keys(name)))
            .await
            .map_err(ApiError::from)?;
        let mut rows = Vec::new();
        for (member_id, doc) in progress {
            let Ok(doc) = serde_json::from_str::<Value>(&doc) else {
                continue;
            };
            let member = g.members.get(&member_id);
            let mut shard_rows: Vec<(u64, Value)> = doc
                .get("shardProgress")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|p| {
                    let shard = p.get("shard")?.get("shardIndex")?.as_u64()?;
                    Some((
                        shard,
                        json!({
                            "streamPrefix": g.stream_prefix,
                            "consumerGroup": g.consumer_group,
                            "memberId": member_id,
                            "memberName": member.map_or(member_id.as_str(), |m| m.member_name.as_str()),
                            "memberState": member.map_or("UNKNOWN", |m| m.state.as_str()),
                            "shard": {"shardIndex": shard},
                            "streamKey": p.get("streamKey").cloned().unwrap_or(Value::Null),
                            "lastDeliveredId": p.get("lastDeliveredId").cloned().unwrap_or(Value::Null),
                            "lastAckedId": p.get("lastAckedId").cloned().unwrap_or(Value::Null),
                            "pendingCount": p.get("pendingCount").and_then(Value::as_i64).unwrap_or(0),
                            "updatedAt": p.get("updatedAt").cloned().unwrap_or(Value::Null),
                        }),
                    ))
                })
                .collect();
            shard_rows.sort_by_key(|(s, _)| *s);
            rows.extend(shard_rows.into_iter().map(|(_, v)| v));
        }
        Ok(json!({ "progress": rows }))
    }

    /// `GET …/migrations`: every migration the group keeps, oldest first, and the active one's id.
    pub async fn migrations(&self, name: &GroupName) -> Result<Value, ApiError> {
        let c = self.require_group(name).await?;
        let mut list: Vec<&Migration> = c.group.migrations.iter().collect();
        list.sort_by_key(|m| m.created_at_ms);
        Ok(json!({
            "migrations": list.into_iter().map(migration_view).collect::<Vec<_>>(),
            "activeReshardingId": c.group.active_migration_id,
        }))
    }

    /// `GET …/offsets`: per-shard stream length, ids, pending and lag, with totals.
    pub async fn offsets(&self, name: &GroupName) -> Result<Value, ApiError> {
        let c = self.require_group(name).await?;
        let g = &c.group;
        let shards = g.assignable_shards();
        if shards.len() > MAX_OFFSET_SHARDS {
            return Err(ApiError::new(
                ErrorCode::InvalidRequest,
                format!(
                    "the group has {} shards; offsets are listed for at most {MAX_OFFSET_SHARDS} — use the \
                     shard_* metrics instead",
                    shards.len()
                ),
            ));
        }
        let mut owners: HashMap<u32, Vec<String>> = HashMap::new();
        for m in g.members.values().filter(|m| m.state.is_live()) {
            for s in &m.reported_owned {
                owners.entry(*s).or_default().push(m.member_id.clone());
            }
        }
        let mut rows = Vec::with_capacity(shards.len());
        let (mut length, mut pending, mut lag, mut memory) = (0i64, 0i64, Some(0i64), 0i64);
        let mut memory_known = true;
        for s in shards {
            let o = self
                .metrics
                .time_store(
                    "xinfo",
                    read_shard(&self.store, &g.stream_prefix, &g.consumer_group, s, true),
                )
                .await
                .map_err(|e| {
                    ApiError::new(
                        ErrorCode::RedisUnavailable,
                        format!(
                            "Redis is unavailable: {}; retry later",
                            crate::error::store_error_text(&e)
                        ),
                    )
                })?;
            length += o.stream_length;
            pending += o.pending_count.unwrap_or(0);
            lag = match (lag, o.lag) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            };
            match o.memory_usage_bytes {
                Some(m) => memory += m,
                None => memory_known = o.exists && memory_known,
            }
            rows.push(json!({
                "streamPrefix": g.stream_prefix,
                "consumerGroup": g.consumer_group,
                "shard": ShardId::new(s),
                "streamKey": o.stream_key,
                "redisSlot": o.redis_slot,
                "redisNodeEndpoint": Value::Null,
                "redisNodeId": Value::Null,
                "redisSlotRangeStart": Value::Null,
                "redisSlotRangeEnd": Value::Null,
                "streamExists": o.exists,
                "streamLength": o.stream_length,
                "firstRecordId": o.first_record_id,
                "lastRecordId": o.last_record_id,
                "lastGeneratedId": o.last_generated_id,
                "groupLastDeliveredId": o.group_last_delivered_id,
                "consumerLastDeliveredId": Value::Null,
                "consumerLastAckedId": Value::Null,
                "entriesRead": o.entries_read,
                "pendingCount": o.pending_count.unwrap_or(0),
                "lag": o.lag,
                "memoryUsageBytes": o.memory_usage_bytes,
                "ownerMemberIds": owners.remove(&s).unwrap_or_default(),
                "draining": s >= g.shard_count,
            }));
        }
        Ok(json!({
            "streamPrefix": g.stream_prefix,
            "consumerGroup": g.consumer_group,
            "shards": rows,
            "totalStreamLength": length,
            "totalPendingCount": pending,
            "totalLag": lag,
            "totalMemoryUsageBytes": memory,
            "memoryUsageKnown": memory_known,
        }))
    }
}
