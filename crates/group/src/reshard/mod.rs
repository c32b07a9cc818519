//! Resharding at the stream level, pure: the decisions the coordinator's resharding flows
//! (`replica::reshard`) take between two store steps, on the stream record, a group and the Redis evidence
//! the flows read. No I/O: each function takes what was read and returns what to write (or what it means).
//!
//! - [`sync`]: bringing a group in line with its stream record (adopt, rollback, force-complete, the
//!   routing version) and the other changes a flow makes to a group ([`sync::GroupChange`]);
//! - [`evidence`]: when Redis shows a removed shard drained, or a parent consumed up to its switch point;
//! - [`record`]: the stream record's transitions (record a scale, switch routing, switch points, end,
//!   complete, forget retired keys) and the routing boundaries a switch raises;
//! - [`end`]: whether an operator's rollback or force-complete proceeds, repeats or is refused.

pub mod end;
pub mod evidence;
pub mod record;
pub mod sync;
