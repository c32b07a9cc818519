//! Drain evidence: when what Redis shows about a shard stream lets a resharding step go ahead. Pure: the
//! flows (`replica::reshard`) read `XINFO GROUPS`, the stream's last-generated id and the pending entries up
//! to a switch point, and ask these rules what they mean, one look at a time ([`Look`] says which read
//! comes next).
//!
//! - A *removed* shard (draining after a scale-in or a rolled-back scale-out) is drained when every Redis
//!   consumer group on it has nothing pending and a known lag of 0 — or, since the lag Redis reports can stay
//!   above 0 after a restart although every entry was delivered, a last-delivered id at or past the stream's
//!   last id. A lag Redis cannot compute (null) is no evidence. A stream that is gone holds nothing.
//! - A *parent* of an ordered switch is consumed, for one group, when that group's Redis consumer group has
//!   nothing pending up to the parent's switch point and has delivered at or past it (records after the
//!   switch point do not count: they were routed by the new routing). Without a switch point (a group that
//!   adopted before switch points were kept) the whole stream must be consumed, once the drain grace passed.
//! - Evidence counts only from the drain grace after routing last changed ([`drain_evidence_from_ms`]):
//!   before that a producer may still write to an old shard with routing it cached.

use crate::model::{Group, MigrationState};
use rsc_protocol::stream_id::{StreamId, parse_stream_id};

/// One Redis consumer group on a shard stream, as `XINFO GROUPS` reports it (the fields evidence reads).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsumerGroupInfo {
    /// The Redis consumer group's name.
    pub name: Option<String>,
    /// Entries delivered to the group and not acknowledged (None: Redis did not say).
    pub pending: Option<i64>,
    /// Entries not yet delivered to the group (None: Redis cannot say).
    pub lag: Option<i64>,
    /// The group's last-delivered id on the stream.
    pub last_delivered_id: Option<String>,
}

/// What the evidence read so far says about a shard, or which read it needs next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Look {
    /// The shard is drained (for this group): the step may go ahead.
    Drained,
    /// It is not: the step waits.
    NotDrained,
    /// The stream's last-generated id decides ([`removed_shard_delivered`], [`parent_delivered`]).
    LastIdNeeded,
    /// The group's pending entries up to the switch point decide ([`parent_pending`]).
    PendingNeeded,
}

/// When drain evidence starts to count for `g`: `grace_ms` after its routing last changed (a migration
/// activated, or one was rolled back).
pub fn drain_evidence_from_ms(g: &Group, grace_ms: i64) -> i64 {
    let changed = g
        .migrations
        .iter()
        .flat_map(|m| {
            let rolled_back = (m.state == MigrationState::RolledBack)
                .then_some(m.completed_at_ms)
                .flatten();
            [m.activated_at_ms, rolled_back]
        })
        .flatten()
        .max()
        .unwrap_or(0);
    changed.saturating_add(grace_ms)
}

/// A removed shard from its consumer groups (`XINFO GROUPS`; None: the stream is gone).
pub fn removed_shard(groups: Option<&[ConsumerGroupInfo]>) -> Look {
    let Some(groups) = groups else {
        return Look::Drained;
    };
    if !groups.iter().all(|x| x.pending == Some(0)) {
        return Look::NotDrained;
    }
    if groups.iter().all(|x| x.lag == Some(0)) {
        Look::Drained
    } else {
        Look::LastIdNeeded
    }
}

/// After [`Look::LastIdNeeded`] for a removed shard: whether every group delivered at or past `last`.
pub fn removed_shard_delivered(groups: &[ConsumerGroupInfo], last: Option<StreamId>) -> bool {
    last.is_some()
        && groups
            .iter()
            .all(|x| x.last_delivered_id.as_deref().and_then(parse_stream_id) >= last)
}

/// Whether `group`'s last-delivered id is at or past the switch point `point`.
pub fn delivered_to(group: &ConsumerGroupInfo, point: &str) -> bool {
    let last = group.last_delivered_id.as_deref().and_then(parse_stream_id);
    parse_stream_id(point).is_some_and(|sp| last.is_some_and(|d| d >= sp))
}

/// A parent, for the group named `group`, from the consumer groups on it (`XINFO GROUPS`; None: the stream
/// is gone) and its switch point, if known.
pub fn parent(groups: Option<&[ConsumerGroupInfo]>, group: &str, point: Option<&str>) -> Look {
    let Some(groups) = groups else {
        return Look::Drained;
    };
    let Some(mine) = mine(groups, group) else {
        return Look::NotDrained;
    };
    match point {
        Some(point) if delivered_to(mine, point) => Look::PendingNeeded,
        Some(_) => Look::NotDrained,
        None if mine.pending != Some(0) => Look::NotDrained,
        None if mine.lag == Some(0) => Look::Drained,
        None => Look::LastIdNeeded,
    }
}

/// `group`'s entry among a shard's consumer groups.
pub fn mine<'a>(groups: &'a [ConsumerGroupInfo], group: &str) -> Option<&'a ConsumerGroupInfo> {
    groups.iter().find(|x| x.name.as_deref() == Some(group))
}

/// After [`Look::PendingNeeded`]: consumed when the group has nothing pending up to the switch point (None:
/// Redis could not say).
pub fn parent_pending(pending_up_to_switch_point: Option<i64>) -> bool {
    pending_up_to_switch_point == Some(0)
}

/// After [`Look::LastIdNeeded`] for a parent without a switch point: whether the group delivered at or past
/// the stream's last id.
pub fn parent_delivered(groups: &[ConsumerGroupInfo], group: &str, last: Option<StreamId>) -> bool {
    mine(groups, group).is_some_and(|m| {
        last.is_some() && m.last_delivered_id.as_deref().and_then(parse_stream_id) >= last
    })
}

#[cfg(test)]
mod tests {
    use super::{
        ConsumerGroupInfo, Look, delivered_to, parent, parent_delivered, parent_pending,
        removed_shard, removed_shard_delivered,
    };

    fn info(name: &str, pending: i64, lag: Option<i64>, delivered: &str) -> ConsumerGroupInfo {
        ConsumerGroupInfo {
            name: Some(name.into()),
            pending: Some(pending),
            lag,
            last_delivered_id: Some(delivered.into()),
        }
    }

    #[test]
    fn a_removed_shard_is_drained_only_when_every_group_read_and_acknowledged_everything() {
        assert_eq!(removed_shard(None), Look::Drained, "a stream that is gone");
        assert_eq!(removed_shard(Some(&[])), Look::Drained, "no group reads it");
        let done = [info("a", 0, Some(0), "5-0"), info("b", 0, Some(0), "5-0")];
        assert_eq!(removed_shard(Some(&done)), Look::Drained);
        let pending = [info("a", 0, Some(0), "5-0"), info("b", 1, Some(0), "5-0")];
        assert_eq!(removed_shard(Some(&pending)), Look::NotDrained);
        // A lag above 0 or unknown: the last-delivered ids against the stream's last id decide.
        let lagging = [info("a", 0, None, "5-0"), info("b", 0, Some(2), "7-0")];
        assert_eq!(removed_shard(Some(&lagging)), Look::LastIdNeeded);
        assert!(removed_shard_delivered(&lagging, Some((5, 0))));
        assert!(!removed_shard_delivered(&lagging, Some((6, 0))));
        assert!(
            !removed_shard_delivered(&lagging, None),
            "no last id: no evidence"
        );
    }

    #[test]
    fn a_parent_counts_only_its_records_up_to_the_switch_point_for_this_group() {
        let groups = [
            info("g", 3, Some(9), "10-0"),
            info("other", 50, Some(99), "1-0"),
        ];
        assert_eq!(parent(None, "g", Some("10-0")), Look::Drained);
        assert_eq!(
            parent(Some(&groups), "missing", Some("10-0")),
            Look::NotDrained
        );
        assert_eq!(
            parent(Some(&groups), "g", Some("10-0")),
            Look::PendingNeeded,
            "delivered up to the point: the pending entries up to it decide, not those after it"
        );
        assert_eq!(parent(Some(&groups), "g", Some("11-0")), Look::NotDrained);
        assert!(parent_pending(Some(0)) && !parent_pending(Some(1)) && !parent_pending(None));
        assert!(delivered_to(&groups[0], "9-5") && !delivered_to(&groups[0], "bad"));
        // Without a switch point: the whole stream, for this group.
        assert_eq!(parent(Some(&groups), "g", None), Look::NotDrained);
        let idle = [info("g", 0, None, "10-0")];
        assert_eq!(parent(Some(&idle), "g", None), Look::LastIdNeeded);
        assert!(parent_delivered(&idle, "g", Some((10, 0))));
        assert!(!parent_delivered(&idle, "g", Some((10, 1))));
        let read = [info("g", 0, Some(0), "10-0")];
        assert_eq!(parent(Some(&read), "g", None), Look::Drained);
    }
}
