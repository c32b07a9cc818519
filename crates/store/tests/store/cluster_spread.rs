//! In a cluster, groups with different hash tags live on different masters and each works there.

use std::collections::BTreeSet;

use rsc_store::{CasOutcome, CasWrite, DeleteOutcome, HeartbeatOutcome};

use crate::fixtures::{cluster, cluster_store, create_group, group};

#[tokio::test]
async fn groups_in_different_slots_spread_over_nodes_and_all_work() {
    let store = cluster_store().await;
    let cluster = cluster();
    let mut nodes = BTreeSet::new();
    for i in 0..12 {
        let keys = group(&format!("spread-{i}"));
        create_group(&store, &keys, &["m"]).await;
        let outcome = store
            .heartbeat(&keys, 1, "m", 60_000, Some("{}"))
            .await
            .expect("heartbeat");
        assert!(
            matches!(outcome, HeartbeatOutcome::Renewed { .. }),
            "{outcome:?}"
        );
        let write = CasWrite {
            expected_revision: 1,
            aggregate_json: format!(r#"{{"group":{i}}}"#),
            split: None,
            updated_at: "t".into(),
            lease_ttl_ms: 60_000,
            must_be_live: vec!["m".into()],
            renew: vec!["m".into()],
            ..CasWrite::default()
        };
        assert!(matches!(
            store.cas(&keys, &write).await.expect("cas"),
            CasOutcome::Written { revision: 2, .. }
        ));
        let loaded = store.load(&keys).await.expect("load").expect("present");
        assert_eq!(loaded.aggregate, write.aggregate_json);

        // All three keys of the group sit on the same master (one hash tag).
        let node = cluster.node_index_for_key(&keys.metadata);
        assert_eq!(cluster.node_index_for_key(&keys.leases), node);
        assert_eq!(cluster.node_index_for_key(&keys.progress), node);
        nodes.insert(node);

        assert_eq!(
            store.delete(&keys, 2).await.expect("delete"),
            DeleteOutcome::Deleted
        );
    }
    assert!(
        nodes.len() >= 2,
        "12 groups all landed on node(s) {nodes:?}"
    );
}
