//! A first producer: publishes `--count` orders to the stream `orders`, each with its order id as the
//! partition key (so every record of one order goes to the same shard), and says where they went.
//!
//! `cargo run -p rsc-examples --bin orders-producer -- --count 100` (needs `RSC_PASSWORD`; see `--help`).

use clap::Parser;
use rsc_client::{Producer, ProducerConfig, Record};
use rsc_examples::Connection;
use std::collections::BTreeMap;
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(about = "Publish orders to an rsc stream")]
struct Cli {
    #[command(flatten)]
    connection: Connection,
    /// The stream (its prefix).
    #[arg(long, default_value = "orders")]
    stream: String,
    /// How many orders to publish.
    #[arg(long, default_value_t = 10)]
    count: u32,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("orders-producer: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: &Cli) -> Result<(), String> {
    let coordinator = cli.connection.coordinator()?;
    // Fetches the stream's routing (shard count, stream keys) once now, then refreshes it in the background.
    let producer = Producer::connect(
        coordinator,
        ProducerConfig::new(&cli.stream, &cli.connection.redis_url),
    )
    .await
    .map_err(|e| e.to_string())?;
    let orders: Vec<Record> = (1..=cli.count)
        .map(|n| {
            Record::new(format!("order-{n}"))
                .field("order", format!("order-{n}"))
                .field("total", format!("{}.{:02}", n * 7 % 100, n % 100))
        })
        .collect();
    // One pipelined round trip for the whole batch; `publish` sends a single record.
    let published = producer
        .publish_batch(&orders)
        .await
        .map_err(|e| e.to_string())?;
    let mut per_shard: BTreeMap<u32, usize> = BTreeMap::new();
    for p in &published {
        *per_shard.entry(p.shard).or_default() += 1;
    }
    let shards: Vec<String> = per_shard.iter().map(|(s, n)| format!("{s}:{n}")).collect();
    println!(
        "published={} stream={} per_shard={}",
        published.len(),
        cli.stream,
        shards.join(",")
    );
    Ok(())
}
