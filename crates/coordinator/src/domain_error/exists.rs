//! 409 `STREAM_PREFIX_ALREADY_EXISTS`: the stream, or Redis keys of its shards, exist already.

/// What exists already.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamExists {
    /// The stream has live groups.
    Live {
        /// The stream prefix.
        stream: String,
        /// Its live groups.
        groups: Vec<String>,
    },
    /// A create found Redis keys of the stream that an earlier stream (or someone else) left.
    Leftovers {
        /// The stream prefix.
        stream: String,
        /// The keys found.
        keys: Vec<String>,
    },
    /// A scale-out's new shard keys exist and were not created by the coordinator.
    ForeignShardKeys {
        /// The stream prefix.
        stream: String,
        /// The keys found.
        keys: Vec<String>,
        /// The largest target shard count that creates none of them.
        max_target: u32,
    },
}

impl std::fmt::Display for StreamExists {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamExists::Live { stream, groups } => write!(
                f,
                "stream {stream:?} already exists (groups: {})",
                groups.join(", ")
            ),
            StreamExists::Leftovers { stream, keys } => write!(
                f,
                "Redis keys of stream {stream:?} already exist (left by an earlier stream of this prefix, or \
                 written by someone else): {}. Choose what to do with their records: \"existingRecords\": \
                 \"ADOPT\" keeps them and consumes what was not read, \"PURGE\" deletes them (rsc apply \
                 --existing-records adopt|purge; Terraform: existing_records = \"ADOPT\" or \"PURGE\" on \
                 rsc_stream); or choose another stream prefix",
                listed(keys)
            ),
            StreamExists::ForeignShardKeys {
                stream,
                keys,
                max_target,
            } => write!(
                f,
                "Redis keys of stream {stream:?} already exist, were not created by the coordinator and would be \
                 adopted as new shards (and deleted by a later scale-in): {}; delete them, or choose a target \
                 shard count of at most {max_target}",
                keys.join(", ")
            ),
        }
    }
}

/// Keys for a message: the first ten, then how many more.
pub(super) fn listed(keys: &[String]) -> String {
    if keys.len() <= 10 {
        return keys.join(", ");
    }
    format!("{} and {} more", keys[..10].join(", "), keys.len() - 10)
}

#[cfg(test)]
mod tests {
    use super::listed;

    #[test]
    fn long_key_lists_are_cut() {
        let keys: Vec<String> = (0..12).map(|i| format!("k{i}")).collect();
        assert!(listed(&keys).ends_with("k9 and 2 more"));
    }
}
