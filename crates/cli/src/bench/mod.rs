//! `rsc bench …`: benchmarks that drive a running coordinator (issue 7). Only `heartbeat` exists so far.

pub mod heartbeat;

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
}

pub fn run(args: BenchArgs) -> ExitCode {
    match args.command {
        BenchCommand::Heartbeat(a) => heartbeat::run(a),
    }
}
