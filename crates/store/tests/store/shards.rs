//! Shard streams: provisioning, existence, XINFO evidence, retiring, and an earlier stream's leftovers.

use rsc_store::{DataKey, RetireOutcome, Shard, Store, parse_stream_id};

use crate::fixtures::{create_group, group, raw};

on_both_topologies!(
    observations_in_one_go_and_growth_since_an_id,
    revisions_of_many_groups,
    provision_and_xinfo_evidence,
    shards_exist_in_order,
    leftovers_found_and_deleted,
    retire_only_when_drained,
    pending_up_to_a_switch_point
);

async fn provision_and_xinfo_evidence(store: &Store, name: &str) {
    let key = format!("rsc-test-{name}:0");
    let other = format!("rsc-test-{name}:1");
    let (shard, other_shard) = (
        Shard::new(format!("rsc-test-{name}"), 0),
        Shard::new(format!("rsc-test-{name}"), 1),
    );
    assert_eq!(store.shard_stream_info(&shard).await.expect("info"), None);
    assert_eq!(store.shard_groups(&shard).await.expect("groups"), None);
    assert_eq!(store.shard_length(&shard).await.expect("xlen"), 0);
    assert_eq!(
        store.shard_memory_usage(&shard).await.expect("memory"),
        None
    );
    assert_eq!(
        store
            .shards_exist(std::slice::from_ref(&shard))
            .await
            .expect("exists"),
        vec![false]
    );
    assert_eq!(
        store
            .shards_exist(std::slice::from_ref(&other_shard))
            .await
            .expect("exists"),
        vec![false]
    );

    store.shard_provision(&shard, "g").await.expect("provision");
    store
        .shard_provision(&shard, "g")
        .await
        .expect("provision again (BUSYGROUP)");
    assert_eq!(
        store
            .shards_exist(std::slice::from_ref(&shard))
            .await
            .expect("exists"),
        vec![true]
    );
    let info = store
        .shard_stream_info(&shard)
        .await
        .expect("info")
        .expect("exists");
    assert_eq!((info.length, info.entries_added), (0, Some(0)));
    assert_eq!(info.first_entry_id, None);

    // Entries written before a second group is created: it starts at the end with a known lag of 0.
    for _ in 0..3 {
        let _: String = raw(
            store,
            redis::cmd("XADD").arg(&key).arg("*").arg("f").arg("v"),
        )
        .await;
    }
    store
        .shard_provision(&shard, "h")
        .await
        .expect("provision h");
    let info = store
        .shard_stream_info(&shard)
        .await
        .expect("info")
        .expect("exists");
    assert_eq!((info.length, info.entries_added), (3, Some(3)));
    assert!(info.first_entry_id.is_some());
    assert_eq!(info.last_entry_id, info.last_generated_id);
    assert!(parse_stream_id(info.last_generated_id.as_deref().unwrap()).is_some());
    assert_eq!(store.shard_length(&shard).await.expect("xlen"), 3);
    assert!(
        store
            .shard_memory_usage(&shard)
            .await
            .expect("memory")
            .is_some_and(|b| b > 0)
    );

    let groups = store
        .shard_groups(&shard)
        .await
        .expect("groups")
        .expect("exists");
    let g = groups
        .iter()
        .find(|g| g.name.as_deref() == Some("g"))
        .expect("g");
    assert_eq!(
        (g.pending, g.lag, g.entries_read),
        (Some(0), Some(3), Some(0))
    );
    let h = groups
        .iter()
        .find(|g| g.name.as_deref() == Some("h"))
        .expect("h");
    assert_eq!((h.pending, h.lag), (Some(0), Some(0)));
    assert_eq!(h.last_delivered_id, info.last_generated_id);

    // A key of another type is an error, not "missing".
    let _: () = raw(store, redis::cmd("SET").arg(&other).arg("x")).await;
    assert!(store.shard_provision(&other_shard, "g").await.is_err());
}

/// Several shards in one call, answered in order; on a cluster the streams of a stream's shards lie in many
/// slots (no hash tag), and the call still works.
async fn shards_exist_in_order(store: &Store, name: &str) {
    let few: Vec<Shard> = (0..3)
        .map(|i| Shard::new(format!("rsc-test-{name}-few"), i))
        .collect();
    let keys: Vec<String> = (0..3).map(|i| format!("rsc-test-{name}-few:{i}")).collect();
    let _: () = raw(store, redis::cmd("SET").arg(&keys[1]).arg("x")).await;
    assert_eq!(
        store.shards_exist(&few).await.expect("exists"),
        vec![false, true, false]
    );
    let shards: Vec<Shard> = (0..300)
        .map(|i| Shard::new(format!("rsc-test-{name}"), i))
        .collect();
    for i in [0, 7, 299] {
        let key = format!("rsc-test-{name}:{i}");
        let _: () = raw(store, redis::cmd("SET").arg(&key).arg("x")).await;
    }
    let found = store
        .shards_exist(&shards)
        .await
        .expect("exists across slots");
    let present: Vec<usize> = (0..300).filter(|i| found[*i]).collect();
    assert_eq!(present, vec![0, 7, 299]);
}

async fn retire_only_when_drained(store: &Store, name: &str) {
    let key = format!("rsc-test-{name}:0");
    let shard = Shard::new(format!("rsc-test-{name}"), 0);
    assert_eq!(
        store
            .shard_retire_if_drained(&shard)
            .await
            .expect("retire missing"),
        RetireOutcome::Retired
    );
    store.shard_provision(&shard, "g").await.expect("provision");
    let _: String = raw(
        store,
        redis::cmd("XADD").arg(&key).arg("*").arg("f").arg("v"),
    )
    .await;
    assert_eq!(
        store.shard_retire_if_drained(&shard).await.expect("retire"),
        RetireOutcome::KeptUnread,
        "an unread entry keeps the stream"
    );
    let _: redis::Value = raw(
        store,
        redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg("g")
            .arg("c")
            .arg("STREAMS")
            .arg(&key)
            .arg(">"),
    )
    .await;
    assert_eq!(
        store.shard_retire_if_drained(&shard).await.expect("retire"),
        RetireOutcome::KeptUnread,
        "a pending entry keeps the stream"
    );
    let id = store
        .shard_stream_info(&shard)
        .await
        .expect("info")
        .and_then(|i| i.last_generated_id)
        .expect("id");
    let _: i64 = raw(store, redis::cmd("XACK").arg(&key).arg("g").arg(&id)).await;
    assert_eq!(
        store.shard_retire_if_drained(&shard).await.expect("retire"),
        RetireOutcome::Retired
    );
    assert_eq!(
        store
            .shards_exist(std::slice::from_ref(&shard))
            .await
            .expect("exists"),
        vec![false]
    );
}

/// What creating a stream again finds of an earlier one (a plain key named like the prefix, shard streams)
/// and deletes when told to (`ADOPT`: the routing boundaries; `PURGE`: everything), each key by its ids.
async fn leftovers_found_and_deleted(store: &Store, name: &str) {
    let prefix = format!("rsc-test-{name}");
    let (zero, one) = (
        Shard::new(prefix.as_str(), 0),
        Shard::new(prefix.as_str(), 1),
    );
    assert!(!store.prefix_key_exists(&prefix).await.expect("exists"));
    let _: () = raw(store, redis::cmd("SET").arg(&prefix).arg("x")).await;
    assert!(store.prefix_key_exists(&prefix).await.expect("exists"));
    store.shard_provision(&zero, "g").await.expect("provision");
    store.ensure_routing_key(&zero).await.expect("routing key");
    let routing = format!("{prefix}:0:{{{prefix}:0}}:routing");
    let there = |key: String| async move {
        let n: i64 = raw(store, redis::cmd("EXISTS").arg(&key)).await;
        n == 1
    };
    assert!(there(routing.clone()).await, "the boundary the store names");
    assert_eq!(
        store
            .delete_data_keys(&[
                DataKey::Routing(zero.clone()),
                DataKey::Routing(one.clone())
            ])
            .await
            .expect("delete boundaries"),
        1,
        "one boundary existed"
    );
    assert!(!there(routing).await);
    assert_eq!(
        store
            .shards_exist(&[zero.clone(), one.clone()])
            .await
            .expect("exists"),
        vec![true, false],
        "the shard stream stays"
    );
    assert_eq!(
        store
            .delete_data_keys(&[
                DataKey::Prefix(prefix.clone()),
                DataKey::Stream(zero.clone()),
                DataKey::Stream(one),
            ])
            .await
            .expect("purge"),
        2
    );
    assert!(!store.prefix_key_exists(&prefix).await.expect("exists"));
    assert_eq!(
        store.shards_exist(&[zero]).await.expect("exists"),
        vec![false]
    );
}

/// Ordered parents: pending entries are judged only up to the switch point; entries delivered after it
/// and not acknowledged do not count.
async fn pending_up_to_a_switch_point(store: &Store, name: &str) {
    let key = format!("rsc-test-{name}:0");
    let shard = Shard::new(format!("rsc-test-{name}"), 0);
    assert_eq!(
        store
            .shard_pending_up_to(&shard, "g", "1-0", 1)
            .await
            .expect("no stream"),
        None
    );
    store.shard_provision(&shard, "g").await.expect("provision");
    assert_eq!(
        store
            .shard_pending_up_to(&shard, "other", "1-0", 1)
            .await
            .expect("no group"),
        None
    );
    let mut ids = Vec::new();
    for _ in 0..3 {
        let id: String = raw(
            store,
            redis::cmd("XADD").arg(&key).arg("*").arg("f").arg("v"),
        )
        .await;
        ids.push(id);
    }
    let switch_point = ids[1].clone();
    let (k, id) = (key.as_str(), &shard);
    let up_to = |end: String| async move {
        store
            .shard_pending_up_to(id, "g", &end, 10)
            .await
            .expect("XPENDING")
    };
    assert_eq!(
        up_to(switch_point.clone()).await,
        Some(0),
        "nothing read yet"
    );
    let _: redis::Value = raw(
        store,
        redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg("g")
            .arg("c")
            .arg("STREAMS")
            .arg(k)
            .arg(">"),
    )
    .await;
    assert_eq!(up_to(switch_point.clone()).await, Some(2));
    let acked: i64 = raw(
        store,
        redis::cmd("XACK").arg(k).arg("g").arg(&ids[0]).arg(&ids[1]),
    )
    .await;
    assert_eq!(acked, 2);
    assert_eq!(
        up_to(switch_point).await,
        Some(0),
        "the entry after the switch point is still pending, but not counted"
    );
    assert_eq!(up_to(ids[2].clone()).await, Some(1));
}

/// What the metrics refresh reads: every existing shard's XINFO and MEMORY at once, and for an idle group only
/// whether any shard got an entry after the last id read.
async fn observations_in_one_go_and_growth_since_an_id(store: &Store, name: &str) {
    let keys: Vec<String> = (0..3).map(|s| format!("rsc-test-{name}:{s}")).collect();
    let shards: Vec<Shard> = (0..3)
        .map(|s| Shard::new(format!("rsc-test-{name}"), s))
        .collect();
    for s in 0..2 {
        store
            .shard_provision(&Shard::new(format!("rsc-test-{name}"), s), "g")
            .await
            .expect("provision");
    }
    let _: String = raw(
        store,
        redis::cmd("XADD").arg(&keys[1]).arg("*").arg("f").arg("v"),
    )
    .await;
    let seen = store
        .shard_observations(&shards)
        .await
        .expect("observations");
    assert_eq!(seen.len(), 3);
    let (a, b) = (
        seen[0].clone().expect("0 exists"),
        seen[1].clone().expect("1 exists"),
    );
    assert!(seen[2].is_none(), "the absent stream reads as absent");
    assert_eq!((a.info.length, b.info.length), (0, 1));
    assert_eq!(
        b.info,
        store
            .shard_stream_info(&Shard::new(format!("rsc-test-{name}"), 1))
            .await
            .unwrap()
            .unwrap()
    );
    assert_eq!(
        b.groups,
        store
            .shard_groups(&Shard::new(format!("rsc-test-{name}"), 1))
            .await
            .unwrap()
            .unwrap()
    );
    assert_eq!(b.groups[0].lag, Some(1));
    assert!(b.memory_bytes.is_some_and(|m| m > 0));
    assert!(
        store
            .shard_observations(&[])
            .await
            .expect("none")
            .is_empty()
    );

    let after: Vec<String> = vec![
        a.info.last_generated_id.clone().expect("an id"),
        b.info.last_generated_id.clone().expect("an id"),
        "0-0".to_owned(),
    ];
    assert_eq!(
        store
            .streams_grown_since(&shards, &after)
            .await
            .expect("xread"),
        vec![false, false, false],
        "nothing appended since"
    );
    let _: String = raw(
        store,
        redis::cmd("XADD").arg(&keys[0]).arg("*").arg("f").arg("v"),
    )
    .await;
    let _: String = raw(
        store,
        redis::cmd("XADD").arg(&keys[2]).arg("*").arg("f").arg("v"),
    )
    .await;
    assert_eq!(
        store
            .streams_grown_since(&shards, &after)
            .await
            .expect("xread"),
        vec![true, false, true],
        "an append to a stream, and a stream that appeared with an entry"
    );
    assert!(
        store
            .streams_grown_since(&shards, &after[..1])
            .await
            .is_err()
    );
    assert!(
        store
            .streams_grown_since(&[], &[])
            .await
            .expect("none")
            .is_empty()
    );
}

async fn revisions_of_many_groups(store: &Store, name: &str) {
    let a = group(&format!("{name}-a"));
    let b = group(&format!("{name}-b"));
    let missing = group(&format!("{name}-missing"));
    create_group(store, &a, &[]).await;
    create_group(store, &b, &[]).await;
    assert_eq!(
        store
            .revisions(&[&a.name, &missing.name, &b.name])
            .await
            .expect("revisions"),
        vec![Some(1), None, Some(1)]
    );
    assert!(store.revisions(&[]).await.expect("none").is_empty());
}
