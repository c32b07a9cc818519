//! How `rsc demo` counts at the end of a run: it waits while the consumers still catch up, then tells records
//! still unread in the stream (`backlog`) from records that no longer exist unacknowledged (`lost`).
//!
//! A slow consumer is not a loss: a record published and not yet acknowledged is looked for in the shard
//! streams (through the coordinator's message browser, `GET …/shards/{i}/messages`, so a Redis Cluster works
//! too). Found: backlog. Not found anywhere: lost.

use rsc_client::{ClientError, CoordinatorClient, Method};
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// How long the consumers may go without acknowledging anything before the demo stops waiting for them.
pub const STALL: Duration = Duration::from_secs(15);

/// Records per page read from a shard (the browser's largest page).
const PAGE: u32 = 1000;

/// Waits until `acked()` reaches `published`, the consumers stop making progress for [`STALL`], or `bound`
/// passes. Returns whether every record was acknowledged.
pub async fn wait_for_drain(published: u64, bound: Duration, acked: impl Fn() -> u64) -> bool {
    let deadline = Instant::now() + bound;
    let mut last = (acked(), Instant::now());
    loop {
        let now = acked();
        if now >= published {
            return true;
        }
        if now > last.0 {
            last = (now, Instant::now());
        }
        if last.1.elapsed() >= STALL || Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The end-of-run count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Count {
    pub acked: u64,
    pub duplicates: u64,
    /// Published, not acknowledged, still in a shard stream.
    pub backlog: u64,
    /// Published, not acknowledged, in no shard stream (trimmed or deleted unread).
    pub lost: u64,
}

/// Counts this run's records: `acks` maps a sequence number to how often it was acknowledged; `unread` are
/// the unacknowledged sequence numbers still found in the stream.
pub fn count(published: u64, acks: &HashMap<u64, u32>, unread: &BTreeSet<u64>) -> Count {
    let missing = (0..published).filter(|s| !acks.contains_key(s));
    let (backlog, lost) = missing.fold((0, 0), |(b, l), s| {
        if unread.contains(&s) {
            (b + 1, l)
        } else {
            (b, l + 1)
        }
    });
    Count {
        acked: acks.len() as u64,
        duplicates: acks.values().map(|&n| u64::from(n.saturating_sub(1))).sum(),
        backlog,
        lost,
    }
}

/// The sequence numbers of this run's records (field `run` = `run_id`) still in shards `0..shards` of
/// `stream` and not in `acked`. A shard the coordinator does not know (retired after a scale-in) is skipped.
pub async fn unread_in_stream(
    coord: &CoordinatorClient,
    stream: &str,
    shards: u32,
    run_id: &str,
    acked: &HashMap<u64, u32>,
) -> Result<BTreeSet<u64>, ClientError> {
    let mut unread = BTreeSet::new();
    for shard in 0..shards {
        let index = shard.to_string();
        let mut cursor: Option<String> = None;
        loop {
            let mut query = vec![
                ("direction", "FORWARD".to_owned()),
                ("limit", PAGE.to_string()),
            ];
            if let Some(c) = &cursor {
                query.push(("cursor", c.clone()));
            }
            let page = coord
                .send_json(
                    Method::GET,
                    &[
                        "coord",
                        "v1",
                        "monitoring",
                        "streams",
                        stream,
                        "groups",
                        stream,
                        "shards",
                        &index,
                        "messages",
                    ],
                    &query,
                    None,
                    None,
                )
                .await;
            let page = match page {
                Ok(p) => p,
                Err(ClientError::Api { status: 404, .. }) => break,
                Err(e) => return Err(e),
            };
            for r in page["records"].as_array().into_iter().flatten() {
                let fields = &r["fields"];
                if fields["run"].as_str() != Some(run_id) {
                    continue;
                }
                if let Some(seq) = fields["seq"].as_str().and_then(|s| s.parse::<u64>().ok())
                    && !acked.contains_key(&seq)
                {
                    unread.insert(seq);
                }
            }
            match page["nextCursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => break,
            }
        }
    }
    Ok(unread)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unacknowledged_records_still_in_the_stream_are_backlog_not_loss() {
        let acks: HashMap<u64, u32> = [(0, 1), (1, 2), (4, 1)].into_iter().collect();
        let unread: BTreeSet<u64> = [2, 5].into_iter().collect();
        assert_eq!(
            count(6, &acks, &unread),
            Count {
                acked: 3,
                duplicates: 1,
                backlog: 2,
                lost: 1,
            }
        );
    }

    #[tokio::test]
    async fn the_drain_ends_when_every_record_is_acknowledged() {
        let n = std::sync::atomic::AtomicU64::new(0);
        let done = wait_for_drain(3, Duration::from_secs(5), || {
            n.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        })
        .await;
        assert!(done);
    }
}
