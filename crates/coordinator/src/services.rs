//! The coordinator's services: what a request does once the edge has authenticated and parsed it. Each
//! loads groups through [`group_lookup`], decides with the pure core (`rsc-group`) and commits through the
//! runtime's `Coordinator`.
//!
//! - [`heartbeat`]: the hot path; its `batch` writes a group's waiting transitions at once.
//! - [`admin`]: create/delete/get/routing. [`provision`]: shard streams and Redis consumer groups;
//!   [`leftovers`]: what a stream create does with the shard streams an earlier stream of its prefix left.
//! - [`reshard`]: online scale-out/in with drain, rollback and force-complete.
//! - [`monitoring`]: members, assignments, health. [`inspect`]: consumption, offsets ([`offsets`]),
//!   migrations and durability views; [`offset_reset`]: moving a group's position; [`messages`]: the
//!   message browser and record search; [`describe`]: a stream as a whole (shards, groups side by side,
//!   rates from the runtime's history).
//! - [`durability`]: metadata-rollback suspicion, fail-closed mutations and the recreate repair.

pub mod admin;
pub mod describe;
pub mod durability;
pub mod group_lookup;
pub mod heartbeat;
pub mod inspect;
pub mod leftovers;
pub mod messages;
pub mod monitoring;
pub mod offset_reset;
pub mod offsets;
pub mod provision;
pub mod reshard;
