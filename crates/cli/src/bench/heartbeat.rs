//! `rsc bench heartbeat`: simulated members heartbeat a running coordinator flat out (or at `--rate`).
//!
//! Phases: create `--groups` streams, join every member and heartbeat until the groups converge (every
//! member owns exactly its assigned shards, nothing pending, every shard assigned), then measure steady
//! heartbeats for `--duration` seconds, report, and delete the bench groups (force) whatever happened.
//! Members follow the protocol as the e2e test member does (given-up shards are reported DRAINING, then
//! REVOKED), so the steady phase is the real steady path of the coordinator.

use clap::Args;
use rsc_protocol::wire::{
    AssignmentView, HeartbeatRequest, HeartbeatResponse, HeartbeatStatus, RevokeState,
    RevokingShardReport, RuntimeConsumerCapacity, ShardId,
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

/// HTTP access to the coordinator.
struct Api {
    http: reqwest::Client,
    base: String,
    auth: Option<(String, String)>,
}

impl Api {
    fn req(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let r = self.http.request(method, format!("{}{path}", self.base));
        match &self.auth {
            Some((u, p)) => r.basic_auth(u, Some(p)),
            None => r,
        }
    }
}

/// One simulated member, following the protocol like the e2e test member.
struct Member {
    id: String,
    group: usize,
    epoch: i64,
    metadata_version: i64,
    owned: Vec<u32>,
    draining: Vec<u32>,
    revoked: Vec<u32>,
    seq: u64,
    last: Option<(HeartbeatStatus, AssignmentView)>,
}

impl Member {
    fn request(&mut self) -> HeartbeatRequest {
        self.seq += 1;
        let mut revoking: Vec<RevokingShardReport> = self
            .draining
            .iter()
            .map(|&s| RevokingShardReport {
                shard: ShardId::new(s),
                state: RevokeState::Draining,
                in_flight: 1,
                acked_at: None,
            })
            .collect();
        revoking.extend(self.revoked.iter().map(|&s| RevokingShardReport {
            shard: ShardId::new(s),
            state: RevokeState::Revoked,
            in_flight: 0,
            acked_at: None,
        }));
        HeartbeatRequest {
            protocol_version: 1,
            request_id: format!("{}-{}", self.id, self.seq),
            member_id: self.id.clone(),
            member_name: None,
            member_epoch: self.epoch,
            metadata_version: self.metadata_version,
            runtime_consumer_capacity: RuntimeConsumerCapacity {
                runtime_max_concurrency: 1,
                available_concurrency: 1,
            },
            owned_shards: self.owned.iter().map(|&s| ShardId::new(s)).collect(),
            revoking_shards: revoking,
            shard_progress: vec![],
        }
    }

    fn apply(&mut self, resp: HeartbeatResponse) {
        // Draining shards finish after one heartbeat; REVOKED is reported once.
        self.revoked = std::mem::take(&mut self.draining);
        match resp.status {
            HeartbeatStatus::Ok => {
                let assigned: Vec<u32> = resp
                    .assignment
                    .assigned_shards
                    .iter()
                    .map(|s| s.shard_index)
                    .collect();
                for s in self.owned.iter().filter(|s| !assigned.contains(s)) {
                    self.draining.push(*s);
                }
                self.owned = assigned;
                self.epoch = resp.member_epoch;
                self.metadata_version = resp.metadata_version;
            }
            HeartbeatStatus::FencedMemberEpoch | HeartbeatStatus::UnknownMemberId => {
                self.owned.clear();
                self.epoch = 0;
            }
            _ => {}
        }
        self.last = Some((resp.status, resp.assignment));
    }

    /// OK, owns exactly what is assigned, nothing pending, nothing being given up.
    fn settled(&self) -> bool {
        match &self.last {
            Some((HeartbeatStatus::Ok, a)) => {
                a.pending_shards.is_empty()
                    && self.draining.is_empty()
                    && self.revoked.is_empty()
                    && a.assigned_shards.len() == self.owned.len()
            }
            _ => false,
        }
    }
}

/// Outcome of one worker's share of a phase.
#[derive(Default)]
struct Tally {
    latencies_us: Vec<u32>,
    statuses: BTreeMap<&'static str, u64>,
    errors: u64,
    first_error: Option<String>,
}

async fn heartbeat_once(
    api: &Api,
    streams: &[String],
    m: &mut Member,
    tally: &mut Tally,
) -> Option<Duration> {
    let body = m.request();
    let stream = &streams[m.group];
    let path = format!(
        "/coord/v1/streams/{stream}/groups/{stream}/members/{}/heartbeat",
        m.id
    );
    let start = Instant::now();
    let result = async {
        let r = api
            .req(reqwest::Method::POST, &path)
            .json(&body)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = r.status();
        let bytes = r.bytes().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            return Err(format!(
                "HTTP {status}: {}",
                String::from_utf8_lossy(&bytes)
            ));
        }
        serde_json::from_slice::<HeartbeatResponse>(&bytes).map_err(|e| e.to_string())
    }
    .await;
    let elapsed = start.elapsed();
    match result {
        Ok(resp) => {
            *tally.statuses.entry(resp.status.as_str()).or_default() += 1;
            m.apply(resp);
            Some(elapsed)
        }
        Err(e) => {
            tally.errors += 1;
            tally.first_error.get_or_insert(e);
            None
        }
    }
}

/// One convergence round: every worker heartbeats each of its members once.
async fn round(
    api: &Arc<Api>,
    streams: &Arc<Vec<String>>,
    shares: Vec<Vec<Member>>,
) -> (Vec<Vec<Member>>, Tally) {
    let mut handles = Vec::with_capacity(shares.len());
    for mut share in shares {
        let api = api.clone();
        let streams = streams.clone();
        handles.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            for m in share.iter_mut() {
                heartbeat_once(&api, &streams, m, &mut tally).await;
            }
            (share, tally)
        }));
    }
    let mut out = Vec::with_capacity(handles.len());
    let mut total = Tally::default();
    for h in handles {
        let (share, tally) = h.await.expect("bench worker panicked");
        out.push(share);
        merge(&mut total, tally);
    }
    (out, total)
}

fn merge(into: &mut Tally, from: Tally) {
    into.latencies_us.extend(from.latencies_us);
    for (k, v) in from.statuses {
        *into.statuses.entry(k).or_default() += v;
    }
    into.errors += from.errors;
    if into.first_error.is_none() {
        into.first_error = from.first_error;
    }
}

fn converged(shares: &[Vec<Member>], groups: usize, shards: u32) -> bool {
    let mut assigned = vec![0usize; groups];
    for m in shares.iter().flatten() {
        if !m.settled() {
            return false;
        }
        assigned[m.group] += m.owned.len();
    }
    assigned.iter().all(|&n| n == shards as usize)
}

/// The steady phase: each worker cycles over its members until the deadline.
async fn steady(
    api: &Arc<Api>,
    streams: &Arc<Vec<String>>,
    shares: Vec<Vec<Member>>,
    duration: Duration,
    rate: Option<f64>,
) -> (Tally, Duration) {
    let workers = shares.len();
    // Each worker sends at rate/workers per second, on a fixed schedule (no catch-up bursts beyond it).
    let interval = rate.map(|r| Duration::from_secs_f64(workers as f64 / r));
    let start = Instant::now();
    let deadline = start + duration;
    let mut handles = Vec::with_capacity(workers);
    for (w, mut share) in shares.into_iter().enumerate() {
        let api = api.clone();
        let streams = streams.clone();
        handles.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            if share.is_empty() {
                return tally;
            }
            // Stagger workers over one interval so a rate-limited run does not send in waves.
            let mut next = interval.map(|i| start + i.mul_f64(w as f64 / workers as f64));
            let mut i = 0usize;
            loop {
                if let (Some(n), Some(iv)) = (next.as_mut(), interval) {
                    if *n >= deadline {
                        break;
                    }
                    tokio::time::sleep_until((*n).into()).await;
                    *n += iv;
                }
                if Instant::now() >= deadline {
                    break;
                }
                let n = share.len();
                let m = &mut share[i % n];
                i += 1;
                if let Some(d) = heartbeat_once(&api, &streams, m, &mut tally).await {
                    tally
                        .latencies_us
                        .push(d.as_micros().min(u32::MAX as u128) as u32);
                }
            }
            tally
        }));
    }
    let mut total = Tally::default();
    for h in handles {
        merge(&mut total, h.await.expect("bench worker panicked"));
    }
    (total, start.elapsed())
}

/// `INFO commandstats` as command → calls.
async fn commandstats(
    conn: &mut redis::aio::MultiplexedConnection,
) -> Result<BTreeMap<String, u64>, String> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .map_err(|e| format!("INFO commandstats: {e}"))?;
    Ok(parse_commandstats(&info))
}

fn parse_commandstats(info: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in info.lines() {
        let Some(rest) = line.trim().strip_prefix("cmdstat_") else {
            continue;
        };
        let Some((name, fields)) = rest.split_once(':') else {
            continue;
        };
        if let Some(calls) = fields
            .split(',')
            .find_map(|f| f.strip_prefix("calls="))
            .and_then(|c| c.parse::<u64>().ok())
        {
            out.insert(name.to_string(), calls);
        }
    }
    out
}

/// utime+stime of a process in seconds, from /proc/<pid>/stat.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_cpu_ticks(&stat).map(|t| t as f64 / clock_ticks_per_sec())
}

fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    // Fields after "(comm)": state is field 3, utime field 14, stime field 15.
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Resident memory of a process in MiB (VmRSS from /proc/<pid>/status).
fn resident_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_vm_rss_kib(&status).map(|kib| kib as f64 / 1024.0)
}

fn parse_vm_rss_kib(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn clock_ticks_per_sec() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|t| *t > 0.0)
        .unwrap_or(100.0)
}

/// The coordinator's PID: the flag, or the single process `pgrep -f "rsc serve"` finds.
/// The coordinator's process: `--coordinator-pid`, else the process listening on the `--coordinator` URL's
/// port (a listening socket in /proc/net/tcp{,6}, matched to a process by the socket inode among its fds), so
/// several coordinators on one machine are told apart.
fn find_coordinator_pid(flag: Option<u32>, coordinator_url: &str) -> Result<u32, String> {
    if let Some(p) = flag {
        return Ok(p);
    }
    let port = url_port(coordinator_url)
        .ok_or_else(|| format!("no port in {coordinator_url}; pass --coordinator-pid"))?;
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(table) {
            inodes.extend(listening_inodes(&text, port));
        }
    }
    if inodes.is_empty() {
        return Err(format!(
            "no listening socket on port {port} in /proc/net/tcp; pass --coordinator-pid"
        ));
    }
    let mut pids = Vec::new();
    let procs = std::fs::read_dir("/proc").map_err(|e| format!("/proc: {e}"))?;
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        let owns = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path()).is_ok_and(|target| {
                socket_inode(&target.to_string_lossy()).is_some_and(|i| inodes.contains(&i))
            })
        });
        if owns {
            pids.push(pid);
        }
    }
    match pids.as_slice() {
        [p] => Ok(*p),
        [] => Err(format!(
            "no readable process owns the socket listening on port {port}; pass --coordinator-pid"
        )),
        _ => Err(format!(
            "several processes share the socket listening on port {port} ({pids:?}); pass --coordinator-pid"
        )),
    }
}

/// The port of an `http://host:port/…` URL (80 or 443 by scheme when none is written).
fn url_port(url: &str) -> Option<u16> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split('/').next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(':') && !port.contains(']') => port.parse().ok(),
        _ => match scheme {
            "https" => Some(443),
            _ => Some(80),
        },
    }
}

/// Inodes of the sockets listening (state 0A) on `port` in a /proc/net/tcp or tcp6 table.
fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let local_port = f.get(1)?.rsplit_once(':')?.1;
            let listening = *f.get(3)? == "0A";
            (listening && u16::from_str_radix(local_port, 16).ok()? == port)
                .then(|| f.get(9)?.parse().ok())
                .flatten()
        })
        .collect()
}

/// `socket:[12345]` → 12345.
fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// What the heartbeats cost in Redis commands, from INFO commandstats before and after.
#[derive(Debug)]
struct RedisCost {
    commands_per_heartbeat: f64,
    evalsha_per_heartbeat: f64,
    top: Vec<(String, u64)>,
}

/// `INFO commandstats` as command → calls.
type CommandStats = BTreeMap<String, u64>;

/// The Redis cost of the steady phase, or why it is unknown: no --redis-url, or a Redis that saw none of the
/// coordinator's heartbeat scripts (so not the coordinator's: a zero it did not measure).
fn redis_cost(
    stats: Option<(&CommandStats, &CommandStats)>,
    heartbeats: u64,
    redis_url: Option<&str>,
) -> Result<RedisCost, String> {
    let Some((before, after)) = stats else {
        return Err("pass --redis-url with the coordinator's Redis to count them".to_owned());
    };
    let delta = |name: &str| {
        after
            .get(name)
            .copied()
            .unwrap_or(0)
            .saturating_sub(before.get(name).copied().unwrap_or(0))
    };
    let scripts = delta("evalsha") + delta("eval");
    if scripts == 0 {
        return Err(format!(
            "the Redis at {} ran no heartbeat script during the run: is it the coordinator's Redis?",
            redis_url.unwrap_or("--redis-url")
        ));
    }
    // Our own INFO call is excluded; everything else on this Redis in the window counts.
    let total: u64 = after
        .keys()
        .filter(|k| k.as_str() != "info")
        .map(|k| delta(k))
        .sum();
    let mut top: Vec<(String, u64)> = after
        .keys()
        .filter(|k| k.as_str() != "info")
        .map(|k| (k.clone(), delta(k)))
        .filter(|(_, d)| *d > 0)
        .collect();
    top.sort_by_key(|t| std::cmp::Reverse(t.1));
    Ok(RedisCost {
        commands_per_heartbeat: total as f64 / heartbeats as f64,
        evalsha_per_heartbeat: scripts as f64 / heartbeats as f64,
        top,
    })
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
        shares[i % workers].push(Member {
            id: format!("m{i}"),
            group: i % args.groups,
            epoch: 0,
            metadata_version: 0,
            owned: vec![],
            draining: vec![],
            revoked: vec![],
            seq: 0,
            last: None,
        });
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

#[cfg(test)]
mod tests {
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
        assert_eq!(t.a.coordinator, "http://127.0.0.1:8080");
        let mut a = t.a.clone();
        a.username = None;
        a.password = None;
        assert!(a.validate().is_ok());
        a.coordinator = "http://10.0.0.1:8080".into();
        assert!(a.validate().is_err());
        let t = T::try_parse_from(["t", "--members", "0"]).unwrap();
        assert!(t.a.validate().is_err());
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
        let before: BTreeMap<String, u64> =
            [("evalsha".to_owned(), 10), ("info".to_owned(), 3)].into();
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
        let after: BTreeMap<String, u64> =
            [("evalsha".to_owned(), 110), ("info".to_owned(), 4)].into();
        let cost = redis_cost(Some((&before, &after)), 100, None).unwrap();
        assert_eq!(cost.commands_per_heartbeat, 1.0);
        assert_eq!(cost.evalsha_per_heartbeat, 1.0);
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
        assert_eq!(s.get("evalsha"), Some(&10));
        assert_eq!(s.get("hget"), Some(&3));
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
}
