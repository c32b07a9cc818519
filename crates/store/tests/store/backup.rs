//! Backup reads and restore writes (`backup.rs`, `restore_record.lua`) on both topologies: a restore writes
//! the hash exactly as backed up, leases the given members afresh and clears old leases and progress; it
//! writes nothing when the key is not in the state the restore checked.

use crate::fixtures::{group, raw, snapshot};
use rsc_store::{CreateOutcome, RestoreOutcome, RestoredHash, Store};

async fn backup_read_and_restore(store: &Store, name: &str) {
    let keys = group(name);
    let created = store
        .create(
            &keys,
            "{\"v\":1}",
            "2026-01-01T00:00:00Z",
            &["old".into()],
            60_000,
        )
        .await
        .unwrap();
    assert!(matches!(created, CreateOutcome::Created { .. }));
    let stored = store.load(&keys).await.unwrap().unwrap();
    assert_eq!(
        (stored.revision, stored.aggregate.as_str()),
        (1, "{\"v\":1}")
    );

    // A restore that expects the key absent writes nothing.
    let refused = store
        .restore_group(
            &keys,
            &RestoredHash {
                expect_current: None,
                revision: 7,
                aggregate: "{\"v\":7}",
                updated_at: "t7",
            },
            30_000,
            &["a".into()],
        )
        .await
        .unwrap();
    assert_eq!(
        refused,
        RestoreOutcome::Changed {
            current: Some("1".into())
        }
    );
    let before = snapshot(store, &keys).await;
    let refused = store
        .restore_group(
            &keys,
            &RestoredHash {
                expect_current: Some(2),
                revision: 7,
                aggregate: "{\"v\":7}",
                updated_at: "t7",
            },
            30_000,
            &["a".into()],
        )
        .await
        .unwrap();
    assert_eq!(
        refused,
        RestoreOutcome::Changed {
            current: Some("1".into())
        }
    );
    assert_eq!(snapshot(store, &keys).await, before);

    // At the checked revision: written as backed up, the old lease gone, the given members leased.
    let done = store
        .restore_group(
            &keys,
            &RestoredHash {
                expect_current: Some(1),
                revision: 7,
                aggregate: "{\"v\":7}",
                updated_at: "t7",
            },
            30_000,
            &["a".into(), "b".into()],
        )
        .await
        .unwrap();
    let RestoreOutcome::Restored { now_ms } = done else {
        panic!("{done:?}")
    };
    let stored = store.load(&keys).await.unwrap().unwrap();
    assert_eq!(
        (
            stored.revision,
            stored.aggregate.as_str(),
            stored.updated_at.as_str()
        ),
        (7, "{\"v\":7}", "t7")
    );
    let leases = store.leases(&keys).await.unwrap();
    assert_eq!(
        leases.iter().map(|l| l.0.as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert!(leases.iter().all(|l| l.1 == now_ms + 30_000), "{leases:?}");
    assert!(store.progress_all(&keys).await.unwrap().is_empty());

    // A stream record into an empty key.
    let prefix = format!("t:{name}:s");
    let record = store.keyspace().stream_record(&prefix);
    assert_eq!(record, format!("rsc-test:{{t:{name}:s}}:stream"));
    let done = store
        .restore_stream_record(
            &prefix,
            &RestoredHash {
                expect_current: None,
                revision: 3,
                aggregate: "{\"r\":3}",
                updated_at: "t3",
            },
        )
        .await
        .unwrap();
    assert!(matches!(done, RestoreOutcome::Restored { .. }));
    let stored = store.stream_record_load(&prefix).await.unwrap().unwrap();
    assert_eq!(
        (stored.revision, stored.aggregate.as_str()),
        (3, "{\"r\":3}")
    );
    let fields: Vec<String> = raw(store, redis::cmd("HKEYS").arg(&record)).await;
    assert_eq!(fields.len(), 5, "{fields:?}");

    // The index, byte for byte.
    // (Under a key prefix of the scenario's own: the index is one key per deployment.)
    let own = store
        .clone()
        .with_key_prefix(&format!("{}-{name}", crate::fixtures::KEY_PREFIX));
    own.restore_index_entry(&keys.metadata, "{\"x\":1}")
        .await
        .unwrap();
    assert_eq!(
        own.backup_index_entries().await.unwrap(),
        vec![(keys.metadata.clone(), "{\"x\":1}".to_owned())]
    );
    assert!(
        store
            .restore_group(
                &keys,
                &RestoredHash {
                    expect_current: Some(7),
                    revision: 8,
                    aggregate: "{}",
                    updated_at: "t"
                },
                0,
                &[]
            )
            .await
            .is_err()
    );
}

on_both_topologies!(backup_read_and_restore);
