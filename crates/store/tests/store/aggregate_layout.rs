//! How aggregates are stored: a large one LZ4-compressed out of line (its own key) under layoutVersion "3", a
//! small one (and every one with compression off) as plain JSON in the field under "1"; what earlier versions
//! wrote (a large plain aggregate, a compressed one in the field under "2") still loads; a refused write
//! leaves nothing staged; delete, create and restore leave no out-of-line key behind; a damaged compressed
//! one, or a missing out-of-line one, fails closed.

use rsc_store::aggregate_codec::{AggregateCompression, LZ4_MAGIC};
use rsc_store::{
    CasOutcome, CasWrite, RestoreOutcome, RestoredHash, Store, StoreError, aggregate_key,
    aggregate_staging_key,
};

use crate::fixtures::{TestGroup, create_group, group, raw};

on_both_topologies!(
    a_large_aggregate_is_stored_compressed_and_loads_back_the_same,
    a_large_plain_aggregate_written_before_compression_still_loads,
    a_compressed_aggregate_in_the_field_written_by_the_previous_version_still_loads,
    a_refused_large_write_changes_nothing_and_leaves_nothing_staged,
    delete_create_and_restore_leave_no_out_of_line_aggregate_behind,
    a_large_write_reloads_a_script_redis_forgot,
    with_compression_off_every_aggregate_is_plain_json,
    a_damaged_compressed_aggregate_fails_closed,
);

/// An aggregate of about 300 KB, the size of a group of ~1,000 members.
fn large_json(revision: u64) -> String {
    let members: Vec<String> = (0..3_000)
        .map(|i| {
            format!(
                r#"{{"memberId":"member-{i:06}","memberName":"worker-{i}","state":"ACTIVE","memberEpoch":12}}"#
            )
        })
        .collect();
    format!(
        r#"{{"storeRevision":{revision},"members":[{}]}}"#,
        members.join(",")
    )
}

async fn write(store: &Store, keys: &TestGroup, revision: u64, json: &str) {
    let outcome = store
        .cas(
            keys,
            &CasWrite {
                expected_revision: revision - 1,
                aggregate_json: json.to_owned(),
                split: None,
                updated_at: "2026-01-01T00:00:01.000Z".into(),
                lease_ttl_ms: 20_000,
                ..CasWrite::default()
            },
        )
        .await
        .expect("cas");
    assert!(matches!(outcome, CasOutcome::Written { .. }), "{outcome:?}");
}

/// The hash's aggregate field, its layoutVersion and the out-of-line aggregate key's value.
async fn stored(store: &Store, keys: &TestGroup) -> (Option<Vec<u8>>, String, Option<Vec<u8>>) {
    let field: Option<Vec<u8>> = raw(
        store,
        redis::cmd("HGET").arg(&keys.metadata).arg("aggregate"),
    )
    .await;
    let layout: String = raw(
        store,
        redis::cmd("HGET").arg(&keys.metadata).arg("layoutVersion"),
    )
    .await;
    let out_of_line: Option<Vec<u8>> =
        raw(store, redis::cmd("GET").arg(aggregate_key(&keys.metadata))).await;
    (field, layout, out_of_line)
}

/// The group as the store loads it (it must exist and load).
async fn load_ok(store: &Store, keys: &TestGroup) -> rsc_store::StoredGroup {
    store.load(keys).await.expect("load").expect("exists")
}

/// Writes the hash's aggregate field and layoutVersion by hand, as an earlier version left them.
async fn write_field_as_before(store: &Store, keys: &TestGroup, field: &[u8], layout: &str) {
    let _: i64 = raw(
        store,
        redis::cmd("HSET")
            .arg(&keys.metadata)
            .arg("aggregate")
            .arg(field)
            .arg("layoutVersion")
            .arg(layout),
    )
    .await;
}

async fn exists(store: &Store, key: &str) -> bool {
    let n: i64 = raw(store, redis::cmd("EXISTS").arg(key)).await;
    n == 1
}

async fn a_large_aggregate_is_stored_compressed_and_loads_back_the_same(store: &Store, name: &str) {
    let keys = group(name);
    create_group(store, &keys, &["m1"]).await;
    let json = large_json(2);
    write(store, &keys, 2, &json).await;
    let (field, layout, out_of_line) = stored(store, &keys).await;
    assert_eq!(layout, "3");
    assert_eq!(field, None, "the aggregate is not in the hash");
    let bytes = out_of_line.expect("the aggregate key");
    assert!(bytes.starts_with(LZ4_MAGIC));
    assert!(!exists(store, &aggregate_staging_key(&keys.metadata)).await);
    let ttl: i64 = raw(store, redis::cmd("PTTL").arg(aggregate_key(&keys.metadata))).await;
    assert_eq!(
        ttl, -1,
        "the renamed aggregate keeps no expiry of the staging key"
    );
    assert!(
        bytes.len() * 4 < json.len(),
        "{} bytes stored for {} of JSON",
        bytes.len(),
        json.len()
    );
    let loaded = load_ok(store, &keys).await;
    assert_eq!(loaded.aggregate, json);
    assert_eq!(loaded.revision, 2);
    // A second large write replaces it.
    let json = large_json(3).replace("ACTIVE", "FENCED");
    write(store, &keys, 3, &json).await;
    let loaded = load_ok(store, &keys).await;
    assert_eq!((loaded.aggregate, loaded.revision), (json, 3));
    // A later small write goes back to plain JSON in the field under layout "1", and the aggregate key goes.
    write(store, &keys, 4, r#"{"storeRevision":4}"#).await;
    let (field, layout, out_of_line) = stored(store, &keys).await;
    assert_eq!(
        (field.as_deref(), layout.as_str(), out_of_line),
        (Some(&br#"{"storeRevision":4}"#[..]), "1", None)
    );
    let loaded = load_ok(store, &keys).await;
    assert_eq!(loaded.aggregate, r#"{"storeRevision":4}"#);
}

async fn a_compressed_aggregate_in_the_field_written_by_the_previous_version_still_loads(
    store: &Store,
    name: &str,
) {
    let keys = group(name);
    create_group(store, &keys, &["m1"]).await;
    // What the previous version wrote for a large aggregate: LZ4 in the field, layoutVersion "2".
    let json = large_json(1);
    let mut field = LZ4_MAGIC.to_vec();
    field.extend_from_slice(&lz4_flex::block::compress_prepend_size(json.as_bytes()));
    write_field_as_before(store, &keys, &field, "2").await;
    let loaded = load_ok(store, &keys).await;
    assert_eq!(loaded.aggregate, json);
    // This version's next write moves it out of line and drops the field.
    let json = large_json(2);
    write(store, &keys, 2, &json).await;
    let (field, layout, out_of_line) = stored(store, &keys).await;
    assert_eq!((field, layout.as_str()), (None, "3"));
    assert!(out_of_line.is_some());
    assert_eq!(load_ok(store, &keys).await.aggregate, json);
}

async fn a_refused_large_write_changes_nothing_and_leaves_nothing_staged(
    store: &Store,
    name: &str,
) {
    let keys = group(name);
    create_group(store, &keys, &["m1"]).await;
    let json = large_json(2);
    write(store, &keys, 2, &json).await;
    let before = stored(store, &keys).await;
    let attempt = |expected_revision: u64, must_be_lapsed: Vec<String>| CasWrite {
        expected_revision,
        aggregate_json: large_json(9),
        split: None,
        updated_at: "2026-01-01T00:00:09.000Z".into(),
        lease_ttl_ms: 20_000,
        must_be_lapsed,
        ..CasWrite::default()
    };
    // A stale revision, then a lease condition that does not hold.
    let stale = store.cas(&keys, &attempt(1, vec![])).await.expect("cas");
    assert!(
        matches!(
            stale,
            CasOutcome::Conflict {
                current: Some(2),
                ..
            }
        ),
        "{stale:?}"
    );
    let active = store
        .cas(&keys, &attempt(2, vec!["m1".into()]))
        .await
        .expect("cas");
    assert!(
        matches!(active, CasOutcome::LeaseActive { .. }),
        "{active:?}"
    );
    assert_eq!(stored(store, &keys).await, before, "nothing was written");
    assert!(!exists(store, &aggregate_staging_key(&keys.metadata)).await);
    let loaded = load_ok(store, &keys).await;
    assert_eq!((loaded.aggregate, loaded.revision), (json, 2));
}

async fn delete_create_and_restore_leave_no_out_of_line_aggregate_behind(
    store: &Store,
    name: &str,
) {
    let keys = group(name);
    create_group(store, &keys, &["m1"]).await;
    write(store, &keys, 2, &large_json(2)).await;
    assert!(exists(store, &aggregate_key(&keys.metadata)).await);
    // Restoring a backup over it writes the hash with its aggregate in the field and drops the key.
    let restored = store
        .restore_group(
            &keys,
            &RestoredHash {
                expect_current: Some(2),
                revision: 2,
                aggregate: &large_json(2),
                updated_at: "2026-01-01T00:00:02.000Z",
            },
            20_000,
            &["m1".to_string()],
        )
        .await
        .expect("restore");
    assert!(
        matches!(restored, RestoreOutcome::Restored { .. }),
        "{restored:?}"
    );
    let (field, layout, out_of_line) = stored(store, &keys).await;
    assert_eq!((layout.as_str(), out_of_line), ("1", None));
    assert_eq!(field.as_deref(), Some(large_json(2).as_bytes()));
    // Deleting drops it too.
    write(store, &keys, 3, &large_json(3)).await;
    assert!(exists(store, &aggregate_key(&keys.metadata)).await);
    store.delete(&keys, 3).await.expect("delete");
    assert!(!exists(store, &aggregate_key(&keys.metadata)).await);
    // A leftover aggregate key (a hash deleted by hand) is cleared when the group is created again.
    let _: () = raw(
        store,
        redis::cmd("SET")
            .arg(aggregate_key(&keys.metadata))
            .arg("left over"),
    )
    .await;
    create_group(store, &keys, &["m1"]).await;
    assert!(!exists(store, &aggregate_key(&keys.metadata)).await);
    assert_eq!(load_ok(store, &keys).await.revision, 1);
}

async fn a_large_write_reloads_a_script_redis_forgot(store: &Store, name: &str) {
    let keys = group(name);
    create_group(store, &keys, &["m1"]).await;
    // SCRIPT FLUSH on every node (a restarted Redis has an empty script cache).
    let _: () = raw(store, redis::cmd("SCRIPT").arg("FLUSH")).await;
    let json = large_json(2);
    write(store, &keys, 2, &json).await;
    assert_eq!(stored(store, &keys).await.1, "3");
    assert_eq!(load_ok(store, &keys).await.aggregate, json);
}

async fn a_large_plain_aggregate_written_before_compression_still_loads(store: &Store, name: &str) {
    let keys = group(name);
    create_group(store, &keys, &["m1"]).await;
    // What a version without compression left: plain JSON of any size, layoutVersion "1".
    let json = large_json(1);
    write_field_as_before(store, &keys, json.as_bytes(), "1").await;
    let loaded = load_ok(store, &keys).await;
    assert_eq!(loaded.aggregate, json);
    // And this version's next write of it compresses it.
    write(store, &keys, 2, &large_json(2)).await;
    assert_eq!(stored(store, &keys).await.1, "3");
}

async fn with_compression_off_every_aggregate_is_plain_json(store: &Store, name: &str) {
    let store = store
        .clone()
        .with_aggregate_compression(AggregateCompression::Off);
    let keys = group(name);
    create_group(&store, &keys, &["m1"]).await;
    let json = large_json(2);
    write(&store, &keys, 2, &json).await;
    let (field, layout, out_of_line) = stored(&store, &keys).await;
    assert_eq!((layout.as_str(), out_of_line), ("1", None));
    assert_eq!(field.as_deref(), Some(json.as_bytes()));
    assert_eq!(load_ok(&store, &keys).await.aggregate, json);
}

async fn a_damaged_compressed_aggregate_fails_closed(store: &Store, name: &str) {
    let keys = group(name);
    create_group(store, &keys, &["m1"]).await;
    write(store, &keys, 2, &large_json(2)).await;
    let (_, _, out_of_line) = stored(store, &keys).await;
    let bytes = out_of_line.expect("the aggregate key");
    let damaged = bytes[..bytes.len() / 2].to_vec();
    let _: () = raw(
        store,
        redis::cmd("SET")
            .arg(aggregate_key(&keys.metadata))
            .arg(damaged),
    )
    .await;
    let err = store
        .load(&keys)
        .await
        .expect_err("a damaged aggregate is refused");
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    // A missing one is refused too, naming the key.
    let _: i64 = raw(store, redis::cmd("DEL").arg(aggregate_key(&keys.metadata))).await;
    match store.load(&keys).await {
        Err(StoreError::Corrupt { detail, .. }) => {
            assert!(detail.contains(&aggregate_key(&keys.metadata)), "{detail}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    // A layout this build does not know is refused as such, not misread.
    let _: i64 = raw(
        store,
        redis::cmd("HSET")
            .arg(&keys.metadata)
            .arg("layoutVersion")
            .arg("9"),
    )
    .await;
    let err = store.load(&keys).await.expect_err("layout 9 is refused");
    assert!(matches!(err, StoreError::UnknownLayout { .. }), "{err:?}");
}
