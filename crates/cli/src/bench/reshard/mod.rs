//! `rsc bench reshard`: what a scale costs while records flow, for an ordered stream (`ordering: KEY`)
//! against an unordered one, and what producer quiesce does to publish latency.
//!
//! Each trial makes a fresh stream `bench-rs-<8 hex>` with `--from` shards (ordering KEY for an ordered
//! trial) and `--groups` consumer groups (the stream's default group, named like the prefix, then
//! `<prefix>-g2`, …), each read by one SDK managed consumer of `--members` members. Once every group reads
//! every shard (each by exactly one member, nothing draining), one SDK producer publishes `--rate`
//! records/s in a batch every 10 ms (`load.rs`; fields `run` and `pub_ns`, the wall-clock ns the batch was
//! started) and after `--warmup-secs` the stream is scaled to `--to` shards (with producer quiesce when
//! `--quiesce-timeout-ms` is given). From the scale call (t0) it measures:
//!
//! - `switch_ms`: until routing switched (the call returned; with quiesce, until the migration left
//!   PREPARING, polled every 10 ms, since such a scale answers before it switches);
//! - `all_reading_ms`: until, for every (group, shard of the new count), a handler of the group got a
//!   record of the shard published after the switch (the max over them, with the slowest pair and each
//!   group's max). On an ordered stream a child shard is read only once its parents drained;
//! - `migration_done_ms`: until the migration ended (a terminal state) in every group (polled every 100 ms);
//! - publish latency (p50/p99/max) of the batches started in the warmup (steady) and in [t0, migration done]
//!   (during).
//!
//! `--ordering both` alternates: unordered first in odd trials, ordered first in even ones. One line per
//! trial, then one `summary ordering=…` line per mode with the medians over its trials. Every trial removes
//! its groups and shard streams whatever happened; the exit status is 1 if any trial failed.
//!
//! Split: this file holds the arguments and the run; `trial.rs` one trial; `load.rs` the producer load;
//! `measure.rs` the pure bookkeeping and the output lines; tests in `tests.rs`.

mod load;
mod measure;
#[cfg(test)]
mod tests;
mod trial;

use super::common::{self, Target};
use clap::Args;
use measure::{Setup, TrialResult};
use rsc_protocol::ordering::Ordering as StreamOrdering;
use std::process::ExitCode;
use std::time::Duration;

/// Bounds that keep one run bounded.
const MAX_COUNT: usize = 1024;
const MAX_MEMBERS_IN_ALL: usize = 4096;
const MAX_RATE: u32 = 100_000;
const MAX_TRIALS: usize = 100;
const MAX_WARMUP_SECS: u64 = 600;
const MAX_HANDLE_MS: u64 = 10_000;
const MAX_QUIESCE_TIMEOUT_MS: u64 = 600_000;

/// Which streams the trials scale.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderingMode {
    /// Unordered streams only (`ordering: NONE`).
    None,
    /// Ordered streams only (`ordering: KEY`).
    Key,
    /// Both in every trial, alternating which goes first.
    Both,
}

impl OrderingMode {
    /// The streams trial `trial` (1-based) scales, in order.
    pub fn trial_order(self, trial: usize) -> Vec<StreamOrdering> {
        match self {
            OrderingMode::None => vec![StreamOrdering::None],
            OrderingMode::Key => vec![StreamOrdering::Key],
            OrderingMode::Both if trial % 2 == 1 => vec![StreamOrdering::None, StreamOrdering::Key],
            OrderingMode::Both => vec![StreamOrdering::Key, StreamOrdering::None],
        }
    }

    /// The flag's value.
    fn name(self) -> &'static str {
        match self {
            OrderingMode::None => "none",
            OrderingMode::Key => "key",
            OrderingMode::Both => "both",
        }
    }

    /// The modes in the summary, in this order.
    fn modes(self) -> Vec<StreamOrdering> {
        self.trial_order(1)
    }
}

#[derive(Args, Debug, Clone)]
pub struct ReshardArgs {
    #[command(flatten)]
    pub target: Target,
    /// Shards of each trial's stream before the scale.
    #[arg(long, default_value_t = 4)]
    pub from: u32,
    /// Shards the scale asks for.
    #[arg(long, default_value_t = 8)]
    pub to: u32,
    /// Consumer groups of the stream (the default group, then `<prefix>-g2`, …).
    #[arg(long, default_value_t = 2)]
    pub groups: usize,
    /// Members per group (one SDK consumer per group).
    #[arg(long, default_value_t = 3)]
    pub members: usize,
    /// Records published per second (a batch every 10 ms).
    #[arg(long, default_value_t = 1000)]
    pub rate: u32,
    /// Seconds of publishing before the scale (the steady publish latency).
    #[arg(long, default_value_t = 3)]
    pub warmup_secs: u64,
    /// Trials per ordering mode.
    #[arg(long, default_value_t = 3)]
    pub trials: usize,
    /// Unordered streams, ordered ones (`ordering: KEY`), or both in every trial.
    #[arg(long, value_enum, default_value_t = OrderingMode::Both)]
    pub ordering: OrderingMode,
    /// The scale asks for producer quiesce with this timeout (ms); without it the scale does not quiesce.
    #[arg(long)]
    pub quiesce_timeout_ms: Option<u64>,
    /// Simulated work per record in the handlers (ms).
    #[arg(long, default_value_t = 0)]
    pub handle_ms: u64,
}

impl ReshardArgs {
    pub fn validate(&self) -> Result<(), String> {
        self.target.validate()?;
        if !self.target.cluster.redis_cluster_nodes.is_empty() {
            return Err(
                "rsc bench reshard runs on a standalone Redis (--redis-url); --redis-cluster-nodes is for rsc bench dataplane"
                    .into(),
            );
        }
        let count = |name: &str, n: usize| {
            if (1..=MAX_COUNT).contains(&n) {
                Ok(())
            } else {
                Err(format!("{name} must be 1..={MAX_COUNT}, got {n}"))
            }
        };
        count("--from", self.from as usize)?;
        count("--to", self.to as usize)?;
        count("--groups", self.groups)?;
        count("--members", self.members)?;
        if self.from == self.to {
            return Err(format!(
                "--to must differ from --from (both {}): a scale to the same count changes nothing",
                self.from
            ));
        }
        if self.groups * self.members > MAX_MEMBERS_IN_ALL {
            return Err(format!(
                "--groups × --members must be at most {MAX_MEMBERS_IN_ALL}, got {}",
                self.groups * self.members
            ));
        }
        if !(1..=MAX_RATE).contains(&self.rate) {
            return Err(format!(
                "--rate must be 1..={MAX_RATE} records/s, got {}",
                self.rate
            ));
        }
        if !(1..=MAX_WARMUP_SECS).contains(&self.warmup_secs) {
            return Err(format!(
                "--warmup-secs must be 1..={MAX_WARMUP_SECS}, got {}",
                self.warmup_secs
            ));
        }
        if !(1..=MAX_TRIALS).contains(&self.trials) {
            return Err(format!(
                "--trials must be 1..={MAX_TRIALS}, got {}",
                self.trials
            ));
        }
        if let Some(ms) = self.quiesce_timeout_ms
            && !(1..=MAX_QUIESCE_TIMEOUT_MS).contains(&ms)
        {
            return Err(format!(
                "--quiesce-timeout-ms must be 1..={MAX_QUIESCE_TIMEOUT_MS} (the coordinator's limit), got {ms}"
            ));
        }
        if self.handle_ms > MAX_HANDLE_MS {
            return Err(format!(
                "--handle-ms must be at most {MAX_HANDLE_MS}, got {}",
                self.handle_ms
            ));
        }
        Ok(())
    }

    fn setup(&self) -> Setup {
        Setup {
            from: self.from,
            to: self.to,
            groups: self.groups,
            rate: self.rate,
            quiesce_timeout_ms: self.quiesce_timeout_ms,
        }
    }

    fn quiesce(&self) -> Option<Duration> {
        self.quiesce_timeout_ms.map(Duration::from_millis)
    }
}

pub fn run(args: ReshardArgs) -> ExitCode {
    if let Err(e) = args.validate() {
        eprintln!("rsc bench reshard: {e}");
        return ExitCode::from(2);
    }
    match common::runtime().and_then(|r| r.block_on(bench(args))) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("rsc bench reshard: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What every trial shares: the coordinator client, the consumers' assignment lease and the key count.
pub(super) struct Context {
    coord: rsc_client::CoordinatorClient,
    assignment_lease: Duration,
    keys: u64,
}

/// Runs every trial; true when all of them completed.
async fn bench(args: ReshardArgs) -> Result<bool, String> {
    let coord = args.target.client()?;
    let (interval, ttl) = common::coordinator_timing(&coord).await?;
    // Below the coordinator's member lease TTL, like `rsc bench failover`'s workers.
    let assignment_lease = Duration::from_millis((ttl.as_millis() as u64 * 2 / 3).max(600));
    let keys = measure::key_count(args.from, args.to)?;
    let ctx = Context {
        coord,
        assignment_lease,
        keys,
    };
    println!(
        "rsc bench reshard: {} → {} shards, {} groups × {} members, {} records/s in batches every 10 ms over {keys} keys, warmup {} s, trials {}, ordering {}, quiesce {}, handle {} ms; coordinator heartbeat interval {} ms, member lease TTL {} ms; consumer assignment lease {} ms, producer routing refresh {} ms",
        args.from,
        args.to,
        args.groups,
        args.members,
        args.rate,
        args.warmup_secs,
        args.trials,
        args.ordering.name(),
        args.quiesce_timeout_ms
            .map_or_else(|| "none".to_owned(), |ms| format!("{ms} ms timeout")),
        args.handle_ms,
        interval.as_millis(),
        ttl.as_millis(),
        assignment_lease.as_millis(),
        trial::PRODUCER_REFRESH.as_millis(),
    );
    let setup = args.setup();
    let mut results: Vec<TrialResult> = Vec::new();
    let mut failed: Vec<StreamOrdering> = Vec::new();
    for t in 1..=args.trials {
        for ordering in args.ordering.trial_order(t) {
            eprintln!(
                "rsc bench reshard: trial {t}/{} ordering={}",
                args.trials,
                ordering.as_str()
            );
            match trial::run_trial(&args, &ctx, t, ordering).await {
                Ok(r) => {
                    println!("{}", r.line(&setup));
                    results.push(r);
                }
                Err(e) => {
                    eprintln!(
                        "rsc bench reshard: trial {t} ordering={} failed: {e}",
                        ordering.as_str()
                    );
                    failed.push(ordering);
                }
            }
        }
    }
    for mode in args.ordering.modes() {
        let of_mode: Vec<&TrialResult> = results.iter().filter(|r| r.ordering == mode).collect();
        let failures = failed.iter().filter(|&&o| o == mode).count();
        println!("{}", measure::summary_line(mode, &of_mode, failures));
    }
    Ok(failed.is_empty())
}
