//! Heartbeats: renewing leases and progress without touching the aggregate, and every refusal.

use rsc_store::{CasOutcome, CasWrite, HeartbeatOutcome, PeerLease, Store, StoreError, Watch};

use crate::fixtures::{create_group, existing_keys, group, set_lease, snapshot};

on_both_topologies!(
    heartbeat_renews_lease_and_progress_only,
    heartbeat_refusals_write_nothing,
    heartbeat_tells_when_another_members_lease_lapsed,
    heartbeat_names_the_next_lease_to_end_within_its_window,
    heartbeat_reports_the_awaited_members_lease,
);

/// Renews m1's lease in group `name` at revision 1 watching as asked: (Redis now, another lease lapsed, the
/// next lapse named, the awaited member's deadline).
async fn renew_m1(
    store: &Store,
    name: &str,
    window_ms: i64,
    awaited: Option<&str>,
) -> (i64, bool, Option<PeerLease>, Option<i64>) {
    let watch = Watch { window_ms, awaited };
    match store
        .heartbeat_watching(&group(name), 1, "m1", 20_000, watch, None)
        .await
        .expect("heartbeat")
    {
        HeartbeatOutcome::Renewed {
            now_ms,
            others_lapsed,
            next_lapse,
            awaited_deadline_ms,
        } => (now_ms, others_lapsed, next_lapse, awaited_deadline_ms),
        other => panic!("expected Renewed, got {other:?}"),
    }
}

async fn heartbeat_names_the_next_lease_to_end_within_its_window(store: &Store, name: &str) {
    let keys = group(name);
    create_group(store, &keys, &["m1", "m2", "m3"]).await;
    let watch = |window: i64| async move {
        let (now, lapsed, next, awaited) = renew_m1(store, name, window, None).await;
        assert_eq!(awaited, None, "no member named, none reported");
        (now, lapsed, next)
    };
    // Every other lease ends far beyond a small window: nothing is named.
    let (now, _, _) = watch(0).await;
    set_lease(store, &keys, "m2", now + 600_000).await;
    set_lease(store, &keys, "m3", now + 900_000).await;
    let (_, lapsed, next) = watch(5_000).await;
    assert!(!lapsed);
    assert_eq!(next, None, "no lease ends within 5 s");
    // m2's lease ends within the window: it is named, with its deadline, and it has not lapsed yet.
    let (now, _, _) = watch(0).await;
    set_lease(store, &keys, "m2", now + 2_000).await;
    let (_, lapsed, next) = watch(5_000).await;
    assert!(!lapsed, "m2's lease is still live");
    assert_eq!(
        next,
        Some(PeerLease {
            member: "m2".into(),
            deadline_ms: now + 2_000
        })
    );
    // Without a window (the plain heartbeat) nothing is named, whatever the deadlines.
    let (_, _, next) = watch(0).await;
    assert_eq!(next, None);
    // A lapsed lease is named too, and reported lapsed.
    set_lease(store, &keys, "m3", 5).await;
    let (_, lapsed, next) = watch(5_000).await;
    assert!(lapsed);
    assert_eq!(
        next,
        Some(PeerLease {
            member: "m3".into(),
            deadline_ms: 5
        })
    );
    // The caller's own lease is never named, even when it is the only one left.
    for m in ["m2", "m3"] {
        let _: i64 = crate::fixtures::raw(store, redis::cmd("ZREM").arg(&keys.leases).arg(m)).await;
    }
    let (_, lapsed, next) = watch(60_000).await;
    assert!(!lapsed);
    assert_eq!(next, None, "only the caller's own lease is left");
}

/// With an awaited member named, the renewal reports that member's lease deadline beside what the window shows,
/// and -1 (None) for a member without a lease; the caller's own lease is renewed as always. `lease_of` reads one
/// lease alone.
async fn heartbeat_reports_the_awaited_members_lease(store: &Store, name: &str) {
    let keys = group(name);
    create_group(store, &keys, &["m1", "m2", "m3"]).await;
    let watch = |window_ms: i64, awaited: &'static str| async move {
        let (now, _, next, deadline) = renew_m1(store, name, window_ms, Some(awaited)).await;
        (now, next, deadline)
    };
    let (now, _, _) = watch(0, "m2").await;
    set_lease(store, &keys, "m2", now + 7_000).await;
    set_lease(store, &keys, "m3", now + 900_000).await;
    let (_, next, awaited) = watch(0, "m2").await;
    assert_eq!(awaited, Some(now + 7_000), "m2's deadline is reported");
    assert_eq!(next, None, "no window: no lapse named");
    // With a window that m2's lease ends in, both are reported: m2 as the next lapse, m3 as the awaited one.
    let (_, next, awaited) = watch(10_000, "m3").await;
    assert_eq!(
        next,
        Some(PeerLease {
            member: "m2".into(),
            deadline_ms: now + 7_000
        })
    );
    assert_eq!(awaited, Some(now + 900_000));
    // A member without a lease: nothing to report.
    let (_, _, awaited) = watch(0, "gone").await;
    assert_eq!(awaited, None);
    // The same read on its own (after a write, which has no renewal to carry it).
    assert_eq!(
        store.lease_of(&keys, "m2").await.expect("lease"),
        Some(now + 7_000)
    );
    assert_eq!(store.lease_of(&keys, "gone").await.expect("lease"), None);
    let leases = store.leases(&keys).await.expect("leases");
    assert!(
        leases.iter().any(|(m, d)| m == "m1" && *d >= now + 20_000),
        "the caller's lease is renewed: {leases:?}"
    );
}

async fn heartbeat_tells_when_another_members_lease_lapsed(store: &Store, name: &str) {
    let keys = group(name);
    create_group(store, &keys, &["m1", "m2"]).await;
    let renewed = |o: HeartbeatOutcome| match o {
        HeartbeatOutcome::Renewed { others_lapsed, .. } => others_lapsed,
        other => panic!("expected Renewed, got {other:?}"),
    };
    let o = store
        .heartbeat(&keys, 1, "m1", 20_000, None)
        .await
        .expect("heartbeat");
    assert!(!renewed(o), "m2's lease is live");
    set_lease(store, &keys, "m2", 1).await;
    let o = store
        .heartbeat(&keys, 1, "m1", 20_000, None)
        .await
        .expect("heartbeat");
    assert!(renewed(o), "m2's lease ran out long ago");
}

async fn heartbeat_renews_lease_and_progress_only(store: &Store, name: &str) {
    let keys = group(name);
    create_group(store, &keys, &["m1", "m2"]).await;
    let metadata_before = snapshot(store, &keys).await.metadata;
    let m2_before = store.leases(&keys).await.expect("leases")[1].clone();

    let outcome = store
        .heartbeat(&keys, 1, "m1", 20_000, Some(r#"{"offset":"1-0"}"#))
        .await
        .expect("heartbeat");
    let HeartbeatOutcome::Renewed {
        now_ms,
        others_lapsed: false,
        next_lapse: None,
        awaited_deadline_ms: None,
    } = outcome
    else {
        panic!("expected Renewed with no other lease lapsed, got {outcome:?}");
    };
    let leases = store.leases(&keys).await.expect("leases");
    assert!(
        leases.contains(&("m1".to_string(), now_ms + 20_000)),
        "{leases:?}"
    );
    assert!(
        leases.contains(&m2_before),
        "another member's lease changed: {leases:?}"
    );
    assert_eq!(
        store.progress_all(&keys).await.expect("progress"),
        vec![("m1".to_string(), r#"{"offset":"1-0"}"#.to_string())]
    );

    // Without progress, the stored progress stays as it was.
    let outcome = store
        .heartbeat(&keys, 1, "m1", 20_000, None)
        .await
        .expect("heartbeat");
    assert!(matches!(outcome, HeartbeatOutcome::Renewed { .. }));
    assert_eq!(
        store.progress_all(&keys).await.expect("progress"),
        vec![("m1".to_string(), r#"{"offset":"1-0"}"#.to_string())]
    );

    // The metadata hash (aggregate, revision, updatedAt, versions) is byte-identical.
    assert_eq!(snapshot(store, &keys).await.metadata, metadata_before);
}

async fn heartbeat_refusals_write_nothing(store: &Store, name: &str) {
    let keys = group(name);
    let created_at = create_group(store, &keys, &["m1"]).await;
    set_lease(store, &keys, "lapsed", created_at - 1).await;
    let before = snapshot(store, &keys).await;

    let stale = store
        .heartbeat(&keys, 5, "m1", 20_000, Some("{}"))
        .await
        .expect("heartbeat");
    assert!(
        matches!(
            stale,
            HeartbeatOutcome::Conflict {
                current: Some(1),
                ..
            }
        ),
        "{stale:?}"
    );
    assert_eq!(snapshot(store, &keys).await, before);

    let absent = store
        .heartbeat(&keys, 1, "stranger", 20_000, Some("{}"))
        .await
        .expect("heartbeat");
    assert!(
        matches!(absent, HeartbeatOutcome::LeaseLapsed { .. }),
        "{absent:?}"
    );
    assert_eq!(snapshot(store, &keys).await, before);

    let lapsed = store
        .heartbeat(&keys, 1, "lapsed", 20_000, Some("{}"))
        .await
        .expect("heartbeat");
    assert!(
        matches!(lapsed, HeartbeatOutcome::LeaseLapsed { .. }),
        "{lapsed:?}"
    );
    assert_eq!(snapshot(store, &keys).await, before);

    assert!(matches!(
        store.heartbeat(&keys, 1, "m1", 0, None).await,
        Err(StoreError::InvalidArgument { .. })
    ));
    assert_eq!(snapshot(store, &keys).await, before);

    let missing = group(&format!("{name}-missing"));
    let outcome = store
        .heartbeat(&missing, 1, "m1", 20_000, Some("{}"))
        .await
        .expect("heartbeat");
    assert!(
        matches!(outcome, HeartbeatOutcome::Conflict { current: None, .. }),
        "{outcome:?}"
    );
    assert_eq!(existing_keys(store, &missing).await, 0);

    // After a transition, a heartbeat that still carries the old revision learns the new one.
    let write = CasWrite {
        expected_revision: 1,
        aggregate_json: "{\"v\":2}".into(),
        split: None,
        updated_at: "t".into(),
        lease_ttl_ms: 20_000,
        ..CasWrite::default()
    };
    assert!(matches!(
        store.cas(&keys, &write).await.expect("cas"),
        CasOutcome::Written { revision: 2, .. }
    ));
    let after_cas = snapshot(store, &keys).await;
    let outdated = store
        .heartbeat(&keys, 1, "m1", 20_000, Some("{}"))
        .await
        .expect("heartbeat");
    assert!(
        matches!(
            outdated,
            HeartbeatOutcome::Conflict {
                current: Some(2),
                ..
            }
        ),
        "{outdated:?}"
    );
    assert_eq!(snapshot(store, &keys).await, after_cas);
}
