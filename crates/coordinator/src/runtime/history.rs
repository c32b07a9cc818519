//! The rate history: a ring buffer of samples, per stream, that each coordinator replica keeps of the groups
//! it owns (no external service). The metrics refresh (`background/metrics_refresh.rs`) records one sample
//! per stream at every refresh from what it read anyway — each shard's `entries-added` (XINFO STREAM), length
//! and memory, and each group's lag and `entries-read` per shard (XINFO GROUPS) — so sampling adds no Redis
//! command. Rates are derived from consecutive samples: produce = entries added per second, consume = entries
//! read per second. Pure bookkeeping, no I/O.
//!
//! Bound: samples older than [`RETAINED_MS`] (15 minutes) are dropped, and at most [`MAX_SAMPLES`] are kept
//! per stream (15 minutes at a refresh interval of 1 s or more); a stream sampled no more for 15 minutes
//! is forgotten. Only groups whose shards the refresh reads are sampled (at most
//! `coordinator.metrics.max-shard-series` shards, 256 by default). A sample takes about 48 bytes per shard
//! and 32 per group and shard (map entries included), so at the default 15 s (61 samples) a stream of 4
//! shards and 2 groups takes about 27 KB, one of 256 shards and 2 groups about 1.7 MB.
//!
//! Counter resets: a shard whose `entries-added` went down (its stream was deleted and created again) counts
//! its new value as the records added; a shard new in the later sample (a scale added it) counts from 0;
//! a group's `entries-read` that went down (an offset reset moved it back) counts nothing.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// How far back samples are kept: 15 minutes.
pub const RETAINED_MS: i64 = 15 * 60 * 1000;
/// At most this many samples per stream (15 minutes at 1 s).
pub const MAX_SAMPLES: usize = 901;
/// The rates of `describe` are derived over at most this span before the newest sample.
pub const RATE_WINDOW_MS: i64 = 60_000;

/// One shard stream at a sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardSample {
    /// Records ever appended (`entries-added`; 0 for a shard stream that does not exist).
    pub entries_added: i64,
    pub length: i64,
    pub memory_bytes: Option<i64>,
}

/// One group at a sample.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupSample {
    /// Lag summed over the group's shards (None: Redis could not tell for one).
    pub lag: Option<i64>,
    /// Per shard, the group's `entries-read` (None: unknown to Redis).
    pub entries_read: BTreeMap<u32, Option<i64>>,
}

/// One stream at one refresh.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sample {
    /// Redis time of the refresh (ms).
    pub at_ms: i64,
    pub shards: BTreeMap<u32, ShardSample>,
    pub groups: BTreeMap<String, GroupSample>,
}

impl Sample {
    /// Records in every shard stream together.
    pub fn total_length(&self) -> i64 {
        self.shards.values().map(|s| s.length).sum()
    }
}

/// Records added to the stream (and per shard) from `a` to `b`; None when `a` has no shards to compare with.
fn added(a: &Sample, b: &Sample) -> Option<(i64, BTreeMap<u32, i64>)> {
    if a.shards.is_empty() || b.shards.is_empty() {
        return None;
    }
    let mut per_shard = BTreeMap::new();
    for (shard, now) in &b.shards {
        let before = a.shards.get(shard).map_or(0, |s| s.entries_added);
        let d = if now.entries_added >= before {
            now.entries_added - before
        } else {
            now.entries_added
        };
        per_shard.insert(*shard, d);
    }
    Some((per_shard.values().sum(), per_shard))
}

/// Records the group read from `a` to `b`; None when the group is not in both.
fn read(a: &Sample, b: &Sample, group: &str) -> Option<i64> {
    let (ga, gb) = (a.groups.get(group)?, b.groups.get(group)?);
    let mut total = 0;
    for (shard, now) in &gb.entries_read {
        let Some(now) = now else { continue };
        let before = match ga.entries_read.get(shard) {
            Some(Some(v)) => *v,
            Some(None) => continue,
            None if a.shards.contains_key(shard) => continue,
            None => 0,
        };
        total += (now - before).max(0);
    }
    Some(total)
}

fn per_second(count: i64, ms: i64) -> Option<f64> {
    (ms > 0).then(|| ((count as f64) * 1000.0 / ms as f64 * 100.0).round() / 100.0)
}

/// Rates over a run of consecutive samples (oldest first).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rates {
    /// The span covered, in ms (0: fewer than two samples).
    pub span_ms: i64,
    pub produce: Option<f64>,
    pub per_shard: BTreeMap<u32, f64>,
    /// Per group sampled in the newest sample.
    pub consume: BTreeMap<String, Option<f64>>,
}

/// Rates from consecutive samples `run` (oldest first): each step's counts summed over the steps where
/// they are defined, divided by the time those steps span.
pub fn rates(run: &[&Sample]) -> Rates {
    let mut out = Rates::default();
    let Some(newest) = run.last() else {
        return out;
    };
    let (mut added_total, mut added_ms) = (0i64, 0i64);
    let mut shard_added: BTreeMap<u32, (i64, i64)> = BTreeMap::new();
    let mut group_read: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
    for pair in run.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let ms = b.at_ms - a.at_ms;
        if ms <= 0 {
            continue;
        }
        out.span_ms += ms;
        if let Some((total, per_shard)) = added(a, b) {
            added_total += total;
            added_ms += ms;
            for (shard, d) in per_shard {
                let e = shard_added.entry(shard).or_default();
                e.0 += d;
                e.1 += ms;
            }
        }
        for group in b.groups.keys() {
            if let Some(n) = read(a, b, group) {
                let e = group_read.entry(group.as_str()).or_default();
                e.0 += n;
                e.1 += ms;
            }
        }
    }
    out.produce = per_second(added_total, added_ms);
    for shard in newest.shards.keys() {
        if let Some((n, ms)) = shard_added.get(shard)
            && let Some(r) = per_second(*n, *ms)
        {
            out.per_shard.insert(*shard, r);
        }
    }
    for group in newest.groups.keys() {
        let r = group_read
            .get(group.as_str())
            .and_then(|(n, ms)| per_second(*n, *ms));
        out.consume.insert(group.clone(), r);
    }
    out
}

/// One point of a stream's history: a sample and the rates since the one before it.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub sample: Sample,
    pub rates: Rates,
}

/// The rates over the newest samples of `ring`: those at most [`RATE_WINDOW_MS`] before the newest, and at
/// least the one before it.
fn window_rates(ring: &VecDeque<Sample>) -> Rates {
    let Some(newest) = ring.back() else {
        return Rates::default();
    };
    let mut first = ring.len() - 1;
    while first > 0
        && (newest.at_ms - ring[first - 1].at_ms <= RATE_WINDOW_MS || first == ring.len() - 1)
    {
        first -= 1;
    }
    let run: Vec<&Sample> = ring.range(first..).collect();
    rates(&run)
}

#[derive(Debug, Default)]
struct State {
    streams: HashMap<String, VecDeque<Sample>>,
    /// Redis time of the last refresh that recorded (ms; 0 = none yet).
    last_recorded_ms: i64,
}

/// Every stream's samples, as this replica took them (a handle: clones share them).
#[derive(Debug, Default, Clone)]
pub struct History {
    state: Arc<Mutex<State>>,
}

impl History {
    /// Records one refresh at Redis time `at_ms`: a sample per stream observed (`samples`: stream → sample).
    /// Answers each recorded stream's rates over the window (as [`History::latest`]).
    pub fn record(&self, at_ms: i64, samples: Vec<(String, Sample)>) -> HashMap<String, Rates> {
        let Ok(mut st) = self.state.lock() else {
            return HashMap::new();
        };
        st.last_recorded_ms = at_ms;
        let recorded: Vec<String> = samples.iter().map(|(s, _)| s.clone()).collect();
        for (stream, mut sample) in samples {
            sample.at_ms = at_ms;
            let ring = st.streams.entry(stream).or_default();
            // A clock step backwards (another Redis after a fail-over): the older samples no longer compare.
            if ring.back().is_some_and(|s| s.at_ms >= at_ms) {
                ring.clear();
            }
            ring.push_back(sample);
            while ring.len() > MAX_SAMPLES {
                ring.pop_front();
            }
        }
        for ring in st.streams.values_mut() {
            while ring.front().is_some_and(|s| s.at_ms < at_ms - RETAINED_MS) {
                ring.pop_front();
            }
        }
        st.streams.retain(|_, ring| !ring.is_empty());
        recorded
            .into_iter()
            .filter_map(|stream| {
                let rates = window_rates(st.streams.get(&stream)?);
                Some((stream, rates))
            })
            .collect()
    }

    /// Redis time of the last refresh that recorded (None before the first).
    pub fn last_recorded_ms(&self) -> Option<i64> {
        let st = self.state.lock().ok()?;
        (st.last_recorded_ms > 0).then_some(st.last_recorded_ms)
    }

    /// The newest sample of `stream` and the rates over the samples at most [`RATE_WINDOW_MS`] before it (at
    /// least the one before it).
    pub fn latest(&self, stream: &str) -> Option<Point> {
        let st = self.state.lock().ok()?;
        let ring = st.streams.get(stream)?;
        Some(Point {
            sample: ring.back()?.clone(),
            rates: window_rates(ring),
        })
    }

    /// The points of `stream` taken at or after `since_ms`, oldest first, each with the rates since the
    /// sample before it (kept or not in the answer).
    pub fn since(&self, stream: &str, since_ms: i64) -> Vec<Point> {
        let Ok(st) = self.state.lock() else {
            return Vec::new();
        };
        let Some(ring) = st.streams.get(stream) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, s) in ring.iter().enumerate() {
            if s.at_ms < since_ms {
                continue;
            }
            let run: Vec<&Sample> = match i.checked_sub(1) {
                Some(p) => vec![&ring[p], s],
                None => vec![s],
            };
            out.push(Point {
                sample: s.clone(),
                rates: rates(&run),
            });
        }
        out
    }

    /// Whether `stream`'s newest sample has `group` (this replica samples it).
    pub fn samples_group(&self, stream: &str, group: &str) -> bool {
        self.state.lock().ok().is_some_and(|st| {
            st.streams
                .get(stream)
                .and_then(VecDeque::back)
                .is_some_and(|s| s.groups.contains_key(group))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A group's `entries-read` per shard.
    type Reads<'a> = &'a [(u32, Option<i64>)];

    fn sample(added: &[(u32, i64)], groups: &[(&str, Reads<'_>)]) -> Sample {
        Sample {
            at_ms: 0,
            shards: added
                .iter()
                .map(|(s, n)| {
                    (
                        *s,
                        ShardSample {
                            entries_added: *n,
                            length: *n,
                            memory_bytes: None,
                        },
                    )
                })
                .collect(),
            groups: groups
                .iter()
                .map(|(g, read)| {
                    (
                        (*g).to_owned(),
                        GroupSample {
                            lag: Some(0),
                            entries_read: read.iter().copied().collect(),
                        },
                    )
                })
                .collect(),
        }
    }

    #[test]
    fn rates_come_from_consecutive_samples() {
        let h = History::default();
        assert!(h.latest("p").is_none());
        h.record(
            1_000,
            vec![(
                "p".into(),
                sample(&[(0, 10), (1, 0)], &[("g", &[(0, Some(5)), (1, Some(0))])]),
            )],
        );
        let first = h.latest("p").unwrap();
        assert_eq!(first.rates.produce, None, "one sample: no rate");
        assert_eq!(first.rates.consume.get("g"), Some(&None));
        h.record(
            11_000,
            vec![(
                "p".into(),
                sample(
                    &[(0, 60), (1, 50)],
                    &[("g", &[(0, Some(35)), (1, Some(20))])],
                ),
            )],
        );
        let p = h.latest("p").unwrap();
        assert_eq!(p.rates.span_ms, 10_000);
        assert_eq!(p.rates.produce, Some(10.0), "100 records in 10 s");
        assert_eq!(p.rates.per_shard.get(&1), Some(&5.0));
        assert_eq!(
            p.rates.consume.get("g"),
            Some(&Some(5.0)),
            "50 read in 10 s"
        );
        let points = h.since("p", 0);
        assert_eq!(points.len(), 2);
        assert_eq!(points[0].rates.produce, None);
        assert_eq!(points[1].rates.produce, Some(10.0));
        assert!(h.samples_group("p", "g"));
        assert!(!h.samples_group("p", "other"));
        assert_eq!(h.last_recorded_ms(), Some(11_000));
    }

    #[test]
    fn resets_new_shards_and_offset_moves_are_not_negative_rates() {
        let a = Sample {
            at_ms: 0,
            ..sample(&[(0, 100)], &[("g", &[(0, Some(100))])])
        };
        // The stream was recreated (entries-added went down to 7), a scale added shard 1 (3 records), the
        // group was reset back to 0 on shard 0 and read 2 on shard 1.
        let b = Sample {
            at_ms: 1_000,
            ..sample(&[(0, 7), (1, 3)], &[("g", &[(0, Some(0)), (1, Some(2))])])
        };
        let r = rates(&[&a, &b]);
        assert_eq!(r.produce, Some(10.0));
        assert_eq!(r.consume.get("g"), Some(&Some(2.0)));
        // Unknown entries-read, and a sample without shards (too many to read): no rate from them.
        let c = Sample {
            at_ms: 2_000,
            ..sample(&[], &[("g", &[(0, None)])])
        };
        let r = rates(&[&b, &c]);
        assert_eq!(r.produce, None);
        assert_eq!(r.consume.get("g"), Some(&Some(0.0)));
    }

    #[test]
    fn samples_are_kept_fifteen_minutes_and_the_window_is_a_minute() {
        let h = History::default();
        let step = 15_000;
        for i in 0..100i64 {
            h.record(
                1 + i * step,
                vec![(
                    "p".into(),
                    sample(&[(0, i * 15)], &[("g", &[(0, Some(i * 15))])]),
                )],
            );
        }
        let all = h.since("p", 0);
        assert_eq!(all.len(), 61, "15 minutes at 15 s, both ends");
        let p = h.latest("p").unwrap();
        assert_eq!(p.rates.span_ms, 60_000);
        assert_eq!(p.rates.produce, Some(1.0));
        // A stream no longer sampled is forgotten after 15 minutes.
        h.record(1 + 200 * step, vec![]);
        assert!(h.latest("p").is_none());
    }
}
