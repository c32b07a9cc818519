//! Records an earlier stream of a prefix left in Redis, and what creating the prefix again does with them.
//!
//! Deleting a stream (its last group) keeps its shard streams: creating the prefix again finds them, and the
//! request's `existingRecords` decides (`rsc_protocol::existing_records`). [`decide`] is the pure rule;
//! [`find`] and [`carry_out`] are its thin Redis shell. `ADOPT` keeps the shard streams with their records and
//! Redis consumer groups and deletes only their routing boundaries (they belong to the old stream's routing
//! versions, and the new stream starts its own); `PURGE` deletes the shard streams, their boundaries and a
//! plain key named like the prefix.

use crate::domain_error::{BadRequest, CoordError, StreamExists, Unavailable};
use rsc_protocol::existing_records::ExistingRecords;
use rsc_protocol::validate::MAX_SHARD_COUNT;
use rsc_store::{Keyspace, Store, StoreError};

/// Shard indexes probed per round trip; probing stops after a block with no shard stream in it.
const PROBE_BLOCK: u32 = 256;

/// What is left of earlier streams of a prefix.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Leftovers {
    /// A key named exactly like the prefix (not a shard: someone else's data, or a typo).
    pub prefix_key: bool,
    /// Shard indexes whose stream `<prefix>:<i>` exists, ascending.
    pub shards: Vec<u32>,
}

impl Leftovers {
    pub fn is_empty(&self) -> bool {
        !self.prefix_key && self.shards.is_empty()
    }

    fn keys(&self, prefix: &str) -> Vec<String> {
        let mut keys: Vec<String> = self
            .prefix_key
            .then(|| prefix.to_owned())
            .into_iter()
            .collect();
        keys.extend(
            self.shards
                .iter()
                .map(|s| Keyspace::shard_stream(prefix, *s)),
        );
        keys
    }
}

/// What a create does with the leftovers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Nothing is left: create as usual.
    Create,
    /// Keep these shard streams; delete these routing boundaries first.
    Adopt { routing_keys: Vec<String> },
    /// Delete these keys first.
    Purge { keys: Vec<String> },
}

/// The rule: a refusal names the keys and every way on.
pub fn decide(
    prefix: &str,
    shard_count: u32,
    choice: ExistingRecords,
    found: &Leftovers,
) -> Result<Decision, CoordError> {
    if found.is_empty() {
        return Ok(Decision::Create);
    }
    let keys = found.keys(prefix);
    match choice {
        ExistingRecords::Refuse => Err(StreamExists::Leftovers {
            stream: prefix.to_owned(),
            keys,
        }
        .into()),
        ExistingRecords::Adopt => {
            let beyond: Vec<u32> = found
                .shards
                .iter()
                .copied()
                .filter(|s| *s >= shard_count)
                .collect();
            if let Some(last) = beyond.last() {
                return Err(BadRequest::AdoptStrands {
                    stream: prefix.to_owned(),
                    keys: beyond
                        .iter()
                        .map(|s| Keyspace::shard_stream(prefix, *s))
                        .collect(),
                    shard_count,
                    needed: last + 1,
                }
                .into());
            }
            Ok(Decision::Adopt {
                routing_keys: found
                    .shards
                    .iter()
                    .map(|s| Keyspace::shard_routing(prefix, *s))
                    .collect(),
            })
        }
        ExistingRecords::Purge => {
            let mut all = keys;
            all.extend(
                found
                    .shards
                    .iter()
                    .map(|s| Keyspace::shard_routing(prefix, *s)),
            );
            Ok(Decision::Purge { keys: all })
        }
    }
}

/// Probes Redis for `prefix` and its shard streams: `0..shard_count` always, and further blocks while the
/// last one held a shard stream (`ADOPT` and `PURGE` must see every shard an earlier, larger stream left).
pub async fn find(store: &Store, prefix: &str, shard_count: u32) -> Result<Leftovers, StoreError> {
    let mut found = Leftovers {
        prefix_key: store.keys_exist(&[prefix.to_owned()]).await?[0],
        shards: Vec::new(),
    };
    let mut start: u32 = 0;
    loop {
        let end = start
            .saturating_add(PROBE_BLOCK.max(shard_count.saturating_sub(start)))
            .min(MAX_SHARD_COUNT);
        let keys: Vec<String> = (start..end)
            .map(|i| Keyspace::shard_stream(prefix, i))
            .collect();
        let exists = store.keys_exist(&keys).await?;
        let before = found.shards.len();
        found
            .shards
            .extend((start..end).zip(exists).filter(|(_, e)| *e).map(|(i, _)| i));
        if found.shards.len() == before || end >= MAX_SHARD_COUNT {
            return Ok(found);
        }
        start = end;
    }
}

/// Carries out a decision before the stream is provisioned; logs what it deleted.
pub async fn carry_out(store: &Store, prefix: &str, decision: &Decision) -> Result<(), CoordError> {
    let unavailable = |e: StoreError| CoordError::from(Unavailable::step(&e));
    match decision {
        Decision::Create => {}
        Decision::Adopt { routing_keys } => {
            store.delete_keys(routing_keys).await.map_err(unavailable)?;
            tracing::info!(
                stream = prefix,
                shards = routing_keys.len(),
                "adopting the shard streams an earlier stream left"
            );
        }
        Decision::Purge { keys } => {
            let deleted = store.delete_keys(keys).await.map_err(unavailable)?;
            tracing::info!(
                stream = prefix,
                deleted,
                "purged the keys an earlier stream left"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn left(shards: &[u32]) -> Leftovers {
        Leftovers {
            prefix_key: false,
            shards: shards.to_vec(),
        }
    }

    #[test]
    fn nothing_left_creates_whatever_the_choice() {
        for c in [
            ExistingRecords::Refuse,
            ExistingRecords::Adopt,
            ExistingRecords::Purge,
        ] {
            assert_eq!(
                decide("o", 2, c, &Leftovers::default()).unwrap(),
                Decision::Create
            );
        }
    }

    #[test]
    fn a_refusal_names_the_keys_and_every_way_on() {
        let e = decide("o", 2, ExistingRecords::Refuse, &left(&[0, 1])).unwrap_err();
        let CoordError::StreamExists(_) = &e else {
            panic!("not a STREAM_PREFIX_ALREADY_EXISTS: {e:?}")
        };
        let m = e.message();
        for part in [
            "o:0, o:1",
            "ADOPT",
            "PURGE",
            "--existing-records",
            "existing_records",
        ] {
            assert!(m.contains(part), "{part} missing from {m}");
        }
    }

    #[test]
    fn adopt_resets_the_boundaries_and_refuses_to_strand_shards() {
        let d = decide("o", 2, ExistingRecords::Adopt, &left(&[0, 1])).unwrap();
        assert_eq!(
            d,
            Decision::Adopt {
                routing_keys: vec!["o:0:{o:0}:routing".into(), "o:1:{o:1}:routing".into()]
            }
        );
        let e = decide("o", 2, ExistingRecords::Adopt, &left(&[0, 1, 2, 3])).unwrap_err();
        let m = e.message();
        assert!(
            m.contains("o:2, o:3") && m.contains("initialShardCount 4"),
            "{m}"
        );
    }

    #[test]
    fn purge_deletes_streams_boundaries_and_the_plain_key() {
        let found = Leftovers {
            prefix_key: true,
            shards: vec![0, 5],
        };
        let Decision::Purge { keys } = decide("o", 2, ExistingRecords::Purge, &found).unwrap()
        else {
            panic!("not a purge")
        };
        assert_eq!(
            keys,
            ["o", "o:0", "o:5", "o:0:{o:0}:routing", "o:5:{o:5}:routing"]
        );
    }
}
