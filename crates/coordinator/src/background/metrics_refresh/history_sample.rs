//! What a metrics refresh hands the rate history (`runtime/history.rs`): one sample per stream, built from the
//! shard rows the refresh read of the stream's groups (no read of its own). Every group of a stream reads
//! the same shard streams, so a shard's figures are taken from the group whose read is the newest (the
//! highest `entries-added`: an idle group's rows may be remembered from an earlier read). A group whose
//! shards were not read (more than `max-shard-series`, or a failed read) is left out of the sample.

use crate::observability::metrics::snapshot::GroupObservation;
use crate::runtime::history::{GroupSample, Sample, ShardSample};
use std::collections::BTreeMap;

/// One sample per stream of `groups` (stream prefix → sample; the history stamps the time).
pub(crate) fn samples(groups: &[GroupObservation]) -> Vec<(String, Sample)> {
    let mut by_stream: BTreeMap<String, Sample> = BTreeMap::new();
    for obs in groups {
        let Some(rows) = &obs.shards else { continue };
        let g = &obs.group;
        let sample = by_stream.entry(g.stream_prefix.clone()).or_default();
        let mut group = GroupSample {
            lag: Some(0),
            entries_read: BTreeMap::new(),
        };
        for r in rows {
            let shard = ShardSample {
                entries_added: if r.exists {
                    r.entries_added.unwrap_or(0)
                } else {
                    0
                },
                length: r.stream_length,
                memory_bytes: r.memory_usage_bytes,
            };
            match sample.shards.get(&r.shard) {
                Some(seen) if seen.entries_added >= shard.entries_added => {}
                _ => {
                    sample.shards.insert(r.shard, shard);
                }
            }
            if r.exists {
                group.lag = match (group.lag, r.lag) {
                    (Some(a), Some(b)) => Some(a + b),
                    _ => None,
                };
                group.entries_read.insert(r.shard, r.entries_read);
            } else {
                // Nothing to read on a shard stream not created yet.
                group.entries_read.insert(r.shard, Some(0));
            }
        }
        sample.groups.insert(g.consumer_group.clone(), group);
    }
    by_stream.into_iter().collect()
}
