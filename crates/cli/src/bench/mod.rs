//! `rsc bench …`: benchmarks that drive a running coordinator (see BENCHMARKS.md).

mod common;
pub mod dataplane;
pub mod failover;
pub mod heartbeat;
pub mod inventory;
pub mod reshard;

use clap::{Args, Subcommand};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
}

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Steady-state heartbeat throughput, latency, Redis commands and coordinator CPU per heartbeat.
    Heartbeat(heartbeat::HeartbeatArgs),
    /// SDK producer and consumer throughput against raw XADD and XREADGROUP/XACK loops (ratios SDK / raw).
    Dataplane(dataplane::DataplaneArgs),
    /// Time from SIGKILL / SIGTERM of a consumer process to its shards being read by the others.
    Failover(failover::FailoverArgs),
    /// Time from a scale to every group reading every new shard (ordered vs unordered stream), and SDK
    /// publish latency during the scale (with or without producer quiesce), under a steady load.
    Reshard(reshard::ReshardArgs),
    /// What an inventory of idle groups costs the replicas and Redis, and whether deadlines are honoured
    /// amid it (a silent member's expiry; with --kill-replica, a killed replica's groups taken up).
    Inventory(inventory::InventoryArgs),
    /// One consumer process of `rsc bench failover` (internal).
    #[command(hide = true)]
    FailoverWorker(failover::FailoverWorkerArgs),
}

pub fn run(args: BenchArgs) -> ExitCode {
    match args.command {
        BenchCommand::Heartbeat(a) => heartbeat::run(a),
        BenchCommand::Dataplane(a) => dataplane::run(a),
        BenchCommand::Failover(a) => failover::run(a),
        BenchCommand::Reshard(a) => reshard::run(a),
        BenchCommand::Inventory(a) => inventory::run(a),
        BenchCommand::FailoverWorker(a) => failover::run_worker(a),
    }
}
