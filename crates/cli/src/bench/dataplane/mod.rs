//! `rsc bench dataplane`: the SDK's data-plane cost against hand-written Redis loops, in one run, on the same
//! shard streams, with the same batch sizes.
//!
//! Producer: `--producers` tasks each publish their share of `--count` records in batches of `--batch`, raw
//! and SDK in turn, for `--rounds` rounds. The order alternates (raw first in odd rounds, SDK first in even
//! ones) so that neither always runs on the shorter streams, and each kind's rate is the median over the
//! rounds: one phase lasts a fraction of a second, and single phases vary by ±30% on a busy 2-core machine.
//! - raw: route every key with the contract's hash (routing fetched once), pipeline one
//!   `XADD <shard> NOMKSTREAM * …` per record, one round trip per batch, on one shared multiplexed connection;
//! - SDK: `Producer::publish_batch` (routing cache, the same pipelined XADDs, `max_len(None)`), one producer
//!   (one multiplexed connection) shared by the tasks.
//!
//! Consumer: both consume everything the producer phases wrote (2 × `--rounds` × `--count` entries), one read loop
//! per shard, `COUNT --batch`:
//! - raw: per shard, its own connection, `XREADGROUP … COUNT b STREAMS <shard> >` then one `XACK` per entry
//!   (what the SDK does: its handler acknowledges entry by entry), and a second pass with one multi-id
//!   `XACK` per batch (the cheapest hand-written loop);
//! - SDK: a managed consumer with `--members` members and enough workers for every owned shard to be read
//!   at once. With `--sdk-ack batch` (default) the SDK acknowledges each handled batch with one XACK
//!   (`ConsumerConfig::ack_after_handle`); with `--sdk-ack entry` the handler calls `Delivery::ack`. It
//!   joins and converges before anything is published, and its handler waits at a gate until the timed
//!   phase starts, so join and rebalancing are not timed (each read loop has fetched its first batch before
//!   the gate opens).
//!
//! Ends with `producer_ratio=… consumer_ratio=… sdk_ack=… …` (SDK / raw: the producer ratio is the median
//! of the rounds' ratios; the consumer ratio is against the raw loop that acknowledges the same way), and
//! deletes the bench group and its shard streams whatever
//! happened.
//!
//! Split: this file holds the arguments, the run and the report; `loops.rs` the timed producer and
//! consumer loops (raw and SDK) and their helpers; tests in `tests.rs`.

mod loops;
#[cfg(test)]
mod tests;

use loops::*;

use super::common::{self, Target};
use clap::Args;
use redis::streams::{StreamReadOptions, StreamReadReply};
use rsc_client::{
    Consumer, ConsumerConfig, CoordinatorClient, CreateStream, DataConn, Delivery, Producer,
    ProducerConfig, Record, RedisTarget, RedisTls,
};
use std::collections::BTreeSet;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, watch};

/// How the SDK consumer acknowledges in the timed phase.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SdkAck {
    /// `ConsumerConfig::ack_after_handle`: one XACK per handled batch.
    Batch,
    /// The handler calls `Delivery::ack` for each entry.
    Entry,
}

impl SdkAck {
    fn name(self) -> &'static str {
        match self {
            SdkAck::Batch => "batch",
            SdkAck::Entry => "entry",
        }
    }
}

/// Bounds that keep one run bounded.
const MAX_COUNT: u64 = 10_000_000;
const MAX_SHARDS: u32 = 1024;
const MAX_BATCH: usize = 10_000;
const MAX_TASKS: usize = 256;
const MAX_ROUNDS: u32 = 100;
/// How long the SDK consumer may take to join and converge, and to consume, before the run gives up.
const PHASE_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Args, Debug, Clone)]
pub struct DataplaneArgs {
    #[command(flatten)]
    pub target: Target,
    /// Shards of the bench stream.
    #[arg(long, default_value_t = 4)]
    pub shards: u32,
    /// Records each producer phase publishes (the consumers then read 2 × rounds × count).
    #[arg(long, default_value_t = 100_000)]
    pub count: u64,
    /// Producer rounds (one raw and one SDK phase each, in alternating order); rates are the medians.
    #[arg(long, default_value_t = 5)]
    pub rounds: u32,
    /// Records per publish batch (pipeline) and entries per read (COUNT).
    #[arg(long, default_value_t = 100)]
    pub batch: usize,
    /// Concurrent publishing tasks (same for raw and SDK).
    #[arg(long, default_value_t = 4)]
    pub producers: usize,
    /// How the SDK consumer acknowledges: one XACK per handled batch, or the handler per entry. The consumer
    /// ratio compares with the raw loop that acknowledges the same way.
    #[arg(long, value_enum, default_value_t = SdkAck::Batch)]
    pub sdk_ack: SdkAck,
    /// SDK consumer members (one process); each gets a worker for every shard it may own.
    #[arg(long, default_value_t = 2)]
    pub members: usize,
    /// Payload bytes per record (one field; plus a `seq` field).
    #[arg(long, default_value_t = 100)]
    pub payload: usize,
    /// SDK assignment lease in milliseconds (must stay below the coordinator's member lease TTL).
    #[arg(long, default_value_t = 10_000)]
    pub assignment_lease_ms: u64,
}

impl DataplaneArgs {
    pub fn validate(&self) -> Result<(), String> {
        self.target.validate()?;
        if self.shards == 0 || self.shards > MAX_SHARDS {
            return Err(format!("--shards must be 1..={MAX_SHARDS}"));
        }
        if self.count == 0 || self.count > MAX_COUNT {
            return Err(format!("--count must be 1..={MAX_COUNT}"));
        }
        if self.rounds == 0 || self.rounds > MAX_ROUNDS {
            return Err(format!("--rounds must be 1..={MAX_ROUNDS}"));
        }
        if self.count * u64::from(self.rounds) > MAX_COUNT {
            return Err(format!(
                "--count × --rounds must be at most {MAX_COUNT} (records kept in Redis per kind)"
            ));
        }
        if self.batch == 0 || self.batch > MAX_BATCH {
            return Err(format!("--batch must be 1..={MAX_BATCH}"));
        }
        if self.producers == 0 || self.producers > MAX_TASKS {
            return Err(format!("--producers must be 1..={MAX_TASKS}"));
        }
        if self.members == 0 || self.members > MAX_TASKS {
            return Err(format!("--members must be 1..={MAX_TASKS}"));
        }
        if self.payload > 1 << 20 {
            return Err("--payload must be at most 1 MiB".into());
        }
        Ok(())
    }
}

pub fn run(args: DataplaneArgs) -> ExitCode {
    if let Err(e) = args.validate() {
        eprintln!("rsc bench dataplane: {e}");
        return ExitCode::from(2);
    }
    let runtime = match common::runtime() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("rsc bench dataplane: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(bench(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rsc bench dataplane: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn bench(args: DataplaneArgs) -> Result<(), String> {
    let coord = args.target.client()?;
    let run_id = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
    let prefix = format!("bench-dp-{run_id}");
    println!(
        "rsc bench dataplane: stream {prefix}, {} shards, {} records per producer phase, {} rounds, batch {}, {} producer tasks, {} SDK members, {} B payload",
        args.shards,
        args.count,
        args.rounds,
        args.batch,
        args.producers,
        args.members,
        args.payload
    );
    match coord.create_stream(&prefix, args.shards, "bench").await {
        Ok(CreateStream::Created(_)) => {}
        Ok(CreateStream::AlreadyExists) => {
            return Err(format!("stream {prefix} already exists"));
        }
        Err(e) => return Err(format!("creating {prefix}: {e}")),
    }
    let result = measure(&args, &coord, &prefix).await;
    let failures = args.target.cleanup(&prefix, args.shards).await;
    for f in &failures {
        eprintln!("rsc bench dataplane: cleanup: {f}");
    }
    if failures.is_empty() {
        println!(
            "deleted the bench group and its {} shard streams",
            args.shards
        );
    }
    result
}

/// Rates of one run, in entries per second (producer: medians over the rounds).
struct Rates {
    raw_produce: f64,
    sdk_produce: f64,
    /// Median over the rounds of SDK / raw.
    produce_ratio: f64,
    raw_consume: f64,
    raw_consume_batch_ack: f64,
    sdk_consume: f64,
}

async fn measure(
    args: &DataplaneArgs,
    coord: &CoordinatorClient,
    prefix: &str,
) -> Result<(), String> {
    let redis_client = args.target.redis()?;
    let total = args.count * 2 * u64::from(args.rounds);

    // The SDK consumer joins first and converges with its handler held at a gate.
    let (gate_tx, gate_rx) = watch::channel(false);
    let handled = Arc::new(AtomicU64::new(0));
    let all_handled = Arc::new(Notify::new());
    let ack_each = args.sdk_ack == SdkAck::Entry;
    let handler = {
        let handled = handled.clone();
        let all_handled = all_handled.clone();
        move |d: Delivery| {
            let mut gate = gate_rx.clone();
            let handled = handled.clone();
            let all_handled = all_handled.clone();
            async move {
                let _ = gate.wait_for(|open| *open).await;
                let ok = !ack_each || d.ack().await.is_ok();
                if ok && handled.fetch_add(1, Ordering::Relaxed) + 1 == total {
                    all_handled.notify_one();
                }
            }
        }
    };
    let mut config = ConsumerConfig::new(prefix, &args.target.redis_url)
        .redis(redis_client.clone())
        .member_id(prefix.to_owned())
        .concurrency(args.members)
        .workers(args.shards as usize)
        .batch_size(args.batch)
        .ack_after_handle(!ack_each)
        .assignment_lease(Duration::from_millis(args.assignment_lease_ms));
    config.redis_tls = args.target.cluster.tls()?;
    let consumer = Consumer::start(coord.clone(), config, handler)
        .await
        .map_err(|e| format!("starting the SDK consumer: {e}"))?;
    let result = async {
        let converge_start = Instant::now();
        wait_converged(&consumer, args.shards).await?;
        println!(
            "SDK consumer: {} members joined and converged in {:.2}s",
            args.members,
            converge_start.elapsed().as_secs_f64()
        );

        let (mut raws, mut sdks, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for round in 1..=args.rounds {
            let (raw, sdk) = if round % 2 == 1 {
                let raw = produce_raw(args, coord, &redis_client, prefix).await?;
                (raw, produce_sdk(args, coord, prefix).await?)
            } else {
                let sdk = produce_sdk(args, coord, prefix).await?;
                (produce_raw(args, coord, &redis_client, prefix).await?, sdk)
            };
            println!(
                "producer round {round}: raw XADD pipeline {raw:.0} records/s, SDK publish_batch {sdk:.0} records/s, ratio {:.3}",
                sdk / raw
            );
            raws.push(raw);
            sdks.push(sdk);
            ratios.push(sdk / raw);
        }
        let (raw_produce, sdk_produce) = (common::median(&mut raws), common::median(&mut sdks));
        let produce_ratio = common::median(&mut ratios);
        println!(
            "producer medians over {} rounds: raw {raw_produce:.0} records/s, SDK {sdk_produce:.0} records/s, ratio {produce_ratio:.3}",
            args.rounds
        );

        let raw_consume = consume_raw(args, &redis_client, prefix, total, false).await?;
        println!("consumer raw XREADGROUP + XACK per entry: {raw_consume:.0} entries/s");
        let raw_consume_batch_ack = consume_raw(args, &redis_client, prefix, total, true).await?;
        println!(
            "consumer raw XREADGROUP + one XACK per batch: {raw_consume_batch_ack:.0} entries/s"
        );

        let start = Instant::now();
        let _ = gate_tx.send(true);
        let done = all_handled.notified();
        if handled.load(Ordering::Relaxed) < total {
            tokio::time::timeout(PHASE_TIMEOUT, done)
                .await
                .map_err(|_| {
                    format!(
                        "the SDK consumer handled {} of {total} entries within {}s",
                        handled.load(Ordering::Relaxed),
                        PHASE_TIMEOUT.as_secs()
                    )
                })?;
        }
        let sdk_consume = total as f64 / start.elapsed().as_secs_f64();
        let how = match args.sdk_ack {
            SdkAck::Batch => "ack_after_handle, one XACK per batch",
            SdkAck::Entry => "Delivery::ack per entry",
        };
        println!("consumer SDK managed consumer ({how}): {sdk_consume:.0} entries/s");
        if !ack_each {
            // The last batches' XACKs follow their handlers: wait until nothing is pending (not timed).
            wait_acked(&redis_client, args.target.cluster.tls()?.as_ref(), prefix, args.shards).await?;
        }
        Ok::<Rates, String>(Rates {
            raw_produce,
            sdk_produce,
            produce_ratio,
            raw_consume,
            raw_consume_batch_ack,
            sdk_consume,
        })
    }
    .await;
    let _ = gate_tx.send(true);
    let report = consumer.shutdown().await;
    if !report.timed_out.is_empty() {
        eprintln!(
            "rsc bench dataplane: members did not leave in time: {:?}",
            report.timed_out
        );
    }
    let r = result?;
    println!("{}", summary(&r, args.sdk_ack));
    Ok(())
}

fn summary(r: &Rates, ack: SdkAck) -> String {
    let raw_same_ack = match ack {
        SdkAck::Batch => r.raw_consume_batch_ack,
        SdkAck::Entry => r.raw_consume,
    };
    format!(
        "producer_ratio={:.3} consumer_ratio={:.3} sdk_ack={} raw_xadd_per_sec={:.0} sdk_publish_per_sec={:.0} raw_consume_per_sec={:.0} sdk_consume_per_sec={:.0} raw_consume_entry_ack_per_sec={:.0} raw_consume_batch_ack_per_sec={:.0}",
        r.produce_ratio,
        r.sdk_consume / raw_same_ack,
        ack.name(),
        r.raw_produce,
        r.sdk_produce,
        raw_same_ack,
        r.sdk_consume,
        r.raw_consume,
        r.raw_consume_batch_ack,
    )
}
