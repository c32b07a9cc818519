//! The audit streams and the bootstrap admin hash.

use rsc_store::Store;

use crate::fixtures::raw;

on_both_topologies!(
    audit_stream_appends_and_pages,
    bootstrap_admin_is_claimed_once
);

async fn audit_stream_appends_and_pages(store: &Store, name: &str) {
    let key = format!("rsc-test:{{{name}}}:audit");
    let mut ids = Vec::new();
    for i in 0..5 {
        let id = store
            .audit_append(&key, 1000, &format!(r#"{{"n":{i}}}"#))
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

    let page = store.audit_page(&key, "+", "-", 3).await.expect("page");
    assert_eq!(page.len(), 3);
    assert_eq!(page[0].id, foreign);
    assert_eq!(page[0].record, None);
    assert_eq!(page[1].id, ids[4]);
    assert_eq!(page[1].record.as_deref(), Some(r#"{"n":4}"#));
    let rest = store
        .audit_page(&key, &format!("({}", page[2].id), "-", 10)
        .await
        .expect("page");
    let rest_ids: Vec<&str> = rest.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        rest_ids,
        vec![ids[2].as_str(), ids[1].as_str(), ids[0].as_str()]
    );
    assert_eq!(
        store
            .audit_page(&key, "+", &ids[4], 10)
            .await
            .expect("page")
            .len(),
        2
    );
    assert_eq!(
        store
            .audit_page(&format!("{key}-none"), "+", "-", 10)
            .await
            .expect("page"),
        vec![]
    );
}

async fn bootstrap_admin_is_claimed_once(store: &Store, name: &str) {
    let key = format!("rsc-test:{name}:auth:bootstrap-admin");
    assert_eq!(store.bootstrap_admin_get(&key).await.expect("get"), None);
    assert!(
        store
            .bootstrap_admin_claim(&key, "first")
            .await
            .expect("claim")
    );
    assert!(
        !store
            .bootstrap_admin_claim(&key, "second")
            .await
            .expect("claim")
    );
    assert_eq!(
        store
            .bootstrap_admin_get(&key)
            .await
            .expect("get")
            .as_deref(),
        Some("first")
    );
}
