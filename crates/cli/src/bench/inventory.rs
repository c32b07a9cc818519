//! `rsc bench inventory`: what an inventory of idle groups costs the coordinator replicas and Redis, and whether
//! the groups' deadlines are still honoured amid it (issue #35, BENCHMARKS.md "Inventory").
//!
//! Phases: create `--groups` streams of `--shards` shards each (one group each, named `<prefix>-<i>`; existing
//! ones are kept, so several builds can be measured against one inventory with `--keep`), let the replicas
//! settle, then measure for `--duration` seconds the coordinator CPU of every replica (from /proc) and Redis's
//! commands (`INFO stats`) and CPU (`INFO cpu`) per idle group. Then a silent member: one member joins a probe
//! group, heartbeats once more and goes silent; the time from its last heartbeat to its expiry, against the
//! member lease. With `--kill-replica <i>`: a member joins a group owned by that replica (by rendezvous hashing
//! over the registry) through another one, stays silent until its lease has almost run out, and the replica is
//! killed (SIGKILL); the time from the kill to the expiry is how long its groups went without their owner.
//! Ends with one `key=value` line; deletes what it created unless `--keep`.

use super::heartbeat::cost::{cpu_seconds, find_coordinator_pid};
use super::heartbeat::is_loopback_url;
use clap::Args;
use rsc_group::ownership::{ReplicaSet, group_work};
use serde_json::{Value, json};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

const MAX_GROUPS: usize = 50_000;
const MAX_DURATION_SECS: u64 = 3_600;
/// How long one wait for an expiry may take before the run gives up.
const WAIT_BOUND: Duration = Duration::from_secs(120);

#[derive(Args, Debug, Clone)]
pub struct InventoryArgs {
    /// Coordinator replicas (comma-separated base URLs, loopback only).
    #[arg(long, default_value = "http://127.0.0.1:8080", value_delimiter = ',')]
    pub coordinator: Vec<String>,
    /// The Redis the coordinators use (loopback only), read for INFO stats and cpu.
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    pub redis_url: String,
    /// The coordinators' key prefix (`coordinator.store.key-prefix`), to read the replica registry.
    #[arg(long, default_value = "redis-stream:coord")]
    pub key_prefix: String,
    /// User name for HTTP Basic (needs WRITE and MEMBER).
    #[arg(long, env = "RSC_USERNAME")]
    pub username: Option<String>,
    /// Password for --username.
    #[arg(long, env = "RSC_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// Idle groups (one stream each).
    #[arg(long, default_value_t = 1_000)]
    pub groups: usize,
    /// Shards per stream.
    #[arg(long, default_value_t = 4)]
    pub shards: u32,
    /// Seconds of idle measurement.
    #[arg(long, default_value_t = 30)]
    pub duration: u64,
    /// Seconds to let the replicas settle after the inventory exists (their first visit of every group).
    #[arg(long, default_value_t = 20)]
    pub settle: u64,
    /// Stream prefix of the inventory (`<prefix>-<i>`).
    #[arg(long, default_value = "inv")]
    pub prefix: String,
    /// Create requests in flight at once.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// PID of each coordinator, in --coordinator's order (default: the process listening on each URL's port).
    #[arg(long, value_delimiter = ',')]
    pub coordinator_pid: Vec<u32>,
    /// Kill this replica (its position in --coordinator, from 0) with SIGKILL at the end and time how long its
    /// groups go without an owner.
    #[arg(long)]
    pub kill_replica: Option<usize>,
    /// Skip the silent-member probe.
    #[arg(long)]
    pub no_probe: bool,
    /// Keep the inventory afterwards (to measure another build against it).
    #[arg(long)]
    pub keep: bool,
}

impl InventoryArgs {
    pub fn validate(&self) -> Result<(), String> {
        if self.coordinator.is_empty() || self.coordinator.iter().any(|u| !is_loopback_url(u)) {
            return Err("--coordinator takes loopback URLs (127.0.0.1, ::1 or localhost)".into());
        }
        if !is_loopback_url(&self.redis_url) {
            return Err("--redis-url must be a loopback URL (127.0.0.1, ::1 or localhost)".into());
        }
        if self.groups == 0 || self.groups > MAX_GROUPS {
            return Err(format!("--groups must be 1..={MAX_GROUPS}"));
        }
        if self.shards == 0 || self.shards > 256 {
            return Err("--shards must be 1..=256".into());
        }
        if self.duration == 0 || self.duration > MAX_DURATION_SECS {
            return Err(format!("--duration must be 1..={MAX_DURATION_SECS}"));
        }
        if self.concurrency == 0 || self.concurrency > 256 {
            return Err("--concurrency must be 1..=256".into());
        }
        if self.username.is_some() != self.password.is_some() {
            return Err("give both --username and --password (or RSC_USERNAME and RSC_PASSWORD), or neither".into());
        }
        if !self.coordinator_pid.is_empty() && self.coordinator_pid.len() != self.coordinator.len()
        {
            return Err("--coordinator-pid needs one PID per --coordinator URL".into());
        }
        if let Some(k) = self.kill_replica
            && (k >= self.coordinator.len() || self.coordinator.len() < 2)
        {
            return Err(
                "--kill-replica must name one of at least two --coordinator URLs (0-based)".into(),
            );
        }
        rsc_protocol::validate::validate_stream_prefix(&format!("{}-{}", self.prefix, self.groups))
            .map_err(|e| format!("--prefix: {e}"))?;
        Ok(())
    }
}

pub fn run(args: InventoryArgs) -> ExitCode {
    if let Err(e) = args.validate() {
        eprintln!("rsc bench inventory: {e}");
        return ExitCode::from(2);
    }
    let runtime = match super::common::runtime() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("rsc bench inventory: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(bench(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rsc bench inventory: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The coordinator API with the bench's credentials.
#[derive(Clone)]
struct Api {
    http: reqwest::Client,
    auth: Option<(String, String)>,
}

impl Api {
    async fn send(
        &self,
        method: reqwest::Method,
        url: &str,
        body: Option<Value>,
    ) -> Result<(u16, Value), String> {
        let mut req = self.http.request(method, url);
        if let Some((u, p)) = &self.auth {
            req = req.basic_auth(u, Some(p));
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.map_err(|e| format!("{url}: {e}"))?;
        let status = r.status().as_u16();
        let text = r.text().await.map_err(|e| format!("{url}: {e}"))?;
        Ok((
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        ))
    }

    /// Creates the stream `prefix` (one group named like it); one that exists already is fine.
    async fn create_stream(&self, base: &str, prefix: &str, shards: u32) -> Result<(), String> {
        let (status, body) = self
            .send(
                reqwest::Method::POST,
                &format!("{base}/coord/v1/streams/{prefix}"),
                Some(json!({"initialShardCount": shards, "requestedBy": "bench", "reason": "rsc bench inventory"})),
            )
            .await?;
        match status {
            200..=299 | 409 => Ok(()),
            _ => Err(format!("creating stream {prefix}: HTTP {status} {body}")),
        }
    }

    async fn delete_group(&self, base: &str, prefix: &str) -> Result<(), String> {
        let (status, body) = self
            .send(
                reqwest::Method::DELETE,
                &format!("{base}/coord/v1/streams/{prefix}/groups/{prefix}"),
                Some(json!({"requestedBy": "bench", "reason": "rsc bench inventory cleanup", "force": true})),
            )
            .await?;
        match status {
            200..=299 | 404 => Ok(()),
            _ => Err(format!("deleting {prefix}: HTTP {status} {body}")),
        }
    }

    /// One heartbeat of member `member` of the group `prefix`/`prefix`; returns (epoch, metadataVersion).
    async fn heartbeat(
        &self,
        base: &str,
        prefix: &str,
        member: &str,
        seq: u64,
        at: (i64, i64),
    ) -> Result<(i64, i64), String> {
        let (status, body) = self
            .send(
                reqwest::Method::POST,
                &format!("{base}/coord/v1/streams/{prefix}/groups/{prefix}/members/{member}/heartbeat"),
                Some(json!({
                    "protocolVersion": 1, "requestId": format!("{member}-{seq}"), "memberId": member,
                    "memberEpoch": at.0, "metadataVersion": at.1,
                    "runtimeConsumerCapacity": {"runtimeMaxConcurrency": 1, "availableConcurrency": 1},
                })),
            )
            .await?;
        if status != 200 || body["status"] != "OK" {
            return Err(format!(
                "heartbeat of {member} in {prefix}: HTTP {status} {body}"
            ));
        }
        Ok((
            body["memberEpoch"].as_i64().unwrap_or(0),
            body["metadataVersion"].as_i64().unwrap_or(0),
        ))
    }

    async fn member_state(
        &self,
        base: &str,
        prefix: &str,
        member: &str,
    ) -> Result<Option<String>, String> {
        let (status, body) = self
            .send(
                reqwest::Method::GET,
                &format!("{base}/coord/v1/monitoring/streams/{prefix}/groups/{prefix}/members"),
                None,
            )
            .await?;
        if status != 200 {
            return Err(format!("members of {prefix}: HTTP {status} {body}"));
        }
        Ok(body["members"]
            .as_array()
            .and_then(|l| l.iter().find(|m| m["memberId"] == member))
            .and_then(|m| m["state"].as_str().map(str::to_owned)))
    }

    /// The replica's `coordinator.id`, from its `up{coordinator}` gauge.
    async fn replica_id(&self, base: &str) -> Result<String, String> {
        let mut req = self.http.get(format!("{base}/metrics"));
        if let Some((u, p)) = &self.auth {
            req = req.basic_auth(u, Some(p));
        }
        let text = req
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(|e| e.to_string())?;
        let text = text.text().await.map_err(|e| e.to_string())?;
        text.lines()
            .find_map(|l| {
                l.strip_prefix("redis_stream_coord_up{coordinator=\"")?
                    .split('"')
                    .next()
                    .map(str::to_owned)
            })
            .ok_or_else(|| format!("{base}/metrics has no redis_stream_coord_up{{coordinator}}"))
    }

    /// The member lease TTL the coordinator answers with.
    async fn lease_ttl(&self, base: &str) -> Result<Duration, String> {
        let (_, doc) = self
            .send(
                reqwest::Method::GET,
                &format!("{base}/coord/v1/monitoring/compatibility"),
                None,
            )
            .await?;
        super::common::timing_default(&doc, "memberLeaseTtl")
    }

    /// Polls until `member` of `prefix` is EXPIRED; returns when it was seen so.
    async fn wait_expired(
        &self,
        base: &str,
        prefix: &str,
        member: &str,
    ) -> Result<Instant, String> {
        let give_up = Instant::now() + WAIT_BOUND;
        loop {
            if self.member_state(base, prefix, member).await?.as_deref() == Some("EXPIRED") {
                return Ok(Instant::now());
            }
            if Instant::now() > give_up {
                return Err(format!(
                    "{member} of {prefix} was not expired within {WAIT_BOUND:?}"
                ));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Redis's `total_commands_processed` and CPU seconds.
async fn redis_counters(
    conn: &mut redis::aio::MultiplexedConnection,
) -> Result<(u64, f64), String> {
    let stats: String = redis::cmd("INFO")
        .arg("stats")
        .query_async(conn)
        .await
        .map_err(|e| e.to_string())?;
    let cpu: String = redis::cmd("INFO")
        .arg("cpu")
        .query_async(conn)
        .await
        .map_err(|e| e.to_string())?;
    let field = |text: &str, key: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(key)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    let commands = field(&stats, "total_commands_processed")
        .ok_or("INFO stats has no total_commands_processed")?;
    let user = field(&cpu, "used_cpu_user").ok_or("INFO cpu has no used_cpu_user")?;
    let sys = field(&cpu, "used_cpu_sys").ok_or("INFO cpu has no used_cpu_sys")?;
    Ok((commands as u64, user + sys))
}

async fn bench(args: InventoryArgs) -> Result<(), String> {
    let api = Api {
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| e.to_string())?,
        auth: args.username.clone().zip(args.password.clone()),
    };
    let bases: Vec<String> = args
        .coordinator
        .iter()
        .map(|u| u.trim_end_matches('/').to_owned())
        .collect();
    let pids: Vec<u32> = bases
        .iter()
        .enumerate()
        .map(|(i, b)| find_coordinator_pid(args.coordinator_pid.get(i).copied(), b))
        .collect::<Result<_, _>>()?;
    let mut redis = redis::Client::open(args.redis_url.as_str())
        .map_err(|e| e.to_string())?
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| format!("--redis-url: {e}"))?;

    // The inventory, created through every replica in turn.
    let names: Vec<String> = (0..args.groups)
        .map(|i| format!("{}-{i}", args.prefix))
        .collect();
    let started = Instant::now();
    let api_c = Arc::new(api.clone());
    let mut tasks = tokio::task::JoinSet::new();
    for (i, name) in names.iter().enumerate() {
        if tasks.len() >= args.concurrency
            && let Some(done) = tasks.join_next().await
        {
            done.map_err(|e| e.to_string())??;
        }
        let (api, base, name, shards) = (
            api_c.clone(),
            bases[i % bases.len()].clone(),
            name.clone(),
            args.shards,
        );
        tasks.spawn(async move { api.create_stream(&base, &name, shards).await });
    }
    while let Some(done) = tasks.join_next().await {
        done.map_err(|e| e.to_string())??;
    }
    eprintln!(
        "inventory: {} groups of {} shards in {:.1} s; settling {} s",
        args.groups,
        args.shards,
        started.elapsed().as_secs_f64(),
        args.settle
    );
    tokio::time::sleep(Duration::from_secs(args.settle)).await;

    // Idle cost.
    let cpu_before: Vec<f64> = pids
        .iter()
        .map(|p| cpu_seconds(*p).unwrap_or(0.0))
        .collect();
    let (cmds_before, rcpu_before) = redis_counters(&mut redis).await?;
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(args.duration)).await;
    let secs = t0.elapsed().as_secs_f64();
    let (cmds_after, rcpu_after) = redis_counters(&mut redis).await?;
    let cpu_after: Vec<f64> = pids
        .iter()
        .map(|p| cpu_seconds(*p).unwrap_or(0.0))
        .collect();
    let coord_cpu: f64 = cpu_after.iter().zip(&cpu_before).map(|(a, b)| a - b).sum();
    let groups = args.groups as f64;
    let cpu_us_per_group_s = coord_cpu / secs / groups * 1e6;
    // The two INFO pairs of the bench itself are left out.
    let commands_per_s = (cmds_after.saturating_sub(cmds_before).saturating_sub(2)) as f64 / secs;
    let redis_cpu_ms_per_s = (rcpu_after - rcpu_before) / secs * 1e3;
    let mut line = vec![
        format!("groups={}", args.groups),
        format!("shards={}", args.shards),
        format!("replicas={}", bases.len()),
        format!("coordinator_cpu_ms_per_s={:.1}", coord_cpu / secs * 1e3),
        format!("coordinator_cpu_us_per_group_s={cpu_us_per_group_s:.2}"),
        format!("redis_commands_per_s={commands_per_s:.0}"),
        format!("redis_commands_per_group_s={:.3}", commands_per_s / groups),
        format!("redis_cpu_ms_per_s={redis_cpu_ms_per_s:.1}"),
    ];
    eprintln!("idle: {}", line.join(" "));

    let ttl = api.lease_ttl(&bases[0]).await?;
    let mut created_probes: Vec<String> = Vec::new();
    let mut outcome: Result<(), String> = Ok(());
    if !args.no_probe {
        // A silent member alone in its group.
        let probe = format!("{}-probe", args.prefix);
        api.create_stream(&bases[0], &probe, 1).await?;
        created_probes.push(probe.clone());
        let at = api
            .heartbeat(&bases[0], &probe, "silent", 1, (0, 0))
            .await?;
        api.heartbeat(&bases[0], &probe, "silent", 2, at).await?;
        let last = Instant::now();
        let seen = api.wait_expired(&bases[0], &probe, "silent").await?;
        let after = seen.duration_since(last);
        line.push(format!("silent_member_expired_ms={}", after.as_millis()));
        line.push(format!(
            "silent_member_beyond_lease_ms={}",
            after.as_millis() as i64 - ttl.as_millis() as i64
        ));
    }
    if let Some(k) = args.kill_replica {
        let step = async {
            let key = format!("{}:replicas", args.key_prefix);
            let ids: Vec<String> = redis::cmd("ZRANGE")
                .arg(&key)
                .arg(0)
                .arg(-1)
                .query_async(&mut redis)
                .await
                .map_err(|e| e.to_string())?;
            let victim = api.replica_id(&bases[k]).await?;
            let view = ReplicaSet::new(ids);
            let group = (0..10_000)
                .map(|j| format!("{}-kill-{j}", args.prefix))
                .find(|g| view.owner(&group_work(g, g)) == Some(victim.as_str()))
                .ok_or("no probe group name is owned by the replica to kill")?;
            let other = &bases[(k + 1) % bases.len()];
            api.create_stream(other, &group, 1).await?;
            created_probes.push(group.clone());
            let at = api.heartbeat(other, &group, "orphan", 1, (0, 0)).await?;
            api.heartbeat(other, &group, "orphan", 2, at).await?;
            // Let the lease nearly run out, so its end falls while the killed replica is still registered.
            tokio::time::sleep(ttl.saturating_sub(Duration::from_millis(500))).await;
            let kill = std::process::Command::new("kill")
                .arg("-KILL")
                .arg(pids[k].to_string())
                .status()
                .map_err(|e| e.to_string())?;
            if !kill.success() {
                return Err(format!("kill -KILL {} failed", pids[k]));
            }
            let killed = Instant::now();
            let seen = api.wait_expired(other, &group, "orphan").await?;
            line.push(format!(
                "killed_replica_member_expired_after_kill_ms={}",
                seen.duration_since(killed).as_millis()
            ));
            Ok::<(), String>(())
        };
        outcome = step.await;
    }
    println!("{}", line.join(" "));

    if !args.keep {
        let alive: Vec<&String> = bases
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != args.kill_replica)
            .map(|(_, b)| b)
            .collect();
        let mut failures = 0usize;
        let mut tasks = tokio::task::JoinSet::new();
        for (i, name) in names.iter().chain(&created_probes).enumerate() {
            if tasks.len() >= args.concurrency
                && let Some(Ok(Err(_))) = tasks.join_next().await
            {
                failures += 1;
            }
            let (api, base, name) = (api_c.clone(), alive[i % alive.len()].clone(), name.clone());
            tasks.spawn(async move { api.delete_group(&base, &name).await });
        }
        while let Some(done) = tasks.join_next().await {
            if !matches!(done, Ok(Ok(()))) {
                failures += 1;
            }
        }
        let mut keys: Vec<String> = Vec::new();
        for name in names.iter() {
            for s in 0..args.shards {
                keys.push(rsc_store::Keyspace::shard_stream(name, s));
            }
        }
        for name in &created_probes {
            keys.push(rsc_store::Keyspace::shard_stream(name, 0));
        }
        for chunk in keys.chunks(500) {
            let _: Result<i64, _> = redis::cmd("UNLINK")
                .arg(chunk)
                .query_async(&mut redis)
                .await;
        }
        if failures > 0 {
            eprintln!("cleanup: {failures} group(s) not deleted");
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: InventoryArgs,
    }

    #[test]
    fn flags_are_checked() {
        let ok = Cli::parse_from(["x", "--groups", "10"]).args;
        assert!(ok.validate().is_ok());
        let bad = Cli::parse_from(["x", "--groups", "0"]).args;
        assert!(bad.validate().unwrap_err().contains("--groups"));
        let remote = Cli::parse_from(["x", "--coordinator", "http://10.0.0.1:8080"]).args;
        assert!(remote.validate().unwrap_err().contains("loopback"));
        let kill = Cli::parse_from(["x", "--kill-replica", "0"]).args;
        assert!(kill.validate().unwrap_err().contains("--kill-replica"));
    }
}
