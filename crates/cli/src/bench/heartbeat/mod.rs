//! `rsc bench heartbeat`: simulated members heartbeat a running coordinator flat out (or at `--rate`).
//!
//! Phases: create `--groups` streams, join every member and heartbeat until the groups converge (every
//! member owns exactly its assigned shards, nothing pending, every shard assigned), then measure steady
//! heartbeats for `--duration` seconds, report, and delete the bench groups (force) whatever happened.
//! Members run the SDK's model of the member protocol (`rsc_client::Membership`) as the SDK does with work
//! that finishes at once: a given-up shard is drained as the answer arrives and reported REVOKED in a
//! heartbeat sent at once (`--drain heartbeat`: reported DRAINING first, then REVOKED a heartbeat later), so
//! the steady phase is the real steady path of the coordinator.
//!
//! With several `--coordinator` URLs (replicas of one coordinator on one Redis) each member talks to one
//! replica, a group's members spread over all of them, and each replica's throughput, latency, CPU and
//! memory is reported next to the totals.
//!
//! With `--restart-percent P`, after the report a rolling restart follows (`restart.rs`): P % of the members
//! (exactly ⌊members × P / 100⌋, spread over the groups and workers) shut down and join again as new
//! processes, as `--restart-mode` has it (crash, graceful, static), and the bench reports how long after the
//! last rejoin every group had converged again.
//!
//! Split: `member.rs` the simulated members and the phases they run (converge, steady), `restart.rs` the
//! rolling restart, `cost.rs` what a run costs (replica CPU and memory from /proc, Redis commandstats and
//! CPU), `report.rs` the printed figures, tests in `tests.rs`.

pub(crate) mod cost;
mod member;
mod report;
mod restart;
#[cfg(test)]
mod tests;

use cost::*;
use member::*;
use report::*;
use restart::*;

pub use member::DrainModel;
pub use restart::RestartMode;

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
const MAX_REPLICAS: usize = 16;
/// How long the join-and-converge phase may take before the run gives up.
const CONVERGE_TIMEOUT: Duration = Duration::from_secs(180);

#[derive(Args, Debug, Clone)]
pub struct HeartbeatArgs {
    /// Coordinator base URL (loopback only). Several replicas as a comma-separated list: each member talks
    /// to one of them (a group's members are spread over all), and each is reported on its own.
    #[arg(long, default_value = "http://127.0.0.1:8080", value_delimiter = ',')]
    pub coordinator: Vec<String>,
    /// Redis the coordinator uses; read for INFO commandstats deltas (loopback only). Without it the Redis
    /// commands per heartbeat are reported as unknown.
    #[arg(long)]
    pub redis_url: Option<String>,
    /// TLS files for a `rediss://` --redis-url.
    #[command(flatten)]
    pub tls: crate::redis_args::TlsArgs,
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
    #[allow(rustdoc::invalid_html_tags)] // the doc is the option's --help text, shown as written
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
    /// PID of each coordinator process, for CPU time, in --coordinator's order (comma-separated; default:
    /// the process listening on each URL's port).
    #[arg(long, value_delimiter = ',')]
    pub coordinator_pid: Vec<u32>,
    /// After the steady phase, this percentage of the members leave and join again at once (a rolling
    /// restart), and the time to converge again after the last rejoin is reported: exactly
    /// ⌊members × percent / 100⌋ members, spread evenly over the groups and workers. 0: no restart.
    #[arg(long, default_value_t = 0)]
    pub restart_percent: u8,
    /// How --restart-percent's members restart: `crash` (one leave heartbeat with the shards still DRAINING,
    /// then the new process under the same id: its shards wait out the old incarnation's lease), `graceful`
    /// (the SDK's shutdown: the leave is heartbeated until its release is confirmed, then the new process
    /// joins) or `static` (every member has a groupInstanceId; the SDK's shutdown leaves temporarily, the
    /// target is reserved and given back to the new process).
    #[arg(long, value_enum, default_value_t = RestartMode::Graceful)]
    pub restart_mode: RestartMode,
    /// How a member finishes with a shard it gives up: `instant` (as the SDK with nothing in flight: drained
    /// at once and reported REVOKED in a heartbeat sent at once) or `heartbeat` (reported DRAINING in its
    /// next heartbeat and REVOKED in the one after: work in flight for one heartbeat).
    #[arg(long, value_enum, default_value_t = DrainModel::Instant)]
    pub drain: DrainModel,
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
        if self.coordinator.is_empty() || self.coordinator.len() > MAX_REPLICAS {
            return Err(format!(
                "--coordinator takes 1..={MAX_REPLICAS} comma-separated URLs"
            ));
        }
        if let Some(bad) = self.coordinator.iter().find(|u| !is_loopback_url(u)) {
            return Err(format!(
                "--coordinator {bad:?} must be a loopback URL (127.0.0.1, ::1 or localhost)"
            ));
        }
        let mut urls: Vec<&str> = self
            .coordinator
            .iter()
            .map(|u| u.trim_end_matches('/'))
            .collect();
        urls.sort_unstable();
        if urls.windows(2).any(|w| w[0] == w[1]) {
            return Err("--coordinator lists the same URL twice".into());
        }
        if !self.coordinator_pid.is_empty() && self.coordinator_pid.len() != self.coordinator.len()
        {
            return Err(format!(
                "--coordinator-pid needs one PID per --coordinator URL ({} given for {})",
                self.coordinator_pid.len(),
                self.coordinator.len()
            ));
        }
        if self
            .redis_url
            .as_deref()
            .is_some_and(|u| !is_loopback_url(u))
        {
            return Err("--redis-url must be a loopback URL (127.0.0.1, ::1 or localhost)".into());
        }
        if self.restart_percent > 100 {
            return Err("--restart-percent must be 0..=100".into());
        }
        if self.restart_percent > 0 && restart_count(self.members, self.restart_percent) == 0 {
            return Err(format!(
                "--restart-percent {} of {} members restarts none (⌊members × percent / 100⌋)",
                self.restart_percent, self.members
            ));
        }
        if self.tls.tls()?.is_some() && self.redis_url.is_none() {
            return Err("--redis-tls-* options apply to --redis-url: give it too".into());
        }
        Ok(())
    }
}

/// True when the URL's host is 127.0.0.1, `[::1]` or localhost.
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

async fn bench(args: HeartbeatArgs) -> Result<(), String> {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(args.concurrency)
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| format!("HTTP client: {e}"))?;
    let api = Arc::new(Api {
        http,
        bases: args
            .coordinator
            .iter()
            .map(|u| u.trim_end_matches('/').to_string())
            .collect(),
        auth: args.username.clone().zip(args.password.clone()),
    });
    let mut conn = match &args.redis_url {
        Some(url) => {
            let target = rsc_client::RedisTarget::standalone(url.as_str());
            target.validate().map_err(|e| format!("--redis-url: {e}"))?;
            let conn = match args.tls.tls()? {
                Some(tls) => target.connect_with_tls(&tls).await,
                None => target.connect().await,
            };
            Some(conn.map_err(|e| format!("cannot connect to Redis at {url}: {e}"))?)
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
        "rsc bench heartbeat: {} members, {} groups x {} shards, {} replica(s), {}s, concurrency {}, rate {}, drain {}",
        args.members,
        args.groups,
        args.shards,
        args.coordinator.len(),
        args.duration,
        args.concurrency,
        args.rate
            .map_or("flat out".to_string(), |r| format!("{r}/s")),
        match args.drain {
            DrainModel::Instant => "instant",
            DrainModel::Heartbeat => "heartbeat",
        }
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
    mut conn: Option<&mut rsc_client::DataConn>,
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

    let interval = configured_interval(api).await?;
    // Members are dealt round-robin to groups, each group's members round-robin to replicas (so every
    // replica serves every group), and members round-robin to workers.
    let workers = args.concurrency.min(args.members);
    let replicas = args.coordinator.len();
    let mut shares: Vec<Vec<Member>> = (0..workers).map(|_| Vec::new()).collect();
    for i in 0..args.members {
        let (group, replica) = placement(i, args.groups, replicas);
        // With --restart-mode static every member is static, its instance id named after its member id.
        let instance = (args.restart_mode == RestartMode::Static).then(|| format!("i{i}"));
        shares[i % workers].push(Member::new(
            i,
            group,
            replica,
            args.drain,
            instance.as_deref(),
            interval,
        ));
    }

    let join_start = Instant::now();
    let mut rounds = 0;
    // A failed request while a thousand members join is retried in the next round, as a real client would;
    // only not converging in time fails the run. The failures are reported.
    let mut join_errors = 0;
    let mut first_join_error = None;
    let mut each_round = Vec::new();
    loop {
        let round_start = Instant::now();
        let (next, tally) = round(api, streams, shares).await;
        shares = next;
        each_round.push(round_line(
            round_start.elapsed(),
            &tally,
            unsettled(&shares),
        ));
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
                "groups did not converge within {}s ({rounds} rounds: {})",
                CONVERGE_TIMEOUT.as_secs(),
                rounds_list(&each_round)
            ));
        }
    }
    println!(
        "joined and converged in {:.2}s ({rounds} heartbeat rounds)",
        join_start.elapsed().as_secs_f64()
    );
    println!("  each round: {}", rounds_list(&each_round));
    if join_errors > 0 {
        println!(
            "  {join_errors} requests failed while converging and were retried; first: {}",
            first_join_error.unwrap_or_default()
        );
    }

    let pids: Vec<Result<u32, String>> = args
        .coordinator
        .iter()
        .enumerate()
        .map(|(i, url)| find_coordinator_pid(args.coordinator_pid.get(i).copied(), url))
        .collect();
    let before = Snapshot::take(&pids, conn.as_deref_mut()).await?;

    let (tally, elapsed, shares) = steady(
        api,
        streams,
        shares,
        Duration::from_secs(args.duration),
        args.rate,
    )
    .await;

    let after = Snapshot::take(&pids, conn).await?;
    let rss: Vec<Option<f64>> = pids
        .iter()
        .map(|p| p.as_ref().ok().copied().and_then(resident_mib))
        .collect();

    if tally.successes() == 0 {
        return Err(format!(
            "no heartbeat succeeded in the steady phase ({} errors; first: {})",
            tally.errors,
            tally.first_error.unwrap_or_default()
        ));
    }
    print_report(Run {
        urls: &args.coordinator,
        pids,
        rss,
        before,
        after,
        tally,
        elapsed,
        redis_url: args.redis_url.as_deref(),
    });
    if args.restart_percent > 0 {
        rolling_restart(api, streams, shares, args).await?;
    }
    Ok(())
}

/// The coordinator's configured heartbeat interval in ms (its compatibility view): an answer asking for the
/// next heartbeat sooner asks the member back.
async fn configured_interval(api: &Api) -> Result<i64, String> {
    let doc: serde_json::Value = api
        .req(reqwest::Method::GET, "/coord/v1/monitoring/compatibility")
        .send()
        .await
        .map_err(|e| format!("reading the coordinator's heartbeat interval: {e}"))?
        .json()
        .await
        .map_err(|e| format!("reading the coordinator's heartbeat interval: {e}"))?;
    let interval = crate::bench::common::timing_default(&doc, "heartbeatInterval")?;
    Ok(interval.as_millis().min(i64::MAX as u128) as i64)
}

/// Member `i`'s group and replica: groups round-robin, and within a group its members round-robin over
/// the replicas.
pub(super) fn placement(i: usize, groups: usize, replicas: usize) -> (usize, usize) {
    (i % groups, (i / groups) % replicas)
}
