//! Rate-limit windows and the sign-in throttle's scripts.

use rsc_store::{
    LimitWindow, LoginAttempt, Store, ThrottleBudgets, ThrottleKeys, ThrottleReason,
    ThrottleVerdict,
};

use crate::fixtures::raw;

on_both_topologies!(
    window_counts_in_one_window,
    throttle_reserves_refuses_and_releases
);

async fn window_counts_in_one_window(store: &Store, name: &str) {
    let part = format!("w-{name}");
    let window = LimitWindow::Principal(&part);
    let key = store.keyspace().limit_window(window);
    let empty = store.window_peek(window).await.expect("peek");
    assert_eq!(empty.count, 0);
    assert!(empty.reset_ms < 0, "no key, no expiry: {empty:?}");

    let first = store.window_hit(window, 60_000).await.expect("hit");
    assert_eq!(first.count, 1);
    assert_eq!(first.reset_ms, 60_000, "the window starts at the first hit");
    let second = store.window_hit(window, 60_000).await.expect("hit");
    assert_eq!(second.count, 2);
    assert!(second.reset_ms > 0 && second.reset_ms <= 60_000);
    assert_eq!(second.retry_after_secs(), (second.reset_ms + 999) / 1000);

    let peeked = store.window_peek(window).await.expect("peek");
    assert_eq!(peeked.count, 2, "peeking does not count");

    // A counter without expiry (damaged) gets one again on the next hit.
    let _: () = raw(store, redis::cmd("PERSIST").arg(&key)).await;
    let third = store.window_hit(window, 5_000).await.expect("hit");
    assert_eq!((third.count, third.reset_ms), (3, 5_000));

    store.window_clear(window).await.expect("clear");
    assert_eq!(store.window_peek(window).await.expect("peek").count, 0);
    // Windows expire by themselves.
    let short = store.window_hit(window, 50).await.expect("hit");
    assert_eq!(short.count, 1);
    tokio::time::sleep(std::time::Duration::from_millis(120)).await;
    assert_eq!(store.window_hit(window, 50).await.expect("hit").count, 1);
}

/// A sign-in attempt (its parts made the scenario's own) and the names of its three counters.
struct Attempt {
    ids: LoginAttempt,
    keys: ThrottleKeys,
}

impl std::ops::Deref for Attempt {
    type Target = LoginAttempt;
    fn deref(&self) -> &LoginAttempt {
        &self.ids
    }
}

fn throttle_keys(store: &Store, name: &str, pair: &str, addr: &str, user: &str) -> Attempt {
    let ids = LoginAttempt {
        pair: format!("{name}-{pair}"),
        address: format!("{name}-{addr}"),
        username: format!("{name}-{user}"),
    };
    let keys = store.keyspace().login_throttle_of(&ids);
    Attempt { ids, keys }
}

async fn throttle_reserves_refuses_and_releases(store: &Store, name: &str) {
    let budgets = ThrottleBudgets {
        failures_before_delay: 2,
        max_failures_per_address: 3,
        max_failures_per_username: 4,
        initial_delay_ms: 1_000,
        max_delay_ms: 8_000,
        window_ms: 60_000,
    };
    let now = 1_000_000;
    let alice = throttle_keys(store, name, "alice-a", "a", "alice");

    // Two free failures for the pair; the second already sets the next delay.
    assert_eq!(
        store
            .throttle_reserve(&alice, now, &budgets)
            .await
            .expect("reserve"),
        ThrottleVerdict::Reserved
    );
    assert_eq!(
        store
            .throttle_reserve(&alice, now, &budgets)
            .await
            .expect("reserve"),
        ThrottleVerdict::Reserved
    );
    let pair: Vec<String> = raw(
        store,
        redis::cmd("HMGET")
            .arg(&alice.keys.pair)
            .arg("n")
            .arg("next")
            .arg("delay"),
    )
    .await;
    assert_eq!(
        pair,
        vec![
            "2".to_string(),
            (now + 1_000).to_string(),
            "1000".to_string()
        ]
    );
    assert_eq!(
        store
            .throttle_reserve(&alice, now + 10, &budgets)
            .await
            .expect("reserve"),
        ThrottleVerdict::Refused {
            wait_ms: 990,
            reason: ThrottleReason::Pair
        }
    );

    // A verified attempt clears the pair and gives the address and username their reservation back.
    store.throttle_release(&alice).await.expect("release");
    let exists: i64 = raw(store, redis::cmd("EXISTS").arg(&alice.keys.pair)).await;
    assert_eq!(exists, 0);
    let addr_n: Option<String> =
        raw(store, redis::cmd("HGET").arg(&alice.keys.address).arg("n")).await;
    assert_eq!(addr_n.as_deref(), Some("1"));
    let user_n: Option<String> = raw(store, redis::cmd("GET").arg(&alice.keys.username)).await;
    assert_eq!(user_n.as_deref(), Some("1"));

    // The address's budget spans usernames: bob from the same address is delayed by the address.
    let bob = throttle_keys(store, name, "bob-a", "a", "bob");
    for _ in 0..2 {
        assert_eq!(
            store
                .throttle_reserve(&bob, now, &budgets)
                .await
                .expect("reserve"),
            ThrottleVerdict::Reserved
        );
    }
    assert!(matches!(
        store
            .throttle_reserve(&bob, now, &budgets)
            .await
            .expect("reserve"),
        ThrottleVerdict::Refused {
            reason: ThrottleReason::Pair | ThrottleReason::Address,
            ..
        }
    ));
    let far = now + 1_000_000;
    assert_eq!(
        store
            .throttle_reserve(&bob, far, &budgets)
            .await
            .expect("reserve"),
        ThrottleVerdict::Reserved
    );
    match store
        .throttle_reserve(&bob, far, &budgets)
        .await
        .expect("reserve")
    {
        ThrottleVerdict::Refused { wait_ms, .. } => assert!(wait_ms > 0 && wait_ms <= 8_000),
        other => panic!("expected a refusal, got {other:?}"),
    }

    // An address with no failure is never refused, even past the username's ceiling.
    let carol = throttle_keys(store, name, "carol-b", "b", "carol");
    let carol_c = throttle_keys(store, name, "carol-c", "c", "carol");
    let _: () = raw(
        store,
        redis::cmd("SET")
            .arg(&carol.keys.username)
            .arg(10)
            .arg("PX")
            .arg(60_000),
    )
    .await;
    assert_eq!(
        store
            .throttle_reserve(&carol, now, &budgets)
            .await
            .expect("reserve"),
        ThrottleVerdict::Reserved
    );
    // ... but one that has failed for that username waits out the ceiling's window.
    match store
        .throttle_reserve(&carol, now, &budgets)
        .await
        .expect("reserve")
    {
        ThrottleVerdict::Refused { reason, wait_ms } => {
            assert_eq!(reason, ThrottleReason::Username);
            assert!(wait_ms > 0 && wait_ms <= 60_000);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(
        store
            .throttle_reserve(&carol_c, now, &budgets)
            .await
            .expect("reserve"),
        ThrottleVerdict::Reserved
    );
}
