//! The hot path costs exactly one Redis command per heartbeat, counted by the server itself.
//!
//! Redis' `INFO commandstats` also counts the commands a script issues internally, so the
//! expected counts are: one EVALSHA per heartbeat from the client, plus exactly the heartbeat
//! script's own O(1)/O(log N) calls (TIME, HGET of the revision, ZSCORE of the lease, ZADD of the
//! new deadline, HSET of the progress). Anything else (EVAL, SCRIPT LOAD, HGETALL, a second round
//! trip) shows up as an extra entry and fails the test.

use std::collections::BTreeMap;

use rsc_store::HeartbeatOutcome;
use rsc_testkit::command_calls;

use crate::fixtures::{create_group, group, raw, standalone};

/// Commands that ran between two snapshots, without the `info` of the first snapshot itself.
fn ran_between(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    after
        .iter()
        .filter(|(name, _)| name.as_str() != "info")
        .filter_map(|(name, &calls)| {
            let delta = calls.saturating_sub(before.get(name).copied().unwrap_or(0));
            (delta > 0).then(|| (name.clone(), delta))
        })
        .collect()
}

fn counts(entries: &[(&str, u64)]) -> BTreeMap<String, u64> {
    entries.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// The commands the heartbeat script runs inside one EVALSHA (Redis counts them too), `n` times each.
fn script_internal(n: u64) -> BTreeMap<String, u64> {
    counts(&[
        ("time", n),
        ("hget", n),
        ("zscore", n),
        ("zadd", n),
        ("zrange", n),
    ])
}

#[tokio::test]
async fn a_heartbeat_is_exactly_one_evalsha() {
    let fixture = standalone().await;
    let (store, url) = (&fixture.store, fixture.server.url());
    let keys = group("hot-path");
    create_group(store, &keys, &["m"]).await;

    // Scripts were preloaded at connect, so even the first heartbeat is a plain EVALSHA.
    let before = command_calls(&url).await;
    for i in 0..100 {
        let progress = format!(r#"{{"n":{i}}}"#);
        let outcome = store
            .heartbeat(&keys, 1, "m", 60_000, Some(&progress))
            .await
            .expect("heartbeat");
        assert!(
            matches!(outcome, HeartbeatOutcome::Renewed { .. }),
            "{outcome:?}"
        );
    }
    let ran = ran_between(&before, &command_calls(&url).await);
    let mut expected = script_internal(100);
    expected.insert("evalsha".into(), 100);
    expected.insert("hset".into(), 100);
    assert_eq!(ran, expected);

    // After the server forgot its scripts (as after a restart), the first heartbeat loads the
    // script once (EVALSHA → NOSCRIPT, SCRIPT LOAD, EVALSHA)...
    let () = raw(store, redis::cmd("SCRIPT").arg("FLUSH")).await;
    let before = command_calls(&url).await;
    let outcome = store
        .heartbeat(&keys, 1, "m", 60_000, None)
        .await
        .expect("heartbeat");
    assert!(
        matches!(outcome, HeartbeatOutcome::Renewed { .. }),
        "{outcome:?}"
    );
    let mut first = ran_between(&before, &command_calls(&url).await);
    let evalsha = first.remove("evalsha").unwrap_or(0);
    assert!((1..=2).contains(&evalsha), "evalsha ran {evalsha} times");
    let mut expected = script_internal(1);
    expected.insert("script|load".into(), 1);
    assert_eq!(first, expected);

    // ...and from then on it is one EVALSHA again (no progress given: no HSET).
    let before = command_calls(&url).await;
    store
        .heartbeat(&keys, 1, "m", 60_000, None)
        .await
        .expect("heartbeat");
    let ran = ran_between(&before, &command_calls(&url).await);
    let mut expected = script_internal(1);
    expected.insert("evalsha".into(), 1);
    assert_eq!(ran, expected);
}
