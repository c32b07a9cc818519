//! A first consumer: joins the consumer group `--group` (default `orders-consumer`, the runbook's) of the
//! stream `orders`, prints and acknowledges each record, and on Ctrl-C (or after `--count` records) hands its
//! shards back and leaves the group.
//!
//! `cargo run -p rsc-examples --bin orders-consumer -- --count 100` (needs `RSC_PASSWORD`; see `--help`).

use clap::Parser;
use rsc_client::{Consumer, ConsumerConfig, Delivery};
use rsc_examples::Connection;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::Notify;

#[derive(Debug, Parser)]
#[command(about = "Consume orders from an rsc stream as one consumer group")]
struct Cli {
    #[command(flatten)]
    connection: Connection,
    /// The stream (its prefix).
    #[arg(long, default_value = "orders")]
    stream: String,
    /// The consumer group: every group reads every record once; members of one group share its shards.
    #[arg(long, default_value = "orders-consumer")]
    group: String,
    /// Stop after this many records (default: run until Ctrl-C).
    #[arg(long)]
    count: Option<u64>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("orders-consumer: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: &Cli) -> Result<(), String> {
    let coordinator = cli.connection.coordinator()?;
    let handled = Arc::new(AtomicU64::new(0));
    let enough = Arc::new(Notify::new());
    let config =
        ConsumerConfig::new(&cli.stream, &cli.connection.redis_url).consumer_group(&cli.group);
    let (count, target) = (handled.clone(), cli.count);
    let done = enough.clone();
    // The handler runs once per record; records of one shard arrive one at a time, in stream order.
    let consumer = Consumer::start(coordinator, config, move |d: Delivery| {
        let (count, done) = (count.clone(), done.clone());
        async move {
            println!(
                "{} total={} (shard {}, id {}{})",
                d.field_str("order").unwrap_or("?"),
                d.field_str("total").unwrap_or("?"),
                d.shard(),
                d.id(),
                if d.reclaimed() { ", reclaimed" } else { "" }
            );
            // Acknowledge only once the record is handled: an unacknowledged one is delivered again
            // (to this member or, after a hand-over, to the next owner of its shard).
            if d.ack().await.is_ok() {
                let n = count.fetch_add(1, Ordering::SeqCst) + 1;
                if target.is_some_and(|t| n >= t) {
                    done.notify_one();
                }
            }
        }
    })
    .await
    .map_err(|e| e.to_string())?;
    eprintln!(
        "orders-consumer: member {} joined group {} of stream {} (Ctrl-C to leave)",
        consumer.member_ids().join(","),
        cli.group,
        cli.stream
    );
    tokio::select! {
        _ = enough.notified() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    // Finishes the record in hand, reports the shards revoked and leaves, so they move at once.
    let report = consumer.shutdown().await;
    println!(
        "handled={} group={} left={}",
        handled.load(Ordering::SeqCst),
        cli.group,
        report.timed_out.is_empty()
    );
    Ok(())
}
