//! What `rsc bench heartbeat` prints after the steady phase: per replica (throughput, latency, CPU per
//! heartbeat, cores busy, memory), the totals, what Redis spent (commands, script time, CPU) and what the
//! bench client itself spent, ending with one `k=v` summary line.

use super::*;

/// Counters read just before and just after the steady phase.
pub(super) struct Snapshot {
    /// utime+stime of each replica (None when its process is unknown or gone).
    replica_cpu: Vec<Option<f64>>,
    /// `INFO commandstats` and `INFO cpu` of the coordinator's Redis (with --redis-url).
    redis: Option<(CommandStats, Result<f64, String>)>,
    /// utime+stime of this bench process.
    client_cpu: Option<f64>,
}

impl Snapshot {
    pub(super) async fn take(
        pids: &[Result<u32, String>],
        conn: Option<&mut rsc_client::DataConn>,
    ) -> Result<Snapshot, String> {
        let replica_cpu = pids
            .iter()
            .map(|p| p.as_ref().ok().copied().and_then(cpu_seconds))
            .collect();
        let redis = match conn {
            Some(c) => Some((commandstats(c).await?, redis_cpu_seconds(c).await)),
            None => None,
        };
        Ok(Snapshot {
            replica_cpu,
            redis,
            client_cpu: cpu_seconds(std::process::id()),
        })
    }
}

/// Everything the report is made of.
pub(super) struct Run<'a> {
    pub(super) urls: &'a [String],
    pub(super) pids: Vec<Result<u32, String>>,
    pub(super) rss: Vec<Option<f64>>,
    pub(super) before: Snapshot,
    pub(super) after: Snapshot,
    pub(super) tally: Tally,
    pub(super) elapsed: Duration,
    pub(super) redis_url: Option<&'a str>,
}

/// The value at quantile `q` (0..=1) of a sorted slice (nearest rank).
pub(super) fn percentile(sorted: &[u32], q: f64) -> Option<u32> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

fn ms(sorted: &[u32], q: f64) -> f64 {
    percentile(sorted, q).map_or(0.0, |us| us as f64 / 1000.0)
}

fn delta(before: Option<f64>, after: Option<f64>) -> Option<f64> {
    Some(after? - before?).filter(|d| *d >= 0.0)
}

fn or_unknown(v: Option<f64>, decimals: usize) -> String {
    v.map_or("unknown".to_owned(), |v| format!("{v:.decimals$}"))
}

/// One convergence round in a line: how long it took and the answers it got, the heartbeats sent at once
/// among them, and how many members were still unsettled after it (`1.84s OK=10064 (at once: 64) unsettled=63`),
/// so that a join's time reads as rounds × round time, and a round that only a few members needed shows as such.
pub(super) fn round_line(took: Duration, tally: &Tally, unsettled: usize) -> String {
    let mut line = format!("{:.2}s", took.as_secs_f64());
    for (status, n) in &tally.statuses {
        line.push_str(&format!(" {status}={n}"));
    }
    if tally.at_once > 0 {
        line.push_str(&format!(" (at once: {})", tally.at_once));
    }
    if tally.asked_back > 0 {
        line.push_str(&format!(" (asked back: {})", tally.asked_back));
    }
    if tally.errors > 0 {
        line.push_str(&format!(" failed={}", tally.errors));
    }
    line.push_str(&format!(" unsettled={unsettled}"));
    line
}

/// Rounds listed whole before a long list is cut to its first and last ones ([`rounds_list`]).
const ROUNDS_LISTED: usize = 12;

/// The rounds' lines joined with `; `: all of them when there are at most [`ROUNDS_LISTED`], else the first
/// six and the last five around how many were left out (a restart that waits out a lease takes thousands of
/// rounds of a few members, all alike).
pub(super) fn rounds_list(rounds: &[String]) -> String {
    if rounds.len() <= ROUNDS_LISTED {
        return rounds.join("; ");
    }
    let (head, tail) = (&rounds[..6], &rounds[rounds.len() - 5..]);
    format!(
        "{}; … {} more rounds …; {}",
        head.join("; "),
        rounds.len() - 11,
        tail.join("; ")
    )
}

pub(super) fn print_report(run: Run<'_>) {
    let secs = run.elapsed.as_secs_f64();
    let tally = run.tally;
    let heartbeats = tally.successes();
    let per_1k = |cpu_s: f64, n: u64| cpu_s * 1000.0 / (n as f64 / 1000.0);

    println!(
        "steady: {heartbeats} heartbeats in {secs:.2}s, {} failed",
        tally.errors
    );
    if let Some(e) = &tally.first_error {
        println!("  first failure: {e}");
    }
    let statuses: Vec<String> = tally
        .statuses
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    println!("  statuses: {}", statuses.join(" "));

    // Per replica.
    let mut replica_cpu_total = Some(0.0);
    let mut replica_lines = Vec::new();
    for (i, url) in run.urls.iter().enumerate() {
        let mut lat = tally.latencies_us.get(&i).cloned().unwrap_or_default();
        lat.sort_unstable();
        let n = lat.len() as u64;
        let errors = tally.errors_by_replica.get(&i).copied().unwrap_or(0);
        let cpu = delta(run.before.replica_cpu[i], run.after.replica_cpu[i]);
        replica_cpu_total = replica_cpu_total.zip(cpu).map(|(a, b)| a + b);
        let cpu_per_1k = cpu.filter(|_| n > 0).map(|c| per_1k(c, n));
        let cores = cpu.map(|c| c / secs);
        let who = match &run.pids[i] {
            Ok(p) => format!("pid {p}"),
            Err(e) => format!("CPU unknown: {e}"),
        };
        println!(
            "replica {}/{} {url} ({who}): {n} heartbeats ({:.0}/s), {errors} failed, latency ms p50={:.2} p99={:.2}, \
             CPU {} ms per 1,000 heartbeats ({} cores busy), VmRSS {} MiB",
            i + 1,
            run.urls.len(),
            n as f64 / secs,
            ms(&lat, 0.5),
            ms(&lat, 0.99),
            or_unknown(cpu_per_1k, 1),
            or_unknown(cores, 2),
            or_unknown(run.rss[i], 1),
        );
        replica_lines.push(format!(
            "replica={} heartbeats_per_sec={:.0} p99_ms={:.2} cpu_ms_per_1k={} cpu_cores={} rss_mib={}",
            i + 1,
            n as f64 / secs,
            ms(&lat, 0.99),
            or_unknown(cpu_per_1k, 1),
            or_unknown(cores, 2),
            or_unknown(run.rss[i], 1),
        ));
    }

    // All replicas together.
    let mut all: Vec<u32> = tally.latencies_us.values().flatten().copied().collect();
    all.sort_unstable();
    let per_sec = heartbeats as f64 / secs;
    println!("throughput: {per_sec:.0} heartbeats/s");
    println!(
        "latency ms: p50={:.2} p99={:.2} p99.9={:.2} max={:.2}",
        ms(&all, 0.5),
        ms(&all, 0.99),
        ms(&all, 0.999),
        ms(&all, 1.0)
    );

    // Redis.
    let stats = run
        .before
        .redis
        .as_ref()
        .zip(run.after.redis.as_ref())
        .map(|((b, _), (a, _))| (b, a));
    let redis_cpu = match (&run.before.redis, &run.after.redis) {
        (Some((_, Ok(b))), Some((_, Ok(a)))) => delta(Some(*b), Some(*a)),
        _ => None,
    };
    let cost = redis_cost(stats, heartbeats, run.redis_url);
    let (cmds_per_hb, script_usec) = match &cost {
        Ok(cost) => {
            println!(
                "redis: {:.3} commands/heartbeat (INFO commandstats; calls inside scripts count too), {:.3} evalsha/heartbeat, \
                 {:.1} µs of script execution per heartbeat",
                cost.commands_per_heartbeat,
                cost.evalsha_per_heartbeat,
                cost.script_usec_per_heartbeat
            );
            let top: Vec<String> = cost
                .top
                .iter()
                .take(8)
                .map(|(k, d)| format!("{k}={d}"))
                .collect();
            println!("  command deltas: {}", top.join(" "));
            (
                format!("{:.3}", cost.commands_per_heartbeat),
                Some(cost.script_usec_per_heartbeat),
            )
        }
        Err(why) => {
            println!("redis: commands/heartbeat unknown ({why})");
            ("unknown".to_owned(), None)
        }
    };
    let redis_cpu_per_1k = redis_cpu
        .filter(|_| cost.is_ok())
        .map(|c| per_1k(c, heartbeats));
    if let Some(c) = redis_cpu.filter(|_| cost.is_ok()) {
        println!(
            "redis CPU (INFO cpu, used_cpu_user+used_cpu_sys): {:.1} ms per 1,000 heartbeats ({:.2} cores busy)",
            per_1k(c, heartbeats),
            c / secs
        );
    }

    // The coordinator replicas together, and the bench client itself (it shares the machine).
    let cpu_ms_per_1k = replica_cpu_total.map(|c| per_1k(c, heartbeats));
    match cpu_ms_per_1k {
        Some(c) if run.urls.len() == 1 => {
            if let Ok(p) = &run.pids[0] {
                println!(
                    "coordinator CPU (pid {p}): {:.3} s per 1,000 heartbeats",
                    c / 1000.0
                );
            }
        }
        Some(c) => println!(
            "coordinator CPU ({} replicas together): {:.3} s per 1,000 heartbeats",
            run.urls.len(),
            c / 1000.0
        ),
        None => println!("coordinator CPU: unknown"),
    }
    let client_cpu = delta(run.before.client_cpu, run.after.client_cpu);
    let parts = [replica_cpu_total, redis_cpu, client_cpu];
    if parts.iter().all(Option::is_some) {
        let cores: f64 = parts.iter().flatten().sum::<f64>() / secs;
        let machine = std::thread::available_parallelism().map_or(0, |n| n.get());
        println!(
            "cores busy: replicas {:.2} + redis {:.2} + bench client {:.2} = {cores:.2} of {machine} on this machine",
            replica_cpu_total.unwrap_or(0.0) / secs,
            redis_cpu.unwrap_or(0.0) / secs,
            client_cpu.unwrap_or(0.0) / secs,
        );
    }
    let rss_max = run.rss.iter().flatten().copied().reduce(f64::max);
    let rss = if run.rss.iter().all(Option::is_some) {
        or_unknown(rss_max, 1)
    } else {
        "unknown".to_owned()
    };
    println!(
        "coordinator resident memory (VmRSS) after the steady phase: {rss} MiB (largest replica)"
    );
    for line in replica_lines {
        println!("{line}");
    }
    println!(
        "heartbeats_per_sec={per_sec:.0} p99_ms={:.2} redis_cmds_per_heartbeat={cmds_per_hb} cpu_ms_per_1k={} rss_mib={rss} \
         replicas={} redis_cpu_ms_per_1k={} redis_script_us_per_heartbeat={} client_cpu_ms_per_1k={}",
        ms(&all, 0.99),
        or_unknown(cpu_ms_per_1k, 1),
        run.urls.len(),
        or_unknown(redis_cpu_per_1k, 1),
        or_unknown(script_usec, 1),
        or_unknown(client_cpu.map(|c| per_1k(c, heartbeats)), 1),
    );
}
