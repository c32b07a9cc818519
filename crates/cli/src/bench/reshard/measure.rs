//! The pure bookkeeping of `rsc bench reshard`: which group first read which shard after the routing switch,
//! how many records each 10 ms tick publishes, which keys cover every shard, publish-latency windows, and
//! the trial and summary lines.

use rsc_protocol::ordering::Ordering as StreamOrdering;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Publish ticks per second (one batch every 10 ms).
pub const TICKS_PER_SEC: u64 = 100;
/// The least number of distinct keys published (`k-0 … k-63`), more when needed to reach every shard.
pub const MIN_KEYS: u64 = 64;
/// The most keys tried when looking for a key set that reaches every shard.
const MAX_KEYS: u64 = 1 << 20;

/// Wall-clock nanoseconds since the Unix epoch (0 if the clock is before it).
pub fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Milliseconds from `from_ns` to `to_ns` (negative if `to_ns` is earlier).
pub fn ms_between(from_ns: u64, to_ns: u64) -> f64 {
    (to_ns as f64 - from_ns as f64) / 1e6
}

/// Records published at tick `tick` (0-based) so that `rate` records go out per second: the share of the
/// rate due by the end of the tick minus what earlier ticks sent (0 for some ticks when `rate` < 100).
pub fn batch_len(rate: u32, tick: u64) -> u64 {
    let rate = u64::from(rate);
    (tick + 1) * rate / TICKS_PER_SEC - tick * rate / TICKS_PER_SEC
}

/// The key of the `n`-th record published when `keys` distinct keys are used.
pub fn record_key(n: u64, keys: u64) -> String {
    format!("k-{}", n % keys.max(1))
}

/// The least key count (at least [`MIN_KEYS`]) whose keys `k-0 … k-(n-1)` reach every shard of both
/// `from` and `to` shards, so that every shard receives records before and after the scale.
pub fn key_count(from: u32, to: u32) -> Result<u64, String> {
    let mut hit_from = vec![false; from as usize];
    let mut hit_to = vec![false; to as usize];
    let (mut left_from, mut left_to) = (hit_from.len(), hit_to.len());
    for n in 0..MAX_KEYS {
        let key = record_key(n, MAX_KEYS);
        for (hit, left, count) in [
            (&mut hit_from, &mut left_from, from),
            (&mut hit_to, &mut left_to, to),
        ] {
            let shard = rsc_protocol::routing::shard_for_key(key.as_bytes(), count)
                .ok_or("a shard count of 0")?;
            if !std::mem::replace(&mut hit[shard as usize], true) {
                *left -= 1;
            }
        }
        if left_from == 0 && left_to == 0 {
            return Ok((n + 1).max(MIN_KEYS));
        }
    }
    Err(format!(
        "no set of up to {MAX_KEYS} keys reaches every one of {from} and {to} shards"
    ))
}

/// For every (group, shard of the new count): when a handler of that group first got a record of that
/// shard published after the routing switch.
///
/// The switch time and every handler time are read from the clock under one lock, so a record counts exactly
/// when its publish time is after the switch time: a handler that took the lock before the switch was
/// marked got its record before the switch, hence the record was published before it too.
pub struct FirstReads {
    inner: Mutex<Reads>,
}

struct Reads {
    switch_ns: Option<u64>,
    /// `first[group][shard]`: wall-clock ns of the first qualifying record.
    first: Vec<Vec<Option<u64>>>,
    missing: usize,
}

/// What [`FirstReads`] found, relative to the scale call.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadingTimes {
    /// The slowest (group, shard): max over all of them, ms after the scale call.
    pub all_ms: f64,
    /// Index of the slowest group (0-based) and its shard.
    pub slowest: (usize, u32),
    /// Per group, the max over its shards (ms after the scale call).
    pub per_group_ms: Vec<f64>,
}

impl FirstReads {
    pub fn new(groups: usize, shards: u32) -> Self {
        FirstReads {
            inner: Mutex::new(Reads {
                switch_ns: None,
                first: vec![vec![None; shards as usize]; groups],
                missing: groups * shards as usize,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Reads> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A handler of `group` got a record of `shard` published at `pub_ns` (now).
    pub fn note(&self, group: usize, shard: u32, pub_ns: u64) {
        self.note_with(group, shard, pub_ns, wall_ns);
    }

    /// [`FirstReads::note`] with the clock given (read under the lock).
    pub fn note_with(&self, group: usize, shard: u32, pub_ns: u64, clock: impl FnOnce() -> u64) {
        let mut r = self.lock();
        let Some(switch_ns) = r.switch_ns else {
            return;
        };
        if pub_ns <= switch_ns {
            return;
        }
        let now = clock();
        let Some(slot) = r
            .first
            .get_mut(group)
            .and_then(|g| g.get_mut(shard as usize))
        else {
            return;
        };
        if slot.is_none() {
            *slot = Some(now);
            r.missing -= 1;
        }
    }

    /// Marks the routing switch now and returns its time (wall-clock ns).
    pub fn mark_switch(&self) -> u64 {
        self.mark_switch_with(wall_ns)
    }

    /// [`FirstReads::mark_switch`] with the clock given (read under the lock). Only the first mark counts.
    pub fn mark_switch_with(&self, clock: impl FnOnce() -> u64) -> u64 {
        let mut r = self.lock();
        *r.switch_ns.get_or_insert_with(clock)
    }

    /// The (group, shard) pairs not read after the switch yet.
    pub fn missing(&self) -> Vec<(usize, u32)> {
        let r = self.lock();
        let mut out = Vec::new();
        for (g, shards) in r.first.iter().enumerate() {
            for (s, t) in shards.iter().enumerate() {
                if t.is_none() {
                    out.push((g, s as u32));
                }
            }
        }
        out
    }

    /// The times relative to the scale call at `t0_ns`, once every (group, shard) was read.
    pub fn times(&self, t0_ns: u64) -> Option<ReadingTimes> {
        let r = self.lock();
        if r.missing > 0 || r.first.is_empty() {
            return None;
        }
        let mut all = (f64::NEG_INFINITY, (0, 0));
        let mut per_group_ms = Vec::new();
        for (g, shards) in r.first.iter().enumerate() {
            let mut group_max = f64::NEG_INFINITY;
            for (s, t) in shards.iter().enumerate() {
                let ms = ms_between(t0_ns, (*t)?);
                group_max = group_max.max(ms);
                if ms > all.0 {
                    all = (ms, (g, s as u32));
                }
            }
            per_group_ms.push(group_max);
        }
        Some(ReadingTimes {
            all_ms: all.0,
            slowest: all.1,
            per_group_ms,
        })
    }
}

/// One `publish_batch` call: when it started and how long it took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub start_ns: u64,
    pub latency: Duration,
}

/// Publish latency of the batches started in one window (ms).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyStats {
    pub count: usize,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

/// Latency of the samples started in `[from_ns, to_ns)`; None when there are none.
pub fn window(samples: &[Sample], from_ns: u64, to_ns: u64) -> Option<LatencyStats> {
    let mut ms: Vec<f64> = samples
        .iter()
        .filter(|s| (from_ns..to_ns).contains(&s.start_ns))
        .map(|s| s.latency.as_secs_f64() * 1e3)
        .collect();
    ms.sort_by(f64::total_cmp);
    let q = |p| super::super::common::quantile(&ms, p);
    Some(LatencyStats {
        count: ms.len(),
        p50: q(0.5)?,
        p99: q(0.99)?,
        max: q(1.0)?,
    })
}

/// What the command line fixes for every trial (for the trial lines).
#[derive(Debug, Clone, PartialEq)]
pub struct Setup {
    pub from: u32,
    pub to: u32,
    pub groups: usize,
    pub rate: u32,
    pub quiesce_timeout_ms: Option<u64>,
}

/// One completed trial.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialResult {
    pub trial: usize,
    pub ordering: StreamOrdering,
    pub stream: String,
    pub switch_ms: f64,
    pub reading: ReadingTimes,
    pub migration_done_ms: f64,
    /// Each group's terminal migration state (`DEPRECATED` normally).
    pub migration_end: Vec<String>,
    pub steady: Option<LatencyStats>,
    pub during: Option<LatencyStats>,
    pub publish_errors: u64,
}

/// `g<i>` (1-based) names group `i` (0-based) in the output.
pub fn group_label(group: usize) -> String {
    format!("g{}", group + 1)
}

fn fmt_opt(v: Option<f64>, decimals: usize) -> String {
    v.filter(|v| v.is_finite())
        .map_or_else(|| "unknown".to_owned(), |v| format!("{v:.decimals$}"))
}

/// The states, or the one state when every group ended the same way.
fn end_states(states: &[String]) -> String {
    match states.first() {
        Some(first) if states.iter().all(|s| s == first) => first.clone(),
        _ => states
            .iter()
            .enumerate()
            .map(|(g, s)| format!("{}:{s}", group_label(g)))
            .collect::<Vec<_>>()
            .join(","),
    }
}

impl TrialResult {
    /// `trial=1 ordering=KEY from=4 to=8 … stream=…`.
    pub fn line(&self, setup: &Setup) -> String {
        let quiesce = setup
            .quiesce_timeout_ms
            .map_or_else(|| "none".to_owned(), |ms| format!("{ms}ms"));
        let per_group = self
            .reading
            .per_group_ms
            .iter()
            .enumerate()
            .map(|(g, ms)| format!("{}:{ms:.1}", group_label(g)))
            .collect::<Vec<_>>()
            .join(",");
        let (sg, ss) = self.reading.slowest;
        let lat = |s: Option<LatencyStats>, f: fn(LatencyStats) -> f64| fmt_opt(s.map(f), 2);
        format!(
            "trial={} ordering={} from={} to={} groups={} rate={} quiesce={quiesce} switch_ms={:.1} all_reading_ms={:.1} slowest={}:{ss} per_group_ms={per_group} migration_done_ms={:.1} migration_end={} publish_steady_p50_ms={} publish_steady_p99_ms={} publish_steady_max_ms={} publish_during_p50_ms={} publish_during_p99_ms={} publish_during_max_ms={} publish_during_batches={} publish_errors={} stream={}",
            self.trial,
            self.ordering.as_str(),
            setup.from,
            setup.to,
            setup.groups,
            setup.rate,
            self.switch_ms,
            self.reading.all_ms,
            group_label(sg),
            self.migration_done_ms,
            end_states(&self.migration_end),
            lat(self.steady, |s| s.p50),
            lat(self.steady, |s| s.p99),
            lat(self.steady, |s| s.max),
            lat(self.during, |s| s.p50),
            lat(self.during, |s| s.p99),
            lat(self.during, |s| s.max),
            self.during.map_or(0, |s| s.count),
            self.publish_errors,
            self.stream,
        )
    }
}

/// The median of the values present; None when there is none.
fn median_of(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let mut v: Vec<f64> = values.flatten().filter(|v| v.is_finite()).collect();
    (!v.is_empty()).then(|| super::super::common::median(&mut v))
}

/// `summary ordering=KEY trials=3 failed=0 …`: medians over the completed trials of one ordering mode.
pub fn summary_line(ordering: StreamOrdering, results: &[&TrialResult], failed: usize) -> String {
    let m = |f: &dyn Fn(&TrialResult) -> Option<f64>, decimals| {
        fmt_opt(median_of(results.iter().map(|r| f(r))), decimals)
    };
    format!(
        "summary ordering={} trials={} failed={failed} switch_median_ms={} all_reading_median_ms={} migration_done_median_ms={} publish_steady_p99_median_ms={} publish_during_p99_median_ms={} publish_during_max_median_ms={}",
        ordering.as_str(),
        results.len(),
        m(&|r| Some(r.switch_ms), 1),
        m(&|r| Some(r.reading.all_ms), 1),
        m(&|r| Some(r.migration_done_ms), 1),
        m(&|r| r.steady.map(|s| s.p99), 2),
        m(&|r| r.during.map(|s| s.p99), 2),
        m(&|r| r.during.map(|s| s.max), 2),
    )
}
