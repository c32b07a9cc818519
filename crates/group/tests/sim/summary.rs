//! What a scenario exercised, added up over scenarios and printed by `tests/simulation.rs`: messages and
//! their faults, the replicas' work, static membership, ordered switches, the operator's resharding and the
//! records moved.

use super::operator::OperatorStats;
use super::replica::Stats;

/// Totals over scenarios, to show what was exercised.
#[derive(Debug, Default, Clone, Copy)]
pub struct Summary {
    pub scenarios: u64,
    pub steps: u64,
    pub messages: u64,
    pub dropped: u64,
    pub duplicated: u64,
    pub stale_answers: u64,
    pub replica_crashes: u64,
    pub replica_pauses: u64,
    /// A replica's view of the live replicas changed (a join, a leave, a disagreement).
    pub view_changes: u64,
    pub replica: Stats,
    pub writes: u64,
    /// Writes stored in the split layout ("4"), and scenarios whose group a rolling upgrade moved from the whole
    /// layout to the split one mid-run.
    pub split_writes: u64,
    pub upgraded_to_split: u64,
    /// Batch writes whose noted changed members were checked against a comparison of every member.
    pub batch_changes_checked: u64,
    /// Batch writes whose incremental invariant check (`invariants::check_changed`) was compared with the full
    /// one.
    pub incremental_checks: u64,
    /// Static membership: reservations taken back by a restarted instance, lapsed past the grace, and
    /// joins refused because another live member held the instance id.
    pub reservations_claimed: u64,
    pub reservations_lapsed: u64,
    pub instance_refusals: u64,
    /// Gates opened by drain evidence, and surviving children granted with a read fence (ordered scales).
    pub gates_opened: u64,
    pub fenced_children: u64,
    /// Switches, ends and completions the replicas' resharding flows wrote.
    pub operator: OperatorStats,
    /// Resharding flows a replica was in the middle of when it crashed.
    pub reshard_flows_crashed: u64,
    /// Records appended and handled, and where the ledger stopped owing order or gave records up.
    pub appended: u64,
    pub handled: u64,
    pub forgiven: u64,
    pub abandoned: u64,
}

impl Summary {
    pub fn add(&mut self, o: &Summary) {
        self.scenarios += o.scenarios;
        self.steps += o.steps;
        self.messages += o.messages;
        self.dropped += o.dropped;
        self.duplicated += o.duplicated;
        self.stale_answers += o.stale_answers;
        self.replica_crashes += o.replica_crashes;
        self.replica_pauses += o.replica_pauses;
        self.writes += o.writes;
        self.split_writes += o.split_writes;
        self.upgraded_to_split += o.upgraded_to_split;
        self.batch_changes_checked += o.batch_changes_checked;
        self.incremental_checks += o.incremental_checks;
        self.reservations_claimed += o.reservations_claimed;
        self.reservations_lapsed += o.reservations_lapsed;
        self.instance_refusals += o.instance_refusals;
        self.gates_opened += o.gates_opened;
        self.reshard_flows_crashed += o.reshard_flows_crashed;
        self.fenced_children += o.fenced_children;
        self.operator.scales += o.operator.scales;
        self.operator.ordered_scales += o.operator.ordered_scales;
        self.operator.quiesced_scales += o.operator.quiesced_scales;
        self.operator.rollbacks += o.operator.rollbacks;
        self.operator.force_completes += o.operator.force_completes;
        self.operator.completed += o.operator.completed;
        self.appended += o.appended;
        self.handled += o.handled;
        self.forgiven += o.forgiven;
        self.abandoned += o.abandoned;
        self.replica.reshard_steps += o.replica.reshard_steps;
        self.replica.reshard_pauses += o.replica.reshard_pauses;
        self.replica.heartbeats += o.replica.heartbeats;
        self.replica.conflicts += o.replica.conflicts;
        self.replica.retries += o.replica.retries;
        self.replica.pauses_mid_decision += o.replica.pauses_mid_decision;
        self.replica.stale_decisions_committed += o.replica.stale_decisions_committed;
        self.replica.false_rebalance_signals += o.replica.false_rebalance_signals;
        self.replica.batched += o.replica.batched;
        self.replica.owner_visits += o.replica.owner_visits;
        self.replica.ticks_not_owner += o.replica.ticks_not_owner;
        self.replica.renewals_past_deadline += o.replica.renewals_past_deadline;
        self.view_changes += o.view_changes;
    }
}
