//! The audit streams and the bootstrap admin hash.

use rsc_store::{AuditStream, Store};

use crate::fixtures::raw;

on_both_topologies!(
    audit_stream_appends_and_pages,
    bootstrap_admin_is_claimed_once
);

async fn audit_stream_appends_and_pages(store: &Store, name: &str) {
    // Under a key prefix of the scenario's own: the audit streams are one per deployment.
    let store = &store
        .clone()
        .with_key_prefix(&format!("{}-{name}", crate::fixtures::KEY_PREFIX));
    let key = store.keyspace().audit_stream(AuditStream::Mutations);
    let mut ids = Vec::new();
    for i in 0..5 {
        let id = store
            .audit_append(AuditStream::Mutations, 1000, &format!(r#"{{"n":{i}}}"#))
            .await
            .expect("append");
        ids.push(id);
    }
    // An entry without a record field is read back with none.
    let foreign: String = raw(
        store,
        redis::cmd("XADD").arg(&key).arg("*").arg("other").arg("x"),
    )
    .await;

    let page = store
        .audit_page(AuditStream::Mutations, "+", "-", 3)
        .await
        .expect("page");
    assert_eq!(page.len(), 3);
    assert_eq!(page[0].id, foreign);
    assert_eq!(page[0].record, None);
    assert_eq!(page[1].id, ids[4]);
    assert_eq!(page[1].record.as_deref(), Some(r#"{"n":4}"#));
    let rest = store
        .audit_page(AuditStream::Mutations, &format!("({}", page[2].id), "-", 10)
        .await
        .expect("page");
    let rest_ids: Vec<&str> = rest.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        rest_ids,
        vec![ids[2].as_str(), ids[1].as_str(), ids[0].as_str()]
    );
    assert_eq!(
        store
            .audit_page(AuditStream::Mutations, "+", &ids[4], 10)
            .await
            .expect("page")
            .len(),
        2
    );
    assert_eq!(
        store
            .audit_page(AuditStream::Signins, "+", "-", 10)
            .await
            .expect("page"),
        vec![]
    );
}

async fn bootstrap_admin_is_claimed_once(store: &Store, name: &str) {
    // Under a key prefix of the scenario's own: the hash is one per deployment.
    let store = &store
        .clone()
        .with_key_prefix(&format!("{}-{name}", crate::fixtures::KEY_PREFIX));
    assert_eq!(store.bootstrap_admin_get().await.expect("get"), None);
    assert!(store.bootstrap_admin_claim("first").await.expect("claim"));
    assert!(!store.bootstrap_admin_claim("second").await.expect("claim"));
    assert_eq!(
        store.bootstrap_admin_get().await.expect("get").as_deref(),
        Some("first")
    );
}
