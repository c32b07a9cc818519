//! rsc-coordinator: the coordinator server library — the runtime around the pure group state machine.
//! The modules are grouped by layer; read them from the outside in:
//!
//! - [`http`]: the edge — the router built from the route table, every handler, the console; domain errors
//!   ([`domain_error`]) become HTTP answers only here.
//! - [`security`]: login, tokens, roles, scoped principals, route access levels, audit records, rate limits.
//! - [`services`]: what each request does (heartbeat, admin, resharding, monitoring, offsets, messages,
//!   durability).
//! - [`background`]: the reconciler and the metrics refresh — work driven by time, not by requests.
//! - [`runtime`]: the `Coordinator` (store, clock, cache) with `load` and `commit`, and the cluster topology.
//! - [`observability`]: Prometheus metrics, counters and the Grafana rows.
//! - [`config`]: configuration (TOML + env + flags), validated at start-up.
//! - [`server`]: start-up and graceful shutdown; [`duration`]: the `Dur` values every part's configuration uses.
#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::expect_used)]

pub mod background;
pub mod config;
pub mod domain_error;
pub mod duration;
pub mod http;
pub mod observability;
pub mod runtime;
pub mod security;
pub mod server;
pub mod services;
