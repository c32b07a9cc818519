//! `rsc demo --quiesce`: the demo's scales (`--scale`) ask for producer quiesce (`producerQuiesce`), so
//! routing switches only once the demo's producer has stopped starting publishes and finished the ones in
//! flight (the SDK producer honours the quiesce notice), or at the timeout.

use rsc_client::{AdminClient, CoordinatorClient};
use std::time::Duration;

/// How long a demo scale waits for producers to quiesce before switching anyway.
pub const QUIESCE_TIMEOUT: Duration = Duration::from_secs(10);

/// Scales the stream to each of `targets` in turn, one every `every`, each with producer quiesce; prints each
/// answer on stderr.
pub async fn scale_through_quiesced(
    coord: CoordinatorClient,
    stream: String,
    targets: Vec<u32>,
    every: Duration,
) {
    let admin = AdminClient::new(coord, "rsc demo");
    for target in targets {
        tokio::time::sleep(every).await;
        match admin
            .scale_stream_quiesced(
                &stream,
                target,
                "rsc demo --scale --quiesce",
                Some(QUIESCE_TIMEOUT),
            )
            .await
        {
            Ok(_) => eprintln!("rsc demo: scaled {stream} to {target} shards (producers quiesced)"),
            Err(e) => eprintln!("rsc demo: scale of {stream} to {target} shards refused: {e}"),
        }
    }
}
