//! What the metrics refresh remembers of the shard streams of the groups it owns, and so how much it must
//! read of each at the next refresh. Pure bookkeeping: `metrics_refresh.rs` does the reading.
//!
//! A group with members, a group whose shard set or revision changed, and a group never read are read in
//! full (each shard's `XINFO STREAM`, `XINFO GROUPS`, `MEMORY USAGE`, pipelined). A group without members is
//! idle on its shards: nobody consumes for it through rsc, so its shard figures move only when an entry is
//! appended — or when its Redis consumer group is moved without rsc's members: an offset reset (which writes
//! the group's revision, so the next refresh reads it in full) or a reader outside rsc (`XREADGROUP`/`XACK`
//! by a process that never joined, which writes nothing rsc sees). For it the refresh asks one question —
//! has any of its shards an entry after the last id it read (one `XREAD` over all of them) — and keeps the
//! rows of the last full read when none has; and every [`POSITIONS_EVERY`] refreshes (each group on a
//! refresh of its own, spread by name) it also re-reads where the group stands on each shard (`XINFO
//! GROUPS`, one command per shard) into those rows, so that the lag and consume rate of the history follow
//! an outside reader within that many refreshes. A full read still comes at least every
//! [`FULL_READ_AT_LEAST_EVERY`] (plus a spread per group, so that an inventory created at once is not read
//! at once), for what an append does not show: an entry deleted or a stream trimmed or removed by hand.

use crate::runtime::cache::GroupName;
use crate::services::offsets::ShardOffsets;
use rsc_store::{ConsumerGroupInfo, Shard};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

/// An idle group's shards are read in full at least this often.
pub(crate) const FULL_READ_AT_LEAST_EVERY: Duration = Duration::from_secs(600);
/// Spread of that bound over the groups (by name), so their full reads do not fall on one refresh.
const FULL_READ_SPREAD: Duration = Duration::from_secs(300);
/// An idle group's positions on its shards are re-read every this many refreshes (60 s at the default
/// 15 s refresh interval).
pub(crate) const POSITIONS_EVERY: u64 = 4;

/// What to read of one group's shards at this refresh.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Every shard in full.
    Full,
    /// Only whether any shard has an entry after these ids (one per shard, in order; `0-0` for a shard
    /// stream that was not there); when none has, the remembered rows stand — with the group's positions
    /// re-read into them when `positions`.
    Check { after: Vec<String>, positions: bool },
}

#[derive(Debug, Clone)]
struct Remembered {
    shards: Vec<u32>,
    /// The group's store revision at the full read.
    revision: u64,
    rows: Vec<ShardOffsets>,
    full_read_by: Instant,
}

#[derive(Debug, Default)]
pub(crate) struct ShardCache {
    groups: HashMap<GroupName, Remembered>,
    /// Refreshes begun ([`ShardCache::begin_refresh`]): whose turn it is to have its positions re-read.
    refreshes: u64,
}

impl ShardCache {
    /// Called once at the start of each refresh.
    pub(crate) fn begin_refresh(&mut self) {
        self.refreshes = self.refreshes.wrapping_add(1);
    }

    /// What to read of `name`'s `shards` now; `has_members`: the group has any member at all; `revision`:
    /// its store revision now.
    pub(crate) fn plan(
        &self,
        name: &GroupName,
        shards: &[u32],
        has_members: bool,
        revision: u64,
        now: Instant,
    ) -> Plan {
        let Some(r) = self.groups.get(name) else {
            return Plan::Full;
        };
        if has_members || r.shards != shards || r.revision != revision || now >= r.full_read_by {
            return Plan::Full;
        }
        let mut after = Vec::with_capacity(r.rows.len());
        for row in &r.rows {
            match (&row.exists, &row.last_generated_id) {
                (false, _) => after.push("0-0".to_owned()),
                (true, Some(id)) => after.push(id.clone()),
                (true, None) => return Plan::Full,
            }
        }
        let positions = self
            .refreshes
            .wrapping_add(phase(name))
            .is_multiple_of(POSITIONS_EVERY);
        Plan::Check { after, positions }
    }

    /// After a full read of `name`'s `shards` (at store revision `revision`): the rows to keep.
    pub(crate) fn record(
        &mut self,
        name: &GroupName,
        shards: Vec<u32>,
        revision: u64,
        rows: Vec<ShardOffsets>,
        now: Instant,
    ) {
        let full_read_by = now + FULL_READ_AT_LEAST_EVERY + spread(name);
        self.groups.insert(
            name.clone(),
            Remembered {
                shards,
                revision,
                rows,
                full_read_by,
            },
        );
    }

    /// `name`'s remembered shards whose streams exist (those whose positions can be re-read).
    pub(crate) fn present_shards(&self, name: &GroupName) -> Vec<Shard> {
        self.groups.get(name).map_or_else(Vec::new, |r| {
            r.rows
                .iter()
                .filter(|row| row.exists)
                .map(|row| Shard::new(name.stream_prefix.as_str(), row.shard))
                .collect()
        })
    }

    /// Re-read positions of `name`'s Redis consumer group `group`: `read` holds, for each shard of
    /// [`ShardCache::present_shards`] in order, what `XINFO GROUPS` said (None: the stream is gone). The rows'
    /// group figures (last-delivered id, entries read, lag, pending) are replaced; a stream or group found
    /// gone makes the next refresh read the group in full.
    pub(crate) fn update_positions(
        &mut self,
        name: &GroupName,
        group: &str,
        read: Vec<Option<Vec<ConsumerGroupInfo>>>,
    ) {
        let Some(r) = self.groups.get_mut(name) else {
            return;
        };
        let mut read = read.into_iter();
        let mut vanished = false;
        for row in r.rows.iter_mut().filter(|row| row.exists) {
            let found = read
                .next()
                .flatten()
                .and_then(|gs| gs.into_iter().find(|g| g.name.as_deref() == Some(group)));
            match found {
                Some(g) => {
                    row.group_exists = true;
                    row.group_last_delivered_id = g.last_delivered_id;
                    row.entries_read = g.entries_read;
                    row.lag = g.lag;
                    row.pending_count = g.pending;
                }
                None => vanished = true,
            }
        }
        if vanished {
            self.groups.remove(name);
        }
    }

    /// The rows of the last full read of `name`.
    pub(crate) fn rows(&self, name: &GroupName) -> Option<&[ShardOffsets]> {
        self.groups.get(name).map(|r| r.rows.as_slice())
    }

    /// Forgets `name` (its shards could not be read: the next refresh reads them in full).
    pub(crate) fn forget(&mut self, name: &GroupName) {
        self.groups.remove(name);
    }

    /// Keeps only the groups `keep` says yes to (those this replica still owns).
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&GroupName) -> bool) {
        self.groups.retain(|n, _| keep(n));
    }
}

fn hash(name: &GroupName) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    h.finish()
}

fn spread(name: &GroupName) -> Duration {
    let ms = FULL_READ_SPREAD.as_millis() as u64;
    Duration::from_millis(hash(name) % ms.max(1))
}

/// Which of every [`POSITIONS_EVERY`] refreshes re-reads `name`'s positions.
fn phase(name: &GroupName) -> u64 {
    hash(name) % POSITIONS_EVERY
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::offsets::absent_shard;

    fn row(shard: u32, last_id: Option<&str>) -> ShardOffsets {
        let mut r = absent_shard("p", shard);
        if let Some(id) = last_id {
            r.exists = true;
            r.last_generated_id = Some(id.to_owned());
        }
        r
    }

    /// The plan with the positions question left out.
    fn checks(p: Plan) -> Option<Vec<String>> {
        match p {
            Plan::Check { after, .. } => Some(after),
            Plan::Full => None,
        }
    }

    #[test]
    fn an_idle_group_read_once_is_then_only_checked_until_its_bound() {
        let mut c = ShardCache::default();
        let g = GroupName::new("p", "g");
        let t0 = Instant::now();
        assert_eq!(c.plan(&g, &[0, 1], false, 7, t0), Plan::Full, "never read");
        c.record(
            &g,
            vec![0, 1],
            7,
            vec![row(0, Some("5-1")), row(1, None)],
            t0,
        );
        assert_eq!(
            checks(c.plan(&g, &[0, 1], false, 7, t0 + Duration::from_secs(15))),
            Some(vec!["5-1".into(), "0-0".into()])
        );
        assert_eq!(c.rows(&g).map(<[_]>::len), Some(2));
        assert_eq!(
            c.plan(&g, &[0, 1], true, 7, t0),
            Plan::Full,
            "a group with members is read in full"
        );
        assert_eq!(
            c.plan(&g, &[0, 1, 2], false, 7, t0),
            Plan::Full,
            "its shard set changed"
        );
        assert_eq!(
            c.plan(&g, &[0, 1], false, 9, t0),
            Plan::Full,
            "its revision moved (e.g. an offset reset held and moved its shards)"
        );
        let late = t0 + FULL_READ_AT_LEAST_EVERY + FULL_READ_SPREAD;
        assert_eq!(c.plan(&g, &[0, 1], false, 7, late), Plan::Full, "bound");
        c.retain(|n| n != &g);
        assert_eq!(c.plan(&g, &[0, 1], false, 7, t0), Plan::Full, "forgotten");
    }

    #[test]
    fn an_idle_group_s_positions_are_re_read_on_one_refresh_in_every_few() {
        let mut c = ShardCache::default();
        let groups: Vec<GroupName> = (0..40)
            .map(|i| GroupName::new("p", &format!("g{i}")))
            .collect();
        let t0 = Instant::now();
        for g in &groups {
            c.record(g, vec![0], 1, vec![row(0, Some("1-0"))], t0);
        }
        let mut per_refresh = Vec::new();
        let mut per_group = vec![0; groups.len()];
        for _ in 0..POSITIONS_EVERY * 3 {
            c.begin_refresh();
            let mut due = 0;
            for (i, g) in groups.iter().enumerate() {
                if let Plan::Check {
                    positions: true, ..
                } = c.plan(g, &[0], false, 1, t0)
                {
                    due += 1;
                    per_group[i] += 1;
                }
            }
            per_refresh.push(due);
        }
        assert_eq!(
            per_group,
            vec![3; groups.len()],
            "each group once per {POSITIONS_EVERY}"
        );
        assert!(
            per_refresh.iter().all(|&n| n < groups.len()),
            "spread over the refreshes: {per_refresh:?}"
        );
    }

    #[test]
    fn re_read_positions_replace_the_group_s_figures_and_a_vanished_group_is_read_again() {
        let mut c = ShardCache::default();
        let g = GroupName::new("p", "g");
        let t0 = Instant::now();
        let mut read_before = row(0, Some("9-0"));
        read_before.group_exists = true;
        read_before.lag = Some(9);
        read_before.entries_read = Some(0);
        read_before.stream_length = 9;
        c.record(&g, vec![0, 1], 1, vec![read_before, row(1, None)], t0);
        assert_eq!(c.present_shards(&g), vec![Shard::new("p", 0)]);
        let moved = ConsumerGroupInfo {
            name: Some("g".into()),
            pending: Some(2),
            lag: Some(3),
            entries_read: Some(6),
            last_delivered_id: Some("6-0".into()),
        };
        let other = ConsumerGroupInfo {
            name: Some("other".into()),
            ..ConsumerGroupInfo::default()
        };
        c.update_positions(&g, "g", vec![Some(vec![other.clone(), moved])]);
        let rows = c.rows(&g).unwrap();
        assert_eq!(rows[0].lag, Some(3));
        assert_eq!(rows[0].entries_read, Some(6));
        assert_eq!(rows[0].pending_count, Some(2));
        assert_eq!(rows[0].group_last_delivered_id.as_deref(), Some("6-0"));
        assert_eq!(rows[0].stream_length, 9, "the stream's own figures stay");
        assert!(!rows[1].exists);
        // The group is gone from the shard stream: read in full next time.
        c.update_positions(&g, "g", vec![Some(vec![other])]);
        assert_eq!(c.plan(&g, &[0, 1], false, 1, t0), Plan::Full);
    }

    #[test]
    fn a_stream_without_a_last_id_is_read_in_full() {
        let mut c = ShardCache::default();
        let g = GroupName::new("p", "g");
        let t0 = Instant::now();
        let mut odd = row(0, Some("1-0"));
        odd.last_generated_id = None;
        c.record(&g, vec![0], 1, vec![odd], t0);
        assert_eq!(c.plan(&g, &[0], false, 1, t0), Plan::Full);
        c.record(&g, vec![0], 1, vec![row(0, Some("1-0"))], t0);
        c.forget(&g);
        assert_eq!(c.plan(&g, &[0], false, 1, t0), Plan::Full);
    }
}
