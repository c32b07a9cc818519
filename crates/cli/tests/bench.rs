//! Smoke tests of `rsc bench heartbeat`, `rsc bench dataplane`, `rsc bench failover` and `rsc bench reshard`
//! with tiny counts against a real `rsc serve` and redis-server: each run finishes, prints its summary line
//! with parseable figures, and removes its shard streams. They check behaviour, never timing.

use rsc_testkit::{RedisCluster, RedisServer, RscBuilder, RscProcess};
use std::collections::BTreeMap;
use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const ADMIN_PASSWORD: &str = "bench-test-admin-password";
/// A broken run must not hang the suite: the command is killed after this.
const RUN_BOUND: Duration = Duration::from_secs(120);

/// A real `rsc serve` with test timings and the bootstrap admin.
fn start_rsc(redis_url: &str) -> RscProcess {
    RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), redis_url)
        .fast_timings(Duration::from_secs(3), Duration::from_secs(10))
        .admin_password(ADMIN_PASSWORD)
        .start()
}

/// Runs `rsc bench <args>` as the bootstrap admin, killing it if it outlives `RUN_BOUND`. Its output is read
/// while it runs (a bench that writes more than a pipe holds would otherwise block until killed).
fn run_bench(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rsc"))
        .arg("bench")
        .args(args)
        .env("RSC_USERNAME", "admin")
        .env("RSC_PASSWORD", ADMIN_PASSWORD)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rsc bench starts");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped")));
    let deadline = Instant::now() + RUN_BOUND;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Output {
        status: child.wait().unwrap(),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// `k=v k=v …` of the summary line (the last stdout line starting with `first_key=`; only the cleanup
/// report may follow it).
fn summary(out: &Output, first_key: &str) -> BTreeMap<String, String> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "rsc bench failed: {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout
        .lines()
        .rfind(|l| l.starts_with(&format!("{first_key}=")))
        .unwrap_or_else(|| panic!("no summary line in:\n{stdout}"));
    last.split_whitespace()
        .map(|kv| {
            let (k, v) = kv
                .split_once('=')
                .unwrap_or_else(|| panic!("not k=v: {kv} in {last}"));
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

fn positive(s: &BTreeMap<String, String>, key: &str) -> f64 {
    let v: f64 = s
        .get(key)
        .unwrap_or_else(|| panic!("{key} missing from {s:?}"))
        .parse()
        .unwrap_or_else(|e| panic!("{key} is not a number in {s:?}: {e}"));
    assert!(v.is_finite() && v > 0.0, "{key}={v}");
    v
}

/// The stream prefix the run announced on its first line (`… stream <prefix>, …`).
fn announced_stream(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let first = stdout.lines().next().unwrap();
    first
        .split("stream ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .unwrap_or_else(|| panic!("no stream in {first}"))
        .to_owned()
}

fn exists(redis_url: &str, key: &str) -> bool {
    let client = redis::Client::open(redis_url).unwrap();
    let mut conn = client.get_connection().unwrap();
    let n: i64 = redis::cmd("EXISTS").arg(key).query(&mut conn).unwrap();
    n == 1
}

#[test]
fn dataplane_prints_ratios_and_removes_its_streams() {
    let redis = RedisServer::start();
    let rsc = start_rsc(&redis.url());
    let out = run_bench(&[
        "dataplane",
        "--coordinator",
        &rsc.url(),
        "--redis-url",
        &redis.url(),
        "--shards",
        "2",
        "--count",
        "300",
        "--rounds",
        "2",
        "--batch",
        "10",
        "--producers",
        "2",
        "--members",
        "2",
        "--assignment-lease-ms",
        "1800",
    ]);
    let s = summary(&out, "producer_ratio");
    for key in [
        "producer_ratio",
        "consumer_ratio",
        "raw_xadd_per_sec",
        "sdk_publish_per_sec",
        "raw_consume_per_sec",
        "sdk_consume_per_sec",
        "raw_consume_entry_ack_per_sec",
        "raw_consume_batch_ack_per_sec",
    ] {
        positive(&s, key);
    }
    assert_eq!(s.get("sdk_ack").map(String::as_str), Some("batch"), "{s:?}");
    for round in [
        "producer round 1: raw",
        "producer round 2: raw",
        "producer medians over 2 rounds",
    ] {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains(round), "{round:?} missing from:\n{stdout}");
    }
    let stream = announced_stream(&out);
    assert!(stream.starts_with("bench-dp-"), "{stream}");
    for shard in 0..2 {
        assert!(
            !exists(&redis.url(), &format!("{stream}:{shard}")),
            "{stream}:{shard} left behind"
        );
    }
}

#[test]
fn dataplane_runs_on_a_redis_cluster_with_redis_cluster_nodes() {
    let cluster = RedisCluster::start();
    let nodes = cluster.node_addresses().join(",");
    let rsc = RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), "redis://127.0.0.1:1")
        .fast_timings(Duration::from_secs(3), Duration::from_secs(10))
        .admin_password(ADMIN_PASSWORD)
        .env("COORDINATOR_REDIS_CLUSTER_NODES", nodes.clone())
        .start();
    let out = run_bench(&[
        "dataplane",
        "--coordinator",
        &rsc.url(),
        "--redis-cluster-nodes",
        &nodes,
        "--shards",
        "3",
        "--count",
        "300",
        "--rounds",
        "1",
        "--batch",
        "10",
        "--producers",
        "2",
        "--members",
        "2",
        "--assignment-lease-ms",
        "1800",
    ]);
    let s = summary(&out, "producer_ratio");
    positive(&s, "raw_xadd_per_sec");
    positive(&s, "sdk_consume_per_sec");
    let stream = announced_stream(&out);
    for shard in 0..3 {
        let key = format!("{stream}:{shard}");
        let owner = &cluster.nodes()[cluster.node_index_for_key(&key)];
        assert!(!exists(&owner.url(), &key), "{key} left behind");
    }
}

#[test]
fn failover_times_a_kill_and_a_leave_and_removes_its_streams() {
    let redis = RedisServer::start();
    let rsc = start_rsc(&redis.url());
    let out = run_bench(&[
        "failover",
        "--coordinator",
        &rsc.url(),
        "--redis-url",
        &redis.url(),
        "--workers",
        "2",
        "--shards",
        "2",
        "--trials",
        "1",
        "--assignment-lease-ms",
        "1800",
    ]);
    let s = summary(&out, "kill_median_ms");
    for key in [
        "kill_median_ms",
        "kill_max_ms",
        "leave_max_ms",
        "bound_ms",
        "join_median_ms",
        "join_max_ms",
    ] {
        s.get(key)
            .unwrap_or_else(|| panic!("{key} missing from {s:?}"));
    }
    // The coordinator's timing was read: 3 s lease TTL + 200 ms heartbeat interval.
    assert_eq!(s["bound_ms"], "3200");
    // A killed member's shards cannot move before its lease has lapsed (the coordinator's safety rule).
    let kill: f64 = s["kill_max_ms"].parse().unwrap();
    assert!(
        kill >= 1000.0,
        "shards moved {kill} ms after a SIGKILL, before the lease could lapse"
    );
    let stream = announced_stream(&out);
    assert!(stream.starts_with("bench-fo-"), "{stream}");
    assert!(!exists(&redis.url(), &format!("{stream}:0")));
}

/// With two coordinators running, the CPU figure is the one listening on --coordinator's port (it used to be
/// "unknown": `pgrep "rsc serve"` found two). Without --redis-url the Redis cost is "unknown", not 0.000.
/// `--restart-percent` adds a rolling restart after the steady phase, reported when the group converged again.
#[test]
fn heartbeat_measures_the_coordinator_on_its_port_and_never_reports_an_unmeasured_zero() {
    let redis = RedisServer::start();
    let _other = start_rsc(&redis.url());
    let rsc = start_rsc(&redis.url());
    let out = run_bench(&[
        "heartbeat",
        "--coordinator",
        &rsc.url(),
        "--members",
        "4",
        "--groups",
        "1",
        "--shards",
        "2",
        "--duration",
        "1",
        "--concurrency",
        "2",
    ]);
    let s = summary(&out, "heartbeats_per_sec");
    positive(&s, "heartbeats_per_sec");
    positive(&s, "cpu_ms_per_1k");
    assert_eq!(s["redis_cmds_per_heartbeat"], "unknown", "{s:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!(
            "coordinator CPU (pid {})",
            rsc.pid().expect("running")
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("commands/heartbeat unknown (pass --redis-url"),
        "{stdout}"
    );
    // Each join round says how many members were still unsettled after it: some after every round but the
    // last, none after the last.
    let rounds: Vec<&str> = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("each round: "))
        .expect("a line of the join's rounds")
        .split("; ")
        .collect();
    let unsettled = |round: &str| -> usize {
        let n = round.rsplit_once(" unsettled=").expect("unsettled=N").1;
        n.parse().expect("a count")
    };
    assert_eq!(unsettled(rounds[rounds.len() - 1]), 0, "{stdout}");
    assert!(
        rounds[..rounds.len() - 1].iter().all(|r| unsettled(r) > 0),
        "{stdout}"
    );

    // With the coordinator's Redis it is measured.
    let out = run_bench(&[
        "heartbeat",
        "--coordinator",
        &rsc.url(),
        "--redis-url",
        &redis.url(),
        "--members",
        "4",
        "--groups",
        "1",
        "--shards",
        "2",
        "--duration",
        "1",
        "--concurrency",
        "2",
        "--restart-percent",
        "50",
    ]);
    let s = summary(&out, "heartbeats_per_sec");
    positive(&s, "redis_cmds_per_heartbeat");
    // And the rolling restart: exactly half of the 4 members (m0 and m1, one of each of the two workers' shares)
    // leave and join again, and the group converges again.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("rolling restart of 2 members (50%, graceful): left in")
            && stdout.contains("after the last rejoin"),
        "{stdout}"
    );
}

/// `--restart-mode`: what each restart leaves behind when the leave round is over, read from the assignments
/// view. A crash leaves the leavers' shards DRAINING (held until their lease runs out), the SDK's graceful
/// shutdown releases them, and static members' shutdown reserves them for their instance ids, which the new
/// processes take back in the rejoin round itself (no further round). 8 members over 16 shards, 2 workers:
/// 25 % restart, exactly ⌊8 × 25 / 100⌋ = 2 (m0 and m1, one of each worker's share), 2 shards each.
#[test]
fn heartbeat_restart_modes_leave_held_released_or_reserved_shards() {
    let redis = RedisServer::start();
    // A member lease long enough that a crashed leaver's shards are still its own when the view is read.
    let rsc = RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), &redis.url())
        .fast_timings(Duration::from_secs(10), Duration::from_secs(20))
        .admin_password(ADMIN_PASSWORD)
        .start();
    let run = |mode: &str| {
        let out = run_bench(&[
            "heartbeat",
            "--coordinator",
            &rsc.url(),
            "--members",
            "8",
            "--groups",
            "1",
            "--shards",
            "16",
            "--duration",
            "1",
            "--concurrency",
            "2",
            "--restart-percent",
            "25",
            "--restart-mode",
            mode,
        ]);
        summary(&out, "heartbeats_per_sec");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let line = stdout
            .lines()
            .find(|l| l.starts_with("rolling restart of 2 members"))
            .unwrap_or_else(|| panic!("no restart line in:\n{stdout}"))
            .to_owned();
        assert!(line.contains(&format!("(25%, {mode})")), "{line}");
        line
    };
    let crash = run("crash");
    assert!(
        crash.contains("then 4 shards still held by the leavers, 0 reserved"),
        "{crash}"
    );
    let graceful = run("graceful");
    assert!(
        graceful.contains("then 0 shards still held by the leavers, 0 reserved"),
        "{graceful}"
    );
    let static_ = run("static");
    assert!(
        static_.contains("then 0 shards still held by the leavers, 4 reserved")
            && static_.contains("(1 heartbeat rounds,"),
        "{static_}"
    );
}

/// Two replicas on one Redis: the members are spread over both, each replica is reported with its own
/// heartbeats and CPU (the process on its port), and Redis's CPU and script time per heartbeat are measured.
#[test]
fn heartbeat_over_two_replicas_reports_each_of_them() {
    let redis = RedisServer::start();
    let a = start_rsc(&redis.url());
    let b = start_rsc(&redis.url());
    let coordinators = format!("{},{}", a.url(), b.url());
    let out = run_bench(&[
        "heartbeat",
        "--coordinator",
        &coordinators,
        "--redis-url",
        &redis.url(),
        "--members",
        "6",
        "--groups",
        "2",
        "--shards",
        "2",
        "--duration",
        "1",
        "--concurrency",
        "2",
    ]);
    let s = summary(&out, "heartbeats_per_sec");
    assert_eq!(s["replicas"], "2", "{s:?}");
    positive(&s, "cpu_ms_per_1k");
    positive(&s, "redis_cpu_ms_per_1k");
    positive(&s, "redis_script_us_per_heartbeat");
    let stdout = String::from_utf8_lossy(&out.stdout);
    for (i, rsc) in [(1, &a), (2, &b)] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("replica={i} ")))
            .unwrap_or_else(|| panic!("no line for replica {i} in:\n{stdout}"));
        let figures: BTreeMap<String, String> = line
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        positive(&figures, "heartbeats_per_sec");
        positive(&figures, "cpu_ms_per_1k");
        assert!(
            stdout.contains(&format!(
                "{} (pid {})",
                rsc.url(),
                rsc.pid().expect("running")
            )),
            "{stdout}"
        );
    }
}

/// A real `rsc serve` for `rsc bench reshard`: test timings and a short drain grace, so that an ordered
/// scale's gates open (and every migration ends) within seconds.
fn start_rsc_for_reshard(redis_url: &str) -> RscProcess {
    RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), redis_url)
        .fast_timings(Duration::from_secs(3), Duration::from_secs(10))
        .env("COORDINATOR_STREAMS_DRAIN_GRACE", "2s")
        .admin_password(ADMIN_PASSWORD)
        .start()
}

/// The `k=v` fields of every stdout line that starts with `prefix` (after checking the run succeeded).
fn lines_starting(out: &Output, prefix: &str) -> Vec<BTreeMap<String, String>> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "rsc bench failed: {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(|l| {
            l.split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect()
        })
        .collect()
}

/// Runs `rsc bench reshard` 2 → 4 shards, one trial of each ordering, and checks its lines and cleanup.
fn reshard_smoke(extra: &[&str]) -> Vec<BTreeMap<String, String>> {
    let redis = RedisServer::start();
    let rsc = start_rsc_for_reshard(&redis.url());
    let (rsc_url, redis_url) = (rsc.url(), redis.url());
    let args = [
        &[
            "reshard",
            "--coordinator",
            &rsc_url,
            "--redis-url",
            &redis_url,
            "--rate",
            "200",
            "--warmup-secs",
            "1",
            "--trials",
            "1",
            "--ordering",
            "both",
            "--groups",
            "2",
            "--members",
            "2",
            "--from",
            "2",
            "--to",
            "4",
        ][..],
        extra,
    ]
    .concat();
    let out = run_bench(&args);
    let trials = lines_starting(&out, "trial=");
    let orderings: Vec<&str> = trials.iter().map(|t| t["ordering"].as_str()).collect();
    // Trial 1 is odd: the unordered stream goes first.
    assert_eq!(orderings, ["NONE", "KEY"], "{trials:?}");
    for t in &trials {
        assert_eq!(t["from"], "2", "{t:?}");
        assert_eq!(t["to"], "4", "{t:?}");
        assert_eq!(t["groups"], "2", "{t:?}");
        assert_eq!(t["migration_end"], "DEPRECATED", "{t:?}");
        let switch: f64 = t["switch_ms"].parse().unwrap();
        assert!(switch >= 0.0, "{t:?}");
        let reading = positive(t, "all_reading_ms");
        assert!(reading >= switch, "{t:?}");
        positive(t, "migration_done_ms");
        positive(t, "publish_steady_p99_ms");
        positive(t, "publish_during_p99_ms");
        positive(t, "publish_during_max_ms");
        assert_eq!(t["publish_errors"], "0", "{t:?}");
        let (group, shard) = t["slowest"].split_once(':').unwrap();
        assert!(["g1", "g2"].contains(&group), "{t:?}");
        assert!(shard.parse::<u32>().unwrap() < 4, "{t:?}");
        assert_eq!(t["per_group_ms"].split(',').count(), 2, "{t:?}");
        let stream = &t["stream"];
        assert!(stream.starts_with("bench-rs-"), "{stream}");
        for shard in 0..4 {
            let key = format!("{stream}:{shard}");
            assert!(!exists(&redis.url(), &key), "{key} left behind");
            let routing = format!("{key}:{{{key}}}:routing");
            assert!(!exists(&redis.url(), &routing), "{routing} left behind");
        }
    }
    let summaries = lines_starting(&out, "summary ");
    let modes: Vec<&str> = summaries.iter().map(|s| s["ordering"].as_str()).collect();
    assert_eq!(modes, ["NONE", "KEY"], "{summaries:?}");
    for s in &summaries {
        assert_eq!(s["trials"], "1", "{s:?}");
        assert_eq!(s["failed"], "0", "{s:?}");
        positive(s, "all_reading_median_ms");
        positive(s, "migration_done_median_ms");
        positive(s, "publish_during_p99_median_ms");
    }
    trials
}

#[test]
fn reshard_times_an_unordered_and_an_ordered_scale_and_removes_its_streams() {
    for t in reshard_smoke(&[]) {
        assert_eq!(t["quiesce"], "none", "{t:?}");
    }
}

#[test]
fn reshard_with_producer_quiesce_times_both_scales() {
    for t in reshard_smoke(&["--quiesce-timeout-ms", "2000"]) {
        assert_eq!(t["quiesce"], "2000ms", "{t:?}");
    }
}
