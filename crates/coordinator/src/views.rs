//! Read-only views of a group aggregate in the contract's shapes (GroupResponse, routing).

use rsc_group::model::{Group, MemberState};
use rsc_protocol::names::{shard_stream_key, stream_key_pattern};
use rsc_protocol::slot::redis_slot;
use rsc_protocol::wire::{GroupResponse, ProducerRoutingResponse, RoutingShard};
use std::collections::BTreeMap;

/// GroupResponse (coord/v1 contract).
pub fn group_response(g: &Group) -> GroupResponse {
    let target_assignment_summary: BTreeMap<String, usize> = g
        .members
        .values()
        .filter(|m| m.state == MemberState::Active)
        .map(|m| {
            (
                m.member_id.clone(),
                g.target_assignments
                    .get(&m.member_id)
                    .map_or(0, |t| t.len()),
            )
        })
        .collect();
    let current_assignment_summary: BTreeMap<String, usize> = g
        .members
        .values()
        .filter(|m| m.state.is_live() && !m.reported_owned.is_empty())
        .map(|m| (m.member_id.clone(), m.reported_owned.len()))
        .collect();
    GroupResponse {
        stream_prefix: g.stream_prefix.clone(),
        consumer_group: g.consumer_group.clone(),
        state: g.state.as_str().to_owned(),
        group_epoch: g.group_epoch,
        assignment_epoch: g.assignment_epoch,
        metadata_version: g.metadata_version,
        shard_count: g.shard_count,
        active_migration: None,
        target_assignment_summary,
        current_assignment_summary,
    }
}

/// Producer routing (coord/v1 contract): every index `0..shardCount`, ascending, with its cluster slot.
pub fn routing_response(g: &Group) -> ProducerRoutingResponse {
    let shards = (0..g.shard_count)
        .map(|i| {
            let stream_key = shard_stream_key(&g.stream_prefix, i);
            RoutingShard {
                shard_index: i,
                redis_slot: redis_slot(stream_key.as_bytes()),
                stream_key,
            }
        })
        .collect();
    ProducerRoutingResponse {
        stream_prefix: g.stream_prefix.clone(),
        consumer_group: g.consumer_group.clone(),
        metadata_version: g.metadata_version,
        shard_count: g.shard_count,
        stream_key_pattern: stream_key_pattern(&g.stream_prefix),
        shards,
    }
}
