//! rsc-protocol: everything two parties of the coord/v1 contract must agree on, with no I/O.
//!
//! - [`wire`]: the HTTP/JSON request and response types (camelCase, shard ids as objects).
//! - [`errors`]: the error catalogue (`errorCode` → HTTP status) and the error body.
//! - [`routing`]: the producer routing hash (MurmurHash3 x86_32 with the rejection step).
//! - [`slot`]: the Redis Cluster slot of a key (CRC16/XMODEM with hash tags).
//! - [`existing_records`]: what a stream create does with records an earlier stream of the prefix left.
//! - [`ordering`]: per-key order across a scale: the old shards a new shard's keys come from.
//! - [`names`]: Redis key naming for shard streams and coordinator metadata.
//! - [`stream_id`]: Redis stream entry ids as numbers, ordered as Redis orders them.
//! - [`validate`]: identifier and shard-count validation with field-naming errors.
//! - [`bounds`]: the ranges of request fields and parameters, shared by the validators and the OpenAPI document.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::unwrap_used, clippy::expect_used)]

pub mod bounds;
pub mod errors;
pub mod existing_records;
pub mod names;
pub mod ordering;
pub mod routing;
pub mod slot;
pub mod stream_id;
pub mod validate;
pub mod wire;

/// Lowest coordination protocol version this build speaks.
pub const PROTOCOL_VERSION_MIN: i64 = 1;
/// Highest coordination protocol version this build speaks.
pub const PROTOCOL_VERSION_MAX: i64 = 1;
