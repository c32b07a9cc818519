//! `rsc demo`: a first-run tour. It creates a demo stream, starts three consumer members (rsc-client's managed
//! consumer) and a routed producer, shows members, their shards and throughput live, and ends with one
//! line: `published=N acked=M duplicates=D lost=L`. With `--scale 4,8,…` it creates the stream with the first
//! count and scales it through the others while running; with `--ordered` the stream keeps per-key order
//! (`ordering: KEY`). Either adds `order_violations=V` to the line (`demo_order.rs`). The scales run one
//! migration at a time (`demo_scale.rs`); with `--quiesce` they ask for producer quiesce. When the run ends
//! during a migration, the demo lets it end (an ordered one holds moved keys' records back until then) before
//! it counts.
//!
//! Every message carries this run's id and a sequence number, so the tally ignores leftovers of earlier
//! runs on the same stream: `acked` counts distinct messages of this run acknowledged, `duplicates` extra
//! deliveries of them. Once the run is over the demo waits while the consumers still catch up (until they
//! stall for 15 s or `--drain-timeout` passes), then looks for every unacknowledged message in the shard
//! streams (`demo_tally.rs`): `backlog` counts those still there unread, `lost` those that no longer exist.
//! Exit status 0 means nothing was lost (a backlog is reported, not counted as a loss).

use clap::Args;
use rsc_client::{
    Auth, Consumer, ConsumerConfig, CoordinatorClient, CreateStream, Credentials, Delivery,
    Producer, ProducerConfig, Record,
};
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Coordinator base URL; repeat or comma-separate for several replicas.
    #[arg(
        long,
        env = "RSC_COORDINATOR",
        value_delimiter = ',',
        default_value = "http://127.0.0.1:8080"
    )]
    coordinator: Vec<String>,
    /// Redis (data plane) URL.
    #[arg(long, env = "RSC_REDIS_URL", default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    #[command(flatten)]
    cluster: crate::redis_args::ClusterArgs,
    /// Username; with a password, the demo logs in. Without either, it uses the login `rsc login` stored for
    /// the coordinator's deployment, if any (else no credentials are sent).
    #[arg(long, env = "RSC_USERNAME")]
    username: Option<String>,
    /// Password for --username.
    #[arg(long, env = "RSC_PASSWORD", hide_env_values = true)]
    password: Option<String>,
    /// Read the password for --username as one line from stdin (kept out of the process list and history).
    #[arg(long, conflicts_with = "password")]
    password_stdin: bool,
    /// Stream prefix to use (created if missing).
    #[arg(long, default_value = "rsc-demo")]
    stream: String,
    /// Shard count when the stream is created.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=1024))]
    shards: u32,
    /// Consumer members to run.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=64))]
    members: u64,
    /// Partition keys the producer cycles through (`customer-0` …); each key's records carry increasing
    /// sequence numbers, which the order check follows.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    keys: u64,
    /// Messages per second the producer publishes.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    rate: u64,
    /// Stop after this many seconds and print the summary (default: run until Ctrl-C).
    #[arg(long)]
    duration: Option<u64>,
    /// Keep per-key order across scales (sets the stream's ordering to KEY) and count order violations.
    #[arg(long)]
    ordered: bool,
    /// Shard counts: the stream is created with the first, then scaled to each next one (e.g. 4,8,3,6).
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(0..=1024))]
    scale: Vec<u32>,
    /// The scales of --scale ask for producer quiesce (`producerQuiesce`): routing switches once the demo's
    /// producer has paused and finished its publishes in flight, or after 10 s.
    #[arg(long)]
    quiesce: bool,
    /// Seconds the producer publishes before the consumers start: they begin behind, with a backlog to catch
    /// up on (a scale made meanwhile finds records of moved keys still unread in their old shards).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=3600))]
    backlog: u64,
    /// Seconds between the scales of --scale (the next scale waits for the previous migration to end).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    scale_every: u64,
    /// Milliseconds each message takes to handle (simulated work; 0 = none). Handling takes time, so a shard
    /// has a backlog when a scale switches routing: without --ordered, a moved key's new records are then
    /// often handled before its older ones, and the order check shows it.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(0..=10_000))]
    handle_ms: u64,
    /// Seconds the demo waits at the end for the consumers to catch up on what is still unread (it stops
    /// earlier once they make no progress for 15 s); what is then still unread is reported as `backlog=`.
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(0..=86_400))]
    drain_timeout: u64,
}

/// How long the demo waits, once the run is over, for a migration under way to end.
const MIGRATION_END_WAIT: Duration = Duration::from_secs(180);

/// What the handler saw: per sequence number of this run, how many times it was acknowledged.
#[derive(Default)]
struct Tally {
    acks: Mutex<HashMap<u64, u32>>,
}

impl Tally {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, u32>> {
        self.acks.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub fn run(args: DemoArgs) -> ExitCode {
    // Warnings only by default, so the live view stays readable (RSC_LOG overrides).
    let filter = tracing_subscriber::EnvFilter::try_from_env("RSC_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("rsc demo: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(demo(args))
}

async fn demo(args: DemoArgs) -> ExitCode {
    let (redis, redis_tls) = match args
        .cluster
        .target(&args.redis_url)
        .and_then(|r| Ok((r, args.cluster.tls()?)))
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("rsc demo: {e}");
            return ExitCode::FAILURE;
        }
    };
    let password = if args.password_stdin {
        let mut line = String::new();
        if let Err(e) = std::io::stdin().read_line(&mut line) {
            eprintln!("rsc demo: cannot read the password from stdin: {e}");
            return ExitCode::from(2);
        }
        Some(line.trim_end_matches(['\r', '\n']).to_owned())
    } else {
        args.password.clone()
    };
    let auth = match (&args.username, &password) {
        (Some(u), Some(p)) => Auth::Login(Credentials::new(u.clone(), p.clone())),
        (None, None) => stored_login(&args.coordinator).await,
        _ => {
            eprintln!(
                "rsc demo: give both --username and --password (or --password-stdin, or RSC_USERNAME and \
                 RSC_PASSWORD), or neither (then the login rsc login stored is used)"
            );
            return ExitCode::from(2);
        }
    };
    let coord = match CoordinatorClient::builder(args.coordinator.clone())
        .auth(auth)
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("rsc demo: {e}");
            return ExitCode::from(2);
        }
    };
    let initial_shards = args.scale.first().copied().unwrap_or(args.shards).max(1);
    match coord
        .create_stream(&args.stream, initial_shards, "rsc demo")
        .await
    {
        Ok(CreateStream::Created(r)) => {
            println!(
                "created stream {} with {} shards",
                r.stream_prefix, r.shard_count
            )
        }
        Ok(CreateStream::AlreadyExists) => println!("using existing stream {}", args.stream),
        Err(e) => {
            let hint = match (&e, &args.username) {
                (
                    rsc_client::ClientError::Api {
                        error_code: Some(code),
                        ..
                    },
                    _,
                ) if code == "STREAM_PREFIX_ALREADY_EXISTS" => format!(
                    "  No stream {:?} exists, but Redis still holds records of a deleted stream under that prefix. \
                     Say what to do with them: create it with `rsc apply -f FILE --existing-records adopt` (keep \
                     them) or `--existing-records purge` (delete them), or run the demo with another --stream.",
                    args.stream
                ),
                (rsc_client::ClientError::Unauthorized { .. }, None) => {
                    "  The coordinator requires credentials: set RSC_USERNAME and RSC_PASSWORD (e.g. \
                     RSC_USERNAME=admin and the password rsc serve was started with) or pass --username and --password."
                        .to_owned()
                }
                (rsc_client::ClientError::Unauthorized { .. }, Some(u)) => format!(
                    "  The coordinator refused user {u:?}: check RSC_PASSWORD (or --password)."
                ),
                _ => format!(
                    "  Is `rsc serve` running at {}? Pass --coordinator URL (or RSC_COORDINATOR), and credentials \
                     with RSC_USERNAME/RSC_PASSWORD (or --username/--password) if it requires them.",
                    args.coordinator.join(",")
                ),
            };
            eprintln!(
                "rsc demo: cannot create stream {:?}: {e}\n{hint}",
                args.stream
            );
            return ExitCode::FAILURE;
        }
    }

    if args.ordered
        && let Err(e) = crate::demo_order::make_ordered(&coord, &args.stream).await
    {
        eprintln!(
            "rsc demo: cannot make stream {:?} ordered: {e}",
            args.stream
        );
        return ExitCode::FAILURE;
    }
    let checks_order = args.ordered || !args.scale.is_empty();

    let run_id = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
    let tally = Arc::new(Tally::default());
    let order = Arc::new(crate::demo_order::OrderCheck::default());
    let handler_tally = tally.clone();
    let handler_order = order.clone();
    let handler_run = run_id.clone();
    let handle_time = Duration::from_millis(args.handle_ms);
    let handler = move |d: Delivery| {
        let tally = handler_tally.clone();
        let order = handler_order.clone();
        let run = handler_run.clone();
        async move {
            if !handle_time.is_zero() {
                tokio::time::sleep(handle_time).await;
            }
            let seq = (d.field_str("run") == Some(run.as_str()))
                .then(|| d.field_str("seq").and_then(|s| s.parse::<u64>().ok()))
                .flatten();
            if let Some(seq) = seq
                && let Some(k) = d.field_str("k").and_then(|k| k.parse::<u64>().ok())
            {
                order.handled(k, seq);
            }
            if d.ack().await.is_ok()
                && let Some(seq) = seq
            {
                *tally.lock().entry(seq).or_default() += 1;
            }
        }
    };
    let mut consumer_config = ConsumerConfig::new(&args.stream, &args.redis_url)
        .redis(redis.clone())
        .member_id(format!("rsc-demo-{run_id}"))
        .concurrency(args.members as usize)
        .batch_size(50);
    consumer_config.redis_tls = redis_tls.clone();
    let mut producer_config =
        ProducerConfig::new(&args.stream, &args.redis_url).redis(redis.clone());
    producer_config.redis_tls = redis_tls;
    if args.scale.len() > 1 {
        // Scaling while publishing: pick up each new routing within half a second (order holds for records
        // published with current routing; see docs/api.md, "Ordered streams").
        producer_config = producer_config.refresh_interval(Duration::from_millis(500));
    }
    let producer = match Producer::connect(coord.clone(), producer_config).await {
        Ok(p) => Arc::new(p),
        Err(e) => {
            eprintln!(
                "rsc demo: cannot start the producer: {e}\n  Is Redis reachable at {}? Pass --redis-url URL (or --redis-cluster-nodes host:port,…).",
                redis.describe()
            );
            return ExitCode::FAILURE;
        }
    };

    let published = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let producing = tokio::spawn(produce(
        producer.clone(),
        Workload {
            run_id: run_id.clone(),
            rate: args.rate,
            keys: args.keys,
        },
        published.clone(),
        stop.clone(),
    ));

    let scale_stop = Arc::new(AtomicBool::new(false));
    let scaling = (args.scale.len() > 1).then(|| {
        let plan = crate::demo_scale::ScalePlan {
            stream: args.stream.clone(),
            targets: args.scale[1..].to_vec(),
            every: Duration::from_secs(args.scale_every),
            quiesce: args.quiesce,
        };
        tokio::spawn(crate::demo_scale::scale_through(
            coord.clone(),
            plan,
            scale_stop.clone(),
        ))
    });

    if args.backlog > 0 {
        println!(
            "publishing for {} s before the consumers start (--backlog)",
            args.backlog
        );
        tokio::time::sleep(Duration::from_secs(args.backlog)).await;
    }
    let consumer = match Consumer::start(coord.clone(), consumer_config, handler).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "rsc demo: cannot start consumers: {e}\n  Is Redis reachable at {}? Pass --redis-url URL (or --redis-cluster-nodes host:port,…).",
                redis.describe()
            );
            stop.store(true, Ordering::Relaxed);
            scale_stop.store(true, Ordering::Relaxed);
            return ExitCode::FAILURE;
        }
    };

    let started = Instant::now();
    let end = args.duration.map(|s| started + Duration::from_secs(s));
    let tty = std::io::stdout().is_terminal();
    let mut last = (Instant::now(), 0u64, 0u64);
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = &mut ctrl_c => break,
        }
        let p = published.load(Ordering::Relaxed);
        let handled: u64 = consumer.snapshot().iter().map(|m| m.handled).sum();
        let dt = last.0.elapsed().as_secs_f64().max(0.001);
        let view = render(
            &args,
            &consumer,
            started.elapsed(),
            p,
            handled,
            (p - last.1) as f64 / dt,
            handled.saturating_sub(last.2) as f64 / dt,
        );
        last = (Instant::now(), p, handled);
        let mut out = std::io::stdout().lock();
        if tty {
            let _ = write!(out, "\x1b[2J\x1b[H");
        }
        let _ = writeln!(out, "{view}");
        let _ = out.flush();
        if end.is_some_and(|e| Instant::now() >= e) {
            break;
        }
    }

    stop.store(true, Ordering::Relaxed);
    let _ = producing.await;
    scale_stop.store(true, Ordering::Relaxed);
    if let Some(s) = scaling {
        if !s.is_finished() {
            eprintln!("rsc demo: letting the migration under way end before counting");
        }
        if tokio::time::timeout(MIGRATION_END_WAIT, s).await.is_err() {
            eprintln!(
                "rsc demo: the migration did not end within {} s; counting anyway",
                MIGRATION_END_WAIT.as_secs()
            );
        }
    }
    let published = published.load(Ordering::Relaxed);
    // Count only once the consumers have read what they can: wait while they still make progress.
    let drained = crate::demo_tally::wait_for_drain(
        published,
        Duration::from_secs(args.drain_timeout),
        || tally.lock().len() as u64,
    )
    .await;
    let report = consumer.shutdown().await;
    if !report.timed_out.is_empty() {
        eprintln!(
            "rsc demo: members did not drain in time: {:?}",
            report.timed_out
        );
    }
    let acks = tally.lock().clone();
    // What is not acknowledged: still in the stream (backlog) or gone (lost)?
    let unread = if drained {
        Ok(Default::default())
    } else {
        let shards = args
            .scale
            .iter()
            .copied()
            .chain([args.shards, current_shard_count(&coord, &args.stream).await])
            .max()
            .unwrap_or(args.shards);
        crate::demo_tally::unread_in_stream(&coord, &args.stream, shards, &run_id, &acks).await
    };
    let unread = match unread {
        Ok(u) => u,
        Err(e) => {
            eprintln!(
                "rsc demo: cannot look for unacknowledged messages in the stream ({e}): every one is counted as lost"
            );
            Default::default()
        }
    };
    let crate::demo_tally::Count {
        acked,
        duplicates,
        backlog,
        lost,
    } = crate::demo_tally::count(published, &acks, &unread);
    let violations = order.violations();
    if checks_order {
        println!(
            "published={published} acked={acked} duplicates={duplicates} backlog={backlog} lost={lost} order_violations={violations}"
        );
    } else {
        println!(
            "published={published} acked={acked} duplicates={duplicates} backlog={backlog} lost={lost}"
        );
    }
    if backlog > 0 {
        eprintln!(
            "rsc demo: {backlog} message(s) are still in the stream unread: the consumers had not caught up when \
             the demo stopped waiting (they stalled for {} s or --drain-timeout {} s passed). That is a backlog, \
             not a loss: lost counts only messages that no longer exist unacknowledged.",
            crate::demo_tally::STALL.as_secs(),
            args.drain_timeout
        );
    }
    if lost == 0 && (!args.ordered || violations == 0) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The stream's shard count now (0 when the coordinator does not say).
/// The token `rsc login` stored for these coordinators' deployment, if one is stored and not expired.
async fn stored_login(coordinator: &[String]) -> Auth {
    let target = crate::operator::Target {
        coordinator: coordinator.to_vec(),
        output: crate::operator::Output::Text,
    };
    match crate::operator::stored_login::find(&target).await {
        Ok(Some(found)) if found.token.expires_at_ms > crate::operator::now_ms() => {
            println!(
                "using the login rsc login stored for {} (user {})",
                found.key.describe(),
                found.token.username
            );
            Auth::Bearer(found.token.access_token)
        }
        _ => Auth::None,
    }
}

async fn current_shard_count(coord: &CoordinatorClient, stream: &str) -> u32 {
    coord
        .get_json(&["coord", "v1", "streams", stream, "groups", stream])
        .await
        .ok()
        .and_then(|g| g["shardCount"].as_u64())
        .map_or(0, |n| n.min(u64::from(u32::MAX)) as u32)
}

/// What the demo's producer publishes: this run's id, the rate, and how many partition keys it cycles through.
struct Workload {
    run_id: String,
    rate: u64,
    keys: u64,
}

/// Publishes `rate` messages per second in small pipelined batches until `stop`.
async fn produce(
    producer: Arc<Producer>,
    work: Workload,
    published: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
) {
    let Workload { run_id, rate, keys } = work;
    let tick = Duration::from_millis(100);
    let per_tick = rate.div_ceil(10).max(1);
    let mut seq = 0u64;
    let mut interval = tokio::time::interval(tick);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !stop.load(Ordering::Relaxed) {
        interval.tick().await;
        let records: Vec<Record> = (seq..seq + per_tick)
            .map(|s| {
                Record::new(format!("customer-{}", s % keys))
                    .field("run", &run_id)
                    .field("k", (s % keys).to_string())
                    .field("seq", s.to_string())
                    .field("payload", format!("demo message {s}"))
            })
            .collect();
        match producer.publish_batch(&records).await {
            Ok(_) => {
                seq += per_tick;
                published.store(seq, Ordering::Relaxed);
            }
            Err(e) if e.is_retryable() => {
                eprintln!("rsc demo: publish failed, retrying: {e}");
            }
            Err(e) => {
                eprintln!("rsc demo: publish failed: {e}");
                return;
            }
        }
    }
}

fn render(
    args: &DemoArgs,
    consumer: &Consumer,
    elapsed: Duration,
    published: u64,
    handled: u64,
    publish_rate: f64,
    handle_rate: f64,
) -> String {
    let mut s = format!(
        "rsc demo — stream {} on {} — {}s elapsed (Ctrl-C to stop)\n\
         published {published} ({publish_rate:.0}/s)   handled {handled} ({handle_rate:.0}/s)\n\n\
         {:<28} {:>6}  {:<14} {:<20} {:<10} {:>9}\n",
        args.stream,
        args.coordinator.join(","),
        elapsed.as_secs(),
        "member",
        "epoch",
        "status",
        "reading shards",
        "draining",
        "handled",
    );
    for m in consumer.snapshot() {
        let status = m
            .last_status
            .map(|st| st.as_str().to_owned())
            .unwrap_or_else(|| "joining".into());
        let status = if m.lease_valid || m.last_status.is_none() {
            status
        } else {
            format!("{status} (lease!)")
        };
        s.push_str(&format!(
            "{:<28} {:>6}  {:<14} {:<20} {:<10} {:>9}\n",
            m.member_id,
            m.member_epoch,
            status,
            list(&m.reading),
            list(&m.draining),
            m.handled
        ));
    }
    s
}

fn list(v: &[u32]) -> String {
    if v.is_empty() {
        "-".into()
    } else {
        v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
    }
}
