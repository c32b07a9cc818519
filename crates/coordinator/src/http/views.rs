//! Read-only views of a group aggregate in the contract's shapes (GroupResponse, routing, a migration).

use crate::runtime::clock::iso_ms;
use crate::runtime::shown_keys;
use rsc_group::model::Migration;
use rsc_group::model::{Group, MemberState};
use rsc_group::stream::StreamRecord;
use rsc_protocol::slot::redis_slot;
use rsc_protocol::wire::resharding::MigrationResponse;
use rsc_protocol::wire::{GroupResponse, MigrationView, ProducerRoutingResponse, RoutingShard};
use rsc_store::Shard;
use std::collections::BTreeMap;

/// GroupResponse (coord/v1 contract). `activeMigration` is the stream's migration as this group adopted it
/// (its group-local state and shard counts), null once it ended for the group or before the group adopted it.
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
        active_migration: g.active_migration().map(migration_view),
        target_assignment_summary,
        current_assignment_summary,
    }
}

/// Producer routing (coord/v1 contract): every index `0..shardCount`, ascending, with its cluster slot. The
/// shard count and routing version are the stream record's (the group's count only when there is none).
pub fn routing_response(g: &Group, stream: Option<&StreamRecord>) -> ProducerRoutingResponse {
    let shard_count = stream.map_or(g.shard_count, |s| s.shard_count);
    let shards = (0..shard_count)
        .map(|i| {
            let stream_key = shown_keys::shard_stream(&Shard::new(g.stream_prefix.as_str(), i));
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
        shard_count,
        stream_key_pattern: shown_keys::shard_stream_pattern(&g.stream_prefix),
        shards,
        routing_version: stream.map(|s| s.routing_version),
        quiesce: None,
    }
}

/// The contract's Migration object as GroupResponse carries it (§3.3).
fn migration_view(m: &Migration) -> MigrationView {
    MigrationView {
        resharding_id: m.resharding_id.clone(),
        from_shard_count: m.from_shard_count,
        to_shard_count: m.to_shard_count,
        state: m.state.as_str().to_owned(),
        created_at: iso_ms(m.created_at_ms),
        updated_at: iso_ms(m.updated_at_ms),
    }
}

/// The contract's Migration object, with the phase timestamps rsc also keeps.
pub fn migration_response(m: &Migration) -> MigrationResponse {
    MigrationResponse {
        resharding_id: m.resharding_id.clone(),
        from_shard_count: m.from_shard_count,
        to_shard_count: m.to_shard_count,
        state: m.state.as_str().to_owned(),
        created_at: iso_ms(m.created_at_ms),
        updated_at: iso_ms(m.updated_at_ms),
        requested_by: m.requested_by.clone(),
        reason: m.reason.clone(),
        activated_at: m.activated_at_ms.map(iso_ms),
        draining_at: m.draining_at_ms.map(iso_ms),
        completed_at: m.completed_at_ms.map(iso_ms),
        end_reason: m.end_reason.clone(),
        consumer_group: None,
    }
}
