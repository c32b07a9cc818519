//! Deleting groups by revision, and the group index.

use rsc_store::{CreateOutcome, DeleteOutcome, Store};

use crate::fixtures::{create_group, existing_keys, group, snapshot};

on_both_topologies!(delete_by_revision, group_index_operations);

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
