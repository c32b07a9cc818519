//! 400s of the other requests: creating a stream or group, a heartbeat's progress, the durability repairs,
//! the offsets listing.

/// What is wrong with a create, heartbeat, durability or inspection request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadRequest {
    /// A stream prefix that cannot also name the stream's first group.
    PrefixNotAGroup {
        /// The stream prefix.
        stream: String,
    },
    /// A further group asking for another shard count than its stream has.
    ShardCountMismatch {
        /// The stream prefix.
        stream: String,
        /// The stream's shard count.
        count: u32,
    },
    /// `existingRecords: ADOPT` would leave shard streams beyond the shard count unread.
    AdoptStrands {
        /// The stream prefix.
        stream: String,
        /// The shard streams beyond the count.
        keys: Vec<String>,
        /// The shard count asked for.
        shard_count: u32,
        /// The shard count that adopts them all.
        needed: u32,
    },
    /// A heartbeat reports progress for a shard the group does not have.
    ProgressShardUnknown {
        /// The shard.
        shard: u32,
        /// The stream prefix.
        stream: String,
        /// The consumer group.
        group: String,
        /// The group's shards are below this.
        bound: u32,
    },
    /// A heartbeat reports progress for a shard twice.
    ProgressShardTwice {
        /// The shard.
        shard: u32,
    },
    /// The offsets listing of a group with more shards than it lists.
    TooManyShardsToList {
        /// The group's shards.
        shards: usize,
        /// The most it lists.
        max: usize,
    },
    /// The describe of a stream with more shards than it lists.
    TooManyShardsToDescribe {
        /// The stream prefix.
        stream: String,
        /// The stream's shards.
        shards: usize,
        /// The most it lists.
        max: usize,
    },
    /// A dismiss of a group that is not suspected.
    NotSuspected {
        /// The stream prefix.
        stream: String,
        /// The consumer group.
        group: String,
    },
    /// A recreate without `shardCount`.
    ShardCountRequired,
    /// A recreate of a healthy group.
    NotRecreatable {
        /// The stream prefix.
        stream: String,
        /// The consumer group.
        group: String,
    },
    /// `expectedUpdatedAt` is neither an instant nor epoch milliseconds.
    ExpectedUpdatedAt {
        /// The value given, as JSON.
        given: String,
    },
}

impl std::fmt::Display for BadRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadRequest::PrefixNotAGroup { stream } => write!(
                f,
                "streamPrefix: {stream:?} cannot name the stream's default consumer group (':' is not allowed \
                 there); create the stream's groups with POST /coord/v1/streams/{{p}}/groups/{{g}}"
            ),
            BadRequest::ShardCountMismatch { stream, count } => write!(
                f,
                "initialShardCount: stream {stream:?} already has {count} shards (the shard count belongs to the \
                 stream); omit initialShardCount or pass {count}"
            ),
            BadRequest::AdoptStrands {
                stream,
                keys,
                shard_count,
                needed,
            } => write!(
                f,
                "existingRecords: ADOPT would leave shard streams {} of stream {stream:?} outside the \
                 {shard_count} shard(s) asked for, with their records unread; ask for initialShardCount {needed} \
                 to adopt them all, or PURGE",
                super::exists::listed(keys)
            ),
            BadRequest::ProgressShardUnknown {
                shard,
                stream,
                group,
                bound,
            } => write!(
                f,
                "shardProgress names shard {shard}, which group {stream}/{group} does not have (its shards are \
                 0..{bound}); report progress only for shards you were assigned"
            ),
            BadRequest::ProgressShardTwice { shard } => write!(
                f,
                "shardProgress names shard {shard} twice; report each shard once"
            ),
            BadRequest::TooManyShardsToList { shards, max } => write!(
                f,
                "the group has {shards} shards; offsets are listed for at most {max} — use the shard_* metrics \
                 instead"
            ),
            BadRequest::TooManyShardsToDescribe {
                stream,
                shards,
                max,
            } => write!(
                f,
                "stream {stream:?} has {shards} shards; describe lists at most {max}"
            ),
            BadRequest::NotSuspected { stream, group } => write!(
                f,
                "group {stream}/{group} is not suspected of a metadata rollback; there is nothing to dismiss"
            ),
            BadRequest::ShardCountRequired => f.write_str(
                "shardCount: required — state the shard count the new lifecycle starts with",
            ),
            BadRequest::NotRecreatable { stream, group } => write!(
                f,
                "group {stream}/{group} is not suspected of a metadata rollback and its metadata is present; \
                 recreate is only for repairing a suspected or lost group (use DELETE and create for a healthy \
                 one)"
            ),
            BadRequest::ExpectedUpdatedAt { given } => write!(
                f,
                "expectedUpdatedAt: {given} is not an ISO-8601 instant (the suspicion's updatedAt as the group's \
                 metadataDurability shows it) or epoch milliseconds"
            ),
        }
    }
}
