//! rsc-client: the Rust SDK of rsc, the Redis Stream Coordinator.
//!
//! Applications get two things, and keep message handling, retry, dead-lettering and idempotency:
//!
//! - a **managed consumer** ([`Consumer`]): N logical members that join a coordinator group, heartbeat,
//!   read only the shards they are entitled to (XREADGROUP under their member id), reclaim a previous
//!   owner's unacknowledged entries (XAUTOCLAIM) before new ones, hand over shards cleanly (DRAINING, then
//!   REVOKED), stop reading when their assignment lease runs out, and leave gracefully on shutdown;
//! - a **routed producer** ([`Producer`]): publishes each keyed record to the shard the contract's hash
//!   picks (`XADD … NOMKSTREAM`), with a routing cache that rides out coordinator outages for its lease.
//!
//! Both talk to the coordinator through a [`CoordinatorClient`] (several replica URLs with fail-over;
//! no auth, HTTP Basic, or login with token renewal).
//!
//! The managed consumer's protocol logic is a pure state machine, [`Membership`] (from the I/O-free
//! crate `rsc-member`, re-exported here with [`Applied`], [`LocalShard`], [`Outgoing`] and [`Moment`]): it
//! builds each heartbeat from the member's state, applies each answer, and judges the client lease by
//! instants the caller passes. Use it directly to drive a member over your own transport (as
//! `rsc bench heartbeat` does); the [`Consumer`] runs it for you.
//!
//! ```no_run
//! # async fn demo() -> Result<(), rsc_client::ClientError> {
//! use rsc_client::{Consumer, ConsumerConfig, CoordinatorClient, Credentials, Delivery, Producer, ProducerConfig};
//!
//! let coord = CoordinatorClient::builder(["http://127.0.0.1:8080"])
//!     .credentials(Some(Credentials::new("admin", "s3cret")))
//!     .build()?;
//! let producer = Producer::connect(coord.clone(), ProducerConfig::new("orders", "redis://127.0.0.1:6379")).await?;
//! producer.publish("order-123", &[("payload", "{\"total\":42}")]).await?;
//!
//! let consumer = Consumer::start(
//!     coord,
//!     ConsumerConfig::new("orders", "redis://127.0.0.1:6379").concurrency(3),
//!     |d: Delivery| async move {
//!         // … handle the entry, then acknowledge it:
//!         let _ = d.ack().await;
//!     },
//! )
//! .await?;
//! consumer.shutdown().await;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::unwrap_used, clippy::expect_used)]

pub mod admin;
pub mod auth;
pub mod consumer;
pub mod coordinator;
pub mod error;
pub mod identity;
pub mod producer;
pub(crate) mod quiesce;
pub mod redis_target;
pub(crate) mod routing;

pub use admin::{AdminClient, AdminError};
pub use auth::{Auth, Credentials};
pub use consumer::config::ConsumerConfig;
pub use consumer::delivery::Delivery;
pub use consumer::events::{ConsumerEvent, EventSink, MemberSnapshot, StopReason};
pub use consumer::{Consumer, Handler, ShutdownReport};
pub use coordinator::{CoordinatorClient, CoordinatorClientBuilder, CreateStream};
pub use error::ClientError;
pub use identity::default_member_id;
pub use producer::{Producer, ProducerConfig, ProducerStats, Published, Record, RetryPolicy};
pub use redis_target::{DataConn, RedisTarget, RedisTls};
/// The HTTP method of [`CoordinatorClient::send_json`].
pub use reqwest::Method;
pub use rsc_member::{Applied, LocalShard, Membership, Moment, Outgoing};
