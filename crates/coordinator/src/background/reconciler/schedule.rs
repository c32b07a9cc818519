//! The owner's schedule: when each group it owns is next due (`rsc_group::deadline`), the revision it last
//! saw it at, and which streams need their resharding pass. Pure bookkeeping: the reconciler (`reconciler.rs`)
//! fills it from its visits, the change feed and ownership changes, and takes from it what is due.

use crate::runtime::cache::GroupName;
use rsc_group::deadline::NextVisit;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What the schedule knows of one group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    next: NextVisit,
    /// The store revision at the last visit (None: never visited).
    revision: Option<u64>,
}

#[derive(Debug, Default)]
pub(crate) struct Schedule {
    groups: HashMap<GroupName, Entry>,
    /// Groups due at a time, by that time.
    timeline: BTreeSet<(i64, GroupName)>,
    /// Groups visited every tick (a tick looks at these and the head of the timeline, never at every group).
    every_tick: BTreeSet<GroupName>,
    /// Streams whose pass is due: `true` = every tick (a migration in flight), `false` = once.
    streams: BTreeMap<String, bool>,
}

impl Schedule {
    pub(crate) fn contains(&self, name: &GroupName) -> bool {
        self.groups.contains_key(name)
    }

    /// Due at once (new to the schedule, written, or taken over). Keeps the revision last seen.
    pub(crate) fn due_now(&mut self, name: &GroupName) {
        let revision = self.groups.get(name).and_then(|e| e.revision);
        self.set(name, NextVisit::At(i64::MIN), revision);
    }

    /// After a visit: next due as `next`, the group being at `revision`.
    pub(crate) fn set(&mut self, name: &GroupName, next: NextVisit, revision: Option<u64>) {
        self.unqueue(name);
        match next {
            NextVisit::At(t) => {
                self.timeline.insert((t, name.clone()));
            }
            NextVisit::EveryTick => {
                self.every_tick.insert(name.clone());
            }
            NextVisit::OnChange => {}
        }
        self.groups.insert(name.clone(), Entry { next, revision });
    }

    /// Forgets a group (deleted, or owned by another replica now).
    pub(crate) fn remove(&mut self, name: &GroupName) {
        self.unqueue(name);
        self.groups.remove(name);
    }

    /// Keeps only the groups `keep` says yes to.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&GroupName) -> bool) {
        let gone: Vec<GroupName> = self.groups.keys().filter(|n| !keep(n)).cloned().collect();
        for name in &gone {
            self.remove(name);
        }
    }

    /// The groups due at `now_ms`: those whose time came, and those visited every tick.
    pub(crate) fn take_due(&mut self, now_ms: i64) -> Vec<GroupName> {
        let mut due: Vec<GroupName> = Vec::new();
        while let Some((t, _)) = self.timeline.first() {
            if *t > now_ms {
                break;
            }
            if let Some((_, name)) = self.timeline.pop_first() {
                due.push(name);
            }
        }
        due.extend(self.every_tick.iter().cloned());
        due
    }

    /// Groups not due before `now_ms` and visited at least once, with the revision of that visit: what the
    /// sweep checks for writes the change feed did not announce.
    pub(crate) fn quiet(&self) -> Vec<(GroupName, u64)> {
        self.groups
            .iter()
            .filter(|(_, e)| e.next != NextVisit::EveryTick)
            .filter_map(|(n, e)| e.revision.map(|r| (n.clone(), r)))
            .collect()
    }

    /// The stream's pass is due once (a write to it or one of its groups, a takeover).
    pub(crate) fn stream_touched(&mut self, prefix: &str) {
        self.streams.entry(prefix.to_owned()).or_insert(false);
    }

    /// The streams due now; those with a migration in flight stay due.
    pub(crate) fn take_due_streams(&mut self) -> Vec<String> {
        let due: Vec<String> = self.streams.keys().cloned().collect();
        self.streams.retain(|_, every_tick| *every_tick);
        due
    }

    /// After a stream's pass: whether it must run again next tick.
    pub(crate) fn stream_every_tick(&mut self, prefix: &str, every_tick: bool) {
        if every_tick {
            self.streams.insert(prefix.to_owned(), true);
        } else {
            self.streams.remove(prefix);
        }
    }

    /// Forgets streams `keep` says no to.
    pub(crate) fn retain_streams(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.streams.retain(|p, _| keep(p));
    }

    fn unqueue(&mut self, name: &GroupName) {
        match self.groups.get(name).map(|e| e.next) {
            Some(NextVisit::At(t)) => {
                self.timeline.remove(&(t, name.clone()));
            }
            Some(NextVisit::EveryTick) => {
                self.every_tick.remove(name);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(n: &str) -> GroupName {
        GroupName::new("p", n)
    }

    #[test]
    fn groups_come_due_in_time_and_idle_ones_never() {
        let mut s = Schedule::default();
        s.set(&g("late"), NextVisit::At(300), Some(1));
        s.set(&g("soon"), NextVisit::At(100), Some(1));
        s.set(&g("idle"), NextVisit::OnChange, Some(4));
        s.set(&g("busy"), NextVisit::EveryTick, Some(2));
        assert_eq!(s.take_due(50), vec![g("busy")]);
        assert_eq!(s.take_due(100), vec![g("soon"), g("busy")]);
        assert_eq!(s.take_due(299), vec![g("busy")]);
        s.set(&g("soon"), NextVisit::At(250), Some(2));
        assert_eq!(s.take_due(300), vec![g("soon"), g("late"), g("busy")]);
        let mut quiet = s.quiet();
        quiet.sort();
        assert_eq!(
            quiet,
            vec![(g("idle"), 4), (g("late"), 1), (g("soon"), 2)],
            "taken groups keep their entry until visited again"
        );
    }

    #[test]
    fn a_change_makes_a_group_due_and_a_reschedule_replaces_its_time() {
        let mut s = Schedule::default();
        s.set(&g("a"), NextVisit::At(1_000), Some(3));
        s.due_now(&g("a"));
        assert_eq!(s.take_due(0), vec![g("a")]);
        assert_eq!(s.take_due(5_000), Vec::<GroupName>::new(), "old time gone");
        s.set(&g("a"), NextVisit::At(10), Some(3));
        s.retain(|n| n != &g("a"));
        assert!(!s.contains(&g("a")));
        assert_eq!(s.take_due(i64::MAX), Vec::<GroupName>::new());
    }

    #[test]
    fn streams_run_once_when_touched_and_every_tick_while_migrating() {
        let mut s = Schedule::default();
        s.stream_touched("a");
        s.stream_touched("b");
        assert_eq!(s.take_due_streams(), vec!["a", "b"]);
        s.stream_every_tick("a", true);
        s.stream_every_tick("b", false);
        assert_eq!(s.take_due_streams(), vec!["a"]);
        assert_eq!(s.take_due_streams(), vec!["a"]);
        s.retain_streams(|p| p != "a");
        assert!(s.take_due_streams().is_empty());
    }
}
