//! What `rsc restore` checks in a backup's content before it writes anything, beyond the file's checksum:
//! every group and stream record within the ranges the API enforces (epochs and versions at most 2^53 − 1,
//! shard counts and indexes within `MAX_SHARD_COUNT`, valid names that match the file's), every group's
//! invariants (no shard held twice, targets naming active members), and every index entry naming a group
//! the file holds (or one still being created). Pure: the restore reads the file, then asks this.

use rsc_group::invariants;
use rsc_group::model::Group;
use rsc_group::stream::StreamRecord;
use rsc_protocol::validate::{self, MAX_EPOCH, MAX_SHARD_COUNT};
use rsc_store::Keyspace;
use rsc_store::{IndexEntry, IndexState};
use std::collections::BTreeSet;

use super::file::{Content, SavedGroup, SavedHash};

/// The first thing wrong with `content` under key prefix `kp`, as a sentence naming the key and field.
pub fn check_content(kp: &str, content: &Content) -> Result<(), String> {
    for s in &content.streams {
        check_stream(kp, s).map_err(|e| format!("stream record {}: {e}", s.key))?;
    }
    for g in &content.groups {
        check_group(kp, g).map_err(|e| format!("group {}: {e}", g.key))?;
    }
    let groups: BTreeSet<&str> = content.groups.iter().map(|g| g.key.as_str()).collect();
    for e in &content.index {
        check_index_entry(kp, &e.key, &e.value, &groups)
            .map_err(|why| format!("index entry {}: {why}", e.key))?;
    }
    Ok(())
}

fn epoch(field: &str, v: i64) -> Result<(), String> {
    if (0..=MAX_EPOCH).contains(&v) {
        Ok(())
    } else {
        Err(format!("{field} {v} is outside 0..={MAX_EPOCH}"))
    }
}

fn count(field: &str, n: u32, min: u32) -> Result<(), String> {
    if (min..=MAX_SHARD_COUNT).contains(&n) {
        Ok(())
    } else {
        Err(format!("{field} {n} is outside {min}..={MAX_SHARD_COUNT}"))
    }
}

fn shards<'a>(field: &str, set: impl IntoIterator<Item = &'a u32>) -> Result<(), String> {
    match set.into_iter().find(|s| **s >= MAX_SHARD_COUNT) {
        Some(s) => Err(format!(
            "{field} names shard {s}, beyond the largest shard count {MAX_SHARD_COUNT}"
        )),
        None => Ok(()),
    }
}

fn check_stream(kp: &str, s: &SavedHash) -> Result<(), String> {
    validate::validate_stream_prefix(&s.stream_prefix).map_err(|e| format!("{e:?}"))?;
    let r = StreamRecord::from_json(&s.document).map_err(|e| e.to_string())?;
    if r.stream_prefix != s.stream_prefix {
        return Err(format!(
            "the document is of stream {:?}, the file names {:?}",
            r.stream_prefix, s.stream_prefix
        ));
    }
    if s.key != Keyspace::new(kp).stream_record(&s.stream_prefix) {
        return Err("the key is not the stream record's key".into());
    }
    epoch("revision", i64::try_from(s.revision).unwrap_or(i64::MAX))?;
    epoch("routingVersion", r.routing_version)?;
    count("shardCount", r.shard_count, 0)?;
    if let Some(p) = r.provisioned_shard_count {
        count("provisionedShardCount", p, 0)?;
    }
    for m in r.active_migration.iter().chain(&r.history) {
        count("migration fromShardCount", m.from_shard_count, 0)?;
        count("migration toShardCount", m.to_shard_count, 0)?;
        shards("migration switchPoints", m.switch_points.keys())?;
    }
    Ok(())
}

fn check_group(kp: &str, saved: &SavedGroup) -> Result<(), String> {
    validate::validate_stream_prefix(&saved.stream_prefix)
        .and_then(|()| validate::validate_consumer_group(&saved.consumer_group))
        .map_err(|e| format!("{e:?}"))?;
    let g = Group::from_json(&saved.document).map_err(|e| e.to_string())?;
    if g.stream_prefix != saved.stream_prefix || g.consumer_group != saved.consumer_group {
        return Err(format!(
            "the document is of group {}/{}, the file names {}/{}",
            g.stream_prefix, g.consumer_group, saved.stream_prefix, saved.consumer_group
        ));
    }
    if saved.key
        != Keyspace::new(kp)
            .group(&saved.stream_prefix, &saved.consumer_group)
            .metadata
    {
        return Err("the key is not the group's metadata key".into());
    }
    epoch(
        "revision",
        i64::try_from(saved.revision).unwrap_or(i64::MAX),
    )?;
    epoch("groupEpoch", g.group_epoch)?;
    epoch("metadataVersion", g.metadata_version)?;
    epoch("assignmentEpoch", g.assignment_epoch)?;
    epoch("routingVersion", g.routing_version)?;
    count("shardCount", g.shard_count, 0)?;
    shards("drainingShards", &g.draining_shards)?;
    shards("orderingGates", g.ordering_gates.keys())?;
    shards("orderingSwitchPoints", g.ordering_switch_points.keys())?;
    for m in &g.migrations {
        count("migration fromShardCount", m.from_shard_count, 0)?;
        count("migration toShardCount", m.to_shard_count, 0)?;
    }
    for (id, m) in &g.members {
        if *id != m.member_id {
            return Err(format!(
                "member entry {id:?} holds member {:?}",
                m.member_id
            ));
        }
        validate::validate_member_id(id).map_err(|e| format!("member {id:?}: {e:?}"))?;
        let at = |field: &str| format!("member {id:?} {field}");
        epoch(&at("memberEpoch"), m.member_epoch)?;
        epoch(&at("incarnationEpoch"), m.incarnation_epoch)?;
        epoch(&at("joinMetadataVersion"), m.join_metadata_version)?;
        shards(&at("assigned"), &m.assigned)?;
        shards(&at("revoking"), m.revoking.keys())?;
        for e in m.revoking.values() {
            epoch(&at("revoking epoch"), *e)?;
        }
    }
    for (id, set) in &g.target_assignments {
        shards(&format!("target of {id:?}"), set)?;
    }
    for h in &g.holds {
        shards(&format!("hold of {:?}", h.member_id), &h.shards)?;
    }
    for r in &g.static_reservations {
        shards(
            &format!("reservation of {:?}", r.group_instance_id),
            &r.shards,
        )?;
    }
    if let Some(v) = invariants::check(&g).first() {
        return Err(format!("breaks an invariant: {v}"));
    }
    Ok(())
}

fn check_index_entry(
    kp: &str,
    key: &str,
    value: &str,
    groups: &BTreeSet<&str>,
) -> Result<(), String> {
    let entry: IndexEntry = serde_json::from_str(value).map_err(|e| format!("unreadable ({e})"))?;
    if key
        != Keyspace::new(kp)
            .group(&entry.stream_prefix, &entry.consumer_group)
            .metadata
    {
        return Err(format!(
            "names group {}/{}, whose key is another",
            entry.stream_prefix, entry.consumer_group
        ));
    }
    match entry.state {
        IndexState::Live if !groups.contains(key) => Err(
            "a LIVE entry for a group the backup does not hold (a phantom: the coordinator would fail \
             closed on it)"
                .into(),
        ),
        IndexState::Creating | IndexState::Live => Ok(()),
        IndexState::Unknown => Err("a state this rsc does not know".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backup::file::SavedIndexEntry;

    const KP: &str = "kp";

    fn group(shards: u32) -> SavedGroup {
        let g = Group::new("s", "g", shards, 1_000, "life-1");
        SavedGroup {
            key: Keyspace::new(KP).group("s", "g").metadata,
            stream_prefix: "s".into(),
            consumer_group: "g".into(),
            revision: 3,
            updated_at: "t".into(),
            document: g.to_json(),
        }
    }

    fn index(state: &str) -> SavedIndexEntry {
        SavedIndexEntry {
            key: Keyspace::new(KP).group("s", "g").metadata,
            value: format!(r#"{{"streamPrefix":"s","consumerGroup":"g","state":"{state}"}}"#),
        }
    }

    #[test]
    fn a_sound_backup_passes_and_forged_ranges_do_not() {
        let ok = Content {
            streams: vec![],
            groups: vec![group(4)],
            index: vec![index("LIVE")],
        };
        assert_eq!(check_content(KP, &ok), Ok(()));

        let mut g = Group::from_json(&group(4).document).unwrap();
        g.group_epoch = i64::MAX;
        let mut forged = ok.clone();
        forged.groups[0].document = g.to_json();
        let e = check_content(KP, &forged).unwrap_err();
        assert!(e.contains("groupEpoch 9223372036854775807"), "{e}");

        let mut huge = ok.clone();
        huge.groups[0] = group(100_000);
        let e = check_content(KP, &huge).unwrap_err();
        assert!(e.contains("shardCount 100000"), "{e}");

        let phantom = Content {
            groups: vec![],
            ..ok.clone()
        };
        let e = check_content(KP, &phantom).unwrap_err();
        assert!(e.contains("phantom"), "{e}");
        let creating = Content {
            groups: vec![],
            index: vec![index("CREATING")],
            streams: vec![],
        };
        assert_eq!(check_content(KP, &creating), Ok(()));

        let mut renamed = ok;
        renamed.groups[0].consumer_group = "other".into();
        assert!(check_content(KP, &renamed).is_err());
    }
}
