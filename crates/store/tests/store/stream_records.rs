//! Stream records: create, load, compare-and-set and delete on one key.

use rsc_store::{CasOutcome, CreateOutcome, DeleteOutcome, Store, StoreError};

use crate::fixtures::raw;

on_both_topologies!(
    stream_record_lifecycle,
    stream_record_reads_the_group_layout
);

async fn stream_record_lifecycle(store: &Store, name: &str) {
    let key = store.keyspace().stream_record(name);
    assert_eq!(store.stream_record_load(name).await.expect("load"), None);
    assert!(matches!(
        store
            .stream_record_create(name, r#"{"n":1}"#, "t1")
            .await
            .expect("create"),
        CreateOutcome::Created { revision: 1, .. }
    ));
    assert_eq!(
        store
            .stream_record_create(name, r#"{"n":9}"#, "t9")
            .await
            .expect("create"),
        CreateOutcome::AlreadyExists
    );
    let stored = store
        .stream_record_load(name)
        .await
        .expect("load")
        .expect("exists");
    assert_eq!(
        (
            stored.aggregate.as_str(),
            stored.revision,
            stored.updated_at.as_str()
        ),
        (r#"{"n":1}"#, 1, "t1")
    );
    let fields: Vec<String> = raw(store, redis::cmd("HKEYS").arg(&key)).await;
    let mut fields = fields;
    fields.sort();
    assert_eq!(
        fields,
        vec![
            "aggregate",
            "layoutVersion",
            "revision",
            "schemaVersion",
            "updatedAt"
        ]
    );

    assert!(matches!(
        store
            .stream_record_cas(name, 2, r#"{"n":2}"#, "t2")
            .await
            .expect("cas"),
        CasOutcome::Conflict {
            current: Some(1),
            ..
        }
    ));
    assert!(matches!(
        store
            .stream_record_cas(name, 1, r#"{"n":2}"#, "t2")
            .await
            .expect("cas"),
        CasOutcome::Written { revision: 2, .. }
    ));
    let stored = store
        .stream_record_load(name)
        .await
        .expect("load")
        .expect("exists");
    assert_eq!(
        (stored.aggregate.as_str(), stored.revision),
        (r#"{"n":2}"#, 2)
    );

    assert_eq!(
        store.stream_record_delete(name, 1).await.expect("delete"),
        DeleteOutcome::Conflict { current: Some(2) }
    );
    assert_eq!(
        store.stream_record_delete(name, 2).await.expect("delete"),
        DeleteOutcome::Deleted
    );
    assert_eq!(store.stream_record_load(name).await.expect("load"), None);
    assert!(matches!(
        store
            .stream_record_cas(name, 2, "{}", "t")
            .await
            .expect("cas"),
        CasOutcome::Conflict { current: None, .. }
    ));

    // A damaged revision fails closed, naming the key.
    let _: () = raw(
        store,
        redis::cmd("HSET")
            .arg(&key)
            .arg("revision")
            .arg("x")
            .arg("aggregate")
            .arg("{}"),
    )
    .await;
    match store.stream_record_cas(name, 1, "{}", "t").await {
        Err(StoreError::Corrupt { key: k, .. }) => assert_eq!(k, key),
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

/// Records written before this API existed (by the group scripts) read and write the same way.
async fn stream_record_reads_the_group_layout(store: &Store, name: &str) {
    // A hash as the group scripts write it, copied field by field to a stream record's key.
    let group = crate::fixtures::group(&format!("{name}-old"));
    store
        .create(&group, r#"{"old":true}"#, "t0", &[], 1)
        .await
        .expect("create");
    let fields: Vec<(String, String)> =
        raw(store, redis::cmd("HGETALL").arg(&group.metadata)).await;
    let old = store.keyspace().stream_record(name);
    let _: () = raw(store, redis::cmd("HSET").arg(&old).arg(&fields)).await;
    let stored = store
        .stream_record_load(name)
        .await
        .expect("load")
        .expect("exists");
    assert_eq!(
        (stored.aggregate.as_str(), stored.revision),
        (r#"{"old":true}"#, 1)
    );
    assert!(matches!(
        store
            .stream_record_cas(name, 1, "{}", "t1")
            .await
            .expect("cas"),
        CasOutcome::Written { revision: 2, .. }
    ));
    let revision: String = raw(store, redis::cmd("HGET").arg(&old).arg("revision")).await;
    assert_eq!(revision, "2");
}
