//! `[coordinator.store]`: where the coordinator's keys live and how group aggregates are written.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct StoreConfig {
    pub key_prefix: String,
    /// How a group's aggregate of 64 KiB or more is written: `lz4` (compressed, in its own key beside the
    /// hash, layoutVersion "3": about a tenth of the bytes, and none through Lua, so a small part of the Redis
    /// time per write) or `off` (plain JSON in the hash, as earlier versions wrote it and the only layout they
    /// read: use `off` while replicas of an earlier version still run against the same Redis). Every layout
    /// is read either way.
    pub aggregate_compression: AggregateCompression,
}

/// `coordinator.store.aggregate-compression`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AggregateCompression {
    #[default]
    Lz4,
    Off,
}

impl AggregateCompression {
    /// The store's setting.
    pub fn for_store(self) -> rsc_store::aggregate_codec::AggregateCompression {
        match self {
            AggregateCompression::Lz4 => rsc_store::aggregate_codec::AggregateCompression::Lz4,
            AggregateCompression::Off => rsc_store::aggregate_codec::AggregateCompression::Off,
        }
    }
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            key_prefix: "redis-stream:coord".to_owned(),
            aggregate_compression: AggregateCompression::default(),
        }
    }
}
