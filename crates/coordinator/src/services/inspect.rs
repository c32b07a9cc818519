//! Operator views of one group beyond members and assignments (coord/v1 contract): consumption progress
//! as members report it, per-shard offsets as Redis reports them, the group's migrations, and the group
//! summary with its metadata-durability state. Read-only; every value comes from Redis at request time.

use crate::domain_error::{BadRequest, CoordError, Unavailable};
use crate::http::views::{group_response, migration_response};
use crate::runtime::cache::GroupName;
use crate::runtime::coordinator::Monitoring;
use crate::services::durability::views::{MonitoringGroupView, durability_view};
use crate::services::offsets::read_shard;
use rsc_group::model::Migration;
use rsc_protocol::wire::ShardId;
use rsc_protocol::wire::monitoring::{
    ConsumerShardProgress, ConsumptionResponse, ShardOffsetsView, StreamShardOffsetsResponse,
};
use rsc_protocol::wire::resharding::MigrationList;
use serde_json::Value;
use std::collections::HashMap;

/// A consumer's reported (last delivered id, last acknowledged id) of a shard.
type ConsumerIds = (Option<String>, Option<String>);

/// Offsets of groups with more shards than this are refused (ask per shard via the messages API instead).
pub const MAX_OFFSET_SHARDS: usize = 4096;

impl Monitoring<'_> {
    /// `GET /coord/v1/monitoring/streams/{p}/groups/{g}`: GroupResponse plus `metadataDurability`.
    pub async fn monitoring_group(
        &self,
        name: &GroupName,
    ) -> Result<MonitoringGroupView, CoordError> {
        let c = self.require_group(name).await?;
        Ok(MonitoringGroupView {
            group: group_response(&c.group),
            metadata_durability: durability_view(&c.group),
        })
    }

    /// `GET …/consumption`: every member's reported shard progress, sorted by member then shard.
    pub async fn consumption(&self, name: &GroupName) -> Result<ConsumptionResponse, CoordError> {
        let c = self.require_group(name).await?;
        let g = &c.group;
        let progress = self
            .metrics()
            .time_store("progress", self.store().progress_all(name))
            .await
            .map_err(CoordError::from)?;
        let mut rows = Vec::new();
        for (member_id, doc) in progress {
            let Ok(doc) = serde_json::from_str::<Value>(&doc) else {
                continue;
            };
            let member = g.members.get(&member_id);
            let mut shard_rows: Vec<(u32, ConsumerShardProgress)> = doc
                .get("shardProgress")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|p| {
                    // Stored reports were validated on the heartbeat: a shard index is a u32.
                    let shard = u32::try_from(p.get("shard")?.get("shardIndex")?.as_u64()?).ok()?;
                    let field = |k: &str| p.get(k).cloned().unwrap_or(Value::Null);
                    Some((
                        shard,
                        ConsumerShardProgress {
                            stream_prefix: g.stream_prefix.clone(),
                            consumer_group: g.consumer_group.clone(),
                            member_id: member_id.clone(),
                            member_name: member
                                .map_or(member_id.as_str(), |m| m.member_name.as_str())
                                .to_owned(),
                            member_state: member.map_or("UNKNOWN", |m| m.state.as_str()).to_owned(),
                            shard: ShardId::new(shard),
                            stream_key: field("streamKey"),
                            last_delivered_id: field("lastDeliveredId"),
                            last_acked_id: field("lastAckedId"),
                            pending_count: p
                                .get("pendingCount")
                                .and_then(Value::as_i64)
                                .unwrap_or(0),
                            updated_at: field("updatedAt"),
                        },
                    ))
                })
                .collect();
            shard_rows.sort_by_key(|(s, _)| *s);
            rows.extend(shard_rows.into_iter().map(|(_, v)| v));
        }
        Ok(ConsumptionResponse { progress: rows })
    }

    /// `GET …/migrations`: every migration the group keeps, oldest first, and the active one's id.
    pub async fn migrations(&self, name: &GroupName) -> Result<MigrationList, CoordError> {
        let c = self.require_group(name).await?;
        let mut list: Vec<&Migration> = c.group.migrations.iter().collect();
        list.sort_by_key(|m| m.created_at_ms);
        Ok(MigrationList {
            migrations: list.into_iter().map(migration_response).collect(),
            active_resharding_id: c.group.active_migration_id.clone(),
        })
    }

    /// `GET …/offsets`: per-shard stream length, ids, pending and lag, with totals.
    pub async fn offsets(
        &self,
        name: &GroupName,
    ) -> Result<StreamShardOffsetsResponse, CoordError> {
        let c = self.require_group(name).await?;
        let g = &c.group;
        let shards = g.assignable_shards();
        if shards.len() > MAX_OFFSET_SHARDS {
            return Err(BadRequest::TooManyShardsToList {
                shards: shards.len(),
                max: MAX_OFFSET_SHARDS,
            }
            .into());
        }
        let mut owners: HashMap<u32, Vec<String>> = HashMap::new();
        for m in g.members.values().filter(|m| m.state.is_live()) {
            for s in &m.reported_owned {
                owners.entry(*s).or_default().push(m.member_id.clone());
            }
        }
        let slot_map = self
            .metrics()
            .time_store("cluster_slots", self.store().cluster_slot_owners())
            .await
            .map_err(CoordError::from)?;
        let consumer_ids = self.consumer_ids(name, &owners).await?;
        let mut rows = Vec::with_capacity(shards.len());
        let (mut length, mut pending, mut lag, mut memory) = (0i64, 0i64, Some(0i64), 0i64);
        let mut memory_known = true;
        for s in shards {
            let o = self
                .metrics()
                .time_store(
                    "xinfo",
                    read_shard(self.store(), &g.stream_prefix, &g.consumer_group, s, true),
                )
                .await
                .map_err(|e| Unavailable::quoting(&e))?;
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
            let node = slot_map
                .as_deref()
                .and_then(|m| rsc_store::owner_of(m, o.redis_slot));
            let consumer = consumer_ids.get(&s);
            rows.push(ShardOffsetsView {
                stream_prefix: g.stream_prefix.clone(),
                consumer_group: g.consumer_group.clone(),
                shard: ShardId::new(s),
                stream_key: o.stream_key,
                redis_slot: o.redis_slot,
                redis_node_endpoint: node.map(|n| n.endpoint.clone()),
                redis_node_id: node.and_then(|n| n.node_id.clone()),
                redis_slot_range_start: node.map(|n| n.start),
                redis_slot_range_end: node.map(|n| n.end),
                stream_exists: o.exists,
                stream_length: o.stream_length,
                first_record_id: o.first_record_id,
                last_record_id: o.last_record_id,
                last_generated_id: o.last_generated_id,
                group_last_delivered_id: o.group_last_delivered_id,
                consumer_last_delivered_id: consumer.and_then(|c| c.0.clone()),
                consumer_last_acked_id: consumer.and_then(|c| c.1.clone()),
                entries_read: o.entries_read,
                pending_count: o.pending_count.unwrap_or(0),
                lag: o.lag,
                memory_usage_bytes: o.memory_usage_bytes,
                owner_member_ids: owners.remove(&s).unwrap_or_default(),
                draining: s >= g.shard_count,
            });
        }
        Ok(StreamShardOffsetsResponse {
            stream_prefix: g.stream_prefix.clone(),
            consumer_group: g.consumer_group.clone(),
            shards: rows,
            total_stream_length: length,
            total_pending_count: pending,
            total_lag: lag,
            total_memory_usage_bytes: memory,
            memory_usage_known: memory_known,
        })
    }

    /// Per shard, the last delivered and acknowledged ids its consumer reported (from the progress hash in
    /// Redis): the report of a live owner of the shard when there is one, else any member's.
    async fn consumer_ids(
        &self,
        name: &GroupName,
        owners: &HashMap<u32, Vec<String>>,
    ) -> Result<HashMap<u32, ConsumerIds>, CoordError> {
        let progress = self
            .metrics()
            .time_store("progress", self.store().progress_all(name))
            .await
            .map_err(CoordError::from)?;
        let mut out: HashMap<u32, (bool, ConsumerIds)> = HashMap::new();
        for (member_id, doc) in progress {
            let Ok(doc) = serde_json::from_str::<Value>(&doc) else {
                continue;
            };
            for p in doc
                .get("shardProgress")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let Some(shard) = p
                    .get("shard")
                    .and_then(|s| s.get("shardIndex"))
                    .and_then(Value::as_u64)
                    .and_then(|s| u32::try_from(s).ok())
                else {
                    continue;
                };
                let id = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_owned);
                let owner = owners.get(&shard).is_some_and(|o| o.contains(&member_id));
                let ids = (id("lastDeliveredId"), id("lastAckedId"));
                match out.get(&shard) {
                    Some((true, _)) => {}
                    Some((false, _)) if !owner => {}
                    _ => {
                        out.insert(shard, (owner, ids));
                    }
                }
            }
        }
        Ok(out.into_iter().map(|(s, (_, ids))| (s, ids)).collect())
    }
}
