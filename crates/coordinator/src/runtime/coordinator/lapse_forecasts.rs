//! Part of the heartbeat service's state: which members would take over shards if a given member's lease
//! lapsed, worked out ahead of the lapse on this replica's cached aggregate.
//!
//! Failover takes the lease TTL, then however long it takes for the expiry to be noticed, then however long
//! until the new owner's next heartbeat tells it of the grant (up to a whole interval). A steady heartbeat
//! learns from Redis which other member's lease ends first when it ends within one interval
//! (`Store::heartbeat_watching`); the heartbeat service asks this forecast whether the caller would gain
//! shards from that expiry, and if so asks it back just after the lapse, or settles the expiry at once when
//! it has already happened (`heartbeat.rs`). The forecast runs the reconciler's own pure tick
//! (`rsc_group::tick::tick`) on a copy of the group at the lapse time, so it names exactly the members the
//! expiry would give shards to, under every rule the tick applies (static reservations, holds, gates). It
//! is a hint and nothing else: no state is decided from it, and a wrong one costs one extra heartbeat.

use crate::runtime::cache::{Cached, GroupName};
use rsc_group::timing::Timing;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// At most this many groups keep a forecast (one each); past it the table starts again empty.
const MAX_GROUPS: usize = 4_096;

/// A forecast for the same lapsing member is reused this long even when the group's revision moved, so that a
/// large group that keeps changing (a join storm while a member is lapsing) is not copied and ticked on
/// every heartbeat.
const REUSE_FOR: Duration = Duration::from_millis(250);

/// The members that would gain target shards if `lapsing` expired, for one revision of one group.
struct Forecast {
    revision: u64,
    lapsing: String,
    made_at: Instant,
    /// None while one request works it out: others take no hint meanwhile rather than work it out too.
    gainers: Option<Arc<BTreeSet<String>>>,
}

/// One forecast per group, replaced when the group's revision or the lapsing member changes.
#[derive(Default)]
pub(crate) struct LapseForecasts {
    by_group: Mutex<HashMap<GroupName, Forecast>>,
}

impl LapseForecasts {
    /// The members of `base` that would gain target shards if `lapsing`'s lease lapsed at `at_ms` (Redis
    /// time). Worked out once per revision and lapsing member (or per [`REUSE_FOR`]), then answered from the
    /// table; empty while another request is working it out.
    pub(crate) fn gainers(
        &self,
        name: &GroupName,
        base: &Cached,
        lapsing: &str,
        at_ms: i64,
        timing: &Timing,
    ) -> Arc<BTreeSet<String>> {
        {
            let Ok(mut table) = self.by_group.lock() else {
                return Arc::default();
            };
            if let Some(f) = table.get(name)
                && f.lapsing == lapsing
                && (f.revision == base.revision || f.made_at.elapsed() < REUSE_FOR)
            {
                return f.gainers.clone().unwrap_or_default();
            }
            if table.len() >= MAX_GROUPS && !table.contains_key(name) {
                table.clear();
            }
            table.insert(
                name.clone(),
                Forecast {
                    revision: base.revision,
                    lapsing: lapsing.to_owned(),
                    made_at: Instant::now(),
                    gainers: None,
                },
            );
        }
        let gainers = Arc::new(gainers_of(base, lapsing, at_ms, timing));
        if let Ok(mut table) = self.by_group.lock()
            && let Some(f) = table.get_mut(name)
            && f.revision == base.revision
            && f.lapsing == lapsing
        {
            f.gainers = Some(gainers.clone());
        }
        gainers
    }
}

/// Runs the tick on `base` as if `lapsing`'s lease had lapsed at `at_ms`, and names the members whose
/// target gains a shard.
fn gainers_of(base: &Cached, lapsing: &str, at_ms: i64, timing: &Timing) -> BTreeSet<String> {
    let before = &base.group;
    if !before
        .members
        .get(lapsing)
        .is_some_and(|m| m.state.is_live())
    {
        return BTreeSet::new();
    }
    let lapsed = BTreeSet::from([lapsing.to_owned()]);
    let Ok(Some((transition, _))) = rsc_group::tick::tick(before, at_ms, &lapsed, timing) else {
        return BTreeSet::new();
    };
    let Some(after) = transition.group else {
        return BTreeSet::new();
    };
    after
        .target_assignments
        .iter()
        .filter(|(member, target)| {
            let had = before.target_assignments.get(*member);
            target.iter().any(|s| !had.is_some_and(|h| h.contains(s)))
        })
        .map(|(member, _)| member.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsc_group::model::{Group, Member};

    fn group_with(targets: &[(&str, &[u32])]) -> Cached {
        let mut g = Group::new("orders", "orders", 6, 0, "lifecycle");
        for (id, shards) in targets {
            let mut m = Member::new(id, id, 0);
            m.member_epoch = 1;
            m.assigned = shards.iter().copied().collect();
            g.members.insert((*id).to_owned(), m);
            g.target_assignments
                .insert((*id).to_owned(), shards.iter().copied().collect());
        }
        Cached {
            group: Arc::new(g),
            revision: 7,
            split: false,
            facts: None,
        }
    }

    #[test]
    fn the_members_that_take_over_a_lapsed_members_shards_are_named() {
        let base = group_with(&[("a", &[0, 1]), ("b", &[2, 3]), ("c", &[4, 5])]);
        let timing = Timing::default();
        let gainers = gainers_of(&base, "c", 1_000_000, &timing);
        assert_eq!(
            gainers,
            BTreeSet::from(["a".to_owned(), "b".to_owned()]),
            "c's two shards go one to each survivor"
        );
        assert!(
            gainers_of(&base, "nobody", 1_000_000, &timing).is_empty(),
            "a member not in the group frees nothing"
        );
    }

    #[test]
    fn a_forecast_is_kept_per_revision_and_lapsing_member() {
        let forecasts = LapseForecasts::default();
        let name = GroupName::new("orders", "orders");
        let timing = Timing::default();
        let base = group_with(&[("a", &[0, 1, 2]), ("b", &[3, 4, 5])]);
        let first = forecasts.gainers(&name, &base, "b", 1_000_000, &timing);
        assert_eq!(*first, BTreeSet::from(["a".to_owned()]));
        let again = forecasts.gainers(&name, &base, "b", 1_000_000, &timing);
        assert!(Arc::ptr_eq(&first, &again), "answered from the table");
        let other = forecasts.gainers(&name, &base, "a", 1_000_000, &timing);
        assert_eq!(*other, BTreeSet::from(["b".to_owned()]));
    }
}
