//! rsc-scripts: the Lua scripts and Redis commands that both the coordinator's store (`rsc-store`) and the
//! SDK (`rsc-client`) send, so the SDK does not depend on the server's store crate.
//!
//! Guarded publish appends to a shard stream only when the producer's routing is not older than the
//! shard's routing boundary ([`guarded_append`], `lua/guarded_append.lua`); the coordinator raises that
//! boundary with the same switch-point step (`lua/switch_point.lua`, [`SWITCH_POINT`]), and the SDK
//! consumer reads it after every read ([`read_boundary`]). This crate only builds the commands and decodes
//! their replies; sending them is the caller's (the store's connection, or the SDK's own data connection).
#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::expect_used)]

mod boundary;
mod error;
mod guarded_append;

pub use boundary::{BoundaryFields, read_boundary};
pub use error::ScriptError;
pub use guarded_append::{AppendReply, guarded_append};

/// The switch-point step (`lua/switch_point.lua`): a Lua function prepended to every script that raises a
/// shard's routing boundary, the SDK's guarded append and the coordinator's raise of the boundary at a
/// switch (rsc-store's `raise_routing_floor.lua`), so both record the switch point the same way.
pub const SWITCH_POINT: &str = include_str!("lua/switch_point.lua");
