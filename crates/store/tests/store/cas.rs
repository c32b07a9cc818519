//! Compare-and-set writes: success, every refusal (with nothing written), and races.

use rsc_store::{CasOutcome, CasWrite, Store, StoreError};

use crate::fixtures::{create_group, existing_keys, group, raw, set_lease, snapshot};

on_both_topologies!(
    cas_writes_next_revision_and_applies_lease_changes,
    cas_refusals_write_nothing,
    cas_racing_writers_exactly_one_wins,
);

async fn cas_writes_next_revision_and_applies_lease_changes(store: &Store, name: &str) {
    let keys = group(name);
    create_group(store, &keys, &["stay", "leave", "departed"]).await;
    store
        .heartbeat(&keys, 1, "leave", 60_000, Some(r#"{"p":1}"#))
        .await
        .expect("heartbeat");
    store
        .heartbeat(&keys, 1, "departed", 60_000, Some(r#"{"p":3}"#))
        .await
        .expect("heartbeat");
    store
        .heartbeat(&keys, 1, "stay", 60_000, Some(r#"{"p":2}"#))
        .await
        .expect("heartbeat");
    let stale_deadline = 1;
    set_lease(store, &keys, "expired", stale_deadline).await;

    let write = CasWrite {
        expected_revision: 1,
        aggregate_json: r#"{"v":2,"storeRevision":2}"#.into(),
        split: None,
        updated_at: "2026-01-01T00:00:01.000Z".into(),
        lease_ttl_ms: 20_000,
        not_before_ms: 0,
        must_be_lapsed: vec!["expired".into(), "never-seen".into()],
        must_be_live: vec!["stay".into()],
        renew: vec!["stay".into(), "joiner".into()],
        progress: vec![
            ("joiner".into(), r#"{"p":4}"#.into()),
            ("leave".into(), r#"{"p":5}"#.into()),
        ],
        remove: vec!["leave".into(), "expired".into()],
        drop_lease: vec!["departed".into()],
    };
    let outcome = store.cas(&keys, &write).await.expect("cas");
    let CasOutcome::Written { revision, now_ms } = outcome else {
        panic!("expected Written, got {outcome:?}");
    };
    assert_eq!(revision, 2);

    let loaded = store.load(&keys).await.expect("load").expect("present");
    assert_eq!(loaded.revision, 2);
    assert_eq!(loaded.aggregate, write.aggregate_json);
    assert_eq!(loaded.updated_at, write.updated_at);
    let fields: std::collections::BTreeMap<String, String> =
        raw(store, redis::cmd("HGETALL").arg(&keys.metadata)).await;
    assert_eq!(fields["schemaVersion"], "1");
    assert_eq!(fields["layoutVersion"], "1");
    assert_eq!(fields["revision"], "2");

    assert_eq!(
        store.leases(&keys).await.expect("leases"),
        vec![
            ("joiner".to_string(), now_ms + 20_000),
            ("stay".to_string(), now_ms + 20_000)
        ]
    );
    // `drop_lease` ends the lease but keeps the last progress (a departed member's last heartbeat);
    // `progress` is written (the joiner's), and a removal wins over it (the leaver's).
    let mut progress = store.progress_all(&keys).await.expect("progress");
    progress.sort();
    assert_eq!(
        progress,
        vec![
            ("departed".to_string(), r#"{"p":3}"#.to_string()),
            ("joiner".to_string(), r#"{"p":4}"#.to_string()),
            ("stay".to_string(), r#"{"p":2}"#.to_string())
        ]
    );

    // A not-before in the past is no obstacle; the next write continues from revision 2.
    let next = CasWrite {
        expected_revision: 2,
        aggregate_json: r#"{"v":3}"#.into(),
        split: None,
        updated_at: "t3".into(),
        lease_ttl_ms: 20_000,
        not_before_ms: now_ms,
        ..CasWrite::default()
    };
    assert!(matches!(
        store.cas(&keys, &next).await.expect("cas"),
        CasOutcome::Written { revision: 3, .. }
    ));
}

/// What a refused CAS must answer.
type Expect = fn(&CasOutcome) -> bool;

async fn cas_refusals_write_nothing(store: &Store, name: &str) {
    let keys = group(name);
    let created_at = create_group(store, &keys, &["live1", "live2"]).await;
    store
        .heartbeat(&keys, 1, "live2", 60_000, Some(r#"{"p":1}"#))
        .await
        .expect("heartbeat");
    set_lease(store, &keys, "lapsed", created_at - 1_000).await;
    let before = snapshot(store, &keys).await;
    let far_future = created_at + 3_600_000;

    // Every refused write would otherwise change the aggregate, renew and remove leases.
    let base = CasWrite {
        expected_revision: 1,
        aggregate_json: r#"{"must":"not appear"}"#.into(),
        split: None,
        updated_at: "never".into(),
        lease_ttl_ms: 99_000,
        not_before_ms: 0,
        must_be_lapsed: vec![],
        must_be_live: vec![],
        renew: vec!["live1".into(), "newcomer".into()],
        progress: vec![("newcomer".into(), "{}".into())],
        remove: vec!["live2".into(), "lapsed".into()],
        drop_lease: vec!["live1".into()],
    };
    let cases: Vec<(&str, CasWrite, Expect)> = vec![
        (
            "stale revision",
            CasWrite {
                expected_revision: 7,
                ..base.clone()
            },
            |o| {
                matches!(
                    o,
                    CasOutcome::Conflict {
                        current: Some(1),
                        ..
                    }
                )
            },
        ),
        (
            "revision is checked before not-before",
            CasWrite {
                expected_revision: 0,
                not_before_ms: far_future,
                ..base.clone()
            },
            |o| {
                matches!(
                    o,
                    CasOutcome::Conflict {
                        current: Some(1),
                        ..
                    }
                )
            },
        ),
        (
            "too early",
            CasWrite {
                not_before_ms: far_future,
                ..base.clone()
            },
            |o| matches!(o, CasOutcome::TooEarly { .. }),
        ),
        (
            "not-before is checked before leases",
            CasWrite {
                not_before_ms: far_future,
                must_be_lapsed: vec!["live1".into()],
                ..base.clone()
            },
            |o| matches!(o, CasOutcome::TooEarly { .. }),
        ),
        (
            "a lease that must have lapsed is live",
            CasWrite {
                must_be_lapsed: vec!["lapsed".into(), "live1".into()],
                ..base.clone()
            },
            |o| matches!(o, CasOutcome::LeaseActive { member, .. } if member == "live1"),
        ),
        (
            "must-be-lapsed is checked before must-be-live",
            CasWrite {
                must_be_lapsed: vec!["live2".into()],
                must_be_live: vec!["absent".into()],
                ..base.clone()
            },
            |o| matches!(o, CasOutcome::LeaseActive { member, .. } if member == "live2"),
        ),
        (
            "a lease that must be live has lapsed",
            CasWrite {
                must_be_live: vec!["live1".into(), "lapsed".into()],
                ..base.clone()
            },
            |o| matches!(o, CasOutcome::LeaseLapsed { member, .. } if member == "lapsed"),
        ),
        (
            "a lease that must be live is absent",
            CasWrite {
                must_be_live: vec!["absent".into()],
                ..base.clone()
            },
            |o| matches!(o, CasOutcome::LeaseLapsed { member, .. } if member == "absent"),
        ),
    ];
    for (what, write, expected) in cases {
        let outcome = store.cas(&keys, &write).await.expect("cas");
        assert!(expected(&outcome), "{what}: got {outcome:?}");
        assert_eq!(
            snapshot(store, &keys).await,
            before,
            "{what}: something was written"
        );
    }

    // Bad input is refused before Redis is asked.
    let bad_ttl = CasWrite {
        lease_ttl_ms: 0,
        ..base.clone()
    };
    assert!(matches!(
        store.cas(&keys, &bad_ttl).await,
        Err(StoreError::InvalidArgument { .. })
    ));
    assert_eq!(snapshot(store, &keys).await, before);

    // A missing group is a conflict with no current revision, and is not created.
    let missing = group(&format!("{name}-missing"));
    let outcome = store.cas(&missing, &base).await.expect("cas");
    assert!(
        matches!(outcome, CasOutcome::Conflict { current: None, .. }),
        "{outcome:?}"
    );
    assert_eq!(existing_keys(store, &missing).await, 0);
}

async fn cas_racing_writers_exactly_one_wins(store: &Store, name: &str) {
    let keys = group(name);
    create_group(store, &keys, &["m"]).await;
    let write = |tag: &str| CasWrite {
        expected_revision: 1,
        aggregate_json: format!(r#"{{"writer":"{tag}"}}"#),
        split: None,
        updated_at: "t".into(),
        lease_ttl_ms: 1000,
        ..CasWrite::default()
    };
    let (a, b) = (write("a"), write("b"));
    let other = store.clone();
    let (ra, rb) = tokio::join!(store.cas(&keys, &a), other.cas(&keys, &b));
    let outcomes = [ra.expect("cas a"), rb.expect("cas b")];
    let winners: Vec<usize> = outcomes
        .iter()
        .enumerate()
        .filter(|(_, o)| matches!(o, CasOutcome::Written { revision: 2, .. }))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    let loser = &outcomes[1 - winners[0]];
    assert!(
        matches!(
            loser,
            CasOutcome::Conflict {
                current: Some(2),
                ..
            }
        ),
        "{loser:?}"
    );
    let stored = store.load(&keys).await.expect("load").expect("present");
    let winner_write = if winners[0] == 0 { &a } else { &b };
    assert_eq!(stored.aggregate, winner_write.aggregate_json);
    assert_eq!(stored.revision, 2);
}
