//! `rsc produce <stream> --key K --field f=v …`: appends one test record through the SDK's routed producer —
//! routing from the coordinator, then the guarded append (`XADD … NOMKSTREAM`, refused when the routing used
//! is older than the shard's routing boundary) — and prints the shard and the id Redis gave it. For the
//! runbook's smoke tests: the record goes exactly where an application's would.

use super::{Failure, Output, Session, Target, print_json};
use clap::Args;
use rsc_client::{Producer, ProducerConfig};
use serde_json::json;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ProduceArgs {
    #[command(flatten)]
    pub target: Target,
    /// The stream prefix.
    pub stream: String,
    /// The partition key (it picks the shard, as the SDK's producer does).
    #[arg(long)]
    pub key: String,
    /// A field of the record, `name=value`; repeat for more (at least one).
    #[arg(long = "field", value_name = "NAME=VALUE", required = true)]
    pub fields: Vec<String>,
    /// The consumer group whose routing is used (default: the stream's default group, named after it).
    #[arg(long)]
    pub group: Option<String>,
    /// Redis (data plane) URL.
    #[arg(long, env = "RSC_REDIS_URL", default_value = "redis://127.0.0.1:6379")]
    pub redis_url: String,
    #[command(flatten)]
    pub cluster: crate::redis_args::ClusterArgs,
}

/// `name=value` pairs, each with a non-empty name.
fn fields(raw: &[String]) -> Result<Vec<(String, String)>, Failure> {
    raw.iter()
        .map(|f| match f.split_once('=') {
            Some((name, value)) if !name.trim().is_empty() => {
                Ok((name.trim().to_owned(), value.to_owned()))
            }
            _ => Err(Failure::new(format!(
                "--field {f:?} is not NAME=VALUE (e.g. --field payload='{{\"n\":1}}')"
            ))),
        })
        .collect()
}

pub async fn run(a: ProduceArgs) -> Result<ExitCode, Failure> {
    let fields = fields(&a.fields)?;
    let redis = a.cluster.target(&a.redis_url).map_err(Failure::new)?;
    let tls = a.cluster.tls().map_err(Failure::new)?;
    let session = Session::open(&a.target).await?;
    let mut config = ProducerConfig::new(&a.stream, &a.redis_url)
        .redis(redis)
        .max_len(None);
    if let Some(g) = &a.group {
        config = config.consumer_group(g);
    }
    if let Some(tls) = tls {
        config = config.redis_tls(tls);
    }
    let producer = Producer::connect(session.client.clone(), config)
        .await
        .map_err(|e| session.failure(e))?;
    let published = producer
        .publish(a.key.as_bytes(), &fields)
        .await
        .map_err(|e| session.failure(e))?;
    match a.target.output {
        Output::Json => print_json(&json!({
            "streamPrefix": a.stream,
            "shardIndex": published.shard,
            "streamKey": published.stream_key,
            "id": published.id,
        })),
        Output::Text => sayln!(
            "produced to {} shard {} ({}) id {}",
            a.stream,
            published.shard,
            published.stream_key,
            published.id
        ),
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::fields;

    #[test]
    fn fields_are_name_value_pairs() {
        let ok = fields(&["payload={\"a\":1}".into(), "n=".into(), "x=a=b".into()]).unwrap();
        assert_eq!(
            ok,
            vec![
                ("payload".into(), "{\"a\":1}".into()),
                ("n".into(), String::new()),
                ("x".into(), "a=b".into())
            ]
        );
        assert!(fields(&["novalue".into()]).is_err());
        assert!(fields(&["=v".into()]).is_err());
    }
}
