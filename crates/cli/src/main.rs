//! The `rsc` binary: `rsc serve` runs the coordinator; the operator verbs (`login`, `health`, `groups`,
//! `describe`, `scale`, `rollback`, `force-complete`, `durability`, `audit`, `plan`, `apply`, `version`, `upgrade-check`,
//! in `operator/`) talk to it over coord/v1; `rsc demo` shows a live demo group, `rsc bench` drives load
//! against a running coordinator, `rsc hash-password` prints an Argon2id hash for the configuration.
// `deny`, not `forbid`: pipe.rs restores the default SIGPIPE action through libc, the one allowed item.
#![deny(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::expect_used)]

mod backup;
mod bench;
mod demo;
mod demo_order;
mod demo_scale;
mod demo_tally;
mod hash_password;
mod log_escape;
mod memory;
mod operator;
mod pipe;
mod redis_args;

use clap::{Parser, Subcommand};
use rsc_coordinator::config::{self, Overrides};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "rsc", version, about = "rsc — Redis Stream Coordinator")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the coordinator.
    Serve {
        /// Address to listen on.
        #[arg(long, env = "RSC_LISTEN")]
        listen: Option<String>,
        /// Redis URL (standalone). For a cluster set coordinator.redis-cluster-nodes.
        #[arg(long, env = "RSC_REDIS_URL")]
        redis_url: Option<String>,
        /// TOML configuration file; every key can also be set by a COORDINATOR_* environment variable.
        #[arg(long, env = "RSC_CONFIG")]
        config: Option<PathBuf>,
        /// Log format.
        #[arg(long, env = "RSC_LOG_FORMAT", default_value = "text", value_parser = ["text", "json"])]
        log_format: String,
    },
    /// Read a password from stdin and print its Argon2id hash (for coordinator.api.users[].password-hash).
    HashPassword,
    /// First run: create a demo stream, run three consumers and a producer, show them live.
    Demo(demo::DemoArgs),
    /// Benchmarks against a running coordinator (see BENCHMARKS.md).
    Bench(bench::BenchArgs),
    /// Log in and store a bearer token for the coordinator (in $RSC_CONFIG_DIR/credentials, mode 0600).
    Login(operator::login::LoginArgs),
    /// Revoke and forget the stored token.
    Logout(operator::login::LogoutArgs),
    /// The coordinator's health; exit 0 only when UP.
    Health(operator::Target),
    /// One line per consumer group: shards, members live/total, state, migration, lag.
    Groups(operator::Target),
    /// A group in detail (members, shards, lag, migration, rollback suspicion), or with no group a whole stream
    /// (groups side by side, shards, produce and consume rates).
    Describe(operator::show::DescribeArgs),
    /// Scale a stream (every group follows); --wait shows progress until it completes.
    Scale(operator::change::ScaleArgs),
    /// Roll back the stream's active migration.
    Rollback(operator::change::EndMigrationArgs),
    /// End a migration that cannot progress.
    ForceComplete(operator::change::EndMigrationArgs),
    /// Metadata durability of a group: show the rollback suspicion, dismiss it, or recreate the group.
    Durability(operator::durability::DurabilityArgs),
    /// Move a consumer group's position (offsets reset): plan per shard, confirm, apply.
    Offsets(operator::offsets::OffsetsArgs),
    /// Append one record to a stream through the SDK's routed producer (guarded append); prints shard and id.
    Produce(operator::produce::ProduceArgs),
    /// A shard's records: a page, a jump to an id or a time, or a bounded search by field or payload text.
    Messages(operator::messages::MessagesArgs),
    /// A group's pending entries (handed out, not acknowledged), entry by entry, with where each record is.
    Pending(operator::pending::PendingArgs),
    /// Audit records, newest first; --follow for new ones.
    Audit(operator::audit::AuditArgs),
    /// Compare a desired-state file with the coordinator (exit 0 no changes, 2 changes, 1 error).
    Plan(operator::apply::PlanArgs),
    /// Make the coordinator match a desired-state file.
    Apply(operator::apply::ApplyArgs),
    /// This binary's version and protocol versions, and the coordinator's (--all: each replica's).
    Version(operator::show::VersionArgs),
    /// Whether every live member speaks a protocol version the target release supports.
    UpgradeCheck(operator::upgrade_check::UpgradeCheckArgs),
    /// Back up the Redis records that define groups and streams to a checksummed file.
    Backup(backup::BackupArgs),
    /// Restore a backup into Redis (refuses to replace newer live metadata unless --force).
    Restore(backup::RestoreArgs),
    /// Check a Redis deployment against the runbook (PASS/WARN/FAIL; exit 1 on any FAIL).
    Doctor(backup::DoctorArgs),
}

fn init_logging(format: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("RSC_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours only on a terminal: a log file or collector gets plain text (no ANSI escapes).
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    if format == "json" {
        // U+2028, U+2029 and NEL escaped in every line (log_escape.rs).
        builder
            .json()
            .with_writer(|| log_escape::EscapingStderr)
            .init();
    } else {
        builder.init();
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(
        cli.command,
        Command::Serve { .. } | Command::Demo(_) | Command::Bench(_)
    ) {
        pipe::end_quietly_on_closed_stdout();
    }
    match cli.command {
        Command::HashPassword => hash_password::run(),
        Command::Demo(args) => demo::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Login(args) => operator::run("login", operator::login::login(args)),
        Command::Logout(args) => operator::run("logout", operator::login::logout(args)),
        Command::Health(t) => operator::run("health", operator::show::health(t)),
        Command::Groups(t) => operator::run("groups", operator::show::groups(t)),
        Command::Describe(args) => operator::run("describe", operator::show::describe(args)),
        Command::Scale(args) => operator::run("scale", operator::change::scale(args)),
        Command::Rollback(args) => operator::run("rollback", operator::change::rollback(args)),
        Command::ForceComplete(args) => {
            operator::run("force-complete", operator::change::force_complete(args))
        }
        Command::Durability(args) => operator::run("durability", operator::durability::run(args)),
        Command::Offsets(args) => operator::run("offsets", operator::offsets::run(args)),
        Command::Produce(args) => operator::run("produce", operator::produce::run(args)),
        Command::Messages(args) => operator::run("messages", operator::messages::run(args)),
        Command::Pending(args) => operator::run("pending", operator::pending::run(args)),
        Command::Audit(args) => operator::run("audit", operator::audit::audit(args)),
        Command::Plan(args) => operator::run("plan", operator::apply::plan(args)),
        Command::Apply(args) => operator::run("apply", operator::apply::apply(args)),
        Command::Version(args) => operator::run("version", operator::show::version(args)),
        Command::UpgradeCheck(args) => operator::run(
            "upgrade-check",
            operator::upgrade_check::upgrade_check(args),
        ),
        Command::Backup(args) => operator::run("backup", backup::take::run(args)),
        Command::Restore(args) => operator::run("restore", backup::restore::run(args)),
        Command::Doctor(args) => operator::run("doctor", backup::doctor::run(args)),
        Command::Serve {
            listen,
            redis_url,
            config: file,
            log_format,
        } => {
            init_logging(&log_format);
            let env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
            let config = match config::load(file.as_deref(), &env, &Overrides { listen, redis_url })
            {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("rsc: {e}");
                    return ExitCode::from(2);
                }
            };
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            if config.coordinator.worker_threads > 0 {
                builder.worker_threads(config.coordinator.worker_threads as usize);
            }
            let runtime = match builder.enable_all().build() {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("rsc: cannot start the async runtime: {e}");
                    return ExitCode::FAILURE;
                }
            };
            match runtime.block_on(rsc_coordinator::server::run_until_signal(config)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("rsc: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
