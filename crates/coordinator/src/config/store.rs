//! `[coordinator.store]`: where the coordinator's keys live and how group aggregates are written (whole or
//! split, compressed or not).

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
    /// The `layoutVersion` a compare-and-set writes a group's aggregate in: `4` (split: a header and one field
    /// per member entry, so a write carries only what changed; read only by this version and later) or `3`
    /// (whole: one document, `aggregate-compression` deciding between "1" and "3", which earlier versions
    /// read). Set `3` while replicas of an earlier version still run against the same Redis, and `4` once
    /// every replica runs this one. Every layout is read either way.
    pub layout: u8,
}

/// The whole-document layout (`coordinator.store.layout = 3`).
pub const LAYOUT_WHOLE: u8 = 3;
/// The split layout (`coordinator.store.layout = 4`), the default.
pub const LAYOUT_SPLIT: u8 = 4;

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
            layout: LAYOUT_SPLIT,
        }
    }
}
