//! Deleting groups by revision, and the group index.

use rsc_store::{CreateOutcome, DeleteOutcome, IndexEntry, IndexState, Store};

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
    let index = format!("rsc-test:{{index:{name}}}:group-index");
    assert_eq!(store.index_list(&index).await.expect("list"), vec![]);
    let meta_b = group(&format!("{name}-b")).metadata;
    let meta_a = group(&format!("{name}-a")).metadata;
    store
        .index_put(&index, &meta_b, r#"{"n":"b"}"#)
        .await
        .expect("put");
    store
        .index_put(&index, &meta_a, r#"{"n":"a"}"#)
        .await
        .expect("put");
    assert_eq!(
        store.index_list(&index).await.expect("list"),
        vec![
            (meta_a.clone(), r#"{"n":"a"}"#.to_string()),
            (meta_b.clone(), r#"{"n":"b"}"#.to_string())
        ]
    );
    store
        .index_put(&index, &meta_a, r#"{"n":"a2"}"#)
        .await
        .expect("overwrite");
    store.index_remove(&index, &meta_b).await.expect("remove");
    store
        .index_remove(&index, "not-there")
        .await
        .expect("remove missing");
    assert_eq!(
        store.index_list(&index).await.expect("list"),
        vec![(meta_a, r#"{"n":"a2"}"#.to_string())]
    );
}

async fn typed_group_index(store: &Store, name: &str) {
    let index = format!("rsc-test:{{index:{name}}}:group-index");
    let entry = |prefix: &str, group: &str, state| IndexEntry {
        stream_prefix: prefix.into(),
        consumer_group: group.into(),
        state,
    };
    let b = entry("s", "b", IndexState::Creating);
    let a = entry("s", "a", IndexState::Live);
    store
        .group_index_put(&index, "meta-b", &b)
        .await
        .expect("put");
    store
        .group_index_put(&index, "meta-a", &a)
        .await
        .expect("put");
    // Unreadable entries are skipped; unknown states are listed as Unknown.
    store
        .index_put(&index, "meta-x", "not json")
        .await
        .expect("put raw");
    store
        .index_put(
            &index,
            "meta-c",
            r#"{"streamPrefix":"s","consumerGroup":"c","state":"RETIRING"}"#,
        )
        .await
        .expect("put raw");
    assert_eq!(
        store.group_index_list(&index).await.expect("list"),
        vec![a.clone(), b.clone(), entry("s", "c", IndexState::Unknown)]
    );
    let raw = store.index_list(&index).await.expect("raw list");
    assert!(raw.contains(&(
        "meta-a".to_string(),
        r#"{"streamPrefix":"s","consumerGroup":"a","state":"LIVE"}"#.to_string()
    )));
    store
        .group_index_remove(&index, "meta-a")
        .await
        .expect("remove");
    store
        .group_index_put(&index, "meta-b", &entry("s", "b", IndexState::Live))
        .await
        .expect("overwrite");
    assert_eq!(
        store.group_index_list(&index).await.expect("list"),
        vec![
            entry("s", "b", IndexState::Live),
            entry("s", "c", IndexState::Unknown)
        ]
    );
}
