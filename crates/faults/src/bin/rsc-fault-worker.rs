//! rsc-fault-worker: one process of the fault-injection suite.
//!
//! - `consumer`: one SDK managed consumer (one member). It acknowledges every delivery (retrying XACK on
//!   errors) and writes its ownership log: read starts/stops, accepted heartbeats, lease expiry, every
//!   entry it got and every ack.
//! - `producer`: the SDK routed producer publishing sequenced records (`seq` field) at a fixed rate. It
//!   logs a sequence number only once XADD answered; on an error it retries the same number, so nothing is
//!   skipped silently.
//!
//! Both stop on SIGTERM (the consumer leaves its group gracefully). Credentials come from `RSC_USERNAME`
//! and `RSC_PASSWORD`.

use clap::{Args, Parser, Subcommand};
use rsc_client::{
    Consumer, ConsumerConfig, ConsumerEvent, CoordinatorClient, Credentials, Delivery, EventSink,
    Producer, ProducerConfig, StopReason,
};
use rsc_faults::log::{Line, LogWriter, now_ns};
use rsc_protocol::wire::HeartbeatStatus;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::signal::unix::{SignalKind, signal};

#[derive(Parser)]
#[command(
    name = "rsc-fault-worker",
    about = "A consumer or producer process of the rsc fault suite"
)]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Subcommand)]
enum Mode {
    /// One managed consumer member.
    Consumer(ConsumerArgs),
    /// The sequenced producer.
    Producer(ProducerArgs),
}

#[derive(Args)]
struct Common {
    /// Coordinator base URL; repeat for fail-over.
    #[arg(long = "coordinator", required = true)]
    coordinators: Vec<String>,
    /// Stream prefix (also the consumer group).
    #[arg(long)]
    stream: String,
    #[arg(long)]
    redis_url: String,
    /// The ownership log to write (truncated first).
    #[arg(long)]
    log: PathBuf,
    #[arg(long, env = "RSC_USERNAME")]
    username: Option<String>,
    #[arg(long, env = "RSC_PASSWORD", hide_env_values = true)]
    password: Option<String>,
    /// Per-request timeout of coordinator calls other than heartbeats (login included), ms. Generous: an
    /// Argon2id login on a loaded 2-core machine can take seconds.
    #[arg(long, default_value_t = 5000)]
    request_timeout_ms: u64,
}

#[derive(Args)]
struct ConsumerArgs {
    #[command(flatten)]
    common: Common,
    #[arg(long)]
    member: String,
    /// Assignment lease, ms (below the coordinator's member lease TTL by a margin).
    #[arg(long, default_value_t = 1800)]
    lease_ms: u64,
    #[arg(long, default_value_t = 100)]
    poll_ms: u64,
    #[arg(long, default_value_t = 500)]
    heartbeat_timeout_ms: u64,
    #[arg(long, default_value_t = 20)]
    batch_size: usize,
}

#[derive(Args)]
struct ProducerArgs {
    #[command(flatten)]
    common: Common,
    /// Records per second.
    #[arg(long, default_value_t = 200)]
    rate: u64,
    /// Distinct routing keys.
    #[arg(long, default_value_t = 97)]
    keys: u64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let result = rt.block_on(async {
        match cli.mode {
            Mode::Consumer(a) => run_consumer(a).await,
            Mode::Producer(a) => run_producer(a).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rsc-fault-worker: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Why a worker gave up.
#[derive(Debug, thiserror::Error)]
enum WorkerError {
    #[error(transparent)]
    Log(#[from] rsc_faults::log::LogError),
    #[error(transparent)]
    Client(#[from] rsc_client::ClientError),
    #[error("signal handler: {0}")]
    Signal(std::io::Error),
    #[error("{0} did not succeed within {1:?}: {2}")]
    Startup(&'static str, Duration, String),
}

fn coordinator(c: &Common) -> Result<CoordinatorClient, WorkerError> {
    let credentials = match (&c.username, &c.password) {
        (Some(u), Some(p)) => Some(Credentials::new(u.clone(), p.clone())),
        _ => None,
    };
    Ok(CoordinatorClient::builder(c.coordinators.iter().cloned())
        .credentials(credentials)
        .request_timeout(Duration::from_millis(c.request_timeout_ms))
        .build()?)
}

/// Start-up steps are retried: the orchestrator may start a worker while Redis or a replica is down.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

async fn run_consumer(a: ConsumerArgs) -> Result<(), WorkerError> {
    let log = Arc::new(LogWriter::create(&a.common.log)?);
    log.write(&Line::Boot {
        member: a.member.clone(),
        pid: std::process::id(),
        at_ns: now_ns(),
    });
    let mut term = signal(SignalKind::terminate()).map_err(WorkerError::Signal)?;
    let coord = coordinator(&a.common)?;
    let config = ConsumerConfig::new(a.common.stream.clone(), a.common.redis_url.clone())
        .member_id(a.member.clone())
        .batch_size(a.batch_size)
        .poll_timeout(Duration::from_millis(a.poll_ms))
        .assignment_lease(Duration::from_millis(a.lease_ms))
        .heartbeat_timeout(Duration::from_millis(a.heartbeat_timeout_ms))
        .shutdown_timeout(Duration::from_secs(10));
    let sink_log = log.clone();
    let sink: EventSink = Arc::new(move |e: &ConsumerEvent| {
        let line = match e {
            ConsumerEvent::ReadStarted {
                shard, at, reclaim, ..
            } => Line::ReadStarted {
                shard: *shard,
                at_ns: ns(*at),
                reclaim: *reclaim,
            },
            ConsumerEvent::ReadStopped {
                shard, at, reason, ..
            } => Line::ReadStopped {
                shard: *shard,
                at_ns: ns(*at),
                lease_expired: *reason == StopReason::LeaseExpired,
            },
            ConsumerEvent::Heartbeat { status, .. } => Line::Heartbeat {
                at_ns: now_ns(),
                status: format!("{status:?}"),
                accepted: matches!(
                    status,
                    HeartbeatStatus::Ok
                        | HeartbeatStatus::SyncMetadata
                        | HeartbeatStatus::RevokePending
                ),
            },
            ConsumerEvent::LeaseExpired { .. } => Line::LeaseExpired { at_ns: now_ns() },
            ConsumerEvent::HeartbeatFailed { .. } => return,
        };
        sink_log.write(&line);
    });
    let handler_log = log.clone();
    let handler = move |d: Delivery| {
        let log = handler_log.clone();
        async move { handle(&log, d).await }
    };
    let started = Instant::now();
    let consumer = loop {
        match Consumer::start_with_events(
            coord.clone(),
            config.clone(),
            handler.clone(),
            Some(sink.clone()),
        )
        .await
        {
            Ok(c) => break c,
            Err(e) if started.elapsed() < STARTUP_TIMEOUT => {
                eprintln!("consumer start failed, retrying: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => {
                return Err(WorkerError::Startup(
                    "consumer start",
                    STARTUP_TIMEOUT,
                    e.to_string(),
                ));
            }
        }
    };
    term.recv().await;
    let report = consumer.shutdown().await;
    log.write(&Line::Shutdown {
        at_ns: now_ns(),
        clean: report.timed_out.is_empty(),
    });
    Ok(())
}

/// How long a failing XACK is retried before the entry is left pending for the shard's next owner.
const ACK_RETRY_FOR: Duration = Duration::from_secs(15);

async fn handle(log: &LogWriter, d: Delivery) {
    let Some(seq) = d.field_str("seq").and_then(|s| s.parse::<u64>().ok()) else {
        eprintln!("entry {} has no seq field; acknowledging it", d.id());
        let _ = d.ack().await;
        return;
    };
    log.write(&Line::Got {
        seq,
        shard: d.shard(),
        id: d.id().to_owned(),
        reclaimed: d.reclaimed(),
        at_ns: now_ns(),
    });
    let started = Instant::now();
    loop {
        match d.ack().await {
            Ok(removed) => {
                log.write(&Line::Acked {
                    seq,
                    shard: d.shard(),
                    id: d.id().to_owned(),
                    removed,
                    at_ns: now_ns(),
                });
                return;
            }
            Err(e) if started.elapsed() < ACK_RETRY_FOR => {
                eprintln!("ack of {} failed, retrying: {e}", d.id());
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => {
                log.write(&Line::AckFailed {
                    seq,
                    shard: d.shard(),
                    error: e.to_string(),
                });
                return;
            }
        }
    }
}

fn ns(t: std::time::SystemTime) -> u64 {
    let d = t
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is after 1970");
    u64::try_from(d.as_nanos()).expect("nanoseconds fit u64")
}

async fn run_producer(a: ProducerArgs) -> Result<(), WorkerError> {
    let log = LogWriter::create(&a.common.log)?;
    log.write(&Line::Boot {
        member: "producer".into(),
        pid: std::process::id(),
        at_ns: now_ns(),
    });
    let mut term = signal(SignalKind::terminate()).map_err(WorkerError::Signal)?;
    let coord = coordinator(&a.common)?;
    let config = ProducerConfig::new(a.common.stream.clone(), a.common.redis_url.clone())
        .refresh_interval(Duration::from_millis(500))
        .routing_lease(Duration::from_secs(4))
        .max_len(None);
    let started = Instant::now();
    let producer = loop {
        match Producer::connect(coord.clone(), config.clone()).await {
            Ok(p) => break p,
            Err(e) if started.elapsed() < STARTUP_TIMEOUT => {
                eprintln!("producer connect failed, retrying: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => {
                return Err(WorkerError::Startup(
                    "producer connect",
                    STARTUP_TIMEOUT,
                    e.to_string(),
                ));
            }
        }
    };
    let period = Duration::from_nanos(1_000_000_000 / a.rate.max(1));
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut seq = 0u64;
    let mut errors = 0u64;
    'publish: loop {
        tokio::select! {
            _ = term.recv() => break 'publish,
            _ = tick.tick() => {}
        }
        let key = format!("key-{}", seq % a.keys.max(1));
        let value = seq.to_string();
        loop {
            let fields = [("seq", value.as_str())];
            let attempt = producer.publish(key.as_str(), &fields);
            let result = tokio::select! {
                _ = term.recv() => break 'publish,
                r = attempt => r,
            };
            match result {
                Ok(p) => {
                    log.write(&Line::Published {
                        seq,
                        shard: p.shard,
                        id: p.id,
                        at_ns: now_ns(),
                    });
                    break;
                }
                Err(e) => {
                    errors += 1;
                    if !e.is_retryable() {
                        eprintln!("publish of {seq} failed (not retryable, retrying anyway): {e}");
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
        seq += 1;
    }
    log.write(&Line::Shutdown {
        at_ns: now_ns(),
        clean: true,
    });
    eprintln!("producer: {seq} published, {errors} failed attempts");
    Ok(())
}
