//! rsc-member: one consumer member's side of the coord/v1 heartbeat protocol, as a pure state machine.
//!
//! [`Membership`] is the one model of the member protocol in the tree: the Rust SDK's managed consumer
//! runs it (re-exported as `rsc_client::Membership`), and so do `rsc bench heartbeat`, the coordinator's
//! integration tests and the group simulation's consumers. It has no I/O, no async, no randomness and
//! no clock: the caller sends what [`Membership::request`] builds, hands back what the coordinator
//! answered ([`Membership::on_response`]), and passes the instants that judge the client lease — a
//! [`std::time::Instant`] in a process, a simulated time ([`Moment`]) in a deterministic simulation.
//!
//! It depends on `rsc-protocol` only, so the I/O-free simulation (`rsc-group`'s tests) can use it
//! without tokio or an HTTP client in its build.
#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::expect_used)]

mod fences;
mod membership;
mod moment;

pub use fences::{ReadFences, beyond};
pub use membership::{Applied, LocalShard, Membership, Outgoing};
pub use moment::Moment;
