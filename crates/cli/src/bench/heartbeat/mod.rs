//! `rsc bench heartbeat`: simulated members heartbeat a running coordinator flat out (or at `--rate`).
//!
//! Phases: create `--groups` streams, join every member and heartbeat until the groups converge (every
//! member owns exactly its assigned shards, nothing pending, every shard assigned), then measure steady
//! heartbeats for `--duration` seconds, report, and delete the bench groups (force) whatever happened.
//! Members run the SDK's model of the member protocol (`rsc_client::Membership`; given-up shards are
//! reported DRAINING, then REVOKED), so the steady phase is the real steady path of the coordinator.
//!
//! Split: `member.rs` the simulated members and the phases they run (converge, steady), `cost.rs` what a
//! run costs (coordinator CPU and memory from /proc, Redis commandstats), tests in `tests.rs`.

mod cost;
mod member;
#[cfg(test)]
mod tests;

use cost::*;
use member::*;

use clap::Args;
use rsc_client::{LocalShard, Membership, Outgoing};
use rsc_protocol::wire::{
    AssignmentView, HeartbeatRequest, HeartbeatResponse, HeartbeatStatus, RuntimeConsumerCapacity,
};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Upper bounds that keep one run bounded in time and count.
const MAX_MEMBERS: usize = 100_000;
const MAX_GROUPS: usize = 1_000;
const MAX_SHARDS: u32 = 10_000;
const MAX_DURATION_SECS: u64 = 3_600;
const MAX_CONCURRENCY: usize = 4_096;
/// How long the join-and-converge phase may take before the run gives up.
const CONVERGE_TIMEOUT: Duration = Duration::from_secs(180);

#[derive(Args, Debug, Clone)]
pub struct HeartbeatArgs {
    /// Coordinator base URL (loopback only).
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    pub coordinator: String,
    /// Redis the coordinator uses; read for INFO commandstats deltas (loopback only). Without it the Redis
    /// commands per heartbeat are reported as unknown.
    #[arg(long)]
    pub redis_url: Option<String>,
    /// User name for HTTP Basic (needs the MEMBER role, plus write to create and delete groups).
    #[arg(long, env = "RSC_USERNAME")]
    pub username: Option<String>,
    /// Password for --username.
    #[arg(long, env = "RSC_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// Simulated members in total, spread evenly over the groups.
    #[arg(long, default_value_t = 1000)]
    pub members: usize,
    /// Groups (one stream each, named bench-<run>-<i>).
    #[arg(long, default_value_t = 10)]
    pub groups: usize,
    /// Shards per group.
    #[arg(long, default_value_t = 12)]
    pub shards: u32,
    /// Steady-state measurement time in seconds.
    #[arg(long, default_value_t = 10)]
    pub duration: u64,
    /// Target heartbeats per second in total (default: flat out).
    #[arg(long)]
    pub rate: Option<f64>,
    /// Heartbeat requests in flight at once.
    #[arg(long, default_value_t = 64)]
    pub concurrency: usize,
    /// PID of the coordinator process, for CPU time (default: the process listening on --coordinator's port).
    #[arg(long)]
    pub coordinator_pid: Option<u32>,
}

impl HeartbeatArgs {
    /// Checks the bounds; the error says which flag is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if self.members == 0 || self.members > MAX_MEMBERS {
            return Err(format!("--members must be 1..={MAX_MEMBERS}"));
        }
        if self.groups == 0 || self.groups > MAX_GROUPS || self.groups > self.members {
            return Err(format!(
                "--groups must be 1..={MAX_GROUPS} and at most --members"
            ));
        }
        if self.shards == 0 || self.shards > MAX_SHARDS {
            return Err(format!("--shards must be 1..={MAX_SHARDS}"));
        }
        if self.duration == 0 || self.duration > MAX_DURATION_SECS {
            return Err(format!("--duration must be 1..={MAX_DURATION_SECS}"));
        }
        if self.concurrency == 0 || self.concurrency > MAX_CONCURRENCY {
            return Err(format!("--concurrency must be 1..={MAX_CONCURRENCY}"));
        }
        if let Some(r) = self.rate
            && !(r.is_finite() && r > 0.0)
        {
            return Err("--rate must be a positive number".into());
        }
        if self.username.is_some() != self.password.is_some() {
            return Err("give both --username and --password (or RSC_USERNAME and RSC_PASSWORD), or neither".into());
        }
        if !is_loopback_url(&self.coordinator) {
            return Err(
                "--coordinator must be a loopback URL (127.0.0.1, ::1 or localhost)".into(),
            );
        }
        if self
            .redis_url
            .as_deref()
            .is_some_and(|u| !is_loopback_url(u))
        {
            return Err("--redis-url must be a loopback URL (127.0.0.1, ::1 or localhost)".into());
        }
        Ok(())
    }
}

/// True when the URL's host is 127.0.0.1, [::1] or localhost.
pub(crate) fn is_loopback_url(url: &str) -> bool {
    let Some((_, rest)) = url.split_once("://") else {
        return false;
    };
    let authority = rest.split('/').next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    let host = if let Some(stripped) = host_port.strip_prefix('[') {
        stripped.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    matches!(host, "127.0.0.1" | "::1" | "localhost")
}

pub fn run(args: HeartbeatArgs) -> ExitCode {
    if let Err(e) = args.validate() {
        eprintln!("rsc bench heartbeat: {e}");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("rsc bench heartbeat: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(bench(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rsc bench heartbeat: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The value at quantile `q` (0..=1) of a sorted slice (nearest rank).
fn percentile(sorted: &[u32], q: f64) -> Option<u32> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

async fn bench(args: HeartbeatArgs) -> Result<(), String> {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(args.concurrency)
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| format!("HTTP client: {e}"))?;
    let api = Arc::new(Api {
        http,
        base: args.coordinator.trim_end_matches('/').to_string(),
        auth: args.username.clone().zip(args.password.clone()),
    });
    let mut conn = match &args.redis_url {
        Some(url) => {
            let redis =
                redis::Client::open(url.as_str()).map_err(|e| format!("--redis-url: {e}"))?;
            Some(
                redis
                    .get_multiplexed_async_connection()
                    .await
                    .map_err(|e| format!("cannot connect to Redis at {url}: {e}"))?,
            )
        }
        None => None,
    };

    let run_id = uuid::Uuid::new_v4().simple().to_string();
    let run_id = &run_id[..12];
    let streams: Arc<Vec<String>> = Arc::new(
        (0..args.groups)
            .map(|i| format!("bench-{run_id}-{i}"))
            .collect(),
    );
    println!(
        "rsc bench heartbeat: {} members, {} groups x {} shards, {}s, concurrency {}, rate {}",
        args.members,
        args.groups,
        args.shards,
        args.duration,
        args.concurrency,
        args.rate
            .map_or("flat out".to_string(), |r| format!("{r}/s"))
    );

    let mut created = Vec::new();
    let result = measure(&args, &api, &streams, conn.as_mut(), &mut created).await;

    // Clean up whatever was created, whatever happened.
    let mut cleanup_failures = 0;
    for s in &created {
        let r = api
            .req(
                reqwest::Method::DELETE,
                &format!("/coord/v1/streams/{s}/groups/{s}"),
            )
            .json(&serde_json::json!({"requestedBy": "bench", "reason": "rsc bench heartbeat", "force": true}))
            .send()
            .await;
        match r {
            Ok(r) if r.status().is_success() => {}
            Ok(r) => {
                cleanup_failures += 1;
                eprintln!("rsc bench heartbeat: deleting {s}: HTTP {}", r.status());
            }
            Err(e) => {
                cleanup_failures += 1;
                eprintln!("rsc bench heartbeat: deleting {s}: {e}");
            }
        }
    }
    if cleanup_failures == 0 {
        println!("deleted {} bench groups", created.len());
    }
    result
}

async fn measure(
    args: &HeartbeatArgs,
    api: &Arc<Api>,
    streams: &Arc<Vec<String>>,
    mut conn: Option<&mut redis::aio::MultiplexedConnection>,
    created: &mut Vec<String>,
) -> Result<(), String> {
    for s in streams.iter() {
        let r = api
            .req(reqwest::Method::POST, &format!("/coord/v1/streams/{s}"))
            .json(&serde_json::json!({"initialShardCount": args.shards, "requestedBy": "bench"}))
            .send()
            .await
            .map_err(|e| format!("creating {s}: {e}"))?;
        let status = r.status();
        if !status.is_success() {
            let body = r.text().await.unwrap_or_default();
            return Err(format!("creating {s}: HTTP {status}: {body}"));
        }
        created.push(s.clone());
    }

    // Members are dealt round-robin to groups, and groups' members round-robin to workers.
    let workers = args.concurrency.min(args.members);
    let mut shares: Vec<Vec<Member>> = (0..workers).map(|_| Vec::new()).collect();
    for i in 0..args.members {
        shares[i % workers].push(Member::new(&format!("m{i}"), i % args.groups));
    }

    let join_start = Instant::now();
    let mut rounds = 0;
    // A failed request while a thousand members join is retried in the next round, as a real client would;
    // only not converging in time fails the run. The failures are reported.
    let mut join_errors = 0;
    let mut first_join_error = None;
    loop {
        let (next, tally) = round(api, streams, shares).await;
        shares = next;
        rounds += 1;
        join_errors += tally.errors;
        if first_join_error.is_none() {
            first_join_error = tally.first_error;
        }
        if converged(&shares, args.groups, args.shards) {
            break;
        }
        if join_start.elapsed() > CONVERGE_TIMEOUT {
            return Err(format!(
                "groups did not converge within {}s ({rounds} rounds)",
                CONVERGE_TIMEOUT.as_secs()
            ));
        }
    }
    println!(
        "joined and converged in {:.2}s ({rounds} heartbeat rounds)",
        join_start.elapsed().as_secs_f64()
    );
    if join_errors > 0 {
        println!(
            "  {join_errors} requests failed while converging and were retried; first: {}",
            first_join_error.unwrap_or_default()
        );
    }

    let pid = find_coordinator_pid(args.coordinator_pid, &args.coordinator);
    if let Err(e) = &pid {
        println!("coordinator CPU: unknown ({e})");
    }
    let pid = pid.ok();
    let cpu_before = pid.and_then(cpu_seconds);
    let stats_before = match conn.as_deref_mut() {
        Some(c) => Some(commandstats(c).await?),
        None => None,
    };

    let (tally, elapsed) = steady(
        api,
        streams,
        shares,
        Duration::from_secs(args.duration),
        args.rate,
    )
    .await;

    let cpu_after = pid.and_then(cpu_seconds);
    let rss_mib = pid.and_then(resident_mib);
    let stats_after = match conn {
        Some(c) => Some(commandstats(c).await?),
        None => None,
    };

    let heartbeats = tally.latencies_us.len() as u64;
    if heartbeats == 0 {
        return Err(format!(
            "no heartbeat succeeded in the steady phase ({} errors; first: {})",
            tally.errors,
            tally.first_error.unwrap_or_default()
        ));
    }
    let mut lat = tally.latencies_us;
    lat.sort_unstable();
    let ms = |q: f64| percentile(&lat, q).map_or(0.0, |us| us as f64 / 1000.0);
    let per_sec = heartbeats as f64 / elapsed.as_secs_f64();

    let redis_cost = redis_cost(
        stats_before.as_ref().zip(stats_after.as_ref()),
        heartbeats,
        args.redis_url.as_deref(),
    );

    let cpu_ms_per_1k = match (cpu_before, cpu_after) {
        (Some(b), Some(a)) => Some((a - b) * 1000.0 / (heartbeats as f64 / 1000.0)),
        _ => None,
    };

    println!(
        "steady: {heartbeats} heartbeats in {:.2}s, {} failed",
        elapsed.as_secs_f64(),
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
    println!("throughput: {per_sec:.0} heartbeats/s");
    println!(
        "latency ms: p50={:.2} p99={:.2} p99.9={:.2} max={:.2}",
        ms(0.5),
        ms(0.99),
        ms(0.999),
        ms(1.0)
    );
    let cmds_per_hb = match &redis_cost {
        Ok(cost) => {
            println!(
                "redis: {:.3} commands/heartbeat (INFO commandstats; calls inside scripts count too), {:.3} evalsha/heartbeat",
                cost.commands_per_heartbeat, cost.evalsha_per_heartbeat
            );
            let top: Vec<String> = cost
                .top
                .iter()
                .take(8)
                .map(|(k, d)| format!("{k}={d}"))
                .collect();
            println!("  command deltas: {}", top.join(" "));
            format!("{:.3}", cost.commands_per_heartbeat)
        }
        Err(why) => {
            println!("redis: commands/heartbeat unknown ({why})");
            "unknown".to_owned()
        }
    };
    match (pid, cpu_ms_per_1k) {
        (Some(p), Some(c)) => println!(
            "coordinator CPU (pid {p}): {:.3} s per 1,000 heartbeats",
            c / 1000.0
        ),
        _ => println!("coordinator CPU: unknown"),
    }
    let rss = rss_mib.map_or("unknown".to_string(), |m| format!("{m:.1}"));
    println!("coordinator resident memory (VmRSS) after the steady phase: {rss} MiB");
    println!(
        "heartbeats_per_sec={per_sec:.0} p99_ms={:.2} redis_cmds_per_heartbeat={cmds_per_hb} cpu_ms_per_1k={} rss_mib={rss}",
        ms(0.99),
        cpu_ms_per_1k.map_or("unknown".to_string(), |c| format!("{c:.1}"))
    );
    Ok(())
}
