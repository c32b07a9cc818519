//! rsc-coordinator: the coordinator server library — the runtime around the pure group state machine.
//!
//! - [`config`]: configuration (TOML + env + flags), validated at start-up.
//! - [`coordinator`]: the `Coordinator` (store, clock, cache) with `load` and `commit`.
//! - [`heartbeat`]: the hot path. [`admin`]: create/delete/get/routing. [`reconciler`]: time-driven work.
//! - [`monitoring`]: members, assignments, health. [`views`]: contract response shapes.
//! - [`provision`]: shard streams and Redis consumer groups.
//! - [`api`]: the HTTP router built from the route table. [`server`]: start-up and graceful shutdown.

pub mod admin;
pub mod api;
pub mod cache;
pub mod clock;
pub mod config;
pub mod coordinator;
pub mod error;
pub mod heartbeat;
pub mod monitoring;
pub mod provision;
pub mod reconciler;
pub mod server;
pub mod stats;
pub mod views;
