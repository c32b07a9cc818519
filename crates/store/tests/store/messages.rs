//! Shard records page by page (XRANGE / XREVRANGE with an exclusive cursor) and the cluster's slot map.

use rsc_store::{PageDirection, Shard, Store, owner_of};

use crate::fixtures::{cluster, raw};

on_both_topologies!(pages_walk_every_record_once_both_ways);

async fn pages_walk_every_record_once_both_ways(store: &Store, name: &str) {
    let key = format!("rsc-test-{name}:0");
    let shard = Shard::new(format!("rsc-test-{name}"), 0);
    assert!(
        store
            .shard_records(&shard, PageDirection::Backward, None, 10)
            .await
            .expect("a missing stream reads")
            .is_empty()
    );
    let mut ids = Vec::new();
    for i in 0..7 {
        let id: String = raw(
            store,
            redis::cmd("XADD")
                .arg(&key)
                .arg("*")
                .arg("payload")
                .arg(format!("p{i}"))
                .arg("k")
                .arg(i),
        )
        .await;
        ids.push(id);
    }
    for (direction, expected) in [
        (PageDirection::Forward, ids.clone()),
        (PageDirection::Backward, ids.iter().rev().cloned().collect()),
    ] {
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let page = store
                .shard_records(&shard, direction, cursor, 3)
                .await
                .expect("page");
            if page.is_empty() {
                break;
            }
            cursor = rsc_store::parse_stream_id(&page.last().unwrap().id);
            seen.extend(page.into_iter().map(|r| r.id));
        }
        assert_eq!(seen, expected, "{direction:?}");
    }
    let first = store
        .shard_records(&shard, PageDirection::Forward, None, 1)
        .await
        .unwrap();
    assert_eq!(
        first[0].fields,
        vec![
            ("payload".to_owned(), "p0".to_owned()),
            ("k".to_owned(), "0".to_owned())
        ]
    );
    // The ends of the id space are refused by Redis as exclusive bounds; they read as empty.
    for (d, c) in [
        (PageDirection::Backward, (0, 0)),
        (PageDirection::Forward, (u64::MAX, u64::MAX)),
    ] {
        assert!(
            store
                .shard_records(&shard, d, Some(c), 5)
                .await
                .unwrap()
                .is_empty()
        );
    }
}

#[tokio::test]
async fn slot_map_is_absent_on_standalone_and_names_each_key_s_node_on_a_cluster() {
    let fixture = crate::fixtures::standalone().await;
    assert_eq!(fixture.store.cluster_slot_owners().await.unwrap(), None);

    let store = crate::fixtures::cluster_store().await;
    let owners = store
        .cluster_slot_owners()
        .await
        .unwrap()
        .expect("a cluster has a slot map");
    let covered: u32 = owners.iter().map(|o| u32::from(o.end - o.start) + 1).sum();
    assert_eq!(covered, 16384);
    for key in ["orders:0", "orders:1", "payments:7"] {
        let slot: u16 = raw(&store, redis::cmd("CLUSTER").arg("KEYSLOT").arg(key)).await;
        let owner = owner_of(&owners, slot).expect("every slot has an owner");
        let node = &cluster().nodes()[cluster().node_index_for_key(key)];
        assert_eq!(
            owner.endpoint,
            format!("127.0.0.1:{}", node.port()),
            "{key}"
        );
        assert!(owner.start <= slot && slot <= owner.end);
        assert_eq!(owner.node_id.as_ref().map(String::len), Some(40));
    }
}
