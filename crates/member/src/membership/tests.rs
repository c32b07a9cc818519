//! Tests of the member protocol model: joins, assignments, revocations, reports, fencing, leaves, the
//! client lease and the read margin, request ids, and simulated time.

use super::*;
use rsc_protocol::wire::AssignmentView;

const LEASE: Duration = Duration::from_secs(10);

fn cap() -> RuntimeConsumerCapacity {
    RuntimeConsumerCapacity {
        runtime_max_concurrency: 1,
        available_concurrency: 1,
    }
}

fn out() -> Outgoing<'static> {
    Outgoing {
        capacity: cap(),
        request_id_suffix: "",
        acked_at: None,
    }
}

fn resp(
    status: HeartbeatStatus,
    epoch: i64,
    assigned: &[u32],
    pending: &[u32],
) -> HeartbeatResponse {
    HeartbeatResponse {
        response_to: "r".into(),
        status,
        member_id: "m".into(),
        member_epoch: epoch,
        heartbeat_interval_ms: 3000,
        rebalance_timeout_ms: 60000,
        group_epoch: epoch,
        assignment_epoch: epoch,
        metadata_version: epoch + 10,
        assignment: AssignmentView {
            assigned_shards: assigned.iter().map(|&s| ShardId::new(s)).collect(),
            pending_shards: pending.iter().map(|&s| ShardId::new(s)).collect(),
            metadata_version: epoch + 10,
        },
        message: None,
        read_fences: Default::default(),
        routing_version: None,
    }
}

fn set(v: &[u32]) -> BTreeSet<u32> {
    v.iter().copied().collect()
}

fn joined(assigned: &[u32]) -> (Membership, Instant) {
    let mut m = Membership::new("m", LEASE);
    let t0 = Instant::now();
    let req = m.request(out(), |_| LocalShard::default());
    assert_eq!(req.member_epoch, 0);
    assert_eq!(req.protocol_version, 1);
    assert_eq!(
        m.on_response(t0, &resp(HeartbeatStatus::Ok, 2, assigned, &[])),
        Applied::Accepted
    );
    (m, t0)
}

#[test]
fn ok_grants_shards_with_reclaim_and_renews_the_lease() {
    let (mut m, t0) = joined(&[0, 1]);
    assert_eq!(m.readable(t0), set(&[0, 1]));
    assert!(m.take_reclaim(0));
    assert!(!m.take_reclaim(0), "reclaim happens once");
    let req = m.request(out(), |_| LocalShard::default());
    assert_eq!(req.member_epoch, 2);
    assert_eq!(req.metadata_version, 12);
    assert_eq!(req.owned_shards, vec![ShardId::new(0), ShardId::new(1)]);
}

#[test]
fn pending_shards_are_not_read_until_assigned() {
    let (m, t0) = {
        let mut m = Membership::new("m", LEASE);
        let t0 = Instant::now();
        m.request(out(), |_| LocalShard::default());
        m.on_response(t0, &resp(HeartbeatStatus::Ok, 2, &[0], &[1, 2]));
        (m, t0)
    };
    assert_eq!(m.readable(t0), set(&[0]));
}

#[test]
fn revoked_shard_is_reported_draining_then_revoked_once() {
    let (mut m, t0) = joined(&[0, 1]);
    m.request(out(), |_| LocalShard::default());
    m.on_response(t0, &resp(HeartbeatStatus::Ok, 3, &[0], &[]));
    assert_eq!(m.readable(t0), set(&[0]));
    let req = m.request(out(), |s| LocalShard {
        in_flight: if s == 1 { 4 } else { 0 },
        progress: None,
    });
    assert_eq!(req.owned_shards, vec![ShardId::new(0)]);
    assert_eq!(req.revoking_shards.len(), 1);
    assert_eq!(req.revoking_shards[0].state, RevokeState::Draining);
    assert_eq!(req.revoking_shards[0].in_flight, 4);
    m.on_response(t0, &resp(HeartbeatStatus::Ok, 3, &[0], &[]));
    m.drained(1);
    let req = m.request(out(), |_| LocalShard::default());
    assert_eq!(req.revoking_shards[0].state, RevokeState::Revoked);
    assert_eq!(req.revoking_shards[0].in_flight, 0);
    m.on_response(t0, &resp(HeartbeatStatus::Ok, 3, &[0], &[]));
    let req = m.request(out(), |_| LocalShard::default());
    assert!(
        req.revoking_shards.is_empty(),
        "REVOKED is dropped once confirmed"
    );
}

#[test]
fn retry_keeps_state_and_does_not_renew_the_lease() {
    let (mut m, t0) = joined(&[0]);
    let later = t0 + Duration::from_secs(8);
    m.request(out(), |_| LocalShard::default());
    assert_eq!(
        m.on_response(later, &resp(HeartbeatStatus::Retry, 0, &[], &[])),
        Applied::Retry
    );
    assert_eq!(m.owned(), &set(&[0]));
    assert_eq!(m.epoch(), 2);
    assert!(m.readable(t0 + Duration::from_secs(9)).contains(&0));
    assert!(
        m.readable(t0 + LEASE).is_empty(),
        "lease counted from the last accepted send"
    );
}

#[test]
fn lease_lapse_fails_closed_and_a_fresh_ok_resumes_without_reclaim() {
    let (mut m, t0) = joined(&[0]);
    assert!(m.take_reclaim(0));
    let late = t0 + LEASE + Duration::from_millis(1);
    assert!(m.readable(late).is_empty());
    let req = m.request(out(), |_| LocalShard::default());
    assert_eq!(
        req.owned_shards,
        vec![ShardId::new(0)],
        "still held: report it"
    );
    m.on_response(late, &resp(HeartbeatStatus::Ok, 2, &[0], &[]));
    assert_eq!(m.readable(late), set(&[0]));
    assert!(!m.take_reclaim(0));
}

#[test]
fn sync_metadata_and_revoke_pending_keep_only_owned_assigned_shards() {
    for status in [
        HeartbeatStatus::SyncMetadata,
        HeartbeatStatus::RevokePending,
    ] {
        let (mut m, t0) = joined(&[0, 1]);
        m.request(out(), |_| LocalShard::default());
        let later = t0 + Duration::from_secs(5);
        m.on_response(later, &resp(status, 2, &[1, 5], &[0]));
        assert_eq!(
            m.readable(later),
            set(&[1]),
            "{status:?}: no new shards, 0 dropped"
        );
        assert_eq!(m.draining(), &set(&[0]));
        assert!(
            m.lease_valid(later + Duration::from_secs(9)),
            "lease renewed"
        );
    }
}

#[test]
fn fencing_like_statuses_stop_everything_and_rejoin_with_epoch_zero() {
    for status in [
        HeartbeatStatus::UnknownMemberId,
        HeartbeatStatus::FencedMemberEpoch,
        HeartbeatStatus::InvalidRequest,
        HeartbeatStatus::UnsupportedProtocol,
        HeartbeatStatus::FencedInstanceId,
    ] {
        let (mut m, t0) = joined(&[0, 1]);
        m.request(out(), |_| LocalShard::default());
        assert_eq!(
            m.on_response(t0, &resp(status, 7, &[], &[])),
            Applied::Reset(status)
        );
        assert!(m.readable(t0).is_empty(), "{status:?}");
        let req = m.request(out(), |_| LocalShard::default());
        assert_eq!(req.member_epoch, 0, "{status:?}");
        assert!(req.owned_shards.is_empty() && req.revoking_shards.is_empty());
    }
}

#[test]
fn every_status_is_handled() {
    for status in HeartbeatStatus::ALL {
        let (mut m, t0) = joined(&[0]);
        m.request(out(), |_| LocalShard::default());
        let applied = m.on_response(t0, &resp(status, 2, &[0], &[]));
        let expect_reading = matches!(
            status,
            HeartbeatStatus::Ok
                | HeartbeatStatus::Retry
                | HeartbeatStatus::SyncMetadata
                | HeartbeatStatus::RevokePending
        );
        assert_eq!(
            !m.readable(t0).is_empty(),
            expect_reading,
            "{status:?} -> {applied:?}"
        );
    }
}

#[test]
fn shard_given_back_while_draining_resumes_after_the_drain() {
    let (mut m, t0) = joined(&[0, 1]);
    m.request(out(), |_| LocalShard::default());
    m.on_response(t0, &resp(HeartbeatStatus::Ok, 3, &[0], &[]));
    m.request(out(), |_| LocalShard::default());
    m.on_response(t0, &resp(HeartbeatStatus::Ok, 4, &[0, 1], &[]));
    assert_eq!(
        m.readable(t0),
        set(&[0]),
        "1 still drains: one read loop per shard"
    );
    m.drained(1);
    assert_eq!(m.readable(t0), set(&[0, 1]));
}

#[test]
fn graceful_leave_drains_reports_and_completes() {
    let (mut m, t0) = joined(&[0, 1]);
    m.begin_leave();
    assert!(m.readable(t0).is_empty());
    let req = m.request(out(), |_| LocalShard::default());
    assert_eq!(req.member_epoch, -1);
    assert!(req.owned_shards.is_empty());
    assert_eq!(req.revoking_shards.len(), 2);
    assert!(
        req.revoking_shards
            .iter()
            .all(|r| r.state == RevokeState::Draining)
    );
    assert_eq!(
        m.on_response(t0, &resp(HeartbeatStatus::Ok, -1, &[], &[])),
        Applied::Accepted
    );
    m.drained(0);
    m.drained(1);
    let req = m.request(out(), |_| LocalShard::default());
    assert!(req.revoking_shards.iter().all(|r| r.is_released()));
    assert_eq!(
        m.on_response(t0, &resp(HeartbeatStatus::Ok, -1, &[], &[])),
        Applied::Left
    );
    assert!(m.left());
}

#[test]
fn leave_before_join_is_immediate() {
    let mut m = Membership::new("m", LEASE);
    m.begin_leave();
    assert!(m.left());
}

#[test]
fn no_shard_is_readable_within_the_read_margin_of_the_lease_end() {
    let margin = Duration::from_millis(500);
    let mut m = Membership::new("m", LEASE).with_read_margin(margin);
    let t0 = Instant::now();
    m.request(out(), |_| LocalShard::default());
    m.on_response(t0, &resp(HeartbeatStatus::Ok, 2, &[0, 1], &[]));
    let end = t0 + LEASE;
    let tick = Duration::from_millis(1);
    assert_eq!(m.readable(end - margin - tick), set(&[0, 1]));
    for t in [end - margin, end - margin / 2, end - tick] {
        assert!(
            m.readable(t).is_empty(),
            "{:?} before the lease end",
            end - t
        );
        assert!(m.lease_valid(t), "the lease itself still runs");
    }
    assert!(!m.lease_valid(end));
}

#[test]
fn request_ids_count_requests_and_carry_the_callers_suffix_name_and_acked_at() {
    let mut m = Membership::new("m7", LEASE).with_member_name("pod-7");
    let req = m.request(
        Outgoing {
            capacity: cap(),
            request_id_suffix: "-x1",
            acked_at: Some("2026-12-01T00:00:00Z"),
        },
        |_| LocalShard::default(),
    );
    assert_eq!(req.request_id, "m7-1-x1");
    assert_eq!(req.member_id, "m7");
    assert_eq!(req.member_name.as_deref(), Some("pod-7"));
    assert_eq!(
        m.request(out(), |_| LocalShard::default()).request_id,
        "m7-2"
    );
    let t0 = Instant::now();
    m.on_response(t0, &resp(HeartbeatStatus::Ok, 2, &[0], &[]));
    m.request(out(), |_| LocalShard::default());
    m.on_response(t0, &resp(HeartbeatStatus::Ok, 3, &[], &[]));
    m.drained(0);
    let req = m.request(
        Outgoing {
            acked_at: Some("2026-12-01T00:00:01Z"),
            ..out()
        },
        |_| LocalShard::default(),
    );
    assert_eq!(req.revoking_shards.len(), 1);
    assert_eq!(
        req.revoking_shards[0].acked_at.as_deref(),
        Some("2026-12-01T00:00:01Z")
    );
    assert!(
        Membership::new("m", LEASE)
            .request(out(), |_| LocalShard::default())
            .member_name
            .is_none(),
        "no name unless given"
    );
}

#[test]
fn drained_all_releases_every_draining_shard_and_resumes_one_given_back() {
    let (mut m, t0) = joined(&[0, 1, 2]);
    m.request(out(), |_| LocalShard::default());
    m.on_response(t0, &resp(HeartbeatStatus::Ok, 3, &[0], &[]));
    assert_eq!(m.draining(), &set(&[1, 2]));
    m.request(out(), |_| LocalShard::default());
    m.on_response(t0, &resp(HeartbeatStatus::Ok, 4, &[0, 2], &[]));
    assert_eq!(m.assigned(), &set(&[0, 2]));
    m.drained_all();
    assert!(m.draining().is_empty());
    assert_eq!(m.released(), &set(&[1]));
    assert_eq!(
        m.owned(),
        &set(&[0, 2]),
        "2 was given back while it drained"
    );
    let req = m.request(out(), |_| LocalShard::default());
    assert_eq!(req.revoking_shards.len(), 1);
    assert!(req.revoking_shards[0].is_released());
    m.on_response(t0, &resp(HeartbeatStatus::Ok, 4, &[0, 2], &[]));
    assert!(m.released().is_empty(), "confirmed by the accepted answer");
}

#[test]
fn the_lease_is_judged_by_the_callers_clock() {
    let mut m: Membership<Duration> = Membership::new_with_clock("m", LEASE);
    let sent = Duration::from_millis(1_000);
    m.request(out(), |_| LocalShard::default());
    assert!(
        m.readable(sent).is_empty(),
        "nothing before the first answer"
    );
    m.on_response(sent, &resp(HeartbeatStatus::Ok, 2, &[3], &[]));
    assert_eq!(m.lease_until(), Some(sent + LEASE));
    assert_eq!(
        m.readable(sent + LEASE - Duration::from_millis(1)),
        set(&[3])
    );
    assert!(m.readable(sent + LEASE).is_empty());
    assert_eq!(m.metadata_version(), 12);
    assert_eq!(m.member_id(), "m");
}

#[test]
fn a_repeated_assignment_changes_nothing_and_a_changed_one_is_applied() {
    let (mut m, t0) = joined(&[0, 1]);
    assert!(m.take_reclaim(0) && m.take_reclaim(1));
    for _ in 0..3 {
        m.request(out(), |_| LocalShard::default());
        let later = t0 + Duration::from_secs(1);
        assert_eq!(
            m.on_response(later, &resp(HeartbeatStatus::Ok, 2, &[0, 1], &[])),
            Applied::Accepted
        );
        assert_eq!(m.owned(), &set(&[0, 1]));
        assert!(
            m.lease_valid(later + LEASE - Duration::from_millis(1)),
            "renewed"
        );
        assert!(!m.take_reclaim(0), "no second reclaim");
    }
    // Out of order, the same set: applied the long way, with the same result.
    m.request(out(), |_| LocalShard::default());
    m.on_response(t0, &resp(HeartbeatStatus::Ok, 2, &[1, 0], &[]));
    assert_eq!(m.owned(), &set(&[0, 1]));
    assert!(!m.take_reclaim(1));
    m.request(out(), |_| LocalShard::default());
    m.on_response(t0, &resp(HeartbeatStatus::Ok, 3, &[1, 2], &[]));
    assert_eq!(m.owned(), &set(&[1, 2]));
    assert_eq!(m.draining(), &set(&[0]));
    assert_eq!(m.epoch(), 3);
}

#[test]
fn a_static_member_sends_its_instance_id_and_leaves_temporarily_with_epoch_minus_two() {
    let (m, t0) = joined(&[0, 1]);
    let mut m = m.with_group_instance_id("pod-a");
    let req = m.request(out(), |_| LocalShard::default());
    assert_eq!(req.group_instance_id.as_deref(), Some("pod-a"));
    m.begin_temporary_leave();
    assert!(m.readable(t0).is_empty());
    let req = m.request(out(), |_| LocalShard::default());
    assert_eq!(req.member_epoch, -2);
    assert_eq!(req.group_instance_id.as_deref(), Some("pod-a"));
    // Without an instance id a temporary leave is a plain one.
    let (mut plain, _) = joined(&[0]);
    plain.begin_temporary_leave();
    assert_eq!(
        plain.request(out(), |_| LocalShard::default()).member_epoch,
        -1
    );
}
