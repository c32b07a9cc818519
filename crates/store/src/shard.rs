//! A shard of a stream named by its ids: the stream prefix and the shard index. The data plane's shard stream
//! (`<streamPrefix>:<shard>`, the coord/v1 contract) and its routing boundary are named by the store from
//! these ids; the coordinator passes a [`Shard`], never the key names (issue #34).

use crate::keyspace::Keyspace;

/// Shard `index` of stream `stream_prefix`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shard {
    /// The stream's prefix (its name in the API).
    pub stream_prefix: String,
    /// The shard's index, from 0.
    pub index: u32,
}

impl Shard {
    /// Shard `index` of stream `stream_prefix`.
    pub fn new(stream_prefix: impl Into<String>, index: u32) -> Self {
        Self {
            stream_prefix: stream_prefix.into(),
            index,
        }
    }

    /// The shard's stream key (`<streamPrefix>:<index>`).
    pub(crate) fn stream_key(&self) -> String {
        Keyspace::shard_stream(&self.stream_prefix, self.index)
    }

    /// The shard's routing boundary key.
    pub(crate) fn routing_key(&self) -> String {
        Keyspace::shard_routing(&self.stream_prefix, self.index)
    }
}
