//! Tests of `rsc bench reshard`: argument defaults and bounds, the trial order, batching and keys, the
//! first-read bookkeeping, convergence, latency windows, and the trial and summary lines.

use super::measure::*;
use super::trial::{convergence_gap, group_names, is_terminal};
use super::*;
use clap::Parser;
use rsc_client::MemberSnapshot;

#[derive(Parser)]
struct T {
    #[command(flatten)]
    a: ReshardArgs,
}

fn parse(extra: &[&str]) -> ReshardArgs {
    let mut t = T::try_parse_from([&["t"], extra].concat()).unwrap();
    t.a.target.username = None;
    t.a.target.password = None;
    t.a
}

#[test]
fn defaults_validate_and_every_bound_is_checked() {
    let a = parse(&[]);
    assert_eq!((a.from, a.to, a.groups, a.members), (4, 8, 2, 3));
    assert_eq!((a.rate, a.warmup_secs, a.trials), (1000, 3, 3));
    assert_eq!(a.ordering, OrderingMode::Both);
    assert_eq!((a.quiesce_timeout_ms, a.handle_ms), (None, 0));
    assert!(a.validate().is_ok());

    for (flags, needle) in [
        (&["--from", "0"][..], "--from must be 1..=1024"),
        (&["--to", "1025"], "--to must be 1..=1024"),
        (
            &["--from", "8", "--to", "8"],
            "--to must differ from --from",
        ),
        (&["--groups", "0"], "--groups must be 1..=1024"),
        (&["--members", "2000"], "--members must be 1..=1024"),
        (
            &["--groups", "100", "--members", "100"],
            "--groups × --members",
        ),
        (&["--rate", "0"], "--rate must be 1..=100000"),
        (&["--rate", "100001"], "--rate must be 1..=100000"),
        (&["--warmup-secs", "0"], "--warmup-secs must be 1..=600"),
        (&["--trials", "0"], "--trials must be 1..=100"),
        (&["--trials", "101"], "--trials must be 1..=100"),
        (
            &["--quiesce-timeout-ms", "0"],
            "--quiesce-timeout-ms must be 1..=600000",
        ),
        (&["--quiesce-timeout-ms", "600001"], "--quiesce-timeout-ms"),
        (
            &["--handle-ms", "10001"],
            "--handle-ms must be at most 10000",
        ),
        (
            &["--coordinator", "http://10.0.0.1:8080"],
            "--coordinator must be a loopback URL",
        ),
        (
            &["--redis-url", "redis://10.0.0.1:6379"],
            "--redis-url must be a loopback URL",
        ),
        (
            &["--redis-cluster-nodes", "127.0.0.1:7000"],
            "standalone Redis",
        ),
    ] {
        let err = parse(flags).validate().unwrap_err();
        assert!(err.contains(needle), "{flags:?}: {err}");
    }
    let mut a = parse(&[]);
    a.target.username = Some("admin".into());
    assert!(a.validate().unwrap_err().contains("--password"));
    assert!(
        parse(&["--from", "8", "--to", "3", "--quiesce-timeout-ms", "2000"])
            .validate()
            .is_ok()
    );
    assert!(T::try_parse_from(["t", "--ordering", "sometimes"]).is_err());
}

#[test]
fn both_alternates_which_ordering_goes_first() {
    use StreamOrdering::{Key, None as Unordered};
    assert_eq!(OrderingMode::Both.trial_order(1), vec![Unordered, Key]);
    assert_eq!(OrderingMode::Both.trial_order(2), vec![Key, Unordered]);
    assert_eq!(OrderingMode::Both.trial_order(3), vec![Unordered, Key]);
    assert_eq!(OrderingMode::Key.trial_order(2), vec![Key]);
    assert_eq!(OrderingMode::None.trial_order(1), vec![Unordered]);
}

#[test]
fn batches_add_up_to_the_rate_every_second() {
    for rate in [1, 50, 150, 1000, 1234, 100_000] {
        let second: u64 = (0..TICKS_PER_SEC).map(|t| batch_len(rate, t)).sum();
        assert_eq!(second, u64::from(rate), "rate {rate}");
        let next: u64 = (TICKS_PER_SEC..2 * TICKS_PER_SEC)
            .map(|t| batch_len(rate, t))
            .sum();
        assert_eq!(next, u64::from(rate), "rate {rate}");
    }
    assert_eq!(batch_len(1000, 7), 10);
    assert_eq!(batch_len(50, 0), 0);
    assert_eq!(batch_len(50, 1), 1);
}

#[test]
fn the_keys_reach_every_shard_before_and_after() {
    for (from, to) in [(4, 8), (2, 4), (8, 3), (1, 64), (16, 200)] {
        let n = key_count(from, to).unwrap();
        assert!(n >= MIN_KEYS);
        for count in [from, to] {
            let mut hit = vec![false; count as usize];
            for k in 0..n {
                let key = record_key(k, n);
                hit[rsc_protocol::routing::shard_for_key(key.as_bytes(), count).unwrap()
                    as usize] = true;
            }
            assert!(hit.iter().all(|&h| h), "{n} keys miss a shard of {count}");
        }
    }
    assert_eq!(key_count(4, 8).unwrap(), MIN_KEYS);
    assert_eq!(record_key(65, 64), "k-1");
}

#[test]
fn first_reads_count_only_records_published_after_the_switch() {
    let reads = FirstReads::new(2, 3);
    // Before the switch is marked nothing counts, whatever its publish time.
    reads.note_with(0, 0, 5_000, || 6_000);
    assert_eq!(reads.missing().len(), 6);
    assert_eq!(reads.mark_switch_with(|| 10_000), 10_000);
    // A second mark does not move it.
    assert_eq!(reads.mark_switch_with(|| 99_000), 10_000);
    // Published at or before the switch: not counted.
    reads.note_with(0, 0, 10_000, || 11_000);
    reads.note_with(0, 0, 9_000, || 11_000);
    assert_eq!(reads.missing().len(), 6);
    // t0 = 8_000 ns: the scale call began 2 µs before the switch.
    let t0 = 8_000;
    reads.note_with(0, 0, 10_001, || 1_008_000);
    reads.note_with(0, 0, 10_002, || 9_008_000); // later reads of a pair do not move it
    reads.note_with(0, 1, 10_001, || 2_008_000);
    reads.note_with(0, 2, 10_001, || 3_008_000);
    reads.note_with(1, 0, 10_001, || 4_008_000);
    reads.note_with(1, 1, 10_001, || 5_008_000);
    reads.note_with(1, 7, 10_001, || 1); // an old shard beyond the new count is ignored
    reads.note_with(5, 0, 10_001, || 1); // no such group
    assert_eq!(reads.missing(), vec![(1, 2)]);
    assert_eq!(reads.times(t0), None);
    reads.note_with(1, 2, 10_001, || 3_508_000);
    assert!(reads.missing().is_empty());
    let times = reads.times(t0).unwrap();
    assert_eq!(times.all_ms, 5.0);
    assert_eq!(times.slowest, (1, 1));
    assert_eq!(times.per_group_ms, vec![3.0, 5.0]);
}

fn member(id: &str, reading: &[u32]) -> MemberSnapshot {
    MemberSnapshot {
        member_id: id.into(),
        owned: reading.to_vec(),
        reading: reading.to_vec(),
        lease_valid: true,
        ..MemberSnapshot::default()
    }
}

#[test]
fn convergence_needs_every_shard_read_once_and_settled_members() {
    assert_eq!(
        convergence_gap(&[member("a", &[0, 1]), member("b", &[2, 3])], 4),
        None
    );
    assert_eq!(
        convergence_gap(&[member("a", &[0]), member("b", &[2])], 4).as_deref(),
        Some("shards [1, 3] not read")
    );
    assert_eq!(
        convergence_gap(&[member("a", &[0, 1]), member("b", &[1])], 2).as_deref(),
        Some("shards [1] read by two members")
    );
    let mut draining = member("a", &[0, 1]);
    draining.draining = vec![1];
    assert!(
        convergence_gap(&[draining, member("b", &[])], 2)
            .unwrap()
            .contains("member a is still settling")
    );
    assert!(
        convergence_gap(&[member("a", &[0, 1, 2]), member("b", &[3])], 4)
            .unwrap()
            .contains("2 shards more")
    );
    // More members than shards: some read nothing.
    assert_eq!(
        convergence_gap(&[member("a", &[0]), member("b", &[1]), member("c", &[])], 2),
        None
    );
}

#[test]
fn groups_are_named_after_the_prefix_and_terminal_states_are_known() {
    assert_eq!(
        group_names("bench-rs-1", 3),
        vec!["bench-rs-1", "bench-rs-1-g2", "bench-rs-1-g3"]
    );
    for s in ["DEPRECATED", "ROLLED_BACK", "FORCE_COMPLETED", "ABORTED"] {
        assert!(is_terminal(s), "{s}");
    }
    for s in ["PREPARING", "ACTIVE", "DRAINING"] {
        assert!(!is_terminal(s), "{s}");
    }
}

fn sample(start_ns: u64, ms: u64) -> Sample {
    Sample {
        start_ns,
        latency: Duration::from_millis(ms),
    }
}

#[test]
fn latency_windows_take_the_batches_started_in_them() {
    let samples: Vec<Sample> = (1..=100).map(|i| sample(i * 10, i)).collect();
    let w = window(&samples, 10, 510).unwrap();
    assert_eq!(w.count, 50);
    assert_eq!((w.p50, w.p99, w.max), (25.0, 50.0, 50.0));
    let w = window(&samples, 510, u64::MAX).unwrap();
    assert_eq!((w.count, w.p50, w.max), (50, 75.0, 100.0));
    assert_eq!(window(&samples, 0, 10), None);
}

fn result(trial: usize, ordering: StreamOrdering, all_ms: f64, p99: f64) -> TrialResult {
    TrialResult {
        trial,
        ordering,
        stream: "bench-rs-0a1b2c3d".into(),
        switch_ms: 12.34,
        reading: ReadingTimes {
            all_ms,
            slowest: (1, 5),
            per_group_ms: vec![all_ms - 10.0, all_ms],
        },
        migration_done_ms: all_ms * 2.0,
        migration_end: vec!["DEPRECATED".into(), "DEPRECATED".into()],
        steady: Some(LatencyStats {
            count: 300,
            p50: 0.4,
            p99: 1.25,
            max: 2.0,
        }),
        during: Some(LatencyStats {
            count: 40,
            p50: 0.5,
            p99,
            max: p99 + 1.0,
        }),
        publish_errors: 0,
    }
}

fn fields(line: &str) -> BTreeMap<&str, &str> {
    line.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .collect()
}

use std::collections::BTreeMap;

#[test]
fn a_trial_line_names_every_figure() {
    let setup = Setup {
        from: 4,
        to: 8,
        groups: 2,
        rate: 1000,
        quiesce_timeout_ms: Some(2000),
    };
    let line = result(1, StreamOrdering::Key, 845.0, 3.5).line(&setup);
    assert!(
        line.starts_with("trial=1 ordering=KEY from=4 to=8 groups=2 rate=1000 quiesce=2000ms ")
    );
    let f = fields(&line);
    assert_eq!(f["switch_ms"], "12.3");
    assert_eq!(f["all_reading_ms"], "845.0");
    assert_eq!(f["slowest"], "g2:5");
    assert_eq!(f["per_group_ms"], "g1:835.0,g2:845.0");
    assert_eq!(f["migration_done_ms"], "1690.0");
    assert_eq!(f["migration_end"], "DEPRECATED");
    assert_eq!(f["publish_steady_p99_ms"], "1.25");
    assert_eq!(f["publish_during_p50_ms"], "0.50");
    assert_eq!(f["publish_during_p99_ms"], "3.50");
    assert_eq!(f["publish_during_max_ms"], "4.50");
    assert_eq!(f["publish_during_batches"], "40");
    assert_eq!(f["stream"], "bench-rs-0a1b2c3d");

    let mut r = result(2, StreamOrdering::None, 100.0, 1.0);
    r.steady = None;
    r.migration_end[1] = "ROLLED_BACK".into();
    let line = r.line(&Setup {
        quiesce_timeout_ms: None,
        ..setup
    });
    let f = fields(&line);
    assert_eq!(f["quiesce"], "none");
    assert_eq!(f["ordering"], "NONE");
    assert_eq!(f["publish_steady_p99_ms"], "unknown");
    assert_eq!(f["migration_end"], "g1:DEPRECATED,g2:ROLLED_BACK");
}

#[test]
fn the_summary_takes_medians_over_the_completed_trials() {
    let rs = [
        result(1, StreamOrdering::Key, 900.0, 3.0),
        result(2, StreamOrdering::Key, 700.0, 9.0),
        result(3, StreamOrdering::Key, 800.0, 4.0),
    ];
    let refs: Vec<&TrialResult> = rs.iter().collect();
    let line = summary_line(StreamOrdering::Key, &refs, 1);
    assert!(
        line.starts_with("summary ordering=KEY trials=3 failed=1 "),
        "{line}"
    );
    let f = fields(&line);
    assert_eq!(f["all_reading_median_ms"], "800.0");
    assert_eq!(f["migration_done_median_ms"], "1600.0");
    assert_eq!(f["publish_during_p99_median_ms"], "4.00");
    assert_eq!(f["publish_during_max_median_ms"], "5.00");
    assert_eq!(f["publish_steady_p99_median_ms"], "1.25");
    assert_eq!(f["switch_median_ms"], "12.3");

    let line = summary_line(StreamOrdering::None, &[], 2);
    let f = fields(&line);
    assert_eq!(f["trials"], "0");
    assert_eq!(f["all_reading_median_ms"], "unknown");
}
