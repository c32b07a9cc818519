//! The body of the `heartbeat_transition` fuzz target, shared with the stable replay test
//! (`tests/fuzz_corpus.rs`) through `#[path]`, so `cargo test` runs exactly what the fuzzer runs.
//!
//! The input bytes are read as a script of steps against one group: well-formed heartbeats from a small set
//! of members (epochs near the current ones, every status a client can be in, revoke reports, owned sets
//! that may lie, shard progress), time advances, reconciler ticks and operator resharding. A store with the
//! same compare-and-set and lease semantics as the Redis one applies each `Outcome::Write` (when its
//! conditions hold), like `tests/simulation.rs` does. After every step the aggregate invariants must hold,
//! an OK answer must show exactly what is written, and epochs never go backwards; at the end, the aggregate
//! survives its JSON round trip. Any panic is a finding.
#![allow(dead_code)]

use rsc_group::heartbeat::{Outcome, Transition, decide};
use rsc_group::invariants;
use rsc_group::migration;
use rsc_group::model::{Group, MemberState, Migration, MigrationState, ShardSet};
use rsc_group::tick::tick;
use rsc_group::timing::Timing;
use rsc_protocol::validate::validate_heartbeat_request;
use rsc_protocol::wire::{
    HeartbeatRequest, HeartbeatStatus, RevokeState, RevokingShardReport, RuntimeConsumerCapacity,
    ShardId, ShardProgressReport,
};
use std::collections::{BTreeMap, BTreeSet};

const TIMING: Timing = Timing {
    heartbeat_interval_ms: 100,
    member_lease_ttl_ms: 500,
    rebalance_timeout_ms: 1_500,
    stale_member_retention_ms: 5_000,
    hold_margin_ms: 50,
    static_member_grace_ms: 0,
};

/// Member ids the script picks from (a small set, so members meet each other's shards).
const MEMBERS: [&str; 3] = ["m0", "m1", "m2"];
/// Time steps the script picks from: below, around and beyond the lease TTL, rebalance timeout, retention.
const ADVANCES_MS: [i64; 8] = [1, 10, 100, 450, 600, 1_600, 5_100, 20_000];
/// Longest script, so one input stays fast.
const MAX_STEPS: usize = 300;

/// Reads the fuzz input as a stream of choices; when it runs out, every choice is 0.
struct Choices<'a> {
    data: &'a [u8],
}

impl Choices<'_> {
    fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((b, rest)) => {
                self.data = rest;
                *b
            }
            None => 0,
        }
    }

    fn below(&mut self, n: usize) -> usize {
        usize::from(self.byte()) % n.max(1)
    }

    fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

/// Redis as the state machine sees it: the aggregate with its revision and the member lease deadlines.
struct Store {
    group: Group,
    revision: u64,
    leases: BTreeMap<String, i64>,
    writes: usize,
}

impl Store {
    fn lapsed(&self, now: i64) -> BTreeSet<String> {
        self.leases
            .iter()
            .filter(|(_, d)| **d <= now)
            .map(|(m, _)| m.clone())
            .collect()
    }

    /// The CAS script: every condition, then every write. Returns whether it committed.
    fn cas(&mut self, t: &Transition, now: i64) -> bool {
        let lease_live = |m: &String| self.leases.get(m).is_some_and(|d| *d > now);
        if now < t.not_before_ms
            || t.must_be_lapsed.iter().any(lease_live)
            || !t.must_be_live.iter().all(lease_live)
        {
            return false;
        }
        for m in &t.renew {
            self.leases
                .insert(m.clone(), now + TIMING.member_lease_ttl_ms);
        }
        for m in &t.remove {
            self.leases.remove(m);
        }
        let Some(group) = &t.group else {
            panic!("a transition without a group was returned for writing");
        };
        let mut g = group.clone();
        self.writes += 1;
        self.revision += 1;
        g.store_revision = self.revision;
        self.group = g;
        true
    }
}

struct Run {
    store: Store,
    now: i64,
    seq: u64,
    /// Whether to keep a readable log of the steps for a failure message (off under the fuzzer: speed).
    verbose: bool,
    log: Vec<String>,
    summary: Summary,
}

/// What a script reached, so the replay test can tell that the seeds exercise real transitions.
#[derive(Debug, Default, Clone, Copy)]
pub struct Summary {
    pub steps: usize,
    /// Committed writes (heartbeats, ticks and resharding).
    pub writes: usize,
    /// The most shards granted at once, over all members.
    pub most_granted: usize,
}

/// Runs one fuzz input. Panics on any broken invariant.
pub fn heartbeat_transition(data: &[u8]) -> Summary {
    script(data, false)
}

/// Runs one fuzz input, keeping a log of its steps for the failure message.
pub fn heartbeat_transition_verbose(data: &[u8]) -> Summary {
    script(data, true)
}

fn script(data: &[u8], verbose: bool) -> Summary {
    let mut c = Choices { data };
    let shards = 1 + c.below(6) as u32;
    let now = 1_000_000;
    let mut run = Run {
        store: Store {
            group: Group::new("s", "g", shards, now, "lc"),
            revision: 1,
            leases: BTreeMap::new(),
            writes: 0,
        },
        now,
        seq: 0,
        verbose,
        log: vec![format!("new group with {shards} shards")],
        summary: Summary::default(),
    };
    for _ in 0..MAX_STEPS {
        if c.is_empty() {
            break;
        }
        let before = run.store.group.clone();
        match c.below(10) {
            0..=4 => run.heartbeat(&mut c),
            5 | 6 => {
                let ms = ADVANCES_MS[c.below(ADVANCES_MS.len())];
                run.now += ms;
                run.note(|| format!("advance {ms} ms"));
                run.tick();
            }
            7 => run.tick(),
            _ => run.reshard(&mut c),
        }
        run.check(&before);
        run.summary.steps += 1;
        run.summary.writes = run.store.writes;
        let granted = run
            .store
            .group
            .members
            .values()
            .map(|m| m.assigned.len())
            .sum();
        run.summary.most_granted = run.summary.most_granted.max(granted);
    }
    run.check_stored_form();
    run.summary
}

impl Run {
    fn fail(&self, what: &str) -> ! {
        if !self.verbose {
            panic!(
                "{what}\nto see the steps, copy the input into fuzz/corpus/heartbeat_transition/ and run \
                 cargo test -p rsc-group --test integration -- fuzz_corpus::"
            );
        }
        panic!(
            "{what}\nsteps:\n  {}\ngroup: {}",
            self.log.join("\n  "),
            self.store.group.to_json()
        );
    }

    fn note(&mut self, line: impl FnOnce() -> String) {
        if self.verbose {
            self.log.push(line());
        }
    }

    /// A well-formed heartbeat from one of the members, built from the member's state as the group sees
    /// it plus the script's choices.
    fn request(&mut self, c: &mut Choices<'_>, id: &str) -> HeartbeatRequest {
        let g = &self.store.group;
        let member = g.members.get(id);
        let current = member.map_or(0, |m| m.member_epoch);
        let member_epoch = match c.below(8) {
            0 => 0,
            1 => -1,
            2 => current - 1,
            3 => current + 1,
            4 => member.map_or(0, |m| m.incarnation_epoch),
            _ => current,
        }
        .max(-1);
        let assigned: ShardSet = member.map(|m| m.assigned.clone()).unwrap_or_default();
        let revoking: ShardSet = member
            .map(|m| m.revoking.keys().copied().collect())
            .unwrap_or_default();
        let range = g.shard_count + 2;
        let owned: ShardSet = match c.below(5) {
            0 | 1 => assigned.clone(),
            2 => ShardSet::new(),
            3 => {
                let mut s = assigned.clone();
                s.insert(c.below(range as usize) as u32);
                s
            }
            _ => {
                let bits = c.byte();
                (0..8).filter(|i| bits & (1 << i) != 0).collect()
            }
        };
        let mut report_on = revoking.clone();
        if c.below(4) == 0 {
            report_on.insert(c.below(range as usize) as u32);
        }
        let revoking_shards = report_on
            .iter()
            .map(|s| {
                let state = [
                    RevokeState::Revoked,
                    RevokeState::Revoked,
                    RevokeState::Draining,
                    RevokeState::Revoking,
                ][c.below(4)];
                RevokingShardReport {
                    shard: ShardId::new(*s),
                    state,
                    in_flight: i64::from(state != RevokeState::Revoked || c.below(4) == 0),
                    acked_at: None,
                }
            })
            .collect();
        let shard_progress = owned
            .iter()
            .take(c.below(3))
            .map(|s| ShardProgressReport {
                shard: ShardId::new(*s),
                stream_key: Some(format!("s:{s}")),
                last_delivered_id: Some("1-0".into()),
                last_acked_id: Some("1-0".into()),
                pending_count: c.below(3) as i64,
                updated_at: None,
            })
            .collect();
        self.seq += 1;
        HeartbeatRequest {
            protocol_version: if c.below(32) == 0 { 2 } else { 1 },
            request_id: format!("{id}-{}", self.seq),
            member_id: id.to_owned(),
            member_name: (c.below(2) == 0).then(|| format!("{id}-name")),
            client_name: None,
            client_version: None,
            group_instance_id: None,
            member_epoch,
            metadata_version: (g.metadata_version + c.below(3) as i64 - 1).max(0),
            runtime_consumer_capacity: RuntimeConsumerCapacity {
                runtime_max_concurrency: 2,
                available_concurrency: c.below(3) as i64,
            },
            owned_shards: owned.iter().map(|s| ShardId::new(*s)).collect(),
            revoking_shards,
            shard_progress,
        }
    }

    fn heartbeat(&mut self, c: &mut Choices<'_>) {
        let id = MEMBERS[c.below(MEMBERS.len())];
        let req = self.request(c, id);
        if let Err(e) = validate_heartbeat_request(&req) {
            self.fail(&format!("the script built an invalid request: {e}"));
        }
        let d = decide(Some(&self.store.group), id, &req, self.now, &TIMING);
        let r = &d.response;
        self.note(|| {
            format!(
                "{id} epoch {} owned {:?} revoking {:?} -> {:?} epoch {} assigned {:?}",
                req.member_epoch,
                req.owned_shards
                    .iter()
                    .map(|s| s.shard_index)
                    .collect::<Vec<_>>(),
                req.revoking_shards
                    .iter()
                    .map(|r| (r.shard.shard_index, r.state, r.in_flight))
                    .collect::<Vec<_>>(),
                r.status,
                r.member_epoch,
                r.assignment
                    .assigned_shards
                    .iter()
                    .map(|s| s.shard_index)
                    .collect::<Vec<_>>(),
            )
        });
        if r.response_to != req.request_id || r.member_id != id {
            self.fail("the response does not answer the request");
        }
        match d.outcome {
            Outcome::Rejected { .. } => {
                if !r.assignment.assigned_shards.is_empty() {
                    self.fail("a rejected heartbeat was answered with shards");
                }
            }
            Outcome::Steady => {
                if self.store.leases.get(id).is_some_and(|d| *d > self.now) {
                    self.store
                        .leases
                        .insert(id.to_owned(), self.now + TIMING.member_lease_ttl_ms);
                }
                self.check_answer(r.status, &r.assignment.assigned_shards, id);
            }
            Outcome::Write(t) => {
                if self.store.cas(&t, self.now) {
                    self.note(|| "  written".into());
                    self.check_answer(r.status, &r.assignment.assigned_shards, id);
                } else {
                    self.note(|| "  CAS refused (lease conditions)".into());
                }
            }
        }
    }

    /// Invariant 2: an OK answer grants exactly what the stored aggregate says the member holds.
    fn check_answer(&self, status: HeartbeatStatus, answered: &[ShardId], id: &str) {
        let written: ShardSet = match self.store.group.members.get(id) {
            Some(m) if m.state == MemberState::Active => m.assigned.clone(),
            _ => ShardSet::new(),
        };
        let answered: ShardSet = answered.iter().map(|s| s.shard_index).collect();
        if status == HeartbeatStatus::Ok && answered != written {
            self.fail(&format!(
                "answered {answered:?} to {id} but the stored aggregate grants {written:?}"
            ));
        }
        if !answered.is_subset(&written) {
            self.fail(&format!(
                "answered {answered:?} to {id} ({status:?}), more than the stored {written:?}"
            ));
        }
    }

    /// The reconciler: lease expiry by the store's leases, rebalance timeouts, holds, pruning.
    fn tick(&mut self) {
        let lapsed = self.store.lapsed(self.now);
        let due = tick(&self.store.group, self.now, &lapsed, &TIMING)
            .unwrap_or_else(|e| self.fail(&format!("tick: {e}")));
        if let Some((t, report)) = due {
            self.note(|| format!("tick {report:?}"));
            if !self.store.cas(&t, self.now) {
                self.fail("a tick decided at `now` must commit at `now`");
            }
        }
    }

    /// Operator actions and drain evidence, as the reconciler and admin API apply them.
    fn reshard(&mut self, c: &mut Choices<'_>) {
        let mut g = self.store.group.clone();
        let now = self.now;
        let active = g.active_migration_id.clone();
        let (what, changed) = match c.below(4) {
            0 => {
                self.seq += 1;
                let to = c.below(9) as u32;
                let m = Migration {
                    resharding_id: format!("reshard-{}", self.seq),
                    from_shard_count: g.shard_count,
                    to_shard_count: to,
                    state: MigrationState::Active,
                    requested_by: "fuzz".into(),
                    reason: "fuzz".into(),
                    created_at_ms: now,
                    updated_at_ms: now,
                    activated_at_ms: None,
                    draining_at_ms: None,
                    completed_at_ms: None,
                    end_reason: None,
                    switch_points: Default::default(),
                };
                (
                    format!("adopt scale to {to}"),
                    migration::adopt(&mut g, &m, now, &TIMING)
                        .unwrap_or_else(|e| self.fail(&format!("adopt: {e}"))),
                )
            }
            1 => match active {
                Some(id) => (
                    format!("rollback {id}"),
                    migration::rollback(&mut g, &id, "fuzz", now, &TIMING).unwrap_or(false),
                ),
                None => return,
            },
            2 => match active {
                Some(id) => (
                    format!("force-complete {id}"),
                    migration::force_complete(&mut g, &id, "fuzz", now, &TIMING).unwrap_or(false),
                ),
                None => return,
            },
            _ => {
                let Some(pick) = g
                    .draining_shards
                    .iter()
                    .nth(c.below(g.draining_shards.len()))
                    .copied()
                else {
                    return;
                };
                (
                    format!("drained {pick}"),
                    migration::release_drained(&mut g, &[pick].into(), now, &TIMING)
                        .unwrap_or_else(|e| self.fail(&format!("release: {e}"))),
                )
            }
        };
        self.note(|| what);
        if changed && !self.store.cas(&Transition::new(g), now) {
            self.fail("an unconditional transition must commit");
        }
    }

    /// The stored form: the final aggregate reads back from its JSON unchanged (once per script: it is
    /// the most expensive check).
    fn check_stored_form(&self) {
        let g = &self.store.group;
        match Group::from_json(&g.to_json()) {
            Ok(back) if back == *g => {}
            Ok(_) => self.fail("the aggregate changes in its JSON round trip"),
            Err(e) => self.fail(&format!("the written aggregate does not read back: {e}")),
        }
    }

    /// The checks after every step.
    fn check(&self, before: &Group) {
        let g = &self.store.group;
        let violations = invariants::check(g);
        if !violations.is_empty() {
            self.fail(&format!("invariants broken: {violations:?}"));
        }
        if g.group_epoch < before.group_epoch
            || g.assignment_epoch < before.assignment_epoch
            || g.metadata_version < before.metadata_version
        {
            self.fail("an epoch or the metadata version went backwards");
        }
    }
}
