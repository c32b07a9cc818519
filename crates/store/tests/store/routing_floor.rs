//! The routing boundary of a shard stream (guarded publish): a stale producer's append is refused and writes
//! nothing, a current one lands, a newer one raises the boundary itself first; raising is idempotent, records
//! the switch point and annotates the switch; consumers read all three fields; plain XADDs after the switch
//! are counted apart from guarded appends; the routing key shares the stream's slot.

use crate::fixtures::raw;
use rsc_protocol::names::shard_routing_key;
use rsc_store::{AppendReply, BoundaryFields, Shard, Store, SwitchPoint, guarded_append};

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
    let shard = |k: &str| {
        let (prefix, index) = k.rsplit_once(':').expect("a shard stream key");
        Shard::new(prefix, index.parse().expect("a shard index"))
    };

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
    // No boundary yet: the first guarded append raises it to its own version, at the seed entry.
    let seed_old: Vec<(String, Vec<(String, String)>)> =
        raw(store, redis::cmd("XRANGE").arg(&old).arg("-").arg("+")).await;
    assert!(matches!(
        append(store, &old, 1, "1").await,
        AppendReply::Appended(_)
    ));
    let first = store
        .appends_after_switch(&shard(&old))
        .await
        .expect("read")
        .expect("raised by the append");
    assert_eq!(
        (first.floor, first.switch_id.as_str(), first.guarded),
        (1, seed_old[0].0.as_str(), 1)
    );

    // The switch to routing version 2 raises the boundary on both shards and annotates it; repeating it
    // changes nothing; a lower one leaves a boundary above it alone and says so.
    let raise = |k: &str, floor: i64, scale: &'static str| {
        let shard = shard(k);
        async move {
            store
                .raise_routing_floor(&shard, floor, scale)
                .await
                .expect("raise")
        }
    };
    assert!(raise(&old, 2, "2 1 2 1").await.raised);
    assert!(raise(&new, 2, "2 1 2 1").await.raised);
    let again = raise(&old, 2, "2 1 2 1").await;
    assert!(!again.raised && again.floor == 2);
    let lower = raise(&old, 1, "1 1 1 0").await;
    assert!(!lower.raised && lower.floor == 2, "{lower:?}");
    let fields = BoundaryFields::from_value(
        &raw::<redis::Value>(store, &rsc_store::read_boundary(&routing_old)).await,
    )
    .expect("fields");
    assert_eq!(fields.floor.as_deref(), Some("2"));
    assert_eq!(fields.switch_id.as_deref(), Some(again.switch_id.as_str()));
    assert_eq!(
        fields.scale.as_deref(),
        Some("2 1 2 1"),
        "a lower raise does not annotate"
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
        .appends_after_switch(&shard(&old))
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
        .appends_after_switch(&shard(&old))
        .await
        .expect("read")
        .expect("a switch point");
    assert_eq!(
        (after.appended, after.guarded, after.plain_appends()),
        (2, 1, 1)
    );

    // The next switch starts counting afresh.
    assert!(raise(&old, 3, "").await.raised);
    let next = store
        .appends_after_switch(&shard(&old))
        .await
        .expect("read")
        .expect("a switch point");
    assert_eq!((next.floor, next.appended, next.plain_appends()), (3, 0, 0));
    assert_eq!(
        append(store, &old, 2, "stale again").await,
        AppendReply::StaleRouting { floor: 3 }
    );

    // A producer that learnt of the next switch first raises the boundary with its append, recording the
    // entry before it as the switch point; the coordinator's raise then only annotates, keeping that point.
    let before: Vec<(String, Vec<(String, String)>)> = raw(
        store,
        redis::cmd("XREVRANGE")
            .arg(&old)
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(1),
    )
    .await;
    let AppendReply::Appended(moved) = append(store, &old, 4, "newer").await else {
        panic!("a newer producer appends");
    };
    assert_eq!(
        append(store, &old, 3, "now stale").await,
        AppendReply::StaleRouting { floor: 4 }
    );
    let annotated = raise(&old, 4, "4 2 3 1").await;
    assert_eq!(
        (
            annotated.raised,
            annotated.floor,
            annotated.switch_id.as_str()
        ),
        (false, 4, before[0].0.as_str())
    );
    assert!(
        rsc_store::parse_stream_id(&moved) > rsc_store::parse_stream_id(&annotated.switch_id),
        "the newer record lies after the switch point"
    );
    let fields = BoundaryFields::from_value(
        &raw::<redis::Value>(store, &rsc_store::read_boundary(&routing_old)).await,
    )
    .expect("fields");
    assert_eq!(fields.scale.as_deref(), Some("4 2 3 1"));

    // A retired shard (stream gone) is not raised by a newer append: nothing written.
    let _: i64 = raw(store, redis::cmd("DEL").arg(&new)).await;
    assert_eq!(
        append(store, &new, 9, "late").await,
        AppendReply::StreamMissing
    );
    assert_eq!(
        raise(&new, 2, "").await.floor,
        2,
        "boundary of the retired shard unchanged"
    );
}
