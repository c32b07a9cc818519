//! A data-plane key of a stream prefix named by its ids, for the calls that mix kinds: what creating a stream
//! again finds left of an earlier one and deletes (`existingRecords` `ADOPT`/`PURGE`). The store names each
//! key itself; the coordinator passes these, never the key names (issue #34).

use crate::shard::Shard;

/// One key of the data plane of a stream prefix.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DataKey {
    /// A plain key named exactly like the stream prefix (not a shard: someone else's data, or a typo).
    Prefix(String),
    /// A shard's stream (`<streamPrefix>:<index>`).
    Stream(Shard),
    /// The routing boundary beside a shard's stream.
    Routing(Shard),
}

impl DataKey {
    /// The key's name in Redis.
    pub(crate) fn name(&self) -> String {
        match self {
            DataKey::Prefix(prefix) => prefix.clone(),
            DataKey::Stream(shard) => shard.stream_key(),
            DataKey::Routing(shard) => shard.routing_key(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_names_its_key() {
        let names: Vec<String> = [
            DataKey::Prefix("o".into()),
            DataKey::Stream(Shard::new("o", 5)),
            DataKey::Routing(Shard::new("o", 5)),
        ]
        .iter()
        .map(DataKey::name)
        .collect();
        assert_eq!(names, ["o", "o:5", "o:5:{o:5}:routing"]);
    }
}
