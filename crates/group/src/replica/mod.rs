//! The replica core: what a coordinator replica does with a heartbeat, a queue of writes and a reconciler
//! pass, as sans-I/O state machines. They decide *which store operation comes next* and what its answer
//! means; the caller performs the operation and feeds the answer back. No tokio, no Redis, no clock.
//!
//! Two shells drive this same code: the coordinator (`crates/coordinator`: Redis through `rsc-store`, a
//! per-group lock, a shared cache) and the deterministic simulation (`tests/sim/replica.rs`: an in-memory
//! store, a simulated network, pauses and crashes between any two steps). So what the simulation checks is
//! the retry loop, group commit and reconciler step that run in production, not an imitation of them.
//!
//! - [`heartbeat`]: one heartbeat request, from reading the group to its answer (decide, confirm a
//!   rejection, record rollback evidence, renew, write, retry at most [`MAX_CAS_ATTEMPTS`] times);
//! - [`commit`]: group commit — queued writes decided in sequence on one aggregate, one compare-and-set,
//!   and what each request is told after it;
//! - [`reconcile`]: one reconciler pass over one group (tick on fresh state, compare-and-set, retry);
//! - [`reshard`]: scaling a stream, an operator's rollback or force-complete, and the reconciler's pass over
//!   a stream (provision, switch, guard, bring groups in line, drain evidence, complete).

pub mod commit;
pub mod heartbeat;
pub mod reconcile;
pub mod reshard;

use crate::model::Group;

/// How many times a transition is decided again after losing a compare-and-set before giving up.
pub const MAX_CAS_ATTEMPTS: usize = 5;

/// An aggregate as a replica holds it: the group and the store revision it was read or written at. The
/// coordinator's cache entry and the simulation's both are one.
pub trait Snapshot: Clone {
    /// The group.
    fn group(&self) -> &Group;
    /// The store revision it was read or written at (the base of the next compare-and-set).
    fn revision(&self) -> u64;
}

/// What a compare-and-set of a transition came to, as the core needs to know it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitResult {
    /// Written at the new revision.
    Written,
    /// Someone else changed the group first: decide again on fresh state.
    Conflict,
    /// A time or lease condition did not hold: reconcile the group's time-driven state, then decide again.
    ConditionFailed {
        /// The member whose lease condition failed (None: the time condition).
        member: Option<String>,
    },
    /// The store could not be reached (or answered an error): nothing is known to be written.
    Unavailable,
}
