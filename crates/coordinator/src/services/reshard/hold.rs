//! Why a migration has not ended in one group, and the ways out (pure).
//!
//! A stream's migration ends once every group has drained the removed shards. A group with no live consumer
//! never reads them, so without this view a scale-in waits for ever with nothing naming the cause. The
//! migration detail route (`GET …/groups/{g}/migrations/{id}`) answers the diagnosis as `heldBy`, and the CLI,
//! the console and the Terraform provider show it: the group, the reason, the unread records per shard and
//! what an operator can do (start a consumer, force-complete with the records it gives up counted, roll back).

use rsc_group::model::MigrationState;
use serde::Serialize;

/// What the migration detail knows about one group's part of a migration.
#[derive(Debug, Clone)]
pub struct HoldFacts<'a> {
    pub stream_prefix: &'a str,
    pub consumer_group: &'a str,
    pub resharding_id: &'a str,
    pub state: MigrationState,
    pub from_shard_count: u32,
    pub to_shard_count: u32,
    /// Members of the group that hold a lease (ACTIVE or LEAVING).
    pub live_consumers: usize,
    /// The group is not RECONCILING.
    pub consumers_converged: bool,
    /// The scale waits for producers to report quiesced.
    pub quiesce_waiting: bool,
    pub rollback_allowed: bool,
    /// Drain evidence is ignored before this instant (Redis ms).
    pub drain_evidence_from_ms: i64,
    pub now_ms: i64,
    /// Removed or draining shards: index, lag and pending of this group (None when Redis did not say).
    pub shards: Vec<(u32, Option<i64>, Option<i64>)>,
}

/// Why the migration waits in this group.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MigrationHold {
    pub consumer_group: String,
    /// `NO_LIVE_CONSUMER`, `DRAINING`, `DRAIN_GRACE`, `PRODUCER_QUIESCE`, `PREPARING`,
    /// `CONSUMERS_CONVERGING` or `FINISHING`.
    pub reason: &'static str,
    /// The reason in a sentence, naming the group, the records and the shards.
    pub detail: String,
    /// Unread (lag) plus delivered-unacknowledged (pending) records of this group on the removed shards.
    pub unread_records: i64,
    /// The shards that still hold them, with their counts.
    pub unread_by_shard: Vec<UnreadShard>,
    pub live_consumers: usize,
    pub ways_out: Vec<WayOut>,
}

/// One removed shard with records the group has not read.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct UnreadShard {
    pub shard_index: u32,
    pub unread_records: i64,
}

/// One thing an operator can do about a held migration.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct WayOut {
    /// `START_CONSUMER`, `WAIT`, `FORCE_COMPLETE` or `ROLLBACK`.
    pub action: &'static str,
    /// How: an `rsc` command where one exists.
    pub how: String,
    /// What it does to the records.
    pub effect: String,
}

fn shard_list(shards: &[UnreadShard]) -> String {
    shards
        .iter()
        .map(|s| s.shard_index.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The diagnosis, or `None` once the migration has ended in this group.
pub fn diagnose(f: &HoldFacts<'_>) -> Option<MigrationHold> {
    use MigrationState::*;
    if !matches!(f.state, Preparing | Active | Draining) {
        return None;
    }
    let (p, g, id) = (f.stream_prefix, f.consumer_group, f.resharding_id);
    let unread_by_shard: Vec<UnreadShard> = f
        .shards
        .iter()
        .filter_map(|(i, lag, pending)| {
            let n = lag.unwrap_or(0).max(0) + pending.unwrap_or(0).max(0);
            (n > 0).then_some(UnreadShard {
                shard_index: *i,
                unread_records: n,
            })
        })
        .collect();
    let unread: i64 = unread_by_shard.iter().map(|s| s.unread_records).sum();
    let shards = shard_list(&unread_by_shard);
    let force = WayOut {
        action: "FORCE_COMPLETE",
        how: format!("rsc force-complete {p} --migration {id} --reason '…'"),
        effect: if unread > 0 {
            format!(
                "ends the migration now: group {g} gives up its {unread} unread record(s) on shard(s) {shards} \
                 (they stay in Redis, unread, until the shards are deleted)"
            )
        } else {
            "ends the migration now; this group has no unread record on the removed shards"
                .to_owned()
        },
    };
    let rollback = f.rollback_allowed.then(|| WayOut {
        action: "ROLLBACK",
        how: format!("rsc rollback {p} --migration {id} --reason '…'"),
        effect: format!(
            "returns the stream to {} shards instead of {}; every record stays readable",
            f.from_shard_count, f.to_shard_count
        ),
    });
    let wait = |effect: String| WayOut {
        action: "WAIT",
        how: format!("rsc describe {p} {g}"),
        effect,
    };
    let (reason, detail, mut ways) = if f.state == Preparing && f.quiesce_waiting {
        (
            "PRODUCER_QUIESCE",
            format!(
                "routing has not switched: the scale waits for {p}'s producers to report quiesced (or for the \
                 quiesce timeout)"
            ),
            vec![wait(
                "routing switches once every producer reported, or at the timeout".to_owned(),
            )],
        )
    } else if f.state == Preparing {
        (
            "PREPARING",
            "the new shard streams are being provisioned; routing has not switched yet".to_owned(),
            vec![wait(
                "the reconciler resumes the scale at its next pass".to_owned(),
            )],
        )
    } else if unread > 0 && f.live_consumers == 0 {
        (
            "NO_LIVE_CONSUMER",
            format!(
                "group {g} has no live consumer and {unread} unread record(s) on removed shard(s) {shards}: \
                 nobody will read them, so the migration cannot end by itself"
            ),
            vec![WayOut {
                action: "START_CONSUMER",
                how: format!(
                    "start a consumer of stream {p} in group {g} (e.g. rsc-client's Consumer with group {g:?})"
                ),
                effect: format!(
                    "it reads the {unread} record(s) on shard(s) {shards}; then the migration ends by itself"
                ),
            }],
        )
    } else if !f.consumers_converged {
        (
            "CONSUMERS_CONVERGING",
            format!(
                "group {g}'s {} live consumer(s) are taking their new assignment",
                f.live_consumers
            ),
            vec![wait(
                "the consumers confirm their shards within the rebalance timeout".to_owned(),
            )],
        )
    } else if unread > 0 {
        (
            "DRAINING",
            format!(
                "group {g}'s {} live consumer(s) are reading {unread} unread record(s) on removed shard(s) \
                 {shards}",
                f.live_consumers
            ),
            vec![wait(format!(
                "the migration ends once the {unread} record(s) are read"
            ))],
        )
    } else if f.now_ms < f.drain_evidence_from_ms {
        let left = (f.drain_evidence_from_ms - f.now_ms + 999) / 1000;
        (
            "DRAIN_GRACE",
            format!(
                "the removed shards count as read only after the drain grace ({left} s left): producers' cached \
                 routing may still write to them"
            ),
            vec![wait(format!("the grace ends in {left} s"))],
        )
    } else {
        (
            "FINISHING",
            format!(
                "group {g} has read every removed shard; the reconciler ends the migration at its next pass"
            ),
            vec![wait("nothing to do".to_owned())],
        )
    };
    if matches!(reason, "NO_LIVE_CONSUMER" | "DRAINING" | "DRAIN_GRACE") {
        ways.push(force);
    }
    ways.extend(rollback);
    Some(MigrationHold {
        consumer_group: g.to_owned(),
        reason,
        detail,
        unread_records: unread,
        unread_by_shard,
        live_consumers: f.live_consumers,
        ways_out: ways,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> HoldFacts<'static> {
        HoldFacts {
            stream_prefix: "orders",
            consumer_group: "analytics",
            resharding_id: "reshard-1",
            state: MigrationState::Draining,
            from_shard_count: 4,
            to_shard_count: 2,
            live_consumers: 0,
            consumers_converged: true,
            quiesce_waiting: false,
            rollback_allowed: true,
            drain_evidence_from_ms: 0,
            now_ms: 1_000,
            shards: vec![(2, Some(60), Some(0)), (3, Some(55), Some(5))],
        }
    }

    #[test]
    fn a_group_without_consumers_holding_unread_records_is_named_with_its_ways_out() {
        let h = diagnose(&facts()).unwrap();
        assert_eq!(h.reason, "NO_LIVE_CONSUMER");
        assert_eq!(h.unread_records, 120);
        assert!(h.detail.contains("group analytics has no live consumer and 120 unread record(s) on removed shard(s) 2, 3"), "{}", h.detail);
        let actions: Vec<&str> = h.ways_out.iter().map(|w| w.action).collect();
        assert_eq!(actions, ["START_CONSUMER", "FORCE_COMPLETE", "ROLLBACK"]);
        assert!(
            h.ways_out[1]
                .effect
                .contains("gives up its 120 unread record(s)")
        );
        assert!(
            h.ways_out[2]
                .how
                .starts_with("rsc rollback orders --migration reshard-1")
        );
    }

    #[test]
    fn each_other_reason() {
        let mut f = facts();
        f.live_consumers = 2;
        assert_eq!(diagnose(&f).unwrap().reason, "DRAINING");
        f.consumers_converged = false;
        assert_eq!(diagnose(&f).unwrap().reason, "CONSUMERS_CONVERGING");
        f.consumers_converged = true;
        f.shards = vec![(2, Some(0), Some(0))];
        f.drain_evidence_from_ms = 6_000;
        let grace = diagnose(&f).unwrap();
        assert_eq!(grace.reason, "DRAIN_GRACE");
        assert!(grace.detail.contains("5 s left"), "{}", grace.detail);
        f.now_ms = 7_000;
        assert_eq!(diagnose(&f).unwrap().reason, "FINISHING");
        f.state = MigrationState::Preparing;
        f.quiesce_waiting = true;
        assert_eq!(diagnose(&f).unwrap().reason, "PRODUCER_QUIESCE");
        f.state = MigrationState::Deprecated;
        assert_eq!(diagnose(&f), None);
        f.state = MigrationState::Draining;
        f.rollback_allowed = false;
        assert!(
            diagnose(&f)
                .unwrap()
                .ways_out
                .iter()
                .all(|w| w.action != "ROLLBACK")
        );
    }
}
