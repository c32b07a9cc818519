//! The invariant facts a replica keeps beside its cached aggregate (`runtime/kept_facts.rs`) stay the facts of
//! exactly that aggregate through written, refused and retried writes: the write that replaces a revision
//! takes them only once it is in Redis, and a write Redis refuses leaves them alone.

use crate::support;

use rsc_coordinator::observability::stats::Stats;
use rsc_coordinator::runtime::cache::GroupName;
use rsc_coordinator::server::Running;
use rsc_testkit::RedisServer;
use std::time::Duration;
use support::*;

/// The facts cached with `name` on `running`: kept, and equal to the facts counted afresh over the cached
/// aggregate.
fn assert_facts_kept_and_exact(running: &Running, name: &GroupName, when: &str) {
    let cached = running
        .coordinator
        .cache()
        .get(name)
        .unwrap_or_else(|| panic!("{when}: the group is cached"));
    let facts = cached
        .facts
        .as_ref()
        .unwrap_or_else(|| panic!("{when}: facts are kept with a written revision"));
    assert!(facts.is_kept(), "{when}: the facts are still in their cell");
    assert!(
        facts.are_of(&cached.group),
        "{when}: the kept facts are those of the cached aggregate"
    );
}

#[tokio::test]
async fn kept_facts_stay_those_of_the_cached_aggregate_through_a_refused_write() {
    let redis = RedisServer::start();
    let mut config = test_config(&redis.url());
    config.coordinator.reconciler.enabled = false;
    config.coordinator.member_lease_ttl = rsc_coordinator::config::Dur(Duration::from_secs(60));
    let (first, api) = coordinator(config.clone()).await;
    let (second, other_api) = coordinator(config).await;
    api.create_stream("facts", 8).await;
    let name = GroupName::new("facts", "facts");
    let join = |api: &Api, id: &'static str| {
        let api = api.clone();
        async move {
            let r = api.heartbeat("facts", "facts", &Member::new(id)).await;
            assert_eq!(r["status"], "OK", "{id} joins: {r}");
        }
    };

    // The first write counts the facts (the group was loaded), the next updates them in place.
    join(&api, "a").await;
    assert_facts_kept_and_exact(&first, &name, "after a's join");
    join(&api, "b").await;
    assert_facts_kept_and_exact(&first, &name, "after b's join");

    // The other replica moves the group on: the first one's cached revision (with its facts) is stale, so its
    // next write is refused by Redis (a conflict), then decided again on what Redis holds and written.
    join(&other_api, "c").await;
    let conflicts = Stats::get(&first.coordinator.stats().state_conflicts);
    join(&api, "d").await;
    assert!(
        Stats::get(&first.coordinator.stats().state_conflicts) > conflicts,
        "d's first write was refused"
    );
    assert_facts_kept_and_exact(&first, &name, "after the refused write and d's join");

    // And the facts of that write are updated in place by the next ones (debug builds also check every
    // update against facts counted afresh, `Coordinator::commit_with_progress`).
    join(&api, "e").await;
    assert_facts_kept_and_exact(&first, &name, "after e's join");
    let cached = first.coordinator.cache().get(&name).unwrap();
    assert_eq!(cached.group.members.len(), 5, "a to e are members");
    first.shutdown().await.unwrap();
    second.shutdown().await.unwrap();
}
