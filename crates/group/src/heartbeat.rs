//! The heartbeat decision procedure (wire-contract §4.3, with the defects design.md lists fixed).
//!
//! `decide` is pure: given the group as last written, a validated request and the current time, it returns
//! the response and what must be persisted for that response to be true:
//! - `Outcome::Rejected`: nothing is stored (protocol errors, unknown or fenced members);
//! - `Outcome::Steady`: nothing in the aggregate changes; the caller renews the member's lease (and stores
//!   progress) in one round trip, conditional on the revision it decided on;
//! - `Outcome::Write`: a new aggregate to compare-and-set, with lease conditions and lease operations.
//!
//! Epochs: a request whose epoch lies in `incarnation_epoch..=member_epoch` comes from the current
//! incarnation and is always answered (a retry after a lost response is never fenced). Its report can only
//! release shards whose revocation it had already seen (revocation epoch ≤ request epoch).

use crate::model::{
    EpochOverflow, Group, Hold, Member, MemberState, MetadataCorrection, RevokeReport, ShardSet,
    incremented,
};
use crate::rebalance::{bumped, recompute_target, settle};
use crate::timing::Timing;
use rsc_protocol::wire::{
    AssignmentView, HeartbeatRequest, HeartbeatResponse, HeartbeatStatus, ShardId,
};
use rsc_protocol::{PROTOCOL_VERSION_MAX, PROTOCOL_VERSION_MIN};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// What the caller must persist before sending the response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to store. `needs_fresh_state`: the answer depends on group state, so a caller deciding on a
    /// cached aggregate must reload and decide again before answering.
    Rejected { needs_fresh_state: bool },
    /// Renew the member's lease (only if still live) and store its progress; the aggregate is unchanged.
    Steady,
    /// Compare-and-set a new aggregate.
    Write(Box<Transition>),
}

/// A new aggregate plus the lease conditions and operations that must apply atomically with it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Transition {
    pub group: Option<Group>,
    /// Members whose leases must have lapsed (by Redis time) for this transition to be valid.
    pub must_be_lapsed: Vec<String>,
    /// Members whose leases must still be live.
    pub must_be_live: Vec<String>,
    /// Members whose leases are renewed.
    pub renew: Vec<String>,
    /// Members whose lease and progress entries are removed.
    pub remove: Vec<String>,
    /// Redis time must be at least this (0 = no condition).
    pub not_before_ms: i64,
}

impl Transition {
    pub fn new(group: Group) -> Self {
        Transition {
            group: Some(group),
            ..Transition::default()
        }
    }

    /// Every member this transition names, in a lease condition or a lease operation.
    pub fn named_members(&self) -> impl Iterator<Item = &String> {
        self.must_be_lapsed
            .iter()
            .chain(&self.must_be_live)
            .chain(&self.renew)
            .chain(&self.remove)
    }
}

/// Things worth counting that do not change the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Signals {
    /// A member reported a newer metadataVersion or epoch than the group holds.
    pub metadata_regression: bool,
    /// A member reported a shard as being revoked after its release was recorded.
    pub rebalance_regression: bool,
    /// The member was fenced by this request.
    pub fenced: bool,
    /// The transition this request calls for would overflow an epoch (answered RETRY, nothing stored).
    pub epochs_exhausted: bool,
}

/// Who sends a heartbeat, as far as member ownership goes. A member incarnation records the principal that
/// joined it ([`Member::owner`]); a heartbeat or leave for it from another principal is refused, unless the
/// caller may act for any member (an ADMIN). Heartbeats served without authentication have no principal:
/// nothing is recorded and nothing is checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Caller<'a> {
    pub principal: Option<&'a str>,
    pub acts_for_any_member: bool,
}

impl Caller<'_> {
    /// Unauthenticated heartbeats (and the simulator).
    pub const ANONYMOUS: Caller<'static> = Caller {
        principal: None,
        acts_for_any_member: false,
    };
}

/// The principal that owns `member_id` in `g`, if it is not `caller` and `caller` may not act for it.
pub fn owner_conflict<'g>(g: &'g Group, member_id: &str, caller: &Caller<'_>) -> Option<&'g str> {
    let principal = caller.principal?;
    if caller.acts_for_any_member {
        return None;
    }
    g.members
        .get(member_id)
        .and_then(|m| m.owner.as_deref())
        .filter(|owner| *owner != principal)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub response: HeartbeatResponse,
    pub outcome: Outcome,
    pub signals: Signals,
}

/// Decides a heartbeat for `path_member_id` in `group` (None = the group does not exist). A `Write` carries
/// the new aggregate, a copy of `group` with the transition applied.
pub fn decide(
    group: Option<&Group>,
    path_member_id: &str,
    req: &HeartbeatRequest,
    now_ms: i64,
    timing: &Timing,
) -> Decision {
    let Some(g) = group else {
        return match precheck(path_member_id, req, timing) {
            Some(d) => d,
            None => rejected(req, timing, HeartbeatStatus::UnknownMemberId, true),
        };
    };
    let mut g = Draft::new(Cow::Borrowed(g));
    let mut d = decide_in_place(&mut g, path_member_id, req, None, now_ms, timing);
    if let Outcome::Write(t) = &mut d.outcome {
        t.group = Some(g.into_group());
    }
    d
}

/// Decides only *what kind* of answer `req` gets: a rejection or a steady renewal exactly as [`decide`]
/// gives it, but a write without building it (an empty transition, a placeholder response, the same
/// signals). The heartbeat path uses it to tell steady heartbeats from transitions without copying a big
/// group; transitions are then decided for real in a batch.
pub fn probe(
    group: Option<&Group>,
    path_member_id: &str,
    req: &HeartbeatRequest,
    now_ms: i64,
    timing: &Timing,
) -> Decision {
    let Some(g) = group else {
        return decide(None, path_member_id, req, now_ms, timing);
    };
    let mut g = Draft::probe(g);
    decide_in_place(&mut g, path_member_id, req, None, now_ms, timing)
}

/// The aggregate a decision works on: changed in place (copied first when borrowed) to apply a write, or,
/// when probing, never changed.
///
/// A deferring draft (a batch's) leaves the rebalance a membership change or a release calls for to
/// [`Draft::rebalance_now`]: the batch runs one for all its requests instead of one per request, which over a
/// group of N members turns a join wave's O(N²) into O(N) per batch. Nothing a later request's decision
/// reads depends on it (`batch.rs` says why), except an open metadata-correction round, so while one is open
/// every decision ends rebalanced ([`decide_in_place`]).
#[derive(Debug)]
pub struct Draft<'a> {
    group: Cow<'a, Group>,
    probing: bool,
    deferring: bool,
    deferred: Option<Rebalance>,
}

/// A rebalance a write calls for; the later variant includes the earlier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Rebalance {
    /// Move members towards their (unchanged) targets: `settle`.
    Grants,
    /// The active members changed: a new target, then `settle`.
    Target,
}

impl<'a> Draft<'a> {
    pub fn new(group: Cow<'a, Group>) -> Self {
        Draft {
            group,
            probing: false,
            deferring: false,
            deferred: None,
        }
    }

    /// A draft whose rebalances wait for [`Draft::rebalance_now`].
    pub fn deferring(group: Cow<'a, Group>) -> Self {
        Draft {
            deferring: true,
            ..Draft::new(group)
        }
    }

    fn probe(group: &'a Group) -> Self {
        Draft {
            probing: true,
            ..Draft::new(Cow::Borrowed(group))
        }
    }

    /// The aggregate as it stands (with every write applied so far, and a deferred rebalance not run).
    pub fn into_group(self) -> Group {
        self.group.into_owned()
    }

    /// Runs the rebalance deferred so far, if any.
    pub fn rebalance_now(&mut self, now_ms: i64, timing: &Timing) {
        let Some(kind) = self.deferred.take() else {
            return;
        };
        let g = self.group.to_mut();
        match kind {
            Rebalance::Grants => settle(g, now_ms, timing),
            Rebalance::Target => recompute_target(g, now_ms, timing),
        }
    }

    /// Rebalances after a write: now, or (deferring) later.
    fn rebalance(&mut self, kind: Rebalance, now_ms: i64, timing: &Timing) {
        self.deferred = self.deferred.max(Some(kind));
        if !self.deferring {
            self.rebalance_now(now_ms, timing);
        }
    }

    /// The aggregate being written (after [`Draft::write`] returned it once).
    fn written(&mut self) -> &mut Group {
        debug_assert!(!self.probing);
        self.group.to_mut()
    }

    /// Whether nothing was written yet to a borrowed aggregate (no copy was made).
    pub fn is_untouched(&self) -> bool {
        matches!(self.group, Cow::Borrowed(_))
    }

    /// The aggregate to change, or None when only probing.
    fn write(&mut self) -> Option<&mut Group> {
        (!self.probing).then(|| self.group.to_mut())
    }
}

impl std::ops::Deref for Draft<'_> {
    type Target = Group;
    fn deref(&self) -> &Group {
        &self.group
    }
}

/// A probed write: nothing built, the request's own echo as the response (never sent).
fn probe_write(req: &HeartbeatRequest, timing: &Timing, signals: Signals) -> Decision {
    Decision {
        response: rejected_response(req, timing, HeartbeatStatus::Retry),
        outcome: Outcome::Write(Box::default()),
        signals,
    }
}

/// Decides like [`decide`] on an existing group, but a `Write` is applied to `g` itself (made owned on the
/// first change, so an owned aggregate is changed without being copied) and its transition carries no
/// aggregate. Any other outcome leaves `g` untouched. A heartbeat transition names (in its lease conditions
/// and operations) no member but the requesting one. `joiner`: the principal a join records as the new
/// incarnation's owner (None when heartbeats are unauthenticated); ownership itself is checked by the caller
/// ([`owner_conflict`]).
pub fn decide_in_place(
    g: &mut Draft<'_>,
    path_member_id: &str,
    req: &HeartbeatRequest,
    joiner: Option<&str>,
    now_ms: i64,
    timing: &Timing,
) -> Decision {
    if let Some(d) = precheck(path_member_id, req, timing) {
        return d;
    }
    let d = decide_existing(g, req, joiner, now_ms, timing);
    if g.metadata_correction.is_some() {
        // A correction round's decisions read revocations: while one is open (or this request opened it),
        // nothing stays deferred, so the next decision sees the aggregate rebalanced.
        g.rebalance_now(now_ms, timing);
    }
    if let Outcome::Write(t) = &d.outcome {
        // Batches rely on it (`batch.rs`).
        debug_assert!(
            t.named_members().all(|n| *n == req.member_id),
            "a heartbeat transition names another member: {t:?}"
        );
    }
    d
}

fn decide_existing(
    g: &mut Draft<'_>,
    req: &HeartbeatRequest,
    joiner: Option<&str>,
    now_ms: i64,
    timing: &Timing,
) -> Decision {
    // A copy of the member record (not a borrow of `g`), so that the decision can change `g` in place.
    let Some(member) = g.members.get(&req.member_id).cloned() else {
        return if req.member_epoch == 0 {
            join(g, req, joiner, now_ms, timing)
        } else {
            rejected(req, timing, HeartbeatStatus::UnknownMemberId, true)
        };
    };
    let member = &member;
    match (req.member_epoch, member.state) {
        (0, MemberState::Active) if !member.join_confirmed => {
            accept(g, member, req, now_ms, timing, true)
        }
        (0, _) => join(g, req, joiner, now_ms, timing),
        (_, MemberState::Expired | MemberState::Fenced) => fenced_reply(g, member, req, timing),
        // A leave from an earlier process with this id (delayed, duplicated or re-sent) must not touch the
        // current incarnation; if it really is this incarnation's, its lease runs out and the shards move then.
        (-1, MemberState::Active | MemberState::Leaving)
            if req.metadata_version < member.join_metadata_version =>
        {
            fenced_reply(g, member, req, timing)
        }
        (-1, MemberState::Active) => leave(g, member, req, now_ms, timing),
        (-1, MemberState::Leaving) => accept(g, member, req, now_ms, timing, false),
        (_, MemberState::Leaving) => fenced_reply(g, member, req, timing),
        (e, MemberState::Active) if e < member.incarnation_epoch => {
            fenced_reply(g, member, req, timing)
        }
        (_, MemberState::Active) => accept(g, member, req, now_ms, timing, false),
    }
}

/// Rejections that do not depend on the group: an unsupported protocol or a malformed request.
fn precheck(path_member_id: &str, req: &HeartbeatRequest, timing: &Timing) -> Option<Decision> {
    if !(PROTOCOL_VERSION_MIN..=PROTOCOL_VERSION_MAX).contains(&req.protocol_version) {
        return Some(rejected(
            req,
            timing,
            HeartbeatStatus::UnsupportedProtocol,
            false,
        ));
    }
    if req.member_id != path_member_id || req.member_epoch < -1 {
        return Some(rejected(
            req,
            timing,
            HeartbeatStatus::InvalidRequest,
            false,
        ));
    }
    None
}

/// The response for a member in the group as it stands.
pub fn member_response(
    g: &Group,
    member_id: &str,
    req: &HeartbeatRequest,
    timing: &Timing,
) -> HeartbeatResponse {
    let (member_epoch, assigned, pending) = match g.members.get(member_id) {
        Some(m) if m.state == MemberState::Active => {
            let target = g.target_of(member_id);
            let pending: ShardSet = target.difference(&m.assigned).copied().collect();
            (m.member_epoch, m.assigned.clone(), pending)
        }
        Some(m) => (m.member_epoch, ShardSet::new(), ShardSet::new()),
        None => (req.member_epoch, ShardSet::new(), ShardSet::new()),
    };
    response(
        g,
        req,
        timing,
        HeartbeatStatus::Ok,
        member_epoch,
        &assigned,
        &pending,
    )
}

fn response(
    g: &Group,
    req: &HeartbeatRequest,
    timing: &Timing,
    status: HeartbeatStatus,
    member_epoch: i64,
    assigned: &ShardSet,
    pending: &ShardSet,
) -> HeartbeatResponse {
    HeartbeatResponse {
        response_to: req.request_id.clone(),
        status,
        member_id: req.member_id.clone(),
        member_epoch,
        heartbeat_interval_ms: timing.heartbeat_interval_ms,
        rebalance_timeout_ms: timing.rebalance_timeout_ms,
        group_epoch: g.group_epoch,
        assignment_epoch: g.assignment_epoch,
        metadata_version: g.metadata_version,
        assignment: AssignmentView {
            assigned_shards: assigned.iter().map(|&s| ShardId::new(s)).collect(),
            pending_shards: pending.iter().map(|&s| ShardId::new(s)).collect(),
            metadata_version: g.metadata_version,
        },
        message: None,
    }
}

/// The "rejected" shape: epochs echo the request, group values 0, empty assignment, nothing stored.
pub fn rejected_response(
    req: &HeartbeatRequest,
    timing: &Timing,
    status: HeartbeatStatus,
) -> HeartbeatResponse {
    HeartbeatResponse {
        response_to: req.request_id.clone(),
        status,
        member_id: req.member_id.clone(),
        member_epoch: req.member_epoch,
        heartbeat_interval_ms: timing.heartbeat_interval_ms,
        rebalance_timeout_ms: timing.rebalance_timeout_ms,
        group_epoch: 0,
        assignment_epoch: 0,
        metadata_version: 0,
        assignment: AssignmentView::default(),
        message: None,
    }
}

fn rejected(
    req: &HeartbeatRequest,
    timing: &Timing,
    status: HeartbeatStatus,
    needs_fresh_state: bool,
) -> Decision {
    Decision {
        response: rejected_response(req, timing, status),
        outcome: Outcome::Rejected { needs_fresh_state },
        signals: Signals::default(),
    }
}

/// A transition that would overflow an epoch: nothing is stored and the member is told RETRY (it keeps its
/// state and its lease is not renewed, so it stops reading when the lease runs out). Fails closed.
fn exhausted(req: &HeartbeatRequest, timing: &Timing) -> Decision {
    Decision {
        response: rejected_response(req, timing, HeartbeatStatus::Retry),
        outcome: Outcome::Rejected {
            needs_fresh_state: true,
        },
        signals: Signals {
            epochs_exhausted: true,
            ..Signals::default()
        },
    }
}

fn fenced_reply(g: &Group, member: &Member, req: &HeartbeatRequest, timing: &Timing) -> Decision {
    let empty = ShardSet::new();
    Decision {
        response: response(
            g,
            req,
            timing,
            HeartbeatStatus::FencedMemberEpoch,
            member.member_epoch,
            &empty,
            &empty,
        ),
        outcome: Outcome::Rejected {
            needs_fresh_state: true,
        },
        signals: Signals::default(),
    }
}

/// Join, rejoin after expiry/fencing/leave, or a restarted process reusing its id (a new incarnation: the old
/// incarnation's shards are held until its lease has certainly run out, then granted normally).
fn join(
    g: &mut Draft<'_>,
    req: &HeartbeatRequest,
    joiner: Option<&str>,
    now_ms: i64,
    timing: &Timing,
) -> Decision {
    let Ok(bump) = bumped(g) else {
        return exhausted(req, timing);
    };
    let held: ShardSet = g
        .members
        .get(&req.member_id)
        .filter(|old| old.state.is_live())
        .map(|old| old.held().collect())
        .unwrap_or_default();
    let Some(next) = g.write() else {
        return probe_write(req, timing, Signals::default());
    };
    if !held.is_empty() {
        next.holds.push(Hold {
            member_id: req.member_id.clone(),
            shards: held,
            until_ms: now_ms + timing.member_lease_ttl_ms + timing.hold_margin_ms,
            reason: "previous incarnation rejoined".to_owned(),
        });
    }
    let name = req
        .member_name
        .clone()
        .unwrap_or_else(|| req.member_id.clone());
    let mut m = Member::new(&req.member_id, &name, now_ms);
    m.owner = joiner.map(str::to_owned);
    next.members.insert(req.member_id.clone(), m);
    bump.apply(next);
    g.rebalance(Rebalance::Target, now_ms, timing);
    let next = g.written();
    let (epoch, version) = (next.assignment_epoch, next.metadata_version);
    if let Some(m) = next.members.get_mut(&req.member_id) {
        m.member_epoch = epoch;
        m.incarnation_epoch = epoch;
        m.join_metadata_version = version;
    }
    next.updated_at_ms = now_ms;
    let response = member_response(next, &req.member_id, req, timing);
    let mut t = Transition::default();
    t.renew.push(req.member_id.clone());
    Decision {
        response,
        outcome: Outcome::Write(Box::new(t)),
        signals: Signals::default(),
    }
}

/// Graceful leave (epoch -1): the member gives up its target; what it holds is released by its reports.
fn leave(
    g: &mut Draft<'_>,
    member: &Member,
    req: &HeartbeatRequest,
    now_ms: i64,
    timing: &Timing,
) -> Decision {
    let Ok(bump) = bumped(g) else {
        return exhausted(req, timing);
    };
    let mut m = member.clone();
    m.state = MemberState::Leaving;
    m.state_changed_at_ms = now_ms;
    m.member_epoch = -1;
    for s in std::mem::take(&mut m.assigned) {
        m.revoking.insert(s, -1);
    }
    for e in m.revoking.values_mut() {
        *e = -1;
    }
    let report = apply_report(&mut m, req, -1, true);
    let holding = !m.revoking.is_empty();
    let signals = Signals {
        rebalance_regression: report.regression,
        ..Signals::default()
    };
    let Some(next) = g.write() else {
        return probe_write(req, timing, signals);
    };
    next.members.insert(m.member_id.clone(), m);
    bump.apply(next);
    g.rebalance(Rebalance::Target, now_ms, timing);
    let next = g.written();
    next.updated_at_ms = now_ms;
    let empty = ShardSet::new();
    let response = response(next, req, timing, HeartbeatStatus::Ok, -1, &empty, &empty);
    let mut t = Transition::default();
    if holding {
        t.renew.push(req.member_id.clone());
    } else {
        t.remove.push(req.member_id.clone());
    }
    Decision {
        response,
        outcome: Outcome::Write(Box::new(t)),
        signals,
    }
}

/// What applying a report did to a member record.
#[derive(Debug, Default)]
struct ReportEffect {
    /// The member reported reading a shard it does not hold: it must be fenced.
    violation: bool,
    /// A shard was reported as being revoked although its release is already recorded.
    regression: bool,
}

/// Applies a member's report made at `epoch` (-1 for a leaving member). `current`: the member has seen every
/// response we sent it, so its owned set can be validated and shown.
fn apply_report(m: &mut Member, req: &HeartbeatRequest, epoch: i64, current: bool) -> ReportEffect {
    let owned: ShardSet = req.owned_shards.iter().map(|s| s.shard_index).collect();
    let reports: BTreeMap<u32, &rsc_protocol::wire::RevokingShardReport> = req
        .revoking_shards
        .iter()
        .map(|r| (r.shard.shard_index, r))
        .collect();
    let mut effect = ReportEffect::default();

    let revoking: Vec<(u32, i64)> = m.revoking.iter().map(|(&s, &e)| (s, e)).collect();
    for (s, revoked_at) in revoking {
        if epoch < revoked_at && epoch != -1 {
            continue; // the report predates the revocation: it cannot release the shard
        }
        let released = if owned.contains(&s) {
            false
        } else {
            reports.get(&s).is_none_or(|r| r.is_released())
        };
        if released {
            m.revoking.remove(&s);
            m.reported_revoking.remove(&s);
        } else if let Some(r) = reports.get(&s) {
            m.reported_revoking.insert(
                s,
                RevokeReport {
                    state: r.state,
                    in_flight: r.in_flight,
                },
            );
        }
    }
    if m.revoking.is_empty() {
        m.rebalance_deadline_ms = None;
    }
    if current {
        effect.violation = owned.iter().any(|s| !m.holds(*s));
        effect.regression = reports
            .iter()
            .any(|(s, r)| !r.is_released() && !m.holds(*s));
        if m.state == MemberState::Active {
            m.reported_owned = owned;
        }
    }
    effect
}

/// A heartbeat from the current incarnation of an active (or leaving, epoch -1) member.
fn accept(
    g: &mut Draft<'_>,
    member: &Member,
    req: &HeartbeatRequest,
    now_ms: i64,
    timing: &Timing,
    join_retry: bool,
) -> Decision {
    let leaving = member.state == MemberState::Leaving;
    let epoch = if join_retry {
        member.incarnation_epoch
    } else {
        req.member_epoch
    };
    let mut m = member.clone();
    let mut signals = Signals::default();

    if !leaving && epoch > member.member_epoch {
        // A member has seen a newer epoch than Redis holds: metadata rolled back.
        signals.metadata_regression = true;
        return sync_metadata(g, member, req, now_ms, timing, signals);
    }
    if req.metadata_version > g.metadata_version {
        signals.metadata_regression = true;
        return sync_metadata(g, member, req, now_ms, timing, signals);
    }

    let current = leaving || epoch == member.member_epoch;
    let effect = if join_retry {
        ReportEffect::default()
    } else {
        apply_report(&mut m, req, epoch, current)
    };
    signals.rebalance_regression = effect.regression;
    if !leaving && !join_retry && epoch >= m.incarnation_epoch {
        m.join_confirmed = true;
    }
    if let Some(name) = &req.member_name
        && !name.is_empty()
        && *name != m.member_name
    {
        m.member_name = name.clone();
    }

    if effect.violation {
        signals.fenced = true;
        return fence(g, member, req, now_ms, timing, signals);
    }

    if let Some(correction) = g.metadata_correction.clone() {
        return correction_round(g, &m, &correction, req, now_ms, timing, signals);
    }

    if m == *member {
        let response = if leaving {
            let empty = ShardSet::new();
            response(g, req, timing, HeartbeatStatus::Ok, -1, &empty, &empty)
        } else {
            member_response(g, &member.member_id, req, timing)
        };
        // A leave that already released everything has no lease left to renew (it was removed with the
        // last release): a retry after a lost answer gets the same OK, and nothing is stored.
        let outcome = if leaving && m.assigned.is_empty() && m.revoking.is_empty() {
            Outcome::Rejected {
                needs_fresh_state: true,
            }
        } else {
            Outcome::Steady
        };
        return Decision {
            response,
            outcome,
            signals,
        };
    }

    let holding = !m.revoking.is_empty() || !m.assigned.is_empty();
    let Some(next) = g.write() else {
        return probe_write(req, timing, signals);
    };
    next.members.insert(m.member_id.clone(), m);
    g.rebalance(Rebalance::Grants, now_ms, timing);
    let next = g.written();
    next.updated_at_ms = now_ms;
    let response = if leaving {
        let empty = ShardSet::new();
        response(next, req, timing, HeartbeatStatus::Ok, -1, &empty, &empty)
    } else {
        member_response(next, &req.member_id, req, timing)
    };
    let mut t = Transition::default();
    if leaving && !holding {
        t.remove.push(req.member_id.clone());
    } else {
        t.must_be_live.push(req.member_id.clone());
        t.renew.push(req.member_id.clone());
    }
    Decision {
        response,
        outcome: Outcome::Write(Box::new(t)),
        signals,
    }
}

/// Fences a member whose report shows it reading shards it does not hold.
fn fence(
    g: &mut Draft<'_>,
    member: &Member,
    req: &HeartbeatRequest,
    now_ms: i64,
    timing: &Timing,
    signals: Signals,
) -> Decision {
    let (Ok(fenced_epoch), Ok(bump)) = (fenced_epoch(g, member), bumped(g)) else {
        return exhausted(req, timing);
    };
    let Some(next) = g.write() else {
        return probe_write(req, timing, signals);
    };
    fence_member_at(
        next,
        &member.member_id,
        fenced_epoch,
        now_ms,
        timing,
        "ownership report outside its grants",
    );
    bump.apply(next);
    g.rebalance(Rebalance::Target, now_ms, timing);
    let next = g.written();
    next.updated_at_ms = now_ms;
    let fenced_epoch = next
        .members
        .get(&member.member_id)
        .map_or(0, |m| m.member_epoch);
    let empty = ShardSet::new();
    let response = response(
        next,
        req,
        timing,
        HeartbeatStatus::FencedMemberEpoch,
        fenced_epoch,
        &empty,
        &empty,
    );
    let mut t = Transition::default();
    t.remove.push(member.member_id.clone());
    Decision {
        response,
        outcome: Outcome::Write(Box::new(t)),
        signals,
    }
}

/// The epoch a fenced member is given: above the group epoch and above its own.
fn fenced_epoch(g: &Group, member: &Member) -> Result<i64, EpochOverflow> {
    Ok(incremented("groupEpoch", g.group_epoch)?
        .max(incremented("memberEpoch", member.member_epoch)?))
}

/// Marks a member FENCED and holds whatever it held until its last lease has certainly run out. Nothing
/// changes when its new epoch would overflow.
pub fn fence_member(
    g: &mut Group,
    member_id: &str,
    now_ms: i64,
    timing: &Timing,
    reason: &str,
) -> Result<(), EpochOverflow> {
    let Some(m) = g.members.get(member_id) else {
        return Ok(());
    };
    let epoch = fenced_epoch(g, m)?;
    fence_member_at(g, member_id, epoch, now_ms, timing, reason);
    Ok(())
}

/// [`fence_member`] with the new epoch already computed.
fn fence_member_at(
    g: &mut Group,
    member_id: &str,
    epoch: i64,
    now_ms: i64,
    timing: &Timing,
    reason: &str,
) {
    let Some(m) = g.members.get_mut(member_id) else {
        return;
    };
    let held: ShardSet = m.held().collect();
    if !held.is_empty() {
        g.holds.push(Hold {
            member_id: member_id.to_owned(),
            shards: held,
            until_ms: now_ms + timing.member_lease_ttl_ms + timing.hold_margin_ms,
            reason: reason.to_owned(),
        });
    }
    m.state = MemberState::Fenced;
    m.state_changed_at_ms = now_ms;
    m.member_epoch = epoch;
    m.assigned.clear();
    m.revoking.clear();
    m.reported_revoking.clear();
    m.rebalance_deadline_ms = None;
}

/// Opens (or extends) a metadata-correction round and asks the member to synchronise down.
fn sync_metadata(
    g: &mut Draft<'_>,
    member: &Member,
    req: &HeartbeatRequest,
    now_ms: i64,
    timing: &Timing,
    signals: Signals,
) -> Decision {
    let observed = req.metadata_version.max(g.metadata_version);
    let response = restricted_response(g, member, req, timing, HeartbeatStatus::SyncMetadata);
    // An open round that already covers what this member saw changes nothing.
    let covered = g
        .metadata_correction
        .as_ref()
        .is_some_and(|c| c.observed_metadata_version >= observed);
    if covered {
        return Decision {
            response,
            outcome: Outcome::Steady,
            signals,
        };
    }
    let Some(next) = g.write() else {
        return probe_write(req, timing, signals);
    };
    let target = next.metadata_version;
    let correction = next
        .metadata_correction
        .get_or_insert_with(|| MetadataCorrection {
            target_metadata_version: target,
            observed_metadata_version: observed,
            requested_at_ms: now_ms,
            updated_at_ms: now_ms,
            acknowledged_members: Default::default(),
        });
    correction.observed_metadata_version = correction.observed_metadata_version.max(observed);
    correction.updated_at_ms = now_ms;
    next.updated_at_ms = now_ms;
    let mut t = Transition::default();
    t.must_be_live.push(member.member_id.clone());
    t.renew.push(member.member_id.clone());
    Decision {
        response,
        outcome: Outcome::Write(Box::new(t)),
        signals,
    }
}

/// While a correction round is open, members keep only shards they already read; the round closes when
/// every active member has reported the current version and nothing is being revoked.
fn correction_round(
    g: &mut Draft<'_>,
    m: &Member,
    correction: &MetadataCorrection,
    req: &HeartbeatRequest,
    now_ms: i64,
    timing: &Timing,
    signals: Signals,
) -> Decision {
    let unchanged = g.members.get(&m.member_id) == Some(m);
    if req.metadata_version != g.metadata_version {
        let response = restricted_response(g, m, req, timing, HeartbeatStatus::SyncMetadata);
        let outcome = if unchanged {
            Outcome::Steady
        } else {
            write_member(g, m, now_ms)
        };
        return Decision {
            response,
            outcome,
            signals,
        };
    }
    let mut corr = correction.clone();
    corr.acknowledged_members.insert(m.member_id.clone());
    // The group as it would be with this member's record: judged without changing `g` yet.
    let with_m = |x: &'_ Member| -> bool { x.member_id == m.member_id };
    let members = || {
        g.members
            .values()
            .map(move |x| if with_m(x) { m } else { x })
    };
    let all_acknowledged = members()
        .filter(|x| x.state == MemberState::Active)
        .all(|x| corr.acknowledged_members.contains(&x.member_id));
    let nothing_revoking = members()
        .filter(|x| x.state.is_live())
        .all(|x| x.revoking.is_empty());
    if all_acknowledged && nothing_revoking {
        let Some(next) = g.write() else {
            return probe_write(req, timing, signals);
        };
        next.members.insert(m.member_id.clone(), m.clone());
        next.metadata_correction = None;
        g.rebalance(Rebalance::Grants, now_ms, timing);
        let next = g.written();
        next.updated_at_ms = now_ms;
        let response = member_response(next, &m.member_id, req, timing);
        let mut t = Transition::default();
        t.must_be_live.push(m.member_id.clone());
        t.renew.push(m.member_id.clone());
        return Decision {
            response,
            outcome: Outcome::Write(Box::new(t)),
            signals,
        };
    }
    let response = restricted_response(g, m, req, timing, HeartbeatStatus::RevokePending);
    if corr == *correction && unchanged {
        return Decision {
            response,
            outcome: Outcome::Steady,
            signals,
        };
    }
    corr.updated_at_ms = now_ms;
    let Some(next) = g.write() else {
        return probe_write(req, timing, signals);
    };
    next.members.insert(m.member_id.clone(), m.clone());
    next.metadata_correction = Some(corr);
    next.updated_at_ms = now_ms;
    let mut t = Transition::default();
    t.must_be_live.push(m.member_id.clone());
    t.renew.push(m.member_id.clone());
    Decision {
        response,
        outcome: Outcome::Write(Box::new(t)),
        signals,
    }
}

fn write_member(g: &mut Draft<'_>, m: &Member, now_ms: i64) -> Outcome {
    let Some(next) = g.write() else {
        return Outcome::Write(Box::default());
    };
    next.members.insert(m.member_id.clone(), m.clone());
    next.updated_at_ms = now_ms;
    let mut t = Transition::default();
    t.must_be_live.push(m.member_id.clone());
    t.renew.push(m.member_id.clone());
    Outcome::Write(Box::new(t))
}

/// Re-states an answer decided on an aggregate that later writes of the same commit changed (a batch's), in
/// terms of the aggregate committed: an OK to a member active there gets its committed assignment and epochs,
/// a restricted answer is restricted again on the committed record. Other answers (a leave, a fence, a
/// rejection) do not describe an assignment and are kept.
pub fn restate_on_committed(
    committed: &Group,
    req: &HeartbeatRequest,
    timing: &Timing,
    answer: &mut HeartbeatResponse,
) {
    let Some(m) = committed
        .members
        .get(&req.member_id)
        .filter(|m| m.state == MemberState::Active)
    else {
        return;
    };
    match answer.status {
        HeartbeatStatus::Ok => *answer = member_response(committed, &req.member_id, req, timing),
        HeartbeatStatus::SyncMetadata | HeartbeatStatus::RevokePending => {
            *answer = restricted_response(committed, m, req, timing, answer.status);
        }
        _ => {}
    }
}

/// SYNC_METADATA / REVOKE_PENDING payload: keep only shards already read that the member still holds.
fn restricted_response(
    g: &Group,
    m: &Member,
    req: &HeartbeatRequest,
    timing: &Timing,
    status: HeartbeatStatus,
) -> HeartbeatResponse {
    let owned: ShardSet = req.owned_shards.iter().map(|s| s.shard_index).collect();
    let assigned: ShardSet = owned.intersection(&m.assigned).copied().collect();
    let target = g.target_of(&m.member_id);
    let pending: ShardSet = target.difference(&assigned).copied().collect();
    response(g, req, timing, status, m.member_epoch, &assigned, &pending)
}
