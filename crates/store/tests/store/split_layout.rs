//! The split layout ("4"): the first split write of a hash replaces its whole document by a header and one field
//! per entry; later writes set and delete only the entries they name, under the same revision compare-and-set;
//! a write of changes alone onto a hash that is not split yet is refused as a conflict; a whole write (a replica
//! still on layout 3, a rolling downgrade) onto a split hash removes every entry; a refused split write changes
//! nothing; loads assemble one document; backup reads it and restore writes it back whole; damage fails closed.
//! The script passes entries to Redis a few thousand per call: writes of more than that (set, deleted, and
//! removed by a whole write) are applied whole.

use std::collections::BTreeMap;

use rsc_store::{
    CasOutcome, CasWrite, RestoreOutcome, RestoredHash, SplitAggregate, SplitEntry, Store,
    StoreError, aggregate_key,
};

use crate::fixtures::{TestGroup, create_group, group, raw, snapshot};

on_both_topologies!(
    a_split_write_stores_a_header_and_entries_and_loads_as_one_document,
    later_writes_carry_only_their_changes,
    changes_alone_onto_a_hash_that_is_not_split_are_a_conflict,
    a_whole_write_onto_a_split_hash_removes_every_entry,
    a_refused_split_write_changes_nothing,
    backup_reads_a_split_group_and_restore_writes_it_back_whole,
    a_damaged_split_hash_fails_closed,
    writes_of_more_entries_than_one_call_takes_are_whole,
);

fn entry(part: &str, key: &str, json: Option<&str>) -> SplitEntry {
    SplitEntry {
        part: part.into(),
        key: key.into(),
        json: json.map(str::to_owned),
    }
}

fn split(header: &str, entries: Vec<SplitEntry>, full: bool) -> SplitAggregate {
    SplitAggregate {
        header: header.into(),
        parts: vec!["members".into(), "targetAssignments".into()],
        entries,
        full,
    }
}

fn write(expected_revision: u64, aggregate: SplitAggregate) -> CasWrite {
    CasWrite {
        expected_revision,
        split: Some(aggregate),
        updated_at: "2026-01-01T00:00:01.000Z".into(),
        lease_ttl_ms: 20_000,
        ..CasWrite::default()
    }
}

async fn written(store: &Store, keys: &TestGroup, w: &CasWrite) -> u64 {
    match store.cas(keys, w).await.expect("cas") {
        CasOutcome::Written { revision, .. } => revision,
        other => panic!("expected Written, got {other:?}"),
    }
}

/// The hash's fields as text.
async fn fields(store: &Store, keys: &TestGroup) -> BTreeMap<String, String> {
    raw(store, redis::cmd("HGETALL").arg(&keys.metadata)).await
}

/// A group of three members, stored split at revision 2.
async fn three_members(store: &Store, keys: &TestGroup) {
    create_group(store, keys, &["a"]).await;
    let full = split(
        r#"{"storeRevision":2,"groupEpoch":1}"#,
        vec![
            entry("members", "a", Some(r#"{"n":"a"}"#)),
            entry("members", "b/1", Some(r#"{"n":"b"}"#)),
            entry("members", "c", Some(r#"{"n":"c"}"#)),
            entry("targetAssignments", "a", Some("[0]")),
            entry("targetAssignments", "b/1", Some("[1,2]")),
        ],
        true,
    );
    assert_eq!(written(store, keys, &write(1, full)).await, 2);
}

async fn a_split_write_stores_a_header_and_entries_and_loads_as_one_document(
    store: &Store,
    name: &str,
) {
    let keys = group(name);
    three_members(store, &keys).await;
    let f = fields(store, &keys).await;
    assert_eq!(f["layoutVersion"], "4");
    assert_eq!(f["parts"], "members,targetAssignments");
    assert_eq!(f["header"], r#"{"storeRevision":2,"groupEpoch":1}"#);
    assert_eq!(f["members/b/1"], r#"{"n":"b"}"#);
    assert!(!f.contains_key("aggregate"), "{f:?}");
    assert_eq!(f.len(), 4 + 2 + 5, "{f:?}");
    let loaded = store.load(&keys).await.expect("load").expect("exists");
    assert_eq!(
        (loaded.revision, loaded.layout.as_str()),
        (2, rsc_store::LAYOUT_SPLIT)
    );
    assert_eq!(
        loaded.aggregate,
        r#"{"storeRevision":2,"groupEpoch":1,"members":{"a":{"n":"a"},"b/1":{"n":"b"},"c":{"n":"c"}},"targetAssignments":{"a":[0],"b/1":[1,2]}}"#
    );
}

async fn later_writes_carry_only_their_changes(store: &Store, name: &str) {
    let keys = group(name);
    three_members(store, &keys).await;
    let changes = split(
        r#"{"storeRevision":3,"groupEpoch":2}"#,
        vec![
            entry("members", "c", None),
            entry("members", "d", Some(r#"{"n":"d"}"#)),
            entry("targetAssignments", "b/1", Some("[1]")),
            entry("targetAssignments", "d", Some("[2]")),
        ],
        false,
    );
    assert_eq!(written(store, &keys, &write(2, changes)).await, 3);
    let f = fields(store, &keys).await;
    assert_eq!(f["members/a"], r#"{"n":"a"}"#, "untouched entries stay");
    assert!(!f.contains_key("members/c"));
    let loaded = store.load(&keys).await.expect("load").expect("exists");
    assert_eq!(
        loaded.aggregate,
        r#"{"storeRevision":3,"groupEpoch":2,"members":{"a":{"n":"a"},"b/1":{"n":"b"},"d":{"n":"d"}},"targetAssignments":{"a":[0],"b/1":[1],"d":[2]}}"#
    );
    // An empty part is still written as an object.
    let gone = split(
        r#"{"storeRevision":4}"#,
        vec![
            entry("targetAssignments", "a", None),
            entry("targetAssignments", "b/1", None),
            entry("targetAssignments", "d", None),
        ],
        false,
    );
    written(store, &keys, &write(3, gone)).await;
    let loaded = store.load(&keys).await.expect("load").expect("exists");
    assert!(
        loaded.aggregate.ends_with(r#""targetAssignments":{}}"#),
        "{}",
        loaded.aggregate
    );
}

async fn changes_alone_onto_a_hash_that_is_not_split_are_a_conflict(store: &Store, name: &str) {
    let keys = group(name);
    create_group(store, &keys, &["a"]).await;
    let before = snapshot(store, &keys).await;
    let changes = split(
        r#"{"storeRevision":2}"#,
        vec![entry("members", "a", Some("{}"))],
        false,
    );
    let outcome = store.cas(&keys, &write(1, changes)).await.expect("cas");
    assert!(
        matches!(
            outcome,
            CasOutcome::Conflict {
                current: Some(1),
                ..
            }
        ),
        "{outcome:?}"
    );
    assert_eq!(snapshot(store, &keys).await, before, "nothing was written");
}

async fn a_whole_write_onto_a_split_hash_removes_every_entry(store: &Store, name: &str) {
    let keys = group(name);
    three_members(store, &keys).await;
    let whole = CasWrite {
        expected_revision: 2,
        aggregate_json: r#"{"storeRevision":3}"#.into(),
        updated_at: "2026-01-01T00:00:03.000Z".into(),
        lease_ttl_ms: 20_000,
        ..CasWrite::default()
    };
    written(store, &keys, &whole).await;
    let f = fields(store, &keys).await;
    assert_eq!(
        f.keys().map(String::as_str).collect::<Vec<_>>(),
        vec![
            "aggregate",
            "layoutVersion",
            "revision",
            "schemaVersion",
            "updatedAt"
        ]
    );
    let loaded = store.load(&keys).await.expect("load").expect("exists");
    assert_eq!(
        (loaded.aggregate.as_str(), loaded.layout.as_str()),
        (r#"{"storeRevision":3}"#, "1")
    );
    // And the next split write is full again, from nothing.
    let full = split(
        r#"{"storeRevision":4}"#,
        vec![entry("members", "z", Some("{}"))],
        true,
    );
    written(store, &keys, &write(3, full)).await;
    let loaded = store.load(&keys).await.expect("load").expect("exists");
    assert_eq!(
        loaded.aggregate,
        r#"{"storeRevision":4,"members":{"z":{}},"targetAssignments":{}}"#
    );
}

async fn a_refused_split_write_changes_nothing(store: &Store, name: &str) {
    let keys = group(name);
    three_members(store, &keys).await;
    let before = snapshot(store, &keys).await;
    let changes = || {
        split(
            r#"{"storeRevision":3}"#,
            vec![entry("members", "a", None)],
            false,
        )
    };
    let stale = store.cas(&keys, &write(1, changes())).await.expect("cas");
    assert!(matches!(stale, CasOutcome::Conflict { .. }), "{stale:?}");
    let live = CasWrite {
        must_be_lapsed: vec!["a".into()],
        ..write(2, changes())
    };
    let active = store.cas(&keys, &live).await.expect("cas");
    assert!(
        matches!(active, CasOutcome::LeaseActive { .. }),
        "{active:?}"
    );
    // What the layout cannot hold is refused before Redis is asked.
    let mut bad = changes();
    bad.entries[0].part = "holds".into();
    assert!(matches!(
        store.cas(&keys, &write(2, bad)).await,
        Err(StoreError::InvalidArgument { .. })
    ));
    assert_eq!(snapshot(store, &keys).await, before, "nothing was written");
}

async fn backup_reads_a_split_group_and_restore_writes_it_back_whole(store: &Store, name: &str) {
    let keys = group(name);
    three_members(store, &keys).await;
    let backed_up = store.load(&keys).await.expect("read").expect("exists");
    let restored = store
        .restore_group(
            &keys,
            &RestoredHash {
                expect_current: Some(2),
                revision: 2,
                aggregate: &backed_up.aggregate,
                updated_at: &backed_up.updated_at,
            },
            20_000,
            &["a".to_string()],
        )
        .await
        .expect("restore");
    assert!(
        matches!(restored, RestoreOutcome::Restored { .. }),
        "{restored:?}"
    );
    let f = fields(store, &keys).await;
    assert_eq!(f["layoutVersion"], "1");
    assert!(!f.keys().any(|k| k.contains('/')), "{f:?}");
    let loaded = store.load(&keys).await.expect("load").expect("exists");
    assert_eq!(loaded.aggregate, backed_up.aggregate);
    let none: Option<String> =
        raw(store, redis::cmd("GET").arg(aggregate_key(&keys.metadata))).await;
    assert_eq!(none, None);
}

async fn a_damaged_split_hash_fails_closed(store: &Store, name: &str) {
    let keys = group(name);
    three_members(store, &keys).await;
    let _: i64 = raw(
        store,
        redis::cmd("HSET")
            .arg(&keys.metadata)
            .arg("stray/x")
            .arg("{}"),
    )
    .await;
    assert!(matches!(
        store.load(&keys).await,
        Err(StoreError::Corrupt { .. })
    ));
    let _: i64 = raw(
        store,
        redis::cmd("HDEL")
            .arg(&keys.metadata)
            .arg("stray/x")
            .arg("header"),
    )
    .await;
    match store.load(&keys).await {
        Err(StoreError::Corrupt { detail, .. }) => assert!(detail.contains("header"), "{detail}"),
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

/// `n` member entries `m<i>` with `value`, or their deletions (`value` None).
fn many(n: usize, value: Option<&str>) -> Vec<SplitEntry> {
    (0..n)
        .map(|i| entry("members", &format!("m{i:05}"), value))
        .collect()
}

async fn writes_of_more_entries_than_one_call_takes_are_whole(store: &Store, name: &str) {
    let keys = group(name);
    create_group(store, &keys, &["a"]).await;
    // 4,500 pairs: 9,000 arguments, more than one call of the script takes (and Lua's stack holds).
    let full = split(r#"{"storeRevision":2}"#, many(4_500, Some("1")), true);
    written(store, &keys, &write(1, full)).await;
    let f = fields(store, &keys).await;
    assert_eq!(
        f.keys().filter(|k| k.starts_with("members/")).count(),
        4_500
    );
    assert_eq!(f["members/m04499"], "1");
    // Change the first 4,100 entries and delete the last 400 (at both ends of a chunk of the script).
    let mut changes = many(4_100, Some("2"));
    changes.extend(many(4_500, None).split_off(4_100));
    written(
        store,
        &keys,
        &write(2, split(r#"{"storeRevision":3}"#, changes, false)),
    )
    .await;
    let loaded = store.load(&keys).await.expect("load").expect("exists");
    let doc: serde_json::Value = serde_json::from_str(&loaded.aggregate).expect("JSON");
    let members = doc["members"].as_object().expect("members");
    assert_eq!(members.len(), 4_100);
    assert!(
        members.values().all(|v| v == 2),
        "every entry left was changed"
    );
    // A whole write removes all of them.
    let whole = CasWrite {
        expected_revision: 3,
        aggregate_json: r#"{"storeRevision":4}"#.into(),
        updated_at: "2026-01-01T00:00:04.000Z".into(),
        lease_ttl_ms: 20_000,
        ..CasWrite::default()
    };
    written(store, &keys, &whole).await;
    let f = fields(store, &keys).await;
    assert!(
        !f.keys().any(|k| k.contains('/')),
        "{} fields left",
        f.len()
    );
    assert!(!f.contains_key("header") && !f.contains_key("parts"));
}
