//! Tests of `rsc bench heartbeat`: argument bounds, loopback URLs, /proc and commandstats parsing,
//! coordinator discovery and Redis cost.

use super::*;
use clap::Parser;

#[derive(Parser)]
struct T {
    #[command(flatten)]
    a: HeartbeatArgs,
}

#[test]
fn defaults_and_bounds() {
    let t = T::try_parse_from(["t"]).unwrap();
    assert_eq!(t.a.members, 1000);
    assert_eq!(t.a.groups, 10);
    assert_eq!(t.a.shards, 12);
    assert_eq!(t.a.concurrency, 64);
    assert_eq!(t.a.coordinator, vec!["http://127.0.0.1:8080".to_owned()]);
    let mut a = t.a.clone();
    a.username = None;
    a.password = None;
    assert!(a.validate().is_ok());
    a.coordinator = vec!["http://10.0.0.1:8080".into()];
    assert!(a.validate().is_err());
    let t = T::try_parse_from(["t", "--members", "0"]).unwrap();
    assert!(t.a.validate().is_err());
    assert_eq!(a.restart_percent, 0);
    assert_eq!(a.restart_mode, RestartMode::Graceful);
    assert_eq!(a.drain, DrainModel::Instant);
    let t = T::try_parse_from(["t", "--restart-mode", "static", "--drain", "heartbeat"]).unwrap();
    assert_eq!(
        (t.a.restart_mode, t.a.drain),
        (RestartMode::Static, DrainModel::Heartbeat)
    );
    assert!(T::try_parse_from(["t", "--restart-mode", "sigkill"]).is_err());
    let t = T::try_parse_from(["t", "--restart-percent", "101"]).unwrap();
    assert!(t.a.validate().unwrap_err().contains("--restart-percent"));
    // A percentage that restarts nobody is refused rather than run as no restart.
    let with = |percent: &str| {
        let mut a = T::try_parse_from([
            "t",
            "--members",
            "8",
            "--groups",
            "1",
            "--restart-percent",
            percent,
        ])
        .unwrap()
        .a;
        (a.username, a.password) = (None, None);
        a.validate()
    };
    assert!(with("1").unwrap_err().contains("restarts none"));
    assert!(with("25").is_ok());
}

/// Which members a restart takes, counted over all members (dealt to groups and workers as the bench deals
/// them): how many in all, and how many in each group and in each worker's share.
fn restarted(
    members: usize,
    groups: usize,
    workers: usize,
    percent: u8,
) -> (usize, Vec<usize>, Vec<usize>) {
    let (mut per_group, mut per_worker) = (vec![0; groups], vec![0; workers]);
    let mut all = 0;
    for i in (0..members).filter(|&i| restarts(i, members, percent)) {
        all += 1;
        per_group[placement(i, groups, 1).0] += 1;
        per_worker[i % workers] += 1;
    }
    (all, per_group, per_worker)
}

#[test]
fn a_rolling_restart_takes_exactly_that_share_of_all_members_spread_over_groups_and_workers() {
    // 10 % of 10,000 members over 64 workers is 1,000 (it was 1,280 when each worker's share of 156 restarted
    // its positions 0-9 and 100-109), 100 in each of 10 groups, 15 or 16 in each worker's share.
    let (all, per_group, per_worker) = restarted(10_000, 10, 64, 10);
    assert_eq!(all, 1_000);
    assert!(per_group.iter().all(|&n| n == 100), "{per_group:?}");
    assert!(
        per_worker.iter().all(|&n| n == 15 || n == 16),
        "{per_worker:?}"
    );
    // One group: still spread over every worker.
    let (all, _, per_worker) = restarted(10_000, 1, 64, 10);
    assert_eq!(all, 1_000);
    assert!(
        per_worker.iter().all(|&n| n == 15 || n == 16),
        "{per_worker:?}"
    );
    // Rounded down, never more than asked.
    assert_eq!(restarted(999, 3, 7, 10).0, 99);
    assert_eq!(restarted(8, 1, 2, 25).0, 2);
    assert_eq!(restarted(8, 1, 2, 1).0, 0);
    assert_eq!(restarted(1_000, 10, 64, 0).0, 0);
    assert_eq!(restarted(1_000, 10, 64, 100).0, 1_000);
    assert_eq!(restart_count(10_000, 10), 1_000);
    assert!(restarts(0, 8, 25) && restarts(1, 8, 25) && !restarts(2, 8, 25));
}

#[test]
fn the_coordinator_is_found_by_its_listening_port() {
    assert_eq!(url_port("http://127.0.0.1:8080"), Some(8080));
    assert_eq!(url_port("http://localhost/x"), Some(80));
    assert_eq!(url_port("http://[::1]:9000/"), Some(9000));
    assert_eq!(url_port("http://[::1]/"), Some(80));
    let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 5151 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 6161 1 0000000000000000 100 0 0 10 0";
    assert_eq!(listening_inodes(table, 8080), vec![4242]);
    assert_eq!(listening_inodes(table, 8081), vec![6161]);
    assert!(listening_inodes(table, 9999).is_empty());
    assert_eq!(socket_inode("socket:[4242]"), Some(4242));
    assert_eq!(socket_inode("pipe:[4242]"), None);
}

#[test]
fn redis_cost_is_unknown_rather_than_an_unmeasured_zero() {
    let stat = |calls, usec| CmdStat { calls, usec };
    let before: CommandStats = [
        ("evalsha".to_owned(), stat(10, 100)),
        ("info".to_owned(), stat(3, 9)),
    ]
    .into();
    let same = before.clone();
    assert!(
        redis_cost(None, 100, None)
            .unwrap_err()
            .contains("--redis-url")
    );
    assert!(
        redis_cost(Some((&before, &same)), 100, Some("redis://127.0.0.1:6379"))
            .unwrap_err()
            .contains("is it the coordinator's Redis?")
    );
    let after: CommandStats = [
        ("evalsha".to_owned(), stat(110, 1100)),
        ("info".to_owned(), stat(4, 12)),
    ]
    .into();
    let cost = redis_cost(Some((&before, &after)), 100, None).unwrap();
    assert_eq!(cost.commands_per_heartbeat, 1.0);
    assert_eq!(cost.evalsha_per_heartbeat, 1.0);
    assert_eq!(cost.script_usec_per_heartbeat, 10.0);
}

#[test]
fn loopback_urls() {
    assert!(is_loopback_url("http://127.0.0.1:8080"));
    assert!(is_loopback_url("http://localhost"));
    assert!(is_loopback_url("http://[::1]:80/x"));
    assert!(is_loopback_url("redis://:pw@127.0.0.1:6379"));
    assert!(!is_loopback_url("http://example.com"));
    assert!(!is_loopback_url("127.0.0.1:8080"));
}

#[test]
fn parses_commandstats_proc_stat_and_percentiles() {
    let info = "# Commandstats\r\ncmdstat_evalsha:calls=10,usec=5,usec_per_call=0.5\r\ncmdstat_hget:calls=3,usec=1\r\n";
    let s = parse_commandstats(info);
    assert_eq!(s.get("evalsha"), Some(&CmdStat { calls: 10, usec: 5 }));
    assert_eq!(s.get("hget"), Some(&CmdStat { calls: 3, usec: 1 }));
    let cpu =
        "# CPU\r\nused_cpu_sys:1.250000\r\nused_cpu_user:2.500000\r\nused_cpu_sys_children:9.0\r\n";
    assert_eq!(parse_redis_cpu(cpu), Some(3.75));
    assert_eq!(parse_redis_cpu("# CPU\r\n"), None);
    let stat = "42 (rsc serve) S 1 2 3 4 5 6 7 8 9 10 100 20 0 0";
    assert_eq!(parse_cpu_ticks(stat), Some(120));
    let status = "Name:\trsc\nVmHWM:\t  9000 kB\nVmRSS:\t  8192 kB\n";
    assert_eq!(parse_vm_rss_kib(status), Some(8192));
    assert_eq!(parse_vm_rss_kib("Name:\trsc\n"), None);
    let v: Vec<u32> = (1..=1000).collect();
    assert_eq!(percentile(&v, 0.5), Some(500));
    assert_eq!(percentile(&v, 0.99), Some(990));
    assert_eq!(percentile(&v, 1.0), Some(1000));
    assert_eq!(percentile(&[], 0.5), None);
}

fn answer(
    status: HeartbeatStatus,
    epoch: i64,
    assigned: &[u32],
    pending: &[u32],
) -> HeartbeatResponse {
    let shards = |v: &[u32]| {
        v.iter()
            .map(|&s| rsc_protocol::wire::ShardId::new(s))
            .collect()
    };
    HeartbeatResponse {
        response_to: String::new(),
        status,
        member_id: "m0".into(),
        member_epoch: epoch,
        heartbeat_interval_ms: 1000,
        rebalance_timeout_ms: 10_000,
        group_epoch: epoch,
        assignment_epoch: epoch,
        metadata_version: 5,
        assignment: AssignmentView {
            assigned_shards: shards(assigned),
            pending_shards: shards(pending),
            metadata_version: 5,
        },
        message: None,
        read_fences: Default::default(),
        routing_version: None,
    }
}

#[test]
fn with_drain_heartbeat_a_given_up_shard_is_reported_draining_once_then_revoked_until_confirmed() {
    use rsc_protocol::wire::RevokeState;
    let mut m = Member::new(0, 0, 0, DrainModel::Heartbeat, None, 1000);
    let now = Instant::now();
    assert_eq!(m.id(), "m0");
    let join = m.request();
    assert_eq!((join.request_id.as_str(), join.member_epoch), ("m0-1", 0));
    assert!(join.member_name.is_none());
    m.apply(now, answer(HeartbeatStatus::Ok, 1, &[0, 1], &[2]));
    assert!(!m.settled(), "a shard is still pending");
    assert_eq!(m.request().owned_shards.len(), 2);
    m.apply(now, answer(HeartbeatStatus::Ok, 2, &[0], &[]));
    assert!(
        !m.heartbeat_now(),
        "reported at the next heartbeat of its round"
    );
    let req = m.request();
    let states: Vec<RevokeState> = req.revoking_shards.iter().map(|r| r.state).collect();
    assert_eq!(states, vec![RevokeState::Draining]);
    assert_eq!(req.revoking_shards[0].in_flight, 1);
    assert!(!m.settled());
    m.apply(now, answer(HeartbeatStatus::Ok, 2, &[0], &[]));
    let req = m.request();
    assert!(req.revoking_shards.iter().all(|r| r.is_released()));
    assert_eq!(req.revoking_shards.len(), 1);
    assert!(!m.settled(), "REVOKED not yet confirmed");
    m.apply(now, answer(HeartbeatStatus::Ok, 2, &[0], &[]));
    assert!(m.request().revoking_shards.is_empty());
    assert!(m.settled());
    assert!(converged(&[vec![m]], 1, 1));
}

#[test]
fn several_replicas_each_serve_every_group() {
    let t = T::try_parse_from([
        "t",
        "--coordinator",
        "http://127.0.0.1:8080,http://127.0.0.1:8081/,http://localhost:8082",
    ])
    .unwrap();
    assert_eq!(t.a.coordinator.len(), 3);
    assert!(t.a.validate().is_ok());
    // Ten members in two groups over two replicas: each group has members on both replicas.
    let placed: Vec<(usize, usize)> = (0..10).map(|i| placement(i, 2, 2)).collect();
    for group in 0..2 {
        for replica in 0..2 {
            let n = placed.iter().filter(|p| **p == (group, replica)).count();
            assert!(n >= 2, "group {group} replica {replica}: {placed:?}");
        }
    }
    assert!(placed.iter().all(|&(_, r)| r < 2));
    // One replica: everything on it.
    assert!((0..10).all(|i| placement(i, 3, 1).1 == 0));

    let bad = |args: &[&str]| {
        let mut all = vec!["t"];
        all.extend_from_slice(args);
        T::try_parse_from(all).unwrap().a.validate().unwrap_err()
    };
    assert!(bad(&["--coordinator", "http://127.0.0.1:1,http://10.1.1.1:2"]).contains("10.1.1.1"));
    assert!(
        bad(&["--coordinator", "http://127.0.0.1:1,http://127.0.0.1:1/"])
            .contains("same URL twice")
    );
    assert!(
        bad(&[
            "--coordinator",
            "http://127.0.0.1:1,http://127.0.0.1:2",
            "--coordinator-pid",
            "42"
        ])
        .contains("one PID per --coordinator URL")
    );
}

/// The SDK with nothing in flight: the answer that takes a shard away drains it at once, and the member
/// heartbeats at once to report it REVOKED (no DRAINING round).
#[test]
fn with_the_instant_drain_a_given_up_shard_is_reported_revoked_in_a_heartbeat_sent_at_once() {
    let mut m = Member::new(0, 0, 0, DrainModel::Instant, None, 1000);
    let now = Instant::now();
    m.request();
    m.apply(now, answer(HeartbeatStatus::Ok, 1, &[0, 1], &[]));
    assert!(!m.heartbeat_now(), "nothing given up");
    assert!(m.settled());
    m.request();
    m.apply(now, answer(HeartbeatStatus::Ok, 2, &[0], &[]));
    assert!(
        m.heartbeat_now(),
        "shard 1 drained: the SDK reports it at once"
    );
    let req = m.request();
    assert_eq!(req.revoking_shards.len(), 1);
    assert!(req.revoking_shards[0].is_released(), "REVOKED, 0 in flight");
    assert_eq!(req.revoking_shards[0].shard.shard_index, 1);
    assert!(!m.settled(), "REVOKED not yet confirmed");
    m.apply(now, answer(HeartbeatStatus::Ok, 2, &[0], &[]));
    assert!(!m.heartbeat_now(), "confirmed: back to the interval");
    assert!(m.request().revoking_shards.is_empty());
    assert!(m.settled());
}

/// An answer asking for the next heartbeat within `MAX_ACKNOWLEDGE_INTERVAL_MS` (the coordinator wants a
/// report at its new epoch, to release a shard this member never started reading): the SDK sends it that
/// soon, which the round model makes "at once"; an answer at the normal interval does not.
#[test]
fn an_answer_asking_for_an_acknowledgement_is_heartbeated_at_once() {
    let mut m = Member::new(0, 0, 0, DrainModel::Instant, None, 1000);
    let now = Instant::now();
    m.request();
    m.apply(now, answer(HeartbeatStatus::Ok, 1, &[0], &[]));
    assert!(!m.heartbeat_now());
    m.request();
    let mut ack = answer(HeartbeatStatus::Ok, 3, &[0], &[]);
    ack.heartbeat_interval_ms = rsc_group::timing::MAX_ACKNOWLEDGE_INTERVAL_MS;
    m.apply(now, ack);
    assert!(m.heartbeat_now(), "asked back within 100 ms");
    assert_eq!(
        m.request().member_epoch,
        3,
        "the acknowledgement carries the new epoch"
    );
    m.apply(now, answer(HeartbeatStatus::Ok, 3, &[0], &[]));
    assert!(!m.heartbeat_now(), "back to the interval");
    assert!(m.settled());
}

/// An answer asking for the next heartbeat sooner than the interval but not at once (a release forecast) has
/// the member heartbeat again at the end of the round when the moment falls within it; the next answer at the
/// interval clears it.
#[test]
fn an_answer_asking_back_within_the_interval_is_heartbeated_again_at_the_end_of_the_round() {
    let mut m = Member::new(0, 0, 0, DrainModel::Instant, None, 1000);
    let now = Instant::now();
    m.request();
    m.apply(now, answer(HeartbeatStatus::Ok, 1, &[0], &[1]));
    assert!(
        !m.asked_back_within_round(0.0),
        "the join's answer: the interval"
    );
    m.request();
    let mut forecast = answer(HeartbeatStatus::Ok, 1, &[0], &[1]);
    forecast.heartbeat_interval_ms = 250;
    m.apply(now, forecast);
    assert!(!m.heartbeat_now(), "not at once");
    assert!(m.asked_back_within_round(0.0));
    assert!(
        m.asked_back_within_round(0.75),
        "250 ms of 1000 from three quarters through: the round's end"
    );
    assert!(
        !m.asked_back_within_round(0.8),
        "past the round's end: left to its turn in the next round"
    );
    m.request();
    m.apply(now, answer(HeartbeatStatus::Ok, 1, &[0, 1], &[]));
    assert!(!m.asked_back_within_round(0.0), "back to the interval");
    assert!(m.settled());
}

/// The configured interval is the coordinator's, not learnt from the answers: a join answered with a forecast
/// (its shards' holder was just told to give them up) asks the member back too.
#[test]
fn a_join_answered_with_a_forecast_is_asked_back_at_the_end_of_the_round() {
    let mut m = Member::new(0, 0, 0, DrainModel::Instant, None, 1000);
    m.request();
    let mut join = answer(HeartbeatStatus::Ok, 1, &[], &[0, 1]);
    join.heartbeat_interval_ms = 200;
    m.apply(Instant::now(), join);
    assert!(!m.heartbeat_now(), "not at once");
    assert!(
        m.asked_back_within_round(0.5),
        "sooner than the configured 1000 ms"
    );
}

fn joined_member(instance: Option<&str>) -> Member {
    let mut m = Member::new(3, 1, 0, DrainModel::Instant, instance, 1000);
    m.request();
    m.apply(Instant::now(), answer(HeartbeatStatus::Ok, 4, &[2, 5], &[]));
    assert!(m.settled());
    m
}

/// `--restart-mode crash`: one leave heartbeat with every shard still DRAINING, and nothing applied after it
/// (the process is gone); the new incarnation joins under the same id.
#[test]
fn a_crashing_member_leaves_with_its_shards_draining_and_is_gone_after_that_heartbeat() {
    use rsc_protocol::wire::RevokeState;
    let mut m = joined_member(None);
    m.begin_shutdown(RestartMode::Crash);
    assert!(!m.shut_down(), "its leave heartbeat is still to be sent");
    let req = m.request();
    assert_eq!(req.member_epoch, -1);
    let states: Vec<(u32, RevokeState)> = req
        .revoking_shards
        .iter()
        .map(|r| (r.shard.shard_index, r.state))
        .collect();
    assert_eq!(
        states,
        vec![(2, RevokeState::Draining), (5, RevokeState::Draining)]
    );
    m.apply(Instant::now(), answer(HeartbeatStatus::Ok, -1, &[], &[]));
    assert!(
        m.shut_down() && !m.heartbeat_now(),
        "killed: no REVOKED ever follows"
    );
    assert_eq!(m.membership.draining().len(), 2);
    let next = m.next_incarnation();
    assert_eq!((next.id(), next.group, next.replica), ("m3", 1, 0));
    let mut next = next;
    let join = next.request();
    assert_eq!(join.member_epoch, 0);
    assert!(join.group_instance_id.is_none() && join.revoking_shards.is_empty());
}

/// `--restart-mode graceful`: the SDK's shutdown of a dynamic member — epoch -1, every shard REVOKED in the
/// first leave heartbeat (nothing in flight), over once the coordinator confirms it.
#[test]
fn a_graceful_shutdown_reports_every_shard_revoked_and_is_over_once_confirmed() {
    let mut m = joined_member(None);
    m.begin_shutdown(RestartMode::Graceful);
    let req = m.request();
    assert_eq!(req.member_epoch, -1);
    assert!(req.owned_shards.is_empty());
    assert_eq!(req.revoking_shards.len(), 2);
    assert!(req.revoking_shards.iter().all(|r| r.is_released()));
    assert!(!m.shut_down(), "not confirmed yet");
    m.apply(Instant::now(), answer(HeartbeatStatus::Retry, 4, &[], &[]));
    assert!(
        !m.shut_down(),
        "a RETRY confirms nothing: the leave is sent again"
    );
    assert!(m.request().revoking_shards.iter().all(|r| r.is_released()));
    m.apply(Instant::now(), answer(HeartbeatStatus::Ok, -1, &[], &[]));
    assert!(m.shut_down() && !m.heartbeat_now());
    let mut next = m.next_incarnation();
    assert_eq!(next.request().member_epoch, 0);
}

/// `--restart-mode static`: every member carries its groupInstanceId; its shutdown leaves temporarily (epoch
/// -2) with every shard REVOKED, and the new process joins with the same instance id.
#[test]
fn a_static_member_leaves_temporarily_and_its_next_incarnation_keeps_its_instance_id() {
    let mut m = joined_member(Some("i3"));
    assert_eq!(m.request().group_instance_id.as_deref(), Some("i3"));
    m.apply(Instant::now(), answer(HeartbeatStatus::Ok, 4, &[2, 5], &[]));
    m.begin_shutdown(RestartMode::Static);
    let req = m.request();
    assert_eq!(req.member_epoch, -2);
    assert!(req.revoking_shards.iter().all(|r| r.is_released()));
    assert_eq!(req.revoking_shards.len(), 2);
    m.apply(Instant::now(), answer(HeartbeatStatus::Ok, -1, &[], &[]));
    assert!(m.shut_down());
    let mut next = m.next_incarnation();
    let join = next.request();
    assert_eq!((join.member_id.as_str(), join.member_epoch), ("m3", 0));
    assert_eq!(join.group_instance_id.as_deref(), Some("i3"));
    // A dynamic member shut down as `static` would be is still a plain leave (-1): the mode makes every
    // member static from the start.
    let mut dynamic = joined_member(None);
    dynamic.begin_shutdown(RestartMode::Static);
    assert_eq!(dynamic.request().member_epoch, -1);
}

#[test]
fn after_the_leave_the_assignments_view_gives_what_the_leavers_hold_and_what_is_reserved() {
    let mut after = AfterLeave::default();
    after.add(&serde_json::json!({
        "revokeProgress": {"m0": [{"shard": {"shardIndex": 1}}, {"shard": {"shardIndex": 2}}], "m1": [{"shard": {"shardIndex": 3}}]},
        "staticReservations": [{"groupInstanceId": "i4", "shards": [{"shardIndex": 7}]}],
    }));
    after.add(&serde_json::json!({"revokeProgress": {}, "staticReservations": []}));
    assert_eq!(
        after,
        AfterLeave {
            held: 3,
            reserved: 1
        }
    );
}

/// A long list of rounds is cut to its first six and last five around the count left out; a short one is whole.
#[test]
fn a_long_list_of_rounds_keeps_its_first_and_last_rounds_and_says_how_many_were_left_out() {
    let rounds: Vec<String> = (1..=30).map(|i| format!("r{i}")).collect();
    assert_eq!(
        rounds_list(&rounds),
        "r1; r2; r3; r4; r5; r6; … 19 more rounds …; r26; r27; r28; r29; r30"
    );
    assert_eq!(rounds_list(&rounds[..12]), rounds[..12].join("; "));
    assert_eq!(rounds_list(&rounds[..13]).matches("; r").count(), 10);
    assert!(rounds_list(&rounds[..13]).contains("… 2 more rounds …"));
}
