//! Token records and the per-user token index scripts.

use rsc_store::Store;

use crate::fixtures::raw;

on_both_topologies!(token_records_and_index);

async fn token_records_and_index(store: &Store, name: &str) {
    let now: i64 = store.server_time_ms().await.expect("time");
    let user = name;
    let index = store.keyspace().user_tokens(user);
    assert_eq!(index, format!("rsc-test:auth:user-tokens:{{user:{name}}}"));
    let digest = |d: &str| format!("{name}-{d}");
    let key = |d: &str| store.keyspace().token(&digest(d));
    assert_eq!(key("a"), format!("rsc-test:auth:token:{{{name}-a}}"));

    // Records expire with the session.
    store
        .token_put(&digest("a"), r#"{"user":"u"}"#, now + 60_000)
        .await
        .expect("put");
    assert_eq!(
        store.token_get(&digest("a")).await.expect("get").as_deref(),
        Some(r#"{"user":"u"}"#)
    );
    let ttl: i64 = raw(store, redis::cmd("PTTL").arg(key("a"))).await;
    assert!(ttl > 0 && ttl <= 60_000, "{ttl}");
    assert_eq!(store.token_get(&digest("none")).await.expect("get"), None);

    // Listing with a cap of 2: ended entries go first, then the oldest beyond the cap.
    let ended: Vec<String> = store
        .token_index_add(user, now, now - 1, "ended", 2)
        .await
        .expect("add");
    assert_eq!(ended, Vec::<String>::new());
    let evicted = store
        .token_index_add(user, now, now + 10_000, "a", 2)
        .await
        .expect("add");
    assert_eq!(
        evicted,
        Vec::<String>::new(),
        "the ended entry is dropped, not evicted"
    );
    assert_eq!(store.token_index_list(user).await.expect("list"), vec!["a"]);
    store
        .token_index_add(user, now, now + 30_000, "b", 2)
        .await
        .expect("add");
    let evicted = store
        .token_index_add(user, now, now + 20_000, "c", 2)
        .await
        .expect("add");
    assert_eq!(evicted, vec!["a"]);
    assert_eq!(
        store.token_index_list(user).await.expect("list"),
        vec!["c", "b"]
    );
    // The index expires with its last token.
    let at: i64 = raw(store, redis::cmd("PEXPIRETIME").arg(&index)).await;
    assert_eq!(at, now + 30_000);

    assert!(
        store
            .token_index_contains(user, "b")
            .await
            .expect("contains")
    );
    assert!(
        !store
            .token_index_contains(user, "a")
            .await
            .expect("contains")
    );
    assert!(store.token_index_remove(user, "b").await.expect("remove"));
    assert!(!store.token_index_remove(user, "b").await.expect("remove"));

    assert_eq!(
        store.token_index_take_all(user).await.expect("take"),
        vec!["c"]
    );
    let exists: i64 = raw(store, redis::cmd("EXISTS").arg(&index)).await;
    assert_eq!(exists, 0);
    assert_eq!(
        store.token_index_take_all(user).await.expect("take"),
        Vec::<String>::new()
    );

    assert!(store.token_delete(&digest("a")).await.expect("delete"));
    assert!(!store.token_delete(&digest("a")).await.expect("delete"));

    // Tokens issued in the same millisecond are capped in the order they were listed, whatever their digests
    // (equal scores would order by digest): "zz" before "aa" before "mm", so "zz" goes first, then "aa".
    let same_user = format!("{name}-same");
    let same = store.keyspace().user_tokens(&same_user);
    for d in ["zz", "aa"] {
        let evicted = store
            .token_index_add(&same_user, now, now + 40_000, d, 2)
            .await
            .expect("add");
        assert_eq!(evicted, Vec::<String>::new());
    }
    let evicted = store
        .token_index_add(&same_user, now, now + 40_000, "mm", 2)
        .await
        .expect("add");
    assert_eq!(evicted, vec!["zz"]);
    let evicted = store
        .token_index_add(&same_user, now, now + 40_000, "bb", 2)
        .await
        .expect("add");
    assert_eq!(evicted, vec!["aa"]);
    assert_eq!(
        store.token_index_list(&same_user).await.expect("list"),
        vec!["mm", "bb"]
    );
    let at: i64 = raw(store, redis::cmd("PEXPIRETIME").arg(&same)).await;
    assert_eq!(
        at,
        now + 40_001,
        "the index expires with its last entry, rounded up"
    );
}
