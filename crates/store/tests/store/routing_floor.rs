//! The routing boundary of a shard stream (guarded publish): a stale producer's append is refused and writes
//! nothing, a current one lands; raising is idempotent and records the switch point; plain XADDs after the
//! switch are counted apart from guarded appends; the routing key shares the stream's slot.

use crate::fixtures::raw;
use rsc_protocol::names::shard_routing_key;
use rsc_store::{AppendReply, Store, SwitchPoint, guarded_append};

on_both_topologies!(guarded_append_refuses_stale_routing);

async fn append(store: &Store, key: &str, version: i64, n: &str) -> AppendReply {
    let cmd = guarded_append(
        key,
        &shard_routing_key(key),
        version,
        Some(1000),
        [("n", n.as_bytes())],
    );
    let v: redis::Value = raw(store, &cmd).await;
    AppendReply::from_value(&v).expect("decodable reply")
}

async fn guarded_append_refuses_stale_routing(store: &Store, name: &str) {
    let old = format!("rsc-test-{name}:0");
    let new = format!("rsc-test-{name}:1");
    let routing_old = shard_routing_key(&old);
    let routing_new = shard_routing_key(&new);

    // Same slot as the stream, as the cluster itself computes it.
    let slot = |k: String| redis::cmd("CLUSTER").arg("KEYSLOT").arg(k).clone();
    if store.connection().is_cluster() {
        let a: i64 = raw(store, &slot(old.clone())).await;
        let b: i64 = raw(store, &slot(routing_old.clone())).await;
        assert_eq!(a, b, "the routing key lies in its stream's slot");
    }

    // No stream yet: NOMKSTREAM, nothing created.
    assert_eq!(
        append(store, &old, 1, "0").await,
        AppendReply::StreamMissing
    );
    for k in [&old, &new] {
        let _: String = raw(
            store,
            redis::cmd("XADD").arg(k).arg("*").arg("n").arg("seed"),
        )
        .await;
    }
    // No boundary yet: any version appends; nothing is counted.
    assert!(matches!(
        append(store, &old, 1, "1").await,
        AppendReply::Appended(_)
    ));
    assert_eq!(
        store
            .appends_after_switch(&old, &routing_old)
            .await
            .expect("read"),
        None
    );

    // The switch to routing version 2 raises the boundary on both shards; repeating it changes nothing.
    assert!(
        store
            .raise_routing_floor(&old, &routing_old, 2)
            .await
            .expect("raise")
    );
    assert!(
        store
            .raise_routing_floor(&new, &routing_new, 2)
            .await
            .expect("raise")
    );
    assert!(
        !store
            .raise_routing_floor(&old, &routing_old, 2)
            .await
            .expect("again")
    );
    assert!(
        !store
            .raise_routing_floor(&old, &routing_old, 1)
            .await
            .expect("lower")
    );
    let last: Vec<(String, Vec<(String, String)>)> = raw(
        store,
        redis::cmd("XREVRANGE")
            .arg(&old)
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(1),
    )
    .await;
    let switch = store
        .appends_after_switch(&old, &routing_old)
        .await
        .expect("read")
        .expect("a switch point");
    assert_eq!(
        switch,
        SwitchPoint {
            floor: 2,
            switch_id: last[0].0.clone(),
            appended: 0,
            guarded: 0
        }
    );

    // A stale producer (version 1) is refused and writes nothing.
    let len_before: i64 = raw(store, redis::cmd("XLEN").arg(&old)).await;
    assert_eq!(
        append(store, &old, 1, "stale").await,
        AppendReply::StaleRouting { floor: 2 }
    );
    let len_after: i64 = raw(store, redis::cmd("XLEN").arg(&old)).await;
    assert_eq!(len_before, len_after, "a refused append writes nothing");

    // After refreshing routing it appends (to the new shard) with version 2.
    let AppendReply::Appended(id) = append(store, &new, 2, "stale").await else {
        panic!("a current producer appends");
    };
    let got: Vec<(String, Vec<(String, String)>)> =
        raw(store, redis::cmd("XRANGE").arg(&new).arg(&id).arg(&id)).await;
    assert_eq!(got[0].1, vec![("n".to_string(), "stale".to_string())]);

    // A guarded append to the old shard with current routing is not a plain append; a plain XADD is.
    assert!(matches!(
        append(store, &old, 2, "current").await,
        AppendReply::Appended(_)
    ));
    let _: String = raw(
        store,
        redis::cmd("XADD").arg(&old).arg("*").arg("n").arg("plain"),
    )
    .await;
    let after = store
        .appends_after_switch(&old, &routing_old)
        .await
        .expect("read")
        .expect("a switch point");
    assert_eq!(
        (after.appended, after.guarded, after.plain_appends()),
        (2, 1, 1)
    );

    // The next switch starts counting afresh.
    assert!(
        store
            .raise_routing_floor(&old, &routing_old, 3)
            .await
            .expect("raise")
    );
    let next = store
        .appends_after_switch(&old, &routing_old)
        .await
        .expect("read")
        .expect("a switch point");
    assert_eq!((next.floor, next.appended, next.plain_appends()), (3, 0, 0));
    assert_eq!(
        append(store, &old, 2, "stale again").await,
        AppendReply::StaleRouting { floor: 3 }
    );
}
