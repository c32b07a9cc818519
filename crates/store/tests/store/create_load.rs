//! Creating groups and loading (and refusing to trust) their metadata.

use rsc_store::{CasWrite, CreateOutcome, Store, StoreError, StoredGroup};

use crate::fixtures::{group, raw, snapshot};

on_both_topologies!(
    create_then_already_exists,
    load_missing_is_none,
    corrupt_metadata_is_refused_everywhere,
    unknown_versions_are_refused,
    metadata_never_expires,
);

async fn create_then_already_exists(store: &Store, name: &str) {
    let keys = group(name);
    // Leftovers of an earlier group with the same name must not leak into the new one.
    let _: i64 = raw(
        store,
        redis::cmd("ZADD").arg(&keys.leases).arg(1).arg("ghost"),
    )
    .await;
    let _: i64 = raw(
        store,
        redis::cmd("HSET")
            .arg(&keys.progress)
            .arg("ghost")
            .arg("{}"),
    )
    .await;

    let members = vec!["m1".to_string(), "m2".to_string()];
    let outcome = store
        .create(
            &keys,
            r#"{"v":1}"#,
            "2026-01-01T00:00:00.000Z",
            &members,
            15_000,
        )
        .await
        .expect("create");
    let CreateOutcome::Created { revision, now_ms } = outcome else {
        panic!("expected Created, got {outcome:?}");
    };
    assert_eq!(revision, 1);

    let loaded = store.load(&keys).await.expect("load");
    assert_eq!(
        loaded,
        Some(StoredGroup {
            aggregate: r#"{"v":1}"#.to_string(),
            revision: 1,
            updated_at: "2026-01-01T00:00:00.000Z".to_string(),
            layout: "1".to_string(),
        })
    );
    let fields: std::collections::BTreeMap<String, String> =
        raw(store, redis::cmd("HGETALL").arg(&keys.metadata)).await;
    assert_eq!(fields.len(), 5, "{fields:?}");
    assert_eq!(fields["schemaVersion"], "1");
    assert_eq!(fields["layoutVersion"], "1");
    assert_eq!(fields["revision"], "1");
    assert_eq!(store.revision(&keys).await.expect("revision"), Some(1));
    assert_eq!(
        store.leases(&keys).await.expect("leases"),
        vec![
            ("m1".to_string(), now_ms + 15_000),
            ("m2".to_string(), now_ms + 15_000)
        ]
    );
    assert_eq!(store.progress_all(&keys).await.expect("progress"), vec![]);

    let before = snapshot(store, &keys).await;
    let again = store
        .create(
            &keys,
            r#"{"v":2}"#,
            "2027-01-01T00:00:00.000Z",
            &["m3".to_string()],
            15_000,
        )
        .await
        .expect("create again");
    assert_eq!(again, CreateOutcome::AlreadyExists);
    assert_eq!(
        snapshot(store, &keys).await,
        before,
        "AlreadyExists wrote something"
    );
}

async fn load_missing_is_none(store: &Store, name: &str) {
    assert_eq!(store.load(&group(name)).await.expect("load"), None);
    assert_eq!(store.revision(&group(name)).await.expect("revision"), None);
}

/// Damaged metadata is an error on every path that reads it, never a guess or a rebuild.
async fn corrupt_metadata_is_refused_everywhere(store: &Store, name: &str) {
    let valid = [
        ("aggregate", "{}"),
        ("revision", "3"),
        ("schemaVersion", "1"),
        ("layoutVersion", "1"),
        ("updatedAt", "2026-01-01T00:00:00.000Z"),
    ];
    let cases: [(&str, Option<&str>); 4] = [
        ("revision", None),
        ("revision", Some("abc")),
        ("revision", Some("0")),
        ("aggregate", None),
    ];
    for (case, (field, replacement)) in cases.iter().enumerate() {
        let keys = group(&format!("{name}-{case}"));
        let mut hset = redis::cmd("HSET");
        hset.arg(&keys.metadata);
        for (k, v) in valid {
            if k == *field {
                if let Some(r) = replacement {
                    hset.arg(k).arg(*r);
                }
            } else {
                hset.arg(k).arg(v);
            }
        }
        let _: i64 = raw(store, &hset).await;
        expect_corrupt(store.load(&keys).await, &keys.metadata);
        if *field == "revision" && replacement.is_some() {
            expect_corrupt(store.revision(&keys).await, &keys.metadata);
        }
        if *field == "revision" {
            let before = snapshot(store, &keys).await;
            let write = CasWrite {
                expected_revision: 3,
                aggregate_json: "{\"new\":true}".into(),
                split: None,
                updated_at: "x".into(),
                lease_ttl_ms: 1000,
                renew: vec!["m".into()],
                ..CasWrite::default()
            };
            expect_corrupt(store.cas(&keys, &write).await, &keys.metadata);
            expect_corrupt(
                store.heartbeat(&keys, 3, "m", 1000, Some("{}")).await,
                &keys.metadata,
            );
            expect_corrupt(store.delete(&keys, 3).await, &keys.metadata);
            assert_eq!(
                snapshot(store, &keys).await,
                before,
                "a refused call wrote something"
            );
        }
    }

    // A group key of the wrong Redis type is corrupt metadata, not a Redis failure.
    let keys = group(&format!("{name}-wrongtype"));
    let () = raw(
        store,
        redis::cmd("SET").arg(&keys.metadata).arg("not a hash"),
    )
    .await;
    expect_corrupt(store.load(&keys).await, &keys.metadata);
    expect_corrupt(
        store.heartbeat(&keys, 1, "m", 1000, None).await,
        &keys.metadata,
    );
}

fn expect_corrupt<T: std::fmt::Debug>(result: Result<T, StoreError>, metadata_key: &str) {
    match result {
        Err(err @ StoreError::Corrupt { .. }) => {
            assert!(!err.is_transient());
            let StoreError::Corrupt { key, .. } = err else {
                unreachable!()
            };
            assert_eq!(key, metadata_key);
        }
        other => panic!("expected Corrupt for {metadata_key}, got {other:?}"),
    }
}

async fn unknown_versions_are_refused(store: &Store, name: &str) {
    let schema = group(&format!("{name}-schema"));
    let _: i64 = raw(
        store,
        redis::cmd("HSET")
            .arg(&schema.metadata)
            .arg(&[
                ("aggregate", "{}"),
                ("revision", "1"),
                ("schemaVersion", "2"),
            ])
            .arg(&[("layoutVersion", "1"), ("updatedAt", "t")]),
    )
    .await;
    match store.load(&schema).await {
        Err(StoreError::UnknownSchema { key, found }) => {
            assert_eq!(key, schema.metadata);
            assert_eq!(found, "2");
        }
        other => panic!("expected UnknownSchema, got {other:?}"),
    }

    let layout = group(&format!("{name}-layout"));
    let _: i64 = raw(
        store,
        redis::cmd("HSET")
            .arg(&layout.metadata)
            .arg(&[
                ("aggregate", "{}"),
                ("revision", "1"),
                ("schemaVersion", "1"),
            ])
            .arg(&[("layoutVersion", "9"), ("updatedAt", "t")]),
    )
    .await;
    match store.load(&layout).await {
        Err(StoreError::UnknownLayout { key, found }) => {
            assert_eq!(key, layout.metadata);
            assert_eq!(found, "9");
        }
        other => panic!("expected UnknownLayout, got {other:?}"),
    }
}

async fn metadata_never_expires(store: &Store, name: &str) {
    let keys = group(name);
    crate::fixtures::create_group(store, &keys, &["m1"]).await;
    assert_eq!(snapshot(store, &keys).await.metadata_ttl, -1);
    let write = CasWrite {
        expected_revision: 1,
        aggregate_json: "{\"v\":2}".into(),
        split: None,
        updated_at: "t2".into(),
        lease_ttl_ms: 1000,
        renew: vec!["m1".into()],
        ..CasWrite::default()
    };
    store.cas(&keys, &write).await.expect("cas");
    store
        .heartbeat(&keys, 2, "m1", 1000, Some("{}"))
        .await
        .expect("heartbeat");
    assert_eq!(snapshot(store, &keys).await.metadata_ttl, -1);
}
