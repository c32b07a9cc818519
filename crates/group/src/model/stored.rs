//! The aggregate split for storage (the store's `layoutVersion` "4"): a small *header* document (everything but
//! the per-member maps) and one entry per member in each per-member map, so that a write carries only what it
//! changed.
//!
//! A group of 10,000 members is megabytes of JSON, but a transition touches a handful of members. Stored whole,
//! every write re-encodes (and compresses) all of it; split, a write is the header (epochs, state, holds,
//! migrations: a few KB) plus the entries of the members whose record or target changed, and the entries of
//! members that went away are deleted. The store applies such a write atomically under the same revision
//! compare-and-set as a whole document, so a reader sees either the old set of entries or the new one.
//!
//! The split is exact: [`Group::from_split`] of the header and every entry gives back the group that was split
//! ([`Group::split_changes`] is tested to give, applied to the stored entries of `base`, the entries of `next`),
//! and the deterministic simulation stores every aggregate this way and checks after every write that what it
//! loads is what was written.

use std::collections::{BTreeMap, BTreeSet};

use super::{AggregateError, Group, Member, ShardSet};

/// The per-member maps stored one entry per member, in the order the store lists them: `members` (each
/// [`Member`]) and `targetAssignments` (each member's target [`ShardSet`]). Their names are the aggregate's
/// JSON field names.
pub const SPLIT_PARTS: [&str; 2] = [PART_MEMBERS, PART_TARGETS];
/// The `members` map's part name.
pub const PART_MEMBERS: &str = "members";
/// The `targetAssignments` map's part name.
pub const PART_TARGETS: &str = "targetAssignments";

/// One entry of a split aggregate: a key of one of the [`SPLIT_PARTS`], and its JSON value (`None`: delete it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitEntry {
    /// Which per-member map: [`PART_MEMBERS`] or [`PART_TARGETS`].
    pub part: &'static str,
    /// The member id the entry is of.
    pub key: String,
    /// The entry's JSON value (a [`Member`] or a [`ShardSet`]); `None` deletes the entry.
    pub json: Option<String>,
}

/// What to store for one write in the split layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitWrite {
    /// The aggregate without its [`SPLIT_PARTS`] (a JSON object).
    pub header: String,
    /// Entries to set or delete. With `full`, every entry of the group, and nothing else is kept.
    pub entries: Vec<SplitEntry>,
    /// The write replaces every entry (the group was stored whole before, or its entries are not known).
    pub full: bool,
}

impl Group {
    /// The header document: the aggregate without its [`SPLIT_PARTS`]. Borrows the maps out and puts them
    /// back, so nothing of a big group is copied.
    pub fn header_json(&mut self) -> String {
        let members = std::mem::take(&mut self.members);
        let targets = std::mem::take(&mut self.target_assignments);
        let json = serde_json::to_value(&*self)
            .map(|mut v| {
                if let Some(object) = v.as_object_mut() {
                    for part in SPLIT_PARTS {
                        object.remove(part);
                    }
                }
                v.to_string()
            })
            .unwrap_or_default();
        self.members = members;
        self.target_assignments = targets;
        json
    }

    /// Every entry of this group: the write that stores it in the split layout from nothing.
    pub fn split_full(&mut self) -> SplitWrite {
        let mut entries = Vec::with_capacity(self.members.len() + self.target_assignments.len());
        entries.extend(self.members.iter().map(|(id, m)| member_entry(id, Some(m))));
        entries.extend(
            self.target_assignments
                .iter()
                .map(|(id, t)| target_entry(id, Some(t))),
        );
        SplitWrite {
            header: self.header_json(),
            entries,
            full: true,
        }
    }

    /// The entries that differ between `base` (what is stored) and this group: a member or target that is new
    /// or changed is set, one that is gone is deleted, the rest are not written. Compares records, so its cost
    /// is a pass over both maps without encoding anything that did not change.
    pub fn split_changes(&mut self, base: &Group) -> SplitWrite {
        let mut entries = Vec::new();
        changed(&base.members, &self.members, &mut entries, member_entry);
        changed(
            &base.target_assignments,
            &self.target_assignments,
            &mut entries,
            target_entry,
        );
        SplitWrite {
            header: self.header_json(),
            entries,
            full: false,
        }
    }

    /// [`Group::split_changes`] when the members whose entries may differ from `base` are known (`among`, as
    /// a batch notes them): only their entries are compared, so the cost follows the change, not the group.
    /// Every member not in `among` must have the same entries in both groups.
    pub fn split_changes_among(&mut self, base: &Group, among: &BTreeSet<String>) -> SplitWrite {
        let mut entries = Vec::new();
        changed_among(
            &base.members,
            &self.members,
            among,
            &mut entries,
            member_entry,
        );
        changed_among(
            &base.target_assignments,
            &self.target_assignments,
            among,
            &mut entries,
            target_entry,
        );
        SplitWrite {
            header: self.header_json(),
            entries,
            full: false,
        }
    }

    /// A group from its header document and its entries (part, key, JSON), as [`Group::split_full`] or a
    /// sequence of writes stored them. Refuses an unknown part, a malformed entry and an unknown schema, as
    /// [`Group::from_json`] does for a whole document.
    pub fn from_split<'a>(
        header: &str,
        entries: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>,
    ) -> Result<Group, AggregateError> {
        let mut document: serde_json::Value = serde_json::from_str(header)
            .map_err(|e| AggregateError::Malformed(format!("header: {e}")))?;
        let Some(object) = document.as_object_mut() else {
            return Err(AggregateError::Malformed(
                "the header of a split aggregate is not a JSON object".into(),
            ));
        };
        for part in SPLIT_PARTS {
            if object
                .insert(
                    part.to_owned(),
                    serde_json::Value::Object(Default::default()),
                )
                .is_some()
            {
                return Err(AggregateError::Malformed(format!(
                    "the header of a split aggregate holds its {part} part"
                )));
            }
        }
        let mut group = Group::from_json(&document.to_string())?;
        for (part, key, json) in entries {
            let malformed = |e: serde_json::Error| {
                AggregateError::Malformed(format!("{part} entry {key}: {e}"))
            };
            match part {
                PART_MEMBERS => {
                    let member: Member = serde_json::from_str(json).map_err(malformed)?;
                    group.members.insert(key.to_owned(), member);
                }
                PART_TARGETS => {
                    let target: ShardSet = serde_json::from_str(json).map_err(malformed)?;
                    group.target_assignments.insert(key.to_owned(), target);
                }
                other => {
                    return Err(AggregateError::Malformed(format!(
                        "unknown part {other:?} of a split aggregate"
                    )));
                }
            }
        }
        Ok(group)
    }
}

fn member_entry(id: &str, m: Option<&Member>) -> SplitEntry {
    SplitEntry {
        part: PART_MEMBERS,
        key: id.to_owned(),
        json: m.map(|m| serde_json::to_string(m).unwrap_or_default()),
    }
}

fn target_entry(id: &str, t: Option<&ShardSet>) -> SplitEntry {
    SplitEntry {
        part: PART_TARGETS,
        key: id.to_owned(),
        json: t.map(|t| serde_json::to_string(t).unwrap_or_default()),
    }
}

/// Appends an entry for every key of `next` whose value differs from `base`'s, and a deletion for every key of
/// `base` that `next` lacks. Both maps are walked once, side by side, in key order (no lookup per key).
fn changed<V: PartialEq>(
    base: &BTreeMap<String, V>,
    next: &BTreeMap<String, V>,
    out: &mut Vec<SplitEntry>,
    entry: fn(&str, Option<&V>) -> SplitEntry,
) {
    let mut old = base.iter().peekable();
    for (id, value) in next {
        while let Some((gone, _)) = old.next_if(|(k, _)| *k < id) {
            out.push(entry(gone, None));
        }
        match old.next_if(|(k, _)| *k == id) {
            Some((_, before)) if before == value => {}
            _ => out.push(entry(id, Some(value))),
        }
    }
    out.extend(old.map(|(gone, _)| entry(gone, None)));
}

/// [`changed`] over the keys in `among` only, in key order.
fn changed_among<V: PartialEq>(
    base: &BTreeMap<String, V>,
    next: &BTreeMap<String, V>,
    among: &BTreeSet<String>,
    out: &mut Vec<SplitEntry>,
    entry: fn(&str, Option<&V>) -> SplitEntry,
) {
    for id in among {
        match (base.get(id), next.get(id)) {
            (before, Some(value)) if before != Some(value) => out.push(entry(id, Some(value))),
            (Some(_), None) => out.push(entry(id, None)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::MemberState;

    fn group(members: usize) -> Group {
        let mut g = Group::new("orders", "billing", 8, 1_000, "life");
        for i in 0..members {
            let id = format!("m-{i}");
            let mut m = Member::new(&id, "worker", 1_000);
            m.assigned.insert(i as u32 % 8);
            g.members.insert(id.clone(), m);
            g.target_assignments
                .insert(id, ShardSet::from([i as u32 % 8]));
        }
        g
    }

    /// Applies a split write to a stored map of entries, as the store does.
    fn apply(stored: &mut BTreeMap<(String, String), String>, write: &SplitWrite) {
        if write.full {
            stored.clear();
        }
        for e in &write.entries {
            let k = (e.part.to_owned(), e.key.clone());
            match &e.json {
                Some(json) => stored.insert(k, json.clone()),
                None => stored.remove(&k),
            };
        }
    }

    fn load(header: &str, stored: &BTreeMap<(String, String), String>) -> Group {
        Group::from_split(
            header,
            stored
                .iter()
                .map(|((p, k), j)| (p.as_str(), k.as_str(), j.as_str())),
        )
        .expect("loads")
    }

    #[test]
    fn a_full_split_loads_back_as_the_same_group_and_its_header_has_no_member() {
        let mut g = group(5);
        let write = g.split_full();
        assert!(!write.header.contains("m-1"), "{}", write.header);
        assert_eq!(write.entries.len(), 10);
        let mut stored = BTreeMap::new();
        apply(&mut stored, &write);
        assert_eq!(load(&write.header, &stored), g);
        // An empty group splits into a header alone.
        let mut empty = group(0);
        let write = empty.split_full();
        assert!(write.entries.is_empty());
        assert_eq!(load(&write.header, &BTreeMap::new()), empty);
    }

    #[test]
    fn changes_write_only_the_members_that_changed_and_delete_the_departed() {
        let mut base = group(100);
        let mut stored = BTreeMap::new();
        apply(&mut stored, &base.split_full());

        let mut next = base.clone();
        next.group_epoch += 1;
        next.members.get_mut("m-3").expect("m-3").state = MemberState::Leaving;
        next.members.remove("m-7");
        next.target_assignments.remove("m-7");
        next.target_assignments
            .insert("m-9".into(), ShardSet::from([1, 2]));
        let joiner = Member::new("m-new", "worker", 2_000);
        next.members.insert("m-new".into(), joiner);

        let write = next.split_changes(&base);
        assert!(!write.full);
        let mut keys: Vec<(&str, &str, bool)> = write
            .entries
            .iter()
            .map(|e| (e.part, e.key.as_str(), e.json.is_some()))
            .collect();
        keys.sort();
        assert_eq!(
            keys,
            vec![
                ("members", "m-3", true),
                ("members", "m-7", false),
                ("members", "m-new", true),
                ("targetAssignments", "m-7", false),
                ("targetAssignments", "m-9", true),
            ]
        );
        apply(&mut stored, &write);
        assert_eq!(load(&write.header, &stored), next);
        // Told which members may have changed (a superset), the same entries come out.
        let among: BTreeSet<String> = ["m-3", "m-7", "m-9", "m-new", "m-11", "m-nobody"]
            .map(String::from)
            .into();
        let mut told = next.split_changes_among(&base, &among);
        let mut all = next.split_changes(&base);
        let key = |e: &SplitEntry| (e.part, e.key.clone());
        told.entries.sort_by_key(key);
        all.entries.sort_by_key(key);
        assert_eq!(told, all);
        // Nothing changed: no entry at all.
        assert!(base.clone().split_changes(&base).entries.is_empty());
        let _ = base.header_json();
    }

    #[test]
    fn bad_entries_and_unknown_parts_are_refused() {
        let mut g = group(1);
        let header = g.header_json();
        for entry in [
            ("members", "m-0", "{\"not\":\"a member\"}"),
            ("targetAssignments", "m-0", "[\"x\"]"),
            ("holds", "m-0", "[]"),
        ] {
            assert!(matches!(
                Group::from_split(&header, [entry]),
                Err(AggregateError::Malformed(_))
            ));
        }
        assert!(matches!(
            Group::from_split("{\"schemaVersion\":9}", []),
            Err(AggregateError::UnknownSchema(_))
        ));
        assert!(matches!(
            Group::from_split(&g.to_json(), []),
            Err(AggregateError::Malformed(_))
        ));
        assert!(matches!(
            Group::from_split("[1]", []),
            Err(AggregateError::Malformed(_))
        ));
    }
}
