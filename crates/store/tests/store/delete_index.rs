//! Deleting groups by revision, and the group index.

use rsc_store::{CreateOutcome, DeleteOutcome, GroupName, IndexEntry, IndexState, Keyspace, Store};

use crate::fixtures::{create_group, existing_keys, group, snapshot};

on_both_topologies!(
    delete_by_revision,
    group_index_operations,
    typed_group_index
);

async fn delete_by_revision(store: &Store, name: &str) {
    let keys = group(name);
    create_group(store, &keys, &["m"]).await;
    store
        .heartbeat(&keys, 1, "m", 60_000, Some("{}"))
        .await
        .expect("heartbeat");
    let before = snapshot(store, &keys).await;

    assert_eq!(
        store.delete(&keys, 2).await.expect("delete"),
        DeleteOutcome::Conflict { current: Some(1) }
    );
    assert_eq!(snapshot(store, &keys).await, before);

    assert_eq!(
        store.delete(&keys, 1).await.expect("delete"),
        DeleteOutcome::Deleted
    );
    assert_eq!(existing_keys(store, &keys).await, 0);
    assert_eq!(store.load(&keys).await.expect("load"), None);
    assert_eq!(
        store.delete(&keys, 1).await.expect("delete"),
        DeleteOutcome::Conflict { current: None }
    );

    // The name can be used again and starts over at revision 1.
    let outcome = store
        .create(&keys, "{}", "t", &[], 1000)
        .await
        .expect("create");
    assert!(matches!(
        outcome,
        CreateOutcome::Created { revision: 1, .. }
    ));
}

async fn group_index_operations(store: &Store, name: &str) {
    // A key prefix of the scenario's own: the index is one key per deployment.
    let store = &own_index(store, name);
    assert_eq!(store.backup_index_entries().await.expect("list"), vec![]);
    let meta_b = own_keyspace(name).group("t", "b").metadata;
    let meta_a = own_keyspace(name).group("t", "a").metadata;
    store
        .restore_index_entry(&meta_b, r#"{"n":"b"}"#)
        .await
        .expect("put");
    store
        .restore_index_entry(&meta_a, r#"{"n":"a"}"#)
        .await
        .expect("put");
    assert_eq!(
        store.backup_index_entries().await.expect("list"),
        vec![
            (meta_a.clone(), r#"{"n":"a"}"#.to_string()),
            (meta_b.clone(), r#"{"n":"b"}"#.to_string())
        ]
    );
    store
        .restore_index_entry(&meta_a, r#"{"n":"a2"}"#)
        .await
        .expect("overwrite");
    store
        .group_index_remove(&GroupName::new("t", "b"))
        .await
        .expect("remove");
    store
        .group_index_remove(&GroupName::new("t", "not-there"))
        .await
        .expect("remove missing");
    assert_eq!(
        store.backup_index_entries().await.expect("list"),
        vec![(meta_a, r#"{"n":"a2"}"#.to_string())]
    );
}

/// The key prefix of scenario `name`'s own index.
fn own_keyspace(name: &str) -> Keyspace {
    Keyspace::new(&format!("rsc-test-{name}"))
}

/// `store`, naming its keys under [`own_keyspace`].
fn own_index(store: &Store, name: &str) -> Store {
    store.clone().with_key_prefix(own_keyspace(name).prefix())
}

async fn typed_group_index(store: &Store, name: &str) {
    let store = &own_index(store, name);
    let entry = |prefix: &str, group: &str, state| IndexEntry {
        stream_prefix: prefix.into(),
        consumer_group: group.into(),
        state,
    };
    let b = entry("s", "b", IndexState::Creating);
    let a = entry("s", "a", IndexState::Live);
    let (name_a, name_b) = (GroupName::new("s", "a"), GroupName::new("s", "b"));
    store.group_index_put(&name_b, &b).await.expect("put");
    store.group_index_put(&name_a, &a).await.expect("put");
    assert_eq!(
        store.group_index_get(&name_a).await.expect("get"),
        Some(a.clone())
    );
    assert_eq!(
        store
            .group_index_get(&GroupName::new("s", "x"))
            .await
            .expect("get"),
        None
    );
    // Unreadable entries are skipped; unknown states are listed as Unknown.
    store
        .restore_index_entry("meta-x", "not json")
        .await
        .expect("put raw");
    store
        .restore_index_entry(
            "meta-c",
            r#"{"streamPrefix":"s","consumerGroup":"c","state":"RETIRING"}"#,
        )
        .await
        .expect("put raw");
    assert_eq!(
        store.group_index_list().await.expect("list"),
        vec![a.clone(), b.clone(), entry("s", "c", IndexState::Unknown)]
    );
    // Each group's entry lies under its metadata key.
    let raw = store.backup_index_entries().await.expect("raw list");
    assert!(raw.contains(&(
        own_keyspace(name).group("s", "a").metadata,
        r#"{"streamPrefix":"s","consumerGroup":"a","state":"LIVE"}"#.to_string()
    )));
    store.group_index_remove(&name_a).await.expect("remove");
    store
        .group_index_put(&name_b, &entry("s", "b", IndexState::Live))
        .await
        .expect("overwrite");
    assert_eq!(
        store.group_index_list().await.expect("list"),
        vec![
            entry("s", "b", IndexState::Live),
            entry("s", "c", IndexState::Unknown)
        ]
    );
}
