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
    let t = T::try_parse_from(["t", "--restart-percent", "101"]).unwrap();
    assert!(t.a.validate().unwrap_err().contains("--restart-percent"));
}

#[test]
fn a_rolling_restart_takes_that_percentage_of_each_share() {
    let chosen = |percent| (0..1_000).filter(|&p| restarts(p, percent)).count();
    assert_eq!(chosen(10), 100);
    assert_eq!(chosen(0), 0);
    assert_eq!(chosen(100), 1_000);
    assert!(restarts(0, 1) && !restarts(1, 1) && restarts(100, 1));
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
fn a_bench_member_reports_a_given_up_shard_draining_once_then_revoked_until_confirmed() {
    use rsc_protocol::wire::RevokeState;
    let mut m = Member::new("m0", 0, 0);
    let now = Instant::now();
    assert_eq!(m.id(), "m0");
    let join = m.request();
    assert_eq!((join.request_id.as_str(), join.member_epoch), ("m0-1", 0));
    assert!(join.member_name.is_none());
    m.apply(now, answer(HeartbeatStatus::Ok, 1, &[0, 1], &[2]));
    assert!(!m.settled(), "a shard is still pending");
    assert_eq!(m.request().owned_shards.len(), 2);
    m.apply(now, answer(HeartbeatStatus::Ok, 2, &[0], &[]));
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
