//! Records an earlier stream of a prefix left in Redis, and what creating the prefix again does with them.
//!
//! Deleting a stream (its last group) keeps its shard streams: creating the prefix again finds them, and the
//! request's `existingRecords` decides (`rsc_protocol::existing_records`). [`decide`] is the pure rule;
//! [`find`] and [`carry_out`] are its thin Redis shell. `ADOPT` keeps the shard streams with their records and
//! Redis consumer groups and deletes only their routing boundaries (they belong to the old stream's routing
//! versions, and the new stream starts its own); `PURGE` deletes the shard streams, their boundaries and a
//! plain key named like the prefix.

use crate::domain_error::{BadRequest, CoordError, StreamExists, Unavailable};
use crate::runtime::shown_keys;
use rsc_protocol::existing_records::ExistingRecords;
use rsc_protocol::validate::MAX_SHARD_COUNT;
use rsc_store::{DataKey, Shard, Store, StoreError};

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

    /// The leftovers as the store names them: the plain key, then the shard streams.
    fn data_keys(&self, prefix: &str) -> Vec<DataKey> {
        let mut keys: Vec<DataKey> = self
            .prefix_key
            .then(|| DataKey::Prefix(prefix.to_owned()))
            .into_iter()
            .collect();
        keys.extend(
            self.shards
                .iter()
                .map(|s| DataKey::Stream(Shard::new(prefix, *s))),
        );
        keys
    }

    /// The leftovers' key names as a refusal shows them, in the same order (the plain key is named like the
    /// prefix).
    fn shown(&self, prefix: &str) -> Vec<String> {
        let mut keys: Vec<String> = self
            .prefix_key
            .then(|| prefix.to_owned())
            .into_iter()
            .collect();
        keys.extend(shown_shards(prefix, &self.shards));
        keys
    }
}

/// The stream keys of `prefix`'s `shards`, as messages show them.
fn shown_shards<'a>(prefix: &'a str, shards: &'a [u32]) -> impl Iterator<Item = String> + 'a {
    shards
        .iter()
        .map(move |s| shown_keys::shard_stream(&Shard::new(prefix, *s)))
}

/// What a create does with the leftovers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Nothing is left: create as usual.
    Create,
    /// Keep the shard streams; delete these routing boundaries of theirs first.
    Adopt { boundaries: Vec<DataKey> },
    /// Delete these keys first.
    Purge { keys: Vec<DataKey> },
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
    match choice {
        ExistingRecords::Refuse => Err(StreamExists::Leftovers {
            stream: prefix.to_owned(),
            keys: found.shown(prefix),
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
                    keys: shown_shards(prefix, &beyond).collect(),
                    shard_count,
                    needed: last + 1,
                }
                .into());
            }
            Ok(Decision::Adopt {
                boundaries: routing_of(prefix, &found.shards),
            })
        }
        ExistingRecords::Purge => {
            let mut all = found.data_keys(prefix);
            all.extend(routing_of(prefix, &found.shards));
            Ok(Decision::Purge { keys: all })
        }
    }
}

/// The routing boundaries of `prefix`'s `shards`.
fn routing_of(prefix: &str, shards: &[u32]) -> Vec<DataKey> {
    shards
        .iter()
        .map(|s| DataKey::Routing(Shard::new(prefix, *s)))
        .collect()
}

/// Probes Redis for `prefix` and its shard streams: `0..shard_count` always, and further blocks while the
/// last one held a shard stream (`ADOPT` and `PURGE` must see every shard an earlier, larger stream left).
pub async fn find(store: &Store, prefix: &str, shard_count: u32) -> Result<Leftovers, StoreError> {
    let mut found = Leftovers {
        prefix_key: store.prefix_key_exists(prefix).await?,
        shards: Vec::new(),
    };
    let mut start: u32 = 0;
    loop {
        let end = start
            .saturating_add(PROBE_BLOCK.max(shard_count.saturating_sub(start)))
            .min(MAX_SHARD_COUNT);
        let shards: Vec<Shard> = (start..end).map(|i| Shard::new(prefix, i)).collect();
        let exists = store.shards_exist(&shards).await?;
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
        Decision::Adopt { boundaries } => {
            store
                .delete_data_keys(boundaries)
                .await
                .map_err(unavailable)?;
            tracing::info!(
                stream = prefix,
                shards = boundaries.len(),
                "adopting the shard streams an earlier stream left"
            );
        }
        Decision::Purge { keys } => {
            let deleted = store.delete_data_keys(keys).await.map_err(unavailable)?;
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
                boundaries: vec![
                    DataKey::Routing(Shard::new("o", 0)),
                    DataKey::Routing(Shard::new("o", 1))
                ]
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
        let (stream, routing) = (
            |i| DataKey::Stream(Shard::new("o", i)),
            |i| DataKey::Routing(Shard::new("o", i)),
        );
        assert_eq!(
            keys,
            [
                DataKey::Prefix("o".into()),
                stream(0),
                stream(5),
                routing(0),
                routing(5)
            ]
        );
    }
}
