//! rsc-group: the consumer-group state machine, pure and deterministic.
//!
//! No I/O, no clock reads, no async, no randomness: time comes in as an argument, and every function returns
//! the next state instead of performing effects. The coordinator persists what these functions decide; the
//! simulator and property tests drive them directly.
//!
//! - [`model`]: the aggregate (members, epochs, grants, revocations, holds) and every record type it stores
//!   (migrations, the rollback suspicion), with its read-only queries (an ordered stream's gates).
//! - [`assign`]: the sticky, balanced target assignment.
//! - [`rebalance`]: revoke-before-assign — the only place shards are granted (invariant 1).
//! - [`heartbeat`]: the heartbeat decision procedure. [`batch`]: several decided transitions as one write.
//! - [`tick`]: time-driven transitions (lease expiry, rebalance timeout, holds, pruning).
//! - [`migration`]: resharding as a group sees it (adopt, drain, rollback, force-complete).
//! - [`ordering`]: per-key order across a scale: gates on child shards until their parents drained.
//! - [`stream`]: the stream record that owns the shard count and routing.
//! - [`reshard`]: resharding at the stream level (the stream record's transitions, bringing a group in line
//!   with it, drain evidence, an operator's end of a migration), pure.
//! - [`durability`]: suspecting a metadata rollback, failing closed, and the repairs (new lifecycle).
//! - [`replica`]: what a coordinator replica does with a heartbeat, a queue of writes and a reconciler pass,
//!   as sans-I/O state machines that the coordinator and the simulation both drive.
//! - [`reset_hold`]: the hold an operator's offset reset keeps on the shards it moves (no grant meanwhile).
//! - [`ownership`]: which replica runs a group's background work (rendezvous hashing over live replicas).
//! - [`deadline`]: when a group next needs the reconciler, from its aggregate and earliest lease end.
//! - [`invariants`]: checks of the invariants, used by tests and the simulator.
//! - [`timing`]: the durations the machine is parameterised with.
//!
//! Modules import one way: every rule depends on [`model`], which depends on nothing here; no two
//! modules import each other (`crates/coordinator/tests/module_graph.rs` checks every crate).
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::unwrap_used, clippy::expect_used)]

pub mod assign;
pub mod batch;
pub mod deadline;
pub mod durability;
pub mod heartbeat;
pub mod invariants;
pub mod migration;
pub mod model;
pub mod ordering;
pub mod ownership;
pub mod quiesce;
pub mod rebalance;
pub mod replica;
pub mod reset_hold;
pub mod reshard;
pub mod stream;
pub mod tick;
pub mod timing;
