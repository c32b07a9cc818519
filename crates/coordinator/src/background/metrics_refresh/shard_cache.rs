//! What the metrics refresh remembers of the shard streams of the groups it owns, and so how much it must
//! read of each at the next refresh. Pure bookkeeping: `metrics_refresh.rs` does the reading.
//!
//! A group with members, a group whose shard set changed, and a group never read are read in full (each
//! shard's `XINFO STREAM`, `XINFO GROUPS`, `MEMORY USAGE`, pipelined). A group without members is idle on its
//! shards: nobody consumes for it, so its shard figures move only when an entry is appended. For it the
//! refresh asks one question — has any of its shards an entry after the last id it read (one `XREAD` over
//! all of them) — and keeps the rows of the last full read when none has. A full read still comes at least
//! every [`FULL_READ_AT_LEAST_EVERY`] (plus a spread per group, so that an inventory created at once is not
//! read at once), for what an append does not show: an entry deleted or a stream trimmed or removed by hand.

use crate::runtime::cache::GroupName;
use crate::services::offsets::ShardOffsets;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

/// An idle group's shards are read in full at least this often.
pub(crate) const FULL_READ_AT_LEAST_EVERY: Duration = Duration::from_secs(600);
/// Spread of that bound over the groups (by name), so their full reads do not fall on one refresh.
const FULL_READ_SPREAD: Duration = Duration::from_secs(300);

/// What to read of one group's shards at this refresh.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Every shard in full.
    Full,
    /// Only whether any shard has an entry after these ids (one per shard, in order; `0-0` for a shard
    /// stream that was not there); when none has, the remembered rows stand.
    Check { after: Vec<String> },
}

#[derive(Debug, Clone)]
struct Remembered {
    shards: Vec<u32>,
    rows: Vec<ShardOffsets>,
    full_read_by: Instant,
}

#[derive(Debug, Default)]
pub(crate) struct ShardCache {
    groups: HashMap<GroupName, Remembered>,
}

impl ShardCache {
    /// What to read of `name`'s `shards` now; `has_members`: the group has any member at all.
    pub(crate) fn plan(
        &self,
        name: &GroupName,
        shards: &[u32],
        has_members: bool,
        now: Instant,
    ) -> Plan {
        let Some(r) = self.groups.get(name) else {
            return Plan::Full;
        };
        if has_members || r.shards != shards || now >= r.full_read_by {
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
        Plan::Check { after }
    }

    /// After a full read of `name`'s `shards`: the rows to keep.
    pub(crate) fn record(
        &mut self,
        name: &GroupName,
        shards: Vec<u32>,
        rows: Vec<ShardOffsets>,
        now: Instant,
    ) {
        let full_read_by = now + FULL_READ_AT_LEAST_EVERY + spread(name);
        self.groups.insert(
            name.clone(),
            Remembered {
                shards,
                rows,
                full_read_by,
            },
        );
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

fn spread(name: &GroupName) -> Duration {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    let ms = FULL_READ_SPREAD.as_millis() as u64;
    Duration::from_millis(h.finish() % ms.max(1))
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

    #[test]
    fn an_idle_group_read_once_is_then_only_checked_until_its_bound() {
        let mut c = ShardCache::default();
        let g = GroupName::new("p", "g");
        let t0 = Instant::now();
        assert_eq!(c.plan(&g, &[0, 1], false, t0), Plan::Full, "never read");
        c.record(&g, vec![0, 1], vec![row(0, Some("5-1")), row(1, None)], t0);
        assert_eq!(
            c.plan(&g, &[0, 1], false, t0 + Duration::from_secs(15)),
            Plan::Check {
                after: vec!["5-1".into(), "0-0".into()]
            }
        );
        assert_eq!(c.rows(&g).map(<[_]>::len), Some(2));
        assert_eq!(
            c.plan(&g, &[0, 1], true, t0),
            Plan::Full,
            "a group with members is read in full"
        );
        assert_eq!(
            c.plan(&g, &[0, 1, 2], false, t0),
            Plan::Full,
            "its shard set changed"
        );
        let late = t0 + FULL_READ_AT_LEAST_EVERY + FULL_READ_SPREAD;
        assert_eq!(c.plan(&g, &[0, 1], false, late), Plan::Full, "bound");
        c.retain(|n| n != &g);
        assert_eq!(c.plan(&g, &[0, 1], false, t0), Plan::Full, "forgotten");
    }

    #[test]
    fn a_stream_without_a_last_id_is_read_in_full() {
        let mut c = ShardCache::default();
        let g = GroupName::new("p", "g");
        let t0 = Instant::now();
        let mut odd = row(0, Some("1-0"));
        odd.last_generated_id = None;
        c.record(&g, vec![0], vec![odd], t0);
        assert_eq!(c.plan(&g, &[0], false, t0), Plan::Full);
        c.record(&g, vec![0], vec![row(0, Some("1-0"))], t0);
        c.forget(&g);
        assert_eq!(c.plan(&g, &[0], false, t0), Plan::Full);
    }
}
