//! The heartbeat decision procedure (coord/v1 contract, with the defects ARCHITECTURE.md lists fixed).
//!
//! `decide` is pure: given the group as last written, a validated request and the current time, it returns
//! the response and what must be persisted for that response to be true:
//! - `Outcome::Rejected`: nothing is stored (protocol errors, unknown or fenced members);
//! - `Outcome::Steady`: nothing in the aggregate changes; the caller renews the member's lease (and stores
//!   progress) in one round trip, conditional on the revision it decided on;
//! - `Outcome::Write`: a new aggregate to compare-and-set, with lease conditions and lease operations.
//!
//! Static members (`groupInstanceId`): a join claiming an instance id that another active member holds is
//! refused (`FENCED_INSTANCE_ID`); a join claiming a reserved one takes the reserved target
//! (`Reservation`); a leave with epoch -2 ("temporary") reserves the leaving member's target.
//!
//! Epochs: a request whose epoch lies in `incarnation_epoch..=member_epoch` comes from the current
//! incarnation and is always answered (a retry after a lost response is never fenced). Its report can only
//! release shards whose revocation it had already seen (revocation epoch ≤ request epoch).
//!
//! Split by concern: this file holds the entry points (`decide`, `probe`, `decide_in_place`) and the
//! types they return; [`Draft`] is in `draft.rs`, each transition (join, leave, accept, fence) in
//! `transitions.rs`, the metadata-correction round in `correction.rs`, response building in `respond.rs`, the
//! words of a non-OK answer (its `message`) in `explain.rs`, when a member waiting for a shard should come back
//! in `release_forecast.rs`.

mod correction;
mod draft;
pub mod explain;
pub mod release_forecast;
mod respond;
mod transitions;

pub use correction::restate_on_committed;
pub use draft::Draft;
pub use respond::{member_response, rejected_response};
pub use transitions::{anchor_rejoin_holds, awaits_confirmation, fence_member, reserve};

use respond::{fenced_reply, rejected};
use transitions::{accept, join, leave};

use crate::durability::Signals;
use crate::model::{Group, MemberState};
use crate::timing::Timing;
use rsc_protocol::wire::{HeartbeatRequest, HeartbeatResponse, HeartbeatStatus};
use rsc_protocol::{PROTOCOL_VERSION_MAX, PROTOCOL_VERSION_MIN};
use std::borrow::Cow;

/// What the caller must persist before sending the response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to store.
    Rejected {
        /// The answer depends on group state, so a caller deciding on a cached aggregate must reload and
        /// decide again before answering.
        needs_fresh_state: bool,
    },
    /// Renew the member's lease (only if still live) and store its progress; the aggregate is unchanged.
    Steady,
    /// Compare-and-set a new aggregate.
    Write(Box<Transition>),
}

/// A new aggregate plus the lease conditions and operations that must apply atomically with it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Transition {
    /// The aggregate to write (None while the caller has not filled it in).
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
    /// When known (a batch's write, [`crate::batch::Batch`]): every member whose `members` or
    /// `targetAssignments` entry may differ from the aggregate the transition was decided on; every other
    /// member's entries are equal to it, so a split write need not compare them. None: not known.
    pub changed_members: Option<std::collections::BTreeSet<String>>,
}

impl Transition {
    /// A transition (its aggregate filled in by the caller) that requires `member_id`'s lease to be live and
    /// renews it.
    pub fn renewing(member_id: &str) -> Self {
        Transition {
            must_be_live: vec![member_id.to_owned()],
            renew: vec![member_id.to_owned()],
            ..Transition::default()
        }
    }

    /// A transition to `group` with no lease condition or operation.
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

/// Who sends a heartbeat, as far as member ownership goes. A member incarnation records the principal that
/// joined it (`Member::owner`); a heartbeat or leave for it from another principal is refused, unless the
/// caller may act for any member (an ADMIN). Heartbeats served without authentication have no principal:
/// nothing is recorded and nothing is checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Caller<'a> {
    /// The authenticated principal (None: heartbeats served without authentication).
    pub principal: Option<&'a str>,
    /// Whether the principal may act for any member (an ADMIN).
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

/// A heartbeat decision: the answer, what must be stored before it is sent, and what it saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The answer to send once `outcome` is persisted.
    pub response: HeartbeatResponse,
    /// What to persist first.
    pub outcome: Outcome,
    /// Things worth counting, and the request's evidence of a rollback.
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
    // A temporary leave (epoch -2, static members) is a leave (-1) that also reserves the member's target.
    let leave_req;
    let (req, temporary) = if req.member_epoch == -2 {
        leave_req = HeartbeatRequest {
            member_epoch: -1,
            ..req.clone()
        };
        (&leave_req, true)
    } else {
        (req, false)
    };
    let unconfirmed = g
        .members
        .get(&req.member_id)
        .is_some_and(awaits_confirmation);
    let d = decide_existing(g, req, joiner, now_ms, timing, temporary);
    if unconfirmed
        && matches!(d.outcome, Outcome::Write(_))
        && !g
            .members
            .get(&req.member_id)
            .is_some_and(awaits_confirmation)
        && let Some(next) = g.write()
    {
        // The incarnation confirmed its join (or left, or was fenced) on a group that holds the join: its
        // previous incarnation's shards are held from this decision on, not only from the join's.
        anchor_rejoin_holds(next, &req.member_id, now_ms, timing);
    }
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
    temporary: bool,
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
        (-1, MemberState::Active) => leave(g, member, req, now_ms, timing, temporary),
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
    // -2 (a temporary leave) only from a static member: the contract's clients never send it.
    let bad_epoch =
        req.member_epoch < -2 || (req.member_epoch == -2 && req.group_instance_id.is_none());
    if req.member_id != path_member_id || bad_epoch {
        return Some(rejected(
            req,
            timing,
            HeartbeatStatus::InvalidRequest,
            false,
        ));
    }
    None
}
