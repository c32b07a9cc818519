//! Tests of how the SDK sets up and uses the member protocol model: its read margin agrees with the read
//! loop's own lease check, and its requests carry the member name, a random tag and `ackedAt`. The
//! protocol itself is tested in `rsc-member`.

use super::*;
use crate::consumer::config::read_lease_left;
use rsc_member::Applied;
use rsc_protocol::wire::{AssignmentView, HeartbeatResponse, HeartbeatStatus, ShardId};
use std::collections::BTreeSet;
use std::time::Instant;

const LEASE: Duration = Duration::from_secs(10);

fn cap() -> RuntimeConsumerCapacity {
    RuntimeConsumerCapacity {
        runtime_max_concurrency: 1,
        available_concurrency: 1,
    }
}

fn ok(epoch: i64, assigned: &[u32]) -> HeartbeatResponse {
    HeartbeatResponse {
        response_to: "r".into(),
        status: HeartbeatStatus::Ok,
        member_id: "m".into(),
        member_epoch: epoch,
        heartbeat_interval_ms: 3000,
        rebalance_timeout_ms: 60000,
        group_epoch: epoch,
        assignment_epoch: epoch,
        metadata_version: epoch + 10,
        assignment: AssignmentView {
            assigned_shards: assigned.iter().map(|&s| ShardId::new(s)).collect(),
            pending_shards: vec![],
            metadata_version: epoch + 10,
        },
        message: None,
        read_fences: Default::default(),
        routing_version: None,
    }
}

fn joined(assigned: &[u32]) -> (Membership, Instant) {
    let mut m = new_membership("m", LEASE, None);
    let t0 = Instant::now();
    request(&mut m, cap(), |_| LocalShard::default());
    assert_eq!(m.on_response(t0, &ok(2, assigned)), Applied::Accepted);
    (m, t0)
}

#[test]
fn no_shard_is_readable_within_the_read_margin_of_the_lease_end() {
    let (m, t0) = joined(&[0, 1]);
    let end = t0 + LEASE;
    let tick = Duration::from_millis(1);
    let set: BTreeSet<u32> = [0, 1].into();
    assert_eq!(m.readable(end - READ_LEASE_MARGIN - tick), set);
    for t in [
        end - READ_LEASE_MARGIN,
        end - READ_LEASE_MARGIN + tick,
        end - READ_LEASE_MARGIN / 2,
        end - tick,
    ] {
        assert!(
            m.readable(t).is_empty(),
            "{:?} before the lease end",
            end - t
        );
        assert!(m.lease_valid(t), "the lease itself still runs");
    }
    // The read loop's own check agrees at every instant, so the member never starts a loop that
    // refuses to read.
    let mut t = end - READ_LEASE_MARGIN * 2;
    while t <= end {
        assert_eq!(
            m.readable(t).is_empty(),
            read_lease_left(m.lease_until(), t).is_none(),
            "{:?} before the lease end",
            end - t
        );
        t += tick;
    }
}

#[test]
fn requests_carry_the_name_a_random_tag_and_acked_at() {
    let (mut m, t0) = joined(&[0]);
    let a = request(&mut m, cap(), |_| LocalShard::default());
    let b = request(&mut m, cap(), |_| LocalShard::default());
    assert_eq!(a.member_name.as_deref(), Some("m"));
    let (a_id, b_id) = (a.request_id.as_str(), b.request_id.as_str());
    assert!(
        a_id.starts_with("m-2-") && b_id.starts_with("m-3-"),
        "{a_id} {b_id}"
    );
    assert_eq!(a_id.len(), "m-2-".len() + 8, "{a_id}");
    m.on_response(t0, &ok(3, &[]));
    m.drained(0);
    let req = request(&mut m, cap(), |_| LocalShard::default());
    let acked_at = req.revoking_shards[0].acked_at.as_deref().unwrap_or("");
    assert!(
        time::OffsetDateTime::parse(acked_at, &time::format_description::well_known::Rfc3339)
            .is_ok(),
        "{acked_at:?}"
    );
}
