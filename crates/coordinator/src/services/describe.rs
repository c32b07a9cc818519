//! A stream as a whole: `GET /coord/v1/streams/{p}/describe` (shards, groups side by side, hottest shards,
//! rates) and `GET …/history?minutes=` (lag and rates over the last minutes). Lengths, memory, lag and
//! pending are read from Redis at the request (one pipelined EXISTS, then one pipeline of XINFO STREAM,
//! XINFO GROUPS and MEMORY USAGE over the stream's shards: XINFO GROUPS answers every group at once); rates
//! come from this replica's samples (`runtime/history.rs`), which the metrics refresh records.

use crate::domain_error::{BadQuery, BadRequest, CoordError, StreamNotFound};
use crate::observability::metrics::Metrics;
use crate::runtime::cache::GroupName;
use crate::runtime::coordinator::Monitoring;
use crate::runtime::history::{Point, RETAINED_MS};
use crate::runtime::shown_keys;
use rsc_group::model::MemberState;
use rsc_protocol::wire::describe::{
    DescribedGroup, DescribedShard, HistoryGroupPoint, HistoryPoint, StreamDescribeResponse,
    StreamHistoryResponse,
};
use rsc_store::{Shard, ShardObservation, Store, StoreError};
use std::collections::{BTreeMap, BTreeSet};

/// The most shards `describe` lists (a stream's maximum shard count).
const MAX_DESCRIBED_SHARDS: usize = 16_384;
/// How many shards `hottestShards` names.
const HOTTEST: usize = 3;
/// The longest history asked for, in minutes (what the replica keeps).
pub const MAX_HISTORY_MINUTES: u32 = (RETAINED_MS / 60_000) as u32;

/// The `minutes` query parameter of the history route: absent → [`MAX_HISTORY_MINUTES`]; else an integer
/// from 1 to [`MAX_HISTORY_MINUTES`], or 400 naming it and the range.
pub fn history_minutes(raw: Option<&String>) -> Result<u32, CoordError> {
    let Some(raw) = raw else {
        return Ok(MAX_HISTORY_MINUTES);
    };
    match raw.trim().parse::<u32>() {
        Ok(m) if (1..=MAX_HISTORY_MINUTES).contains(&m) => Ok(m),
        _ => Err(BadQuery::HistoryMinutes {
            given: raw.clone(),
            max: MAX_HISTORY_MINUTES,
        }
        .into()),
    }
}

impl Monitoring<'_> {
    /// `GET /coord/v1/streams/{p}/describe`.
    pub async fn describe_stream(
        &self,
        prefix: &str,
    ) -> Result<StreamDescribeResponse, CoordError> {
        let names = self.live_groups_of(prefix).await?;
        let mut groups = Vec::with_capacity(names.len());
        for name in &names {
            groups.push(self.require_group(name).await?);
        }
        let record = self.resharding().load_stream(prefix).await?;
        let shard_count = record
            .as_ref()
            .map_or(groups[0].group.shard_count, |s| s.record.shard_count);
        let mut shard_ids: BTreeSet<u32> = (0..shard_count).collect();
        for c in &groups {
            shard_ids.extend(c.group.assignable_shards());
        }
        if shard_ids.len() > MAX_DESCRIBED_SHARDS {
            return Err(BadRequest::TooManyShardsToDescribe {
                stream: prefix.to_owned(),
                shards: shard_ids.len(),
                max: MAX_DESCRIBED_SHARDS,
            }
            .into());
        }
        let shard_ids: Vec<u32> = shard_ids.into_iter().collect();
        let observed = self.observe_shards(prefix, &shard_ids).await?;
        let now = self.clock().now_ms();
        let latest = self.history().latest(prefix);
        let rates = latest.as_ref().map(|p| &p.rates);

        let mut shards: Vec<DescribedShard> = shard_ids
            .iter()
            .zip(&observed)
            .map(|(s, o)| DescribedShard {
                shard: *s,
                stream_key: shown_keys::shard_stream(&Shard::new(prefix, *s)),
                exists: o.is_some(),
                length: o.as_ref().map_or(0, |o| o.info.length),
                memory_bytes: o.as_ref().and_then(|o| o.memory_bytes),
                produce_rate: rates.and_then(|r| r.per_shard.get(s).copied()),
                last_record_id: o.as_ref().and_then(|o| o.info.last_entry_id.clone()),
                hot: false,
            })
            .collect();
        let hottest = hottest(&shards);
        for s in &mut shards {
            s.hot = hottest.contains(&s.shard);
        }
        let total_memory_bytes = observed
            .iter()
            .flatten()
            .try_fold(0i64, |acc, o| o.memory_bytes.map(|m| acc + m));

        let described = groups
            .iter()
            .map(|c| {
                let g = &c.group;
                let (mut lag, mut pending) = (Some(0i64), 0i64);
                for s in g.assignable_shards() {
                    let Some(i) = shard_ids.iter().position(|x| *x == s) else {
                        continue;
                    };
                    // A shard stream that does not exist holds nothing to read.
                    let Some(o) = &observed[i] else { continue };
                    let info = o
                        .groups
                        .iter()
                        .find(|x| x.name.as_deref() == Some(g.consumer_group.as_str()));
                    lag = match (lag, info.and_then(|x| x.lag)) {
                        (Some(a), Some(b)) => Some(a + b),
                        _ => None,
                    };
                    pending += info.and_then(|x| x.pending).unwrap_or(0);
                }
                let view = crate::http::views::group_response(g);
                DescribedGroup {
                    consumer_group: g.consumer_group.clone(),
                    state: view.state,
                    member_count: g.members.len(),
                    active_members: g
                        .members
                        .values()
                        .filter(|m| m.state == MemberState::Active)
                        .count(),
                    shard_count: g.shard_count,
                    lag,
                    pending_count: pending,
                    consume_rate: rates
                        .and_then(|r| r.consume.get(&g.consumer_group).copied())
                        .flatten(),
                    sampled: latest
                        .as_ref()
                        .is_some_and(|p| p.sample.groups.contains_key(&g.consumer_group)),
                    active_migration: view.active_migration,
                }
            })
            .collect();
        let window = rates.filter(|r| r.span_ms > 0);
        Ok(StreamDescribeResponse {
            stream_prefix: prefix.to_owned(),
            shard_count,
            routing_version: record.as_ref().map(|s| s.record.routing_version),
            ordering: record
                .as_ref()
                .map_or("NONE", |s| s.record.ordering.as_str())
                .to_owned(),
            coordinator_id: self.config().id.clone(),
            observed_at: crate::runtime::clock::iso_ms(now),
            sample_interval_seconds: self.sample_interval_ms() as f64 / 1000.0,
            rate_window_seconds: window.map(|r| r.span_ms as f64 / 1000.0),
            next_sample_in_seconds: self.next_sample_in_seconds(now),
            total_length: shards.iter().map(|s| s.length).sum(),
            total_memory_bytes,
            produce_rate: window.and_then(|r| r.produce),
            shards,
            hottest_shards: hottest,
            groups: described,
        })
    }

    /// `GET /coord/v1/streams/{p}/history?minutes=`: `minutes` already checked (1 to 15).
    pub async fn stream_history(
        &self,
        prefix: &str,
        minutes: u32,
    ) -> Result<StreamHistoryResponse, CoordError> {
        self.live_groups_of(prefix).await?;
        let now = self.clock().now_ms();
        let points = self
            .history()
            .since(prefix, now - i64::from(minutes) * 60_000);
        let names: BTreeSet<String> = points
            .iter()
            .flat_map(|p| p.sample.groups.keys().cloned())
            .collect();
        Ok(StreamHistoryResponse {
            stream_prefix: prefix.to_owned(),
            coordinator_id: self.config().id.clone(),
            minutes,
            sample_interval_seconds: self.sample_interval_ms() as f64 / 1000.0,
            retained_seconds: (RETAINED_MS / 1000) as u32,
            next_sample_in_seconds: self.next_sample_in_seconds(now),
            groups: names.into_iter().collect(),
            points: points.into_iter().map(history_point).collect(),
        })
    }

    /// The stream's live groups, by name; 404 when it has none.
    async fn live_groups_of(&self, prefix: &str) -> Result<Vec<GroupName>, CoordError> {
        let mut names: Vec<GroupName> = self.resharding().stream_groups(prefix).await?;
        if names.is_empty() {
            return Err(StreamNotFound::Describe {
                stream: prefix.to_owned(),
            }
            .into());
        }
        names.sort_by(|a, b| a.consumer_group.cmp(&b.consumer_group));
        Ok(names)
    }

    /// What Redis holds of each of `shards` (None: the shard stream does not exist).
    async fn observe_shards(
        &self,
        prefix: &str,
        shards: &[u32],
    ) -> Result<Vec<Option<ShardObservation>>, CoordError> {
        let ids: Vec<Shard> = shards.iter().map(|s| Shard::new(prefix, *s)).collect();
        Ok(observe_shard_streams(self.metrics(), self.store(), &ids).await?)
    }

    fn sample_interval_ms(&self) -> i64 {
        self.config().metrics.refresh_interval.ms()
    }

    /// Seconds until the metrics refresh takes its next sample (the interval before the first).
    fn next_sample_in_seconds(&self, now: i64) -> f64 {
        let interval = self.sample_interval_ms();
        let next = match self.history().last_recorded_ms() {
            Some(last) => (last + interval - now).clamp(0, interval),
            None => interval,
        };
        next as f64 / 1000.0
    }
}

/// Up to [`HOTTEST`] shards by produce rate, then length (only shards holding or receiving records).
fn hottest(shards: &[DescribedShard]) -> Vec<u32> {
    let mut hot: Vec<&DescribedShard> = shards
        .iter()
        .filter(|s| s.length > 0 || s.produce_rate.is_some_and(|r| r > 0.0))
        .collect();
    hot.sort_by(|a, b| {
        let (ra, rb) = (a.produce_rate.unwrap_or(0.0), b.produce_rate.unwrap_or(0.0));
        rb.total_cmp(&ra)
            .then(b.length.cmp(&a.length))
            .then(a.shard.cmp(&b.shard))
    });
    hot.into_iter().take(HOTTEST).map(|s| s.shard).collect()
}

fn history_point(p: Point) -> HistoryPoint {
    let consume: BTreeMap<&String, Option<f64>> =
        p.rates.consume.iter().map(|(g, r)| (g, *r)).collect();
    HistoryPoint {
        at: crate::runtime::clock::iso_ms(p.sample.at_ms),
        at_ms: p.sample.at_ms,
        total_length: p.sample.total_length(),
        produce_rate: p.rates.produce,
        groups: p
            .sample
            .groups
            .iter()
            .map(|(g, s)| HistoryGroupPoint {
                consumer_group: g.clone(),
                lag: s.lag,
                consume_rate: consume.get(g).copied().flatten(),
            })
            .collect(),
    }
}

/// What Redis holds of the stream of each of `shards`, in order (None: the stream does not exist): one
/// pipelined EXISTS, then XINFO/MEMORY of the streams that exist only. Timed as `exists` and `xinfo`. Used by
/// the metrics refresh and by `describe`.
pub(crate) async fn observe_shard_streams(
    metrics: &Metrics,
    store: &Store,
    shards: &[Shard],
) -> Result<Vec<Option<ShardObservation>>, StoreError> {
    let exists = metrics
        .time_store("exists", store.shards_exist(shards))
        .await?;
    let present: Vec<Shard> = shards
        .iter()
        .zip(&exists)
        .filter(|(_, there)| **there)
        .map(|(s, _)| s.clone())
        .collect();
    let mut observed = metrics
        .time_store("xinfo", store.shard_observations(&present))
        .await?
        .into_iter();
    Ok(exists
        .iter()
        .map(|there| {
            if *there {
                observed.next().flatten()
            } else {
                None
            }
        })
        .collect())
}
