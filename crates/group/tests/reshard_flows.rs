//! The replica core's resharding flows (`rsc_group::replica::reshard`) step by step, against a small scripted
//! store: which store step comes after which, and what an answer makes of the rest — a lost race, a failed
//! provisioning, producers still to quiesce, drain evidence, an operator's rollback. (The simulation runs the
//! same flows over random interleavings with faults; the coordinator's `reshard/` performs them on Redis.)

use rsc_group::heartbeat::Transition;
use rsc_group::model::{Group, Member, MigrationState};
use rsc_group::quiesce::ProducerSighting;
use rsc_group::rebalance::recompute_target;
use rsc_group::replica::reshard::end::{EndFlow, EndOutcome};
use rsc_group::replica::reshard::group_update::{GroupUpdate, UpdateStep};
use rsc_group::replica::reshard::pass::StreamPass;
use rsc_group::replica::reshard::scale::{ScaleFlow, ScaleOutcome};
use rsc_group::replica::reshard::{
    Answer, Event, Flow, Progress, ReshardError, Settings, Step, StoreFailed, StreamSnapshot,
};
use rsc_group::replica::{CommitResult, Snapshot};
use rsc_group::reshard::evidence::ConsumerGroupInfo;
use rsc_group::reshard::record::ScaleRequest;
use rsc_group::stream::StreamRecord;
use rsc_group::tick::tick;
use rsc_group::timing::Timing;
use rsc_protocol::ordering::Ordering;
use std::collections::{BTreeMap, BTreeSet};

const NOW: i64 = 1_000_000;
const SETTINGS: Settings = Settings {
    provisioning_enabled: true,
    retire_removed_shards: true,
    drain_grace_ms: 0,
    producer_refresh_window_ms: 30_000,
    timing: Timing {
        heartbeat_interval_ms: 1_000,
        member_lease_ttl_ms: 5_000,
        rebalance_timeout_ms: 20_000,
        stale_member_retention_ms: 600_000,
        hold_margin_ms: 500,
        static_member_grace_ms: 0,
    },
};

#[derive(Debug, Clone)]
struct Snap {
    group: Group,
    revision: u64,
}

impl Snapshot for Snap {
    fn group(&self) -> &Group {
        &self.group
    }
    fn revision(&self) -> u64 {
        self.revision
    }
}

/// A store with one stream and its one group, answering each step as Redis would, and logging them.
struct Store {
    stream: StreamSnapshot,
    group: Snap,
    /// Shard streams that exist, each with the group's consumer group as XINFO GROUPS shows it.
    shards: BTreeMap<u32, ConsumerGroupInfo>,
    sightings: Vec<ProducerSighting>,
    /// Stream writes to answer as lost races before one is written.
    lose_writes: usize,
    /// A lost race is lost to a stream pass that completed the active migration (DEPRECATED, in history).
    completes_when_losing: bool,
    provisioning_fails: bool,
    stream_unavailable: bool,
    log: Vec<String>,
    reports: Vec<Event>,
}

fn drained() -> ConsumerGroupInfo {
    ConsumerGroupInfo {
        name: Some("g".into()),
        pending: Some(0),
        lag: Some(0),
        last_delivered_id: Some("0-0".into()),
    }
}

impl Store {
    fn new(shards: u32, members: &[&str]) -> Self {
        let mut g = Group::new("s", "g", shards, NOW, "life");
        for m in members {
            g.members.insert((*m).into(), Member::new(m, m, NOW));
        }
        recompute_target(&mut g, NOW, &SETTINGS.timing);
        let mut record = StreamRecord::new("s", shards, NOW);
        record.routing_version = 1;
        Store {
            stream: StreamSnapshot {
                record,
                revision: 1,
            },
            group: Snap {
                group: g,
                revision: 1,
            },
            shards: (0..shards).map(|s| (s, drained())).collect(),
            sightings: Vec::new(),
            lose_writes: 0,
            completes_when_losing: false,
            provisioning_fails: false,
            stream_unavailable: false,
            log: Vec::new(),
            reports: Vec::new(),
        }
    }

    fn ordered(mut self) -> Self {
        self.stream.record.ordering = Ordering::Key;
        self
    }

    fn drive<F: Flow<Snap>>(&mut self, flow: &mut F, first: Progress<F::Output>) -> F::Output {
        let mut next = first;
        loop {
            match next {
                Progress::Done(o) => return o,
                Progress::Step(step) => {
                    let answer = self.perform(step);
                    next = flow.answer(answer, NOW);
                }
            }
        }
    }

    fn perform(&mut self, step: Step) -> Answer<Snap> {
        let name = match &step {
            Step::WriteStream { next, .. } => format!(
                "WriteStream({})",
                next.active_migration
                    .as_ref()
                    .map_or("none".into(), |m| format!("{:?}", m.state))
            ),
            Step::Report(e) => format!(
                "Report({})",
                format!("{e:?}").split([' ', '(']).next().unwrap_or("")
            ),
            other => format!("{other:?}")
                .split([' ', '(', '{'])
                .next()
                .unwrap_or("")
                .to_owned(),
        };
        self.log.push(name);
        match step {
            Step::ListGroups => Answer::Groups(Ok(vec!["g".into()])),
            Step::LoadStream if self.stream_unavailable => Answer::Stream(Err(StoreFailed)),
            Step::LoadStream => Answer::Stream(Ok(Some(self.stream.clone()))),
            Step::CreateStream(_) => Answer::Created(Ok(None)),
            Step::WriteStream { base, next } => {
                if self.lose_writes > 0 {
                    self.lose_writes -= 1;
                    self.stream.revision += 1; // someone else wrote
                    if self.completes_when_losing
                        && let Some(mut m) = self.stream.record.active_migration.take()
                    {
                        m.state = MigrationState::Deprecated;
                        self.stream.record.history.push(m);
                    }
                    return Answer::Written(Ok(None));
                }
                if base != self.stream.revision {
                    return Answer::Written(Ok(None));
                }
                self.stream = StreamSnapshot {
                    record: *next,
                    revision: base + 1,
                };
                Answer::Written(Ok(Some(self.stream.clone())))
            }
            Step::LoadGroup(_) => Answer::Group(Ok(self.group.clone())),
            Step::UpdateGroup { change, .. } => {
                let (mut update, mut s) = GroupUpdate::start(change, &SETTINGS.timing);
                loop {
                    s = match s {
                        UpdateStep::Read => update.on_read(Ok(self.group.clone()), NOW),
                        UpdateStep::Commit { base, transition } => {
                            let result = self.commit(base.revision, &transition);
                            let written =
                                (result == CommitResult::Written).then(|| self.group.clone());
                            update.on_committed(result, written)
                        }
                        UpdateStep::Done(r) => return Answer::Updated(r),
                    }
                }
            }
            Step::Provision { shards, .. } => {
                if self.provisioning_fails {
                    return Answer::Provisioned(Err("could not provision s:5".into()));
                }
                for s in shards {
                    self.shards.entry(s).or_insert_with(drained);
                }
                Answer::Provisioned(Ok(()))
            }
            Step::ExistingShards(r) => {
                Answer::Existing(Ok(r.filter(|s| self.shards.contains_key(s)).collect()))
            }
            Step::ShardGroups(s) => {
                Answer::ShardGroups(Ok(self.shards.get(&s).map(|g| vec![g.clone()])))
            }
            Step::LastGeneratedId(s) => Answer::LastId(self.shards.get(&s).map(|_| (0, 0))),
            Step::PendingUpTo { shard, .. } => {
                Answer::Pending(self.shards.get(&shard).and_then(|g| g.pending))
            }
            Step::RaiseBoundaries(scale) => Answer::Raised(
                (0..scale.from.max(scale.to))
                    .map(|s| (s, format!("{}-0", 10 + s)))
                    .collect(),
            ),
            Step::RetireShards(r) => {
                for s in r {
                    self.shards.remove(&s);
                }
                Answer::Done
            }
            Step::ReadSightings => Answer::Sightings(Ok(self.sightings.clone())),
            Step::WatchAppends { .. } => Answer::Done,
            Step::Report(e) => {
                self.reports.push(e);
                Answer::Done
            }
        }
    }

    fn commit(&mut self, base: u64, t: &Transition) -> CommitResult {
        if base != self.group.revision {
            return CommitResult::Conflict;
        }
        let Some(g) = &t.group else {
            return CommitResult::Conflict;
        };
        self.group = Snap {
            group: g.clone(),
            revision: base + 1,
        };
        CommitResult::Written
    }

    /// The reconciler's tick on the group (nobody's lease lapsed).
    fn tick(&mut self) {
        if let Some((t, _)) =
            tick(&self.group.group, NOW, &BTreeSet::new(), &SETTINGS.timing).expect("small epochs")
        {
            let base = self.group.revision;
            assert_eq!(self.commit(base, &t), CommitResult::Written);
        }
    }

    fn scale(&mut self, to: u32, quiesce: Option<i64>) -> Result<ScaleOutcome, ReshardError> {
        let request = ScaleRequest {
            resharding_id: format!("r-{to}"),
            target: to,
            requested_by: "t".into(),
            reason: "t".into(),
            quiesce_timeout_ms: quiesce,
        };
        let count = self.group.group.shard_count;
        let (mut flow, first) = ScaleFlow::start("s", request, vec!["g".into()], count, &SETTINGS);
        self.drive(&mut flow, first)
    }

    fn pass(&mut self) {
        let (mut flow, first) = StreamPass::start(&SETTINGS);
        self.drive(&mut flow, first);
    }
}

#[test]
fn an_ordered_scale_records_provisions_switches_guards_then_brings_the_group_in_line() {
    let mut store = Store::new(4, &["a"]).ordered();
    let outcome = store.scale(2, None).expect("scaled");
    assert_eq!(
        store.log,
        [
            "LoadStream",
            "WriteStream(Preparing)",
            "Provision",
            "WriteStream(Active)",
            "RaiseBoundaries",
            "WriteStream(Active)",
            "Report(SwitchPointsRecorded)",
            "UpdateGroup"
        ]
    );
    let ScaleOutcome::Scaled { switched, .. } = outcome else {
        panic!("a scale")
    };
    assert_eq!(switched.per_group[0].state, MigrationState::Active);
    let m = store
        .stream
        .record
        .active_migration
        .as_ref()
        .expect("active");
    assert_eq!(m.switch_points.len(), 4, "every old shard's switch point");
    assert_eq!(store.stream.record.shard_count, 2);
    assert!(
        !store.group.group.ordering_gates.is_empty(),
        "the group closed its gates"
    );
    assert_eq!(
        store.group.group.routing_version,
        store.stream.record.routing_version
    );
}

#[test]
fn a_scale_that_loses_the_race_for_the_record_reads_it_again_and_goes_on() {
    let mut store = Store::new(2, &["a"]);
    store.lose_writes = 1;
    store.scale(4, None).expect("scaled");
    assert_eq!(
        &store.log[..6],
        [
            "LoadStream",
            "ExistingShards",
            "WriteStream(Preparing)",
            "LoadStream",
            "ExistingShards",
            "WriteStream(Preparing)"
        ],
        "a scale-out checks its new keys, records, and after a lost race reads the record and decides again"
    );
    assert_eq!(store.stream.record.shard_count, 4);
}

#[test]
fn a_provisioning_failure_leaves_the_migration_preparing_and_routing_unchanged() {
    let mut store = Store::new(2, &["a"]);
    store.provisioning_fails = true;
    let e = store.scale(4, None).expect_err("refused");
    assert_eq!(
        e,
        ReshardError::Provisioning("could not provision s:5".into())
    );
    let m = store
        .stream
        .record
        .active_migration
        .as_ref()
        .expect("recorded");
    assert_eq!(m.state, MigrationState::Preparing);
    assert_eq!(store.stream.record.shard_count, 2);
    // The reconciler's pass resumes it once provisioning works.
    store.provisioning_fails = false;
    store.pass();
    assert_eq!(store.stream.record.shard_count, 4);
}

#[test]
fn a_quiesced_scale_waits_for_the_producers_seen_then_switches() {
    let mut store = Store::new(2, &["a"]);
    store.sightings = vec![ProducerSighting {
        producer_id: "p1".into(),
        last_seen_ms: NOW,
        ..ProducerSighting::default()
    }];
    store.scale(4, Some(60_000)).expect("recorded, waiting");
    assert_eq!(store.stream.record.shard_count, 2, "routing waits");
    assert!(store.reports.iter().any(|e| matches!(
        e,
        Event::QuiesceWaiting { pending, .. } if pending == &vec!["p1".to_owned()]
    )));
    store.sightings[0].quiesced_for = Some("r-4".into());
    store.pass();
    assert_eq!(store.stream.record.shard_count, 4);
    assert!(store.reports.iter().any(|e| matches!(
        e,
        Event::QuiesceSwitched { outcome, .. } if !outcome.forced_by_timeout
    )));
}

#[test]
fn the_stream_pass_releases_drained_shards_completes_the_migration_and_retires_them() {
    let mut store = Store::new(4, &[]);
    store.scale(2, None).expect("scaled");
    assert_eq!(store.group.group.draining_shards.len(), 2);
    store.pass();
    assert!(
        store.group.group.draining_shards.is_empty(),
        "drain evidence released them"
    );
    store.tick();
    store.tick();
    assert_eq!(
        store.group.group.migration("r-2").map(|m| m.state),
        Some(MigrationState::Deprecated)
    );
    store.log.clear();
    store.pass();
    assert!(
        store.log.contains(&"RetireShards".to_owned()),
        "{:?}",
        store.log
    );
    assert!(store.stream.record.active_migration.is_none());
    assert_eq!(
        store.stream.record.history[0].state,
        MigrationState::Deprecated
    );
    assert!(!store.shards.contains_key(&3));
}

/// An operator's rollback of migration `r-4` (the one `Store::scale(4, …)` records), started on the store's
/// group.
fn operator_rollback_of_r4(store: &Store) -> (EndFlow, Progress<Result<EndOutcome, ReshardError>>) {
    EndFlow::start(
        "s",
        store.group.group.clone(),
        "r-4",
        MigrationState::RolledBack,
        "t",
    )
}

#[test]
fn a_rollback_is_filed_raises_the_boundaries_back_and_reaches_the_group() {
    let mut store = Store::new(2, &["a"]);
    store.scale(4, None).expect("scaled");
    store.log.clear();
    let (mut flow, first) = operator_rollback_of_r4(&store);
    let outcome = store.drive(&mut flow, first).expect("rolled back");
    assert_eq!(outcome, EndOutcome::Ended);
    assert_eq!(
        store.log,
        [
            "LoadStream",
            "WriteStream(none)",
            "RaiseBoundaries",
            "ListGroups",
            "UpdateGroup",
            "Report(EndedByOperator)"
        ]
    );
    assert_eq!(store.stream.record.shard_count, 2);
    assert_eq!(
        store.group.group.migration("r-4").map(|m| m.state),
        Some(MigrationState::RolledBack)
    );
}

#[test]
fn a_rollback_whose_write_loses_to_the_migrations_completion_is_refused_and_reports_nothing() {
    let mut store = Store::new(2, &["a"]);
    store.scale(4, None).expect("scaled");
    store.log.clear();
    store.lose_writes = 1;
    store.completes_when_losing = true;
    let (mut flow, first) = operator_rollback_of_r4(&store);
    let refused = store
        .drive(&mut flow, first)
        .expect_err("it completed first");
    assert!(
        refused.to_string().contains("already ended (DEPRECATED)"),
        "{refused}"
    );
    assert_eq!(
        store.log,
        ["LoadStream", "WriteStream(none)", "LoadStream"],
        "no boundary raised, no group touched, no rollback reported"
    );
    assert_eq!(store.stream.record.shard_count, 4, "routing stays scaled");
    assert!(store.reports.is_empty());
}

#[test]
fn a_store_failure_ends_a_scale_with_the_stores_error_and_writes_nothing() {
    let mut store = Store::new(2, &["a"]);
    store.stream_unavailable = true;
    assert_eq!(store.scale(4, None), Err(ReshardError::Store));
    assert_eq!(store.stream.revision, 1);
}
