//! Test support for rsc: real `redis-server` processes, standalone and clustered; real `rsc serve`
//! processes ([`RscProcess`]); a loopback proxy for network faults ([`LoopbackProxy`]); free ports.
//!
//! rsc's store, API and SDK tests run against real Redis rather than mocks, so that scripts,
//! hash slots, restarts and persistence behave exactly as in production. This crate starts such
//! servers (also with TLS, on certificates made for the test: [`TlsRedis`]) on free 127.0.0.1 ports with private temp directories and cleans them up on drop, and
//! reads Redis' own command counters for tests that pin down how many round trips an operation
//! costs. It is test-only code: it panics with a clear message (and the server log) on failure,
//! and it never skips silently when `redis-server` is missing.
// Test support: a failed expectation panics the test that called it, so unwrap/expect are allowed here.
#![forbid(unsafe_code)]

mod cluster;
mod cluster_ops;
mod ports;
mod proxy;
mod resp;
mod rsc;
mod server;
mod stats;
mod tls;
mod watchdog;

pub use cluster::{RedisCluster, RedisClusterBuilder};
pub use cluster_ops::SlotMigration;
pub use ports::free_port;
pub use proxy::LoopbackProxy;
pub use rsc::{RscBuilder, RscProcess, healthy};
pub use server::{RedisServer, RedisServerBuilder};
pub use stats::{command_calls, reset_stats};
pub use tls::{TlsCerts, TlsRedis};
