//! What `rsc doctor` reads (`diagnostics.rs`) on a standalone server of its own: INFO sections, CONFIG GET,
//! the keys under a prefix (glob characters in the prefix match themselves), ACL answers; on a cluster
//! connection the prefix scan is refused rather than answered for one node.

use crate::fixtures::{cluster_store, raw, standalone};
use rsc_store::AclAnswer;

#[tokio::test]
async fn doctor_reads_standalone() {
    let f = standalone().await;
    let store = &f.store;
    assert!(
        store
            .info("server")
            .await
            .unwrap()
            .contains_key("redis_version")
    );
    assert_eq!(
        store
            .info("persistence")
            .await
            .unwrap()
            .get("aof_enabled")
            .map(String::as_str),
        Some("0")
    );
    assert_eq!(
        store.config_value("appendonly").await.unwrap().as_deref(),
        Some("no")
    );
    assert_eq!(store.config_value("no-such-parameter").await.unwrap(), None);

    for k in ["kp*:a", "kp*:b", "kpx:c", "other:d"] {
        let () = raw(store, redis::cmd("SET").arg(k).arg("1")).await;
    }
    assert_eq!(
        store.keys_under("kp*", 100).await.unwrap(),
        ["kp*:a", "kp*:b"]
    );
    assert_eq!(store.keys_under("kp*", 1).await.unwrap().len(), 1);

    match store.acl_may_delete(None, "kp*:a").await.unwrap() {
        AclAnswer::Allowed { user } => assert_eq!(user, "default"),
        other => panic!("{other:?}"),
    }
    let () = raw(
        store,
        redis::cmd("ACL")
            .arg("SETUSER")
            .arg("app")
            .arg("on")
            .arg(">pw")
            .arg("~app:*")
            .arg("+@all"),
    )
    .await;
    assert_eq!(store.acl_users().await.unwrap(), ["app", "default"]);
    assert!(matches!(
        store.acl_may_delete(Some("app"), "kp*:a").await.unwrap(),
        AclAnswer::Denied { .. }
    ));
}

#[tokio::test]
async fn prefix_scan_is_refused_on_a_cluster() {
    let store = cluster_store().await;
    assert!(store.keys_under("kp", 10).await.is_err());
}
