//! Benchmark of the steady heartbeat transition: `decide` for a member of a converged (STABLE) group that
//! reports exactly what it owns, at group sizes of 10, 100, 1,000 and 10,000 members. Every member owns one
//! shard (shards = members), so the member's own work is the same at every size and any growth comes from
//! the size of the group. The group and the request are built outside the timed section; the setup checks
//! that the decision really is `Outcome::Steady`.

mod common;

use common::{NOW_MS, converged_group};
use divan::Bencher;
use rsc_group::heartbeat::{Outcome, decide};
use rsc_group::model::Group;
use rsc_group::timing::Timing;
use rsc_protocol::wire::{HeartbeatRequest, RuntimeConsumerCapacity, ShardId};

fn main() {
    divan::main();
}

/// The steady heartbeat of the member in the middle of the group.
fn steady_request(g: &Group) -> HeartbeatRequest {
    let m = g
        .members
        .values()
        .nth(g.members.len() / 2)
        .expect("a member");
    HeartbeatRequest {
        protocol_version: 1,
        request_id: "r-1".into(),
        member_id: m.member_id.clone(),
        member_name: None,
        client_name: None,
        client_version: None,
        group_instance_id: None,
        member_epoch: m.member_epoch,
        metadata_version: g.metadata_version,
        runtime_consumer_capacity: RuntimeConsumerCapacity {
            runtime_max_concurrency: 1,
            available_concurrency: 1,
        },
        owned_shards: m.assigned.iter().map(|&s| ShardId::new(s)).collect(),
        revoking_shards: vec![],
        shard_progress: vec![],
    }
}

#[divan::bench(args = [10, 100, 1000, 10000])]
fn steady(bencher: Bencher, members: usize) {
    let g = converged_group(members, members as u32);
    let req = steady_request(&g);
    let timing = Timing::default();
    let d = decide(Some(&g), &req.member_id, &req, NOW_MS + 1_000, &timing);
    assert_eq!(
        d.outcome,
        Outcome::Steady,
        "the bench group is not converged"
    );
    assert_eq!(d.response.assignment.assigned_shards.len(), 1);
    bencher.bench(|| decide(Some(&g), &req.member_id, &req, NOW_MS + 1_000, &timing));
}
