//! `rsc bench failover`: how long shards go unread when a consumer dies (SIGKILL) or leaves (SIGTERM).
//!
//! It runs `--workers` consumer members as child processes (this binary re-executed as the hidden
//! `rsc bench failover-worker`, one SDK managed consumer each, printing a JSON line to stdout whenever it
//! starts or stops reading a shard). Once every shard is read by exactly one worker and the spread is at most
//! one shard, each trial picks a worker, kills it (SIGKILL) or stops it (SIGTERM: the SDK drains, reports
//! REVOKED and leaves), and measures from the signal to the moment the last of its shards is being read by
//! another worker (the `at` time the new reader reports). A fresh worker then replaces it and the group
//! converges again before the next trial. The kill time is compared with the coordinator's member lease
//! TTL plus one heartbeat interval, read from `GET /coord/v1/monitoring/compatibility`. The replacement's
//! time, from its start to the group converged again, is the hand-over to a joining member: it waits for
//! the shards' holders to release them (revoke before assign).
//!
//! Ends with `kill_median_ms=… kill_max_ms=… bound_ms=… kill_within_bound=… leave_median_ms=… leave_max_ms=…
//! join_median_ms=… join_max_ms=…`,
//! and deletes the bench group and its shard streams whatever happened.

use super::common::{self, Target};
use clap::Args;
use rsc_client::{
    Consumer, ConsumerConfig, ConsumerEvent, CreateStream, Delivery, EventSink, StopReason,
};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

/// How long one convergence or hand-over may take before the run gives up.
const STEP_TIMEOUT: Duration = Duration::from_secs(180);
const MAX_WORKERS: usize = 64;
const MAX_TRIALS: usize = 100;

#[derive(Args, Debug, Clone)]
pub struct FailoverArgs {
    #[command(flatten)]
    pub target: Target,
    /// Consumer processes (one member each).
    #[arg(long, default_value_t = 3)]
    pub workers: usize,
    /// Shards of the bench stream.
    #[arg(long, default_value_t = 6)]
    pub shards: u32,
    /// Trials of each kind (SIGKILL, then SIGTERM).
    #[arg(long, default_value_t = 3)]
    pub trials: usize,
    /// SDK assignment lease of the workers in milliseconds (default: the coordinator's lease TTL minus a
    /// third, at least twice the SDK poll timeout).
    #[arg(long)]
    pub assignment_lease_ms: Option<u64>,
}

/// The hidden child: one SDK managed consumer that prints its read events as JSON lines.
#[derive(Args, Debug, Clone)]
pub struct FailoverWorkerArgs {
    #[command(flatten)]
    pub target: Target,
    #[arg(long)]
    pub stream: String,
    #[arg(long)]
    pub member_id: String,
    #[arg(long)]
    pub assignment_lease_ms: u64,
}

impl FailoverArgs {
    pub fn validate(&self) -> Result<(), String> {
        self.target.validate()?;
        if !self.target.cluster.redis_cluster_nodes.is_empty() {
            return Err(
                "rsc bench failover runs on a standalone Redis (--redis-url); --redis-cluster-nodes is for rsc bench dataplane"
                    .into(),
            );
        }
        if self.workers < 2 || self.workers > MAX_WORKERS {
            return Err(format!("--workers must be 2..={MAX_WORKERS}"));
        }
        if (self.shards as usize) < self.workers || self.shards > 1024 {
            return Err("--shards must be at least --workers and at most 1024".into());
        }
        if self.trials == 0 || self.trials > MAX_TRIALS {
            return Err(format!("--trials must be 1..={MAX_TRIALS}"));
        }
        Ok(())
    }
}

pub fn run(args: FailoverArgs) -> ExitCode {
    if let Err(e) = args.validate() {
        eprintln!("rsc bench failover: {e}");
        return ExitCode::from(2);
    }
    match common::runtime().and_then(|r| r.block_on(bench(args))) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rsc bench failover: {e}");
            ExitCode::FAILURE
        }
    }
}

fn unix_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// One line a worker prints.
fn event_line(e: &ConsumerEvent) -> Option<String> {
    let v = match e {
        ConsumerEvent::ReadStarted { shard, at, .. } => {
            serde_json::json!({"event": "read_started", "shard": shard, "at_ms": unix_ms(*at)})
        }
        ConsumerEvent::ReadStopped {
            shard, at, reason, ..
        } => serde_json::json!({
            "event": "read_stopped", "shard": shard, "at_ms": unix_ms(*at),
            "reason": if *reason == StopReason::LeaseExpired { "lease_expired" } else { "stopped" },
        }),
        _ => return None,
    };
    Some(v.to_string())
}

pub fn run_worker(args: FailoverWorkerArgs) -> ExitCode {
    match common::runtime().and_then(|r| r.block_on(worker(args))) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rsc bench failover-worker: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn worker(args: FailoverWorkerArgs) -> Result<(), String> {
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| format!("installing the SIGTERM handler: {e}"))?;
    let coord = args.target.client()?;
    let sink: EventSink = Arc::new(|e: &ConsumerEvent| {
        if let Some(line) = event_line(e) {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    });
    let config = ConsumerConfig::new(&args.stream, &args.target.redis_url)
        .member_id(args.member_id.clone())
        .assignment_lease(Duration::from_millis(args.assignment_lease_ms));
    let consumer = Consumer::start_with_events(
        coord,
        config,
        |d: Delivery| async move {
            let _ = d.ack().await;
        },
        Some(sink),
    )
    .await
    .map_err(|e| format!("starting the consumer: {e}"))?;
    sigterm.recv().await;
    let report = consumer.shutdown().await;
    println!(
        "{}",
        serde_json::json!({"event": "left", "clean": report.timed_out.is_empty(), "at_ms": unix_ms(SystemTime::now())})
    );
    Ok(())
}

/// What a worker reported, tagged with its slot.
struct Report {
    worker: usize,
    event: serde_json::Value,
}

/// The workers and who reads what, as their events tell.
struct Fleet {
    children: BTreeMap<usize, Child>,
    /// shard → workers reading it.
    readers: BTreeMap<u32, BTreeSet<usize>>,
    tx: mpsc::UnboundedSender<Report>,
    rx: mpsc::UnboundedReceiver<Report>,
    next_id: usize,
    run_id: String,
    stream: String,
    lease_ms: u64,
    target: Target,
}

impl Fleet {
    fn spawn(&mut self) -> Result<usize, String> {
        let id = self.next_id;
        self.next_id += 1;
        let exe = std::env::current_exe().map_err(|e| format!("locating this binary: {e}"))?;
        let mut cmd = Command::new(exe);
        cmd.args([
            "bench",
            "failover-worker",
            "--coordinator",
            &self.target.coordinator,
            "--redis-url",
            &self.target.redis_url,
            "--stream",
            &self.stream,
            "--member-id",
            &format!("{}-w{id}", self.run_id),
            "--assignment-lease-ms",
            &self.lease_ms.to_string(),
        ])
        .env_remove("RSC_USERNAME")
        .env_remove("RSC_PASSWORD")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
        if let (Some(u), Some(p)) = (&self.target.username, &self.target.password) {
            cmd.env("RSC_USERNAME", u).env("RSC_PASSWORD", p);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("starting a worker process: {e}"))?;
        let stdout = child.stdout.take().ok_or("worker has no stdout")?;
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Ok(event) = serde_json::from_str(&line) {
                    let _ = tx.send(Report { worker: id, event });
                }
            }
        });
        self.children.insert(id, child);
        Ok(id)
    }

    fn apply(&mut self, r: &Report) {
        let Some(shard) = r.event["shard"].as_u64() else {
            return;
        };
        let readers = self.readers.entry(shard as u32).or_default();
        match r.event["event"].as_str() {
            Some("read_started") => {
                readers.insert(r.worker);
            }
            Some("read_stopped") => {
                readers.remove(&r.worker);
            }
            _ => {}
        }
    }

    /// Receives one report (bounded by `deadline`) and applies it.
    async fn next(&mut self, deadline: Instant) -> Result<Report, String> {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, self.rx.recv()).await {
            Ok(Some(r)) => {
                self.apply(&r);
                Ok(r)
            }
            Ok(None) => Err("worker event channel closed".into()),
            Err(_) => Err(format!("timed out after {}s", STEP_TIMEOUT.as_secs())),
        }
    }

    fn shards_of(&self, worker: usize) -> BTreeSet<u32> {
        self.readers
            .iter()
            .filter(|(_, r)| r.contains(&worker))
            .map(|(s, _)| *s)
            .collect()
    }

    /// Every shard read by exactly one live worker, every live worker within one shard of the others.
    fn converged(&self, shards: u32) -> bool {
        let mut per_worker: BTreeMap<usize, usize> =
            self.children.keys().map(|&w| (w, 0)).collect();
        for s in 0..shards {
            match self.readers.get(&s) {
                Some(r) if r.len() == 1 => {
                    let Some(&w) = r.iter().next() else {
                        return false;
                    };
                    match per_worker.get_mut(&w) {
                        Some(n) => *n += 1,
                        None => return false,
                    }
                }
                _ => return false,
            }
        }
        let min = per_worker.values().min().copied().unwrap_or(0);
        let max = per_worker.values().max().copied().unwrap_or(0);
        max - min <= 1
    }

    async fn wait_converged(&mut self, shards: u32) -> Result<Duration, String> {
        let start = Instant::now();
        let deadline = start + STEP_TIMEOUT;
        while !self.converged(shards) {
            self.next(deadline)
                .await
                .map_err(|e| format!("waiting for the workers to converge: {e}"))?;
        }
        Ok(start.elapsed())
    }

    /// Sends `signal` to `worker` and returns the time from the signal until every shard it read is read by
    /// another worker.
    async fn hand_over(&mut self, worker: usize, signal: &str) -> Result<f64, String> {
        let victim_shards = self.shards_of(worker);
        let mut child = self.children.remove(&worker).ok_or("no such worker")?;
        let pid = child.id().ok_or("worker already exited")?;
        let sent_at = unix_ms(SystemTime::now());
        let status = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &pid.to_string()])
            .status()
            .map_err(|e| format!("kill: {e}"))?;
        if !status.success() {
            return Err(format!("kill -{signal} {pid} failed"));
        }
        if signal == "KILL" {
            // A dead process reports nothing more: it reads nothing from now on.
            for r in self.readers.values_mut() {
                r.remove(&worker);
            }
        }
        let deadline = Instant::now() + STEP_TIMEOUT;
        let mut last_start = sent_at;
        let mut waiting = victim_shards.clone();
        while !waiting.is_empty() {
            let r = self
                .next(deadline)
                .await
                .map_err(|e| format!("waiting for shards {waiting:?} to be taken over: {e}"))?;
            if r.worker != worker
                && r.event["event"] == "read_started"
                && let Some(s) = r.event["shard"].as_u64()
                && waiting.remove(&(s as u32))
            {
                last_start = last_start.max(r.event["at_ms"].as_i64().unwrap_or(sent_at));
            }
        }
        // Reap the victim (a SIGTERM'd worker exits after leaving).
        match tokio::time::timeout(STEP_TIMEOUT, child.wait()).await {
            Ok(Ok(_)) => {}
            _ => {
                let _ = child.kill().await;
            }
        }
        for r in self.readers.values_mut() {
            r.remove(&worker);
        }
        Ok((last_start - sent_at) as f64)
    }
}

async fn bench(args: FailoverArgs) -> Result<(), String> {
    let coord = args.target.client()?;
    let (interval, ttl) = common::coordinator_timing(&coord).await?;
    let lease_ms = args
        .assignment_lease_ms
        .unwrap_or_else(|| (ttl.as_millis() as u64 * 2 / 3).max(600));
    let bound_ms = (ttl + interval).as_millis() as f64;
    let run_id = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
    let stream = format!("bench-fo-{run_id}");
    println!(
        "rsc bench failover: stream {stream}, {} shards, {} worker processes, {} trials each; coordinator heartbeat interval {} ms, member lease TTL {} ms (bound {} ms); worker assignment lease {lease_ms} ms",
        args.shards,
        args.workers,
        args.trials,
        interval.as_millis(),
        ttl.as_millis(),
        bound_ms
    );
    match coord.create_stream(&stream, args.shards, "bench").await {
        Ok(CreateStream::Created(_)) => {}
        Ok(CreateStream::AlreadyExists) => return Err(format!("stream {stream} already exists")),
        Err(e) => return Err(format!("creating {stream}: {e}")),
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let mut fleet = Fleet {
        children: BTreeMap::new(),
        readers: BTreeMap::new(),
        tx,
        rx,
        next_id: 0,
        run_id,
        stream: stream.clone(),
        lease_ms,
        target: args.target.clone(),
    };
    let result = trials(&args, &mut fleet, bound_ms).await;
    for (_, mut child) in std::mem::take(&mut fleet.children) {
        let _ = child.kill().await;
    }
    let failures = args.target.cleanup(&stream, args.shards).await;
    for f in &failures {
        eprintln!("rsc bench failover: cleanup: {f}");
    }
    if failures.is_empty() {
        println!(
            "deleted the bench group and its {} shard streams",
            args.shards
        );
    }
    result
}

async fn trials(args: &FailoverArgs, fleet: &mut Fleet, bound_ms: f64) -> Result<(), String> {
    for _ in 0..args.workers {
        fleet.spawn()?;
    }
    let took = fleet.wait_converged(args.shards).await?;
    println!("workers converged in {:.2}s", took.as_secs_f64());
    let mut results: Vec<(&str, Vec<f64>)> = Vec::new();
    let mut joins = Vec::new();
    for (kind, signal) in [("kill", "KILL"), ("leave", "TERM")] {
        let mut times = Vec::new();
        for trial in 1..=args.trials {
            let victim = *fleet.children.keys().next().ok_or("no workers left")?;
            let shards = fleet.shards_of(victim);
            let ms = fleet.hand_over(victim, signal).await?;
            println!(
                "{kind} trial {trial}: worker w{victim} (shards {shards:?}) taken over in {ms:.0} ms"
            );
            times.push(ms);
            fleet.spawn()?;
            let took = fleet.wait_converged(args.shards).await?;
            println!(
                "  replacement joined, converged in {:.2}s",
                took.as_secs_f64()
            );
            joins.push(took.as_secs_f64() * 1_000.0);
        }
        results.push((kind, times));
    }
    results.push(("join", joins));
    let mut summary = Vec::new();
    for (kind, mut times) in results {
        times.sort_by(f64::total_cmp);
        let q = |p: f64| common::quantile(&times, p).unwrap_or(f64::NAN);
        println!(
            "{kind}: min {:.0} ms, median {:.0} ms, max {:.0} ms over {} trials",
            q(0.0),
            q(0.5),
            q(1.0),
            times.len()
        );
        summary.push(format!(
            "{kind}_median_ms={:.0} {kind}_max_ms={:.0}",
            q(0.5),
            q(1.0)
        ));
        if kind == "kill" {
            summary.push(format!(
                "bound_ms={bound_ms:.0} kill_within_bound={}",
                q(1.0) <= bound_ms
            ));
        }
    }
    println!("{}", summary.join(" "));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_event_lines() {
        let at = UNIX_EPOCH + Duration::from_millis(1234);
        let line = event_line(&ConsumerEvent::ReadStarted {
            member_id: "m".into(),
            shard: 3,
            at,
            reclaim: false,
        })
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["event"], "read_started");
        assert_eq!(v["shard"], 3);
        assert_eq!(v["at_ms"], 1234);
        let line = event_line(&ConsumerEvent::ReadStopped {
            member_id: "m".into(),
            shard: 1,
            at,
            reason: StopReason::LeaseExpired,
        })
        .unwrap();
        assert!(line.contains("lease_expired"), "{line}");
        assert!(
            event_line(&ConsumerEvent::LeaseExpired {
                member_id: "m".into()
            })
            .is_none()
        );
    }
}
