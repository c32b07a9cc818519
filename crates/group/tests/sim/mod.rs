//! The pieces of the deterministic simulation (`tests/simulation.rs`): one concept per file.
//!
//! - [`rng`]: the seeded PRNG every random choice comes from;
//! - [`store`]: Redis as the state machine sees it (CAS, the steady renewal script, leases by Redis time, the
//!   stream record); [`shards`]: the shard streams (entries, the group's delivery and pending entries,
//!   routing boundaries);
//! - [`net`]: the network between members and coordinator replicas (delay, drop, duplicate, reorder);
//! - [`replica`]: a coordinator replica (cached aggregate, skewed clock, pauses, crashes, reconciler);
//!   [`resharder`]: its resharding flows, performed one step at a time;
//! - [`client`]: a consumer that follows the protocol as the SDK does (one call at a time, fail-over);
//! - [`producer`], [`data`]: producers appending keyed records through guarded publish, consumers reading
//!   them; [`ledger`]: per-key order, no double read, nothing lost;
//! - [`operator`]: the operator's scales, rollbacks and force-completes, and the switches they make;
//! - [`checks`]: ARCHITECTURE.md's invariants 1–6 as checks on writes, responses and what clients read;
//! - [`summary`]: what the scenarios exercised;
//! - [`world`]: the scenario: everything above, the fault schedule, operator actions, convergence.

pub mod checks;
pub mod client;
pub mod data;
pub mod ledger;
pub mod net;
pub mod operator;
pub mod producer;
pub mod replica;
pub mod resharder;
pub mod rng;
pub mod shards;
pub mod store;
pub mod summary;
pub mod world;

use rsc_group::timing::Timing;

/// The state machine's timing in the simulation (short, so a scenario covers many leases).
pub const TIMING: Timing = Timing {
    heartbeat_interval_ms: 100,
    member_lease_ttl_ms: 500,
    rebalance_timeout_ms: 1_500,
    stale_member_retention_ms: 5_000,
    hold_margin_ms: 50,
    static_member_grace_ms: 1_000,
};
/// Client-side lease: shorter than the member lease TTL by a safety margin (invariant 4).
pub const CLIENT_LEASE_MS: i64 = 400;
/// Timeout of one heartbeat attempt, as the SDK's default: a third of the client lease.
pub const HEARTBEAT_TIMEOUT_MS: i64 = CLIENT_LEASE_MS / 3;
/// One simulation step.
pub const STEP_MS: i64 = 10;

/// `SIM_TRACE=1`: print every message a client applies or drops (for re-running one seed).
pub fn tracing() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("SIM_TRACE").is_ok_and(|v| v == "1"))
}
