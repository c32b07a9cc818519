//! Part of the heartbeat service's state: which member holds each shard of a group, for the release forecast
//! (`rsc_group::heartbeat::release_forecast`). A heartbeat whose answer names pending shards looks up the
//! member it waits for here, reads that member's lease deadline (a steady renewal in its own round trip,
//! `Store::heartbeat_watching`; an answer from a write with `Store::lease_of`), and is asked back when that
//! member is due to release (`heartbeat.rs`).
//!
//! Finding a shard's holder walks the group's members, so the index is built once per revision of a group
//! and reused for [`REUSE_FOR`] even when the revision moved: a large group that keeps changing (a join or a
//! rolling restart, exactly when members wait for shards) is walked a few times a second, not on every
//! waiting heartbeat; while one request builds the next index, the others take the previous one. A stale
//! holder makes a wrong hint, which costs one heartbeat: nothing is decided from it.

use crate::runtime::cache::{Cached, GroupName};
use rsc_group::heartbeat::release_forecast::{Holder, Holders};
use rsc_group::timing::Timing;
use rsc_protocol::wire::HeartbeatResponse;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// At most this many groups keep an index (one each); past it the table starts again empty.
const MAX_GROUPS: usize = 4_096;

/// An index is reused this long after it was built, whatever the group's revision since.
const REUSE_FOR: Duration = Duration::from_millis(250);

/// The holders of one revision of one group.
struct Index {
    revision: u64,
    made_at: Instant,
    /// None only while the group's first index is built.
    holders: Option<Arc<Holders>>,
    /// One request is building the next index: the others take this one meanwhile rather than build it too.
    rebuilding: bool,
}

/// One holder index per group.
#[derive(Default)]
pub(crate) struct ReleaseForecasts {
    by_group: Mutex<HashMap<GroupName, Index>>,
}

impl ReleaseForecasts {
    /// The member that `member_id`, answered `answer` on `base`, waits for first: None when the answer names
    /// no pending shard (nothing is looked up then), else as [`ReleaseForecasts::awaited`].
    pub(crate) fn awaited_for(
        &self,
        name: &GroupName,
        base: &Cached,
        timing: &Timing,
        member_id: &str,
        answer: &HeartbeatResponse,
    ) -> Option<Holder> {
        let pending = &answer.assignment.pending_shards;
        if pending.is_empty() {
            return None;
        }
        self.awaited(
            name,
            base,
            timing,
            member_id,
            pending.iter().map(|s| s.shard_index),
        )
    }

    /// The member that `member_id`, whose answer on `base` names `pending`, waits for first
    /// (`Holders::awaited_by`). None when no other member holds a pending shard, or while another request
    /// builds the group's index.
    pub(crate) fn awaited(
        &self,
        name: &GroupName,
        base: &Cached,
        timing: &Timing,
        member_id: &str,
        pending: impl IntoIterator<Item = u32>,
    ) -> Option<Holder> {
        let holders = self.holders(name, base, timing)?;
        holders.awaited_by(member_id, pending).cloned()
    }

    /// The group's index for `base`: the one kept while it is current or young enough, or while another
    /// request builds the next one (a stale holder is only a wrong hint); else built now and kept.
    fn holders(&self, name: &GroupName, base: &Cached, timing: &Timing) -> Option<Arc<Holders>> {
        {
            let mut table = self.by_group.lock().ok()?;
            if !table.contains_key(name) {
                if table.len() >= MAX_GROUPS {
                    table.clear();
                }
                let first = Index {
                    revision: base.revision,
                    made_at: Instant::now(),
                    holders: None,
                    rebuilding: false,
                };
                table.insert(name.clone(), first);
            }
            let index = table.get_mut(name)?;
            let current = index.holders.is_some()
                && (index.revision == base.revision || index.made_at.elapsed() < REUSE_FOR);
            if current || index.rebuilding {
                return index.holders.clone();
            }
            index.rebuilding = true;
        }
        let holders = Arc::new(Holders::of(&base.group, timing));
        if let Ok(mut table) = self.by_group.lock()
            && let Some(index) = table.get_mut(name)
        {
            *index = Index {
                revision: base.revision,
                made_at: Instant::now(),
                holders: Some(holders.clone()),
                rebuilding: false,
            };
        }
        Some(holders)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsc_group::model::{Group, Member};

    fn awaited(
        forecasts: &ReleaseForecasts,
        name: &GroupName,
        base: &Cached,
        member_id: &str,
        pending: impl IntoIterator<Item = u32>,
    ) -> Option<String> {
        forecasts
            .awaited(name, base, &Timing::default(), member_id, pending)
            .map(|h| h.member_id)
    }

    fn cached(revision: u64, held: &[(&str, &[u32])]) -> Cached {
        let mut g = Group::new("orders", "orders", 4, 0, "lifecycle");
        for (id, shards) in held {
            let mut m = Member::new(id, id, 0);
            m.assigned = shards.iter().copied().collect();
            g.members.insert((*id).to_owned(), m);
        }
        Cached {
            group: Arc::new(g),
            revision,
            split: false,
            facts: None,
        }
    }

    #[test]
    fn the_holder_of_the_lowest_pending_shard_another_member_holds_is_awaited() {
        let forecasts = ReleaseForecasts::default();
        let name = GroupName::new("orders", "orders");
        let base = cached(3, &[("a", &[0, 1]), ("b", &[2]), ("c", &[])]);
        assert_eq!(
            awaited(&forecasts, &name, &base, "c", [2, 1]),
            Some("a".to_owned())
        );
        assert_eq!(
            awaited(&forecasts, &name, &base, "a", [1, 2]),
            Some("b".to_owned()),
            "not itself"
        );
        assert_eq!(
            awaited(&forecasts, &name, &base, "c", [3]),
            None,
            "nobody holds 3"
        );
    }

    #[test]
    fn an_index_is_reused_within_its_time_even_when_the_revision_moved() {
        let forecasts = ReleaseForecasts::default();
        let name = GroupName::new("orders", "orders");
        let first = cached(3, &[("a", &[0])]);
        let first_index = forecasts
            .holders(&name, &first, &Timing::default())
            .expect("built");
        let moved = cached(4, &[("b", &[0])]);
        let again = forecasts
            .holders(&name, &moved, &Timing::default())
            .expect("reused");
        assert!(Arc::ptr_eq(&first_index, &again), "reused within REUSE_FOR");
        assert_eq!(again.of_shard(0), Some("a"), "a stale holder: only a hint");
    }

    #[test]
    fn while_one_request_rebuilds_an_index_the_others_take_the_previous_one() {
        let forecasts = ReleaseForecasts::default();
        let name = GroupName::new("orders", "orders");
        let first = forecasts
            .holders(&name, &cached(3, &[("a", &[0])]), &Timing::default())
            .expect("built");
        {
            let mut table = forecasts.by_group.lock().expect("lock");
            let index = table.get_mut(&name).expect("kept");
            index.made_at = Instant::now() - REUSE_FOR * 2;
            index.rebuilding = true;
        }
        let meanwhile = forecasts
            .holders(&name, &cached(4, &[("b", &[0])]), &Timing::default())
            .expect("the previous index");
        assert!(Arc::ptr_eq(&first, &meanwhile));
        forecasts
            .by_group
            .lock()
            .expect("lock")
            .get_mut(&name)
            .expect("kept")
            .rebuilding = false;
        let rebuilt = forecasts
            .holders(&name, &cached(4, &[("b", &[0])]), &Timing::default())
            .expect("rebuilt");
        assert_eq!(rebuilt.of_shard(0), Some("b"), "built for revision 4");
    }
}
