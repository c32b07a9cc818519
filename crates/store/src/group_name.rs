//! A group's ids, `(streamPrefix, consumerGroup)`: what the coordinator hands the store to name a group.
//!
//! The store's methods on a group take its [`GroupName`] and name its keys themselves (through the
//! [`crate::Keyspace`]); no caller passes a key string for a group.

/// Identifies a group: `(streamPrefix, consumerGroup)`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupName {
    /// The stream prefix of the group's stream.
    pub stream_prefix: String,
    /// The consumer group's name.
    pub consumer_group: String,
}

impl GroupName {
    /// Group `g` of stream `p`.
    pub fn new(p: &str, g: &str) -> Self {
        GroupName {
            stream_prefix: p.to_owned(),
            consumer_group: g.to_owned(),
        }
    }
}

/// `prefix/group`, as logs and messages name a group.
impl std::fmt::Display for GroupName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.stream_prefix, self.consumer_group)
    }
}
