//! rsc-coordinator: the coordinator server library — the runtime around the pure group state machine.
//!
//! - [`config`]: configuration (TOML + env + flags), validated at start-up; [`duration`] its durations.
//! - [`coordinator`]: the `Coordinator` (store, clock, cache) with `load` and `commit`.
//! - [`heartbeat`]: the hot path; `batch` writes a group's waiting transitions at once. [`admin`]: create/delete/get/routing. [`reconciler`]: time-driven work.
//! - [`monitoring`]: members, assignments, health. [`views`]: contract response shapes.
//! - [`reshard`]: online scale-out/in with drain, rollback and force-complete.
//! - [`metrics`]: Prometheus `/metrics`, kept current by a background task ([`metrics_refresh`]). [`inspect`]: consumption,
//!   offsets ([`offsets`]), migrations and durability views; [`messages`]: the message browser; [`grafana`]: the Grafana data routes' rows. [`durability`]: metadata-rollback suspicion,
//!   fail-closed mutations and the recreate repair.
//! - [`provision`]: shard streams and Redis consumer groups. [`leftovers`]: what a stream create does with
//!   the shard streams an earlier stream of its prefix left (`existingRecords`).
//! - [`domain_error`]: what operations fail with; [`error`]: the HTTP shape of a failure (the API maps one
//!   to the other).
//! - [`security`]: login, tokens, roles, scoped principals, audit records, rate limits.
//! - [`access`]: route access levels, shared by [`api`] (which declares them) and [`security`] (which enforces
//!   them).
//! - [`console`]: the web console's embedded page, scripts and styles (served at `/console`).
//! - [`api`]: the HTTP router built from the route table, and every handler. [`server`]: start-up and graceful shutdown.
#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::expect_used)]

pub mod access;
pub mod admin;
pub mod api;
pub mod cache;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod console;
pub mod coordinator;
pub mod domain_error;
pub mod durability;
pub mod duration;
pub mod error;
pub mod grafana;
pub mod group_lookup;
pub mod heartbeat;
pub mod http_server;
pub mod inspect;
pub mod leftovers;
pub mod messages;
pub mod metrics;
pub mod metrics_refresh;
pub mod monitoring;
pub mod offset_reset;
pub mod offsets;
pub mod provision;
pub mod reconciler;
pub mod reshard;
pub mod security;
pub mod server;
pub mod stats;
pub mod views;
