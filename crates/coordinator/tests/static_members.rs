//! Static membership (`groupInstanceId`) over the coord/v1 API, against a real coordinator and redis-server:
//! a static member that crashes keeps its shards reserved (shown in the assignments view) and a new process
//! with the same instance id gets them back — only once the old one's lease lapsed, and with no other
//! member's shards moving; past the grace they are rebalanced; a second live member claiming the instance id
//! is refused with `FENCED_INSTANCE_ID`; a temporary leave (`memberEpoch` -2) reserves too; a malformed
//! instance id is a 400.

use crate::support;

use rsc_coordinator::config::{Config, Dur};
use rsc_testkit::RedisServer;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use support::*;

const WAIT: Duration = Duration::from_secs(30);

fn config(redis: &RedisServer, grace: Duration) -> Config {
    let mut c = test_config(&redis.url());
    c.coordinator.group.static_member_grace = Some(Dur(grace));
    c
}

async fn beat(api: &Api, p: &str, m: &mut Member) -> Value {
    let r = api.heartbeat(p, p, m).await;
    m.adopt(&r);
    r
}

/// The state of `member` in the members view (None: not listed).
async fn member_state(api: &Api, p: &str, member: &str) -> Option<String> {
    let v = group_view(api, p, "members").await;
    v["members"]
        .as_array()?
        .iter()
        .find(|m| m["memberId"] == member)
        .map(|m| m["state"].as_str().unwrap_or_default().to_owned())
}

/// Three static members a-1, b-1, c-1 (instances pod-a, pod-b, pod-c) over 6 shards, converged: two each.
async fn three_static(api: &Api, p: &str) -> Vec<Member> {
    assert_eq!(api.create_stream(p, 6).await.status, 201);
    let mut ms = vec![
        Member::with_instance("a-1", "pod-a"),
        Member::with_instance("b-1", "pod-b"),
        Member::with_instance("c-1", "pod-c"),
    ];
    for _ in 0..5 {
        for m in &mut ms {
            let r = beat(api, p, m).await;
            assert_eq!(r["status"], "OK", "{r}");
        }
    }
    for m in &ms {
        assert_eq!(m.owned().len(), 2, "{} converged", m.id());
    }
    ms
}

fn owned(ms: &[&Member]) -> BTreeMap<String, Vec<u32>> {
    ms.iter().map(|m| (m.id().to_owned(), m.owned())).collect()
}

#[tokio::test]
async fn a_crashed_static_member_restarted_within_the_grace_gets_its_shards_back_and_nothing_else_moves()
 {
    let redis = RedisServer::start();
    let (running, api) = coordinator(config(&redis, Duration::from_secs(60))).await;
    let p = "within";
    let mut ms = three_static(&api, p).await;
    let c1 = ms.pop().unwrap();
    let (mut a, mut b) = (ms.remove(0), ms.remove(0));
    let others = owned(&[&a, &b]);
    let members = group_view(&api, p, "members").await;
    assert!(
        members["members"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["memberId"] == "c-1" && m["groupInstanceId"] == "pod-c"),
        "{members}"
    );

    // c-1 crashes (stops heartbeating); its replacement c-2 starts at once with the same instance id.
    let mut c2 = Member::with_instance("c-2", "pod-c");
    let mut refused = 0;
    let deadline = Instant::now() + WAIT;
    while c2.owned() != c1.owned() {
        assert!(Instant::now() < deadline, "c-2 never got c-1's shards");
        beat(&api, p, &mut a).await;
        beat(&api, p, &mut b).await;
        let r = beat(&api, p, &mut c2).await;
        if r["status"] == "FENCED_INSTANCE_ID" {
            refused += 1;
        } else {
            assert_eq!(r["status"], "OK", "{r}");
            // Only once the old incarnation's lease lapsed and it was expired.
            assert_eq!(
                member_state(&api, p, "c-1").await.as_deref(),
                Some("EXPIRED"),
                "c-2 was let in while c-1 was still live"
            );
        }
        assert_eq!(owned(&[&a, &b]), others, "no other member's shards moved");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(refused > 0, "c-2 was refused while c-1's lease ran");
    assert_eq!(c2.owned(), c1.owned());
    assert_eq!(owned(&[&a, &b]), others, "no other member's shards moved");
    // Both stay put, and the reservation is gone.
    for _ in 0..3 {
        beat(&api, p, &mut a).await;
        beat(&api, p, &mut b).await;
    }
    assert_eq!(owned(&[&a, &b]), others);
    let v = group_view(&api, p, "assignments").await;
    assert_eq!(v["staticReservations"], json!([]), "{v}");
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn past_the_grace_a_crashed_static_members_shards_are_rebalanced() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(config(&redis, Duration::from_secs(3))).await;
    let p = "past";
    let mut ms = three_static(&api, p).await;
    let c1 = ms.pop().unwrap();
    let (a, b) = (ms.remove(0), ms.remove(0));

    // c-1 crashes: first its target is reserved (shown in the assignments view), then the grace runs out.
    let (mut a, mut b) = (a, b);
    let deadline = Instant::now() + WAIT;
    let reservation = loop {
        assert!(
            Instant::now() < deadline,
            "c-1's shards were never reserved"
        );
        beat(&api, p, &mut a).await;
        beat(&api, p, &mut b).await;
        let v = group_view(&api, p, "assignments").await;
        if let Some(r) = v["staticReservations"].as_array().and_then(|r| r.first()) {
            break r.clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(reservation["groupInstanceId"], "pod-c");
    assert_eq!(reservation["memberId"], "c-1");
    assert_eq!(reservation["reason"], "LEASE_LAPSED");
    assert_eq!(shards(&reservation["shards"]), c1.owned());
    assert!(reservation["until"].is_string());

    while a.owned().len() != 3 || b.owned().len() != 3 {
        assert!(
            Instant::now() < deadline,
            "a and b never read all six shards"
        );
        beat(&api, p, &mut a).await;
        beat(&api, p, &mut b).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let v = group_view(&api, p, "assignments").await;
    assert_eq!(v["staticReservations"], json!([]), "{v}");
    assert_disjoint(&[&a, &b]);
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_second_live_member_with_the_same_instance_id_is_refused() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(config(&redis, Duration::from_secs(60))).await;
    let p = "dup";
    let mut ms = three_static(&api, p).await;
    let mut dup = Member::with_instance("c-2", "pod-c");
    for _ in 0..3 {
        let r = beat(&api, p, &mut dup).await;
        assert_eq!(r["status"], "FENCED_INSTANCE_ID", "{r}");
        assert_eq!(r["assignment"]["assignedShards"], json!([]));
        let message = r["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("pod-c") && message.contains("c-1"),
            "{message}"
        );
        for m in &mut ms {
            assert_eq!(beat(&api, p, m).await["status"], "OK");
        }
    }
    assert_eq!(member_state(&api, p, "c-2").await, None, "nothing stored");
    for m in &ms {
        assert_eq!(m.owned().len(), 2);
    }

    // A malformed instance id is a 400 naming the field; -2 without one is answered INVALID_REQUEST.
    let mut body = Member::new("x").request();
    body["groupInstanceId"] = json!("pod c");
    let r = api
        .send(
            "POST",
            &format!("/coord/v1/streams/{p}/groups/{p}/members/x/heartbeat"),
            Some(body),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body["errorCode"].is_string(), "{}", r.body);
    assert!(
        r.body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("groupInstanceId"),
        "{}",
        r.body
    );
    let mut plain = ms[0].clone();
    plain.membership = rsc_member::Membership::new("a-1", Duration::from_secs(1));
    plain.forged_epoch = Some(-2);
    let r = api.heartbeat(p, p, &plain).await;
    assert_eq!(r["status"], "INVALID_REQUEST", "{r}");
    assert!(
        r["message"]
            .as_str()
            .unwrap_or_default()
            .contains("groupInstanceId"),
        "{r}"
    );
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_temporary_leave_keeps_the_shards_for_the_next_process_of_the_instance() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(config(&redis, Duration::from_secs(60))).await;
    let p = "temp";
    let mut ms = three_static(&api, p).await;
    let mut c1 = ms.pop().unwrap();
    let (mut a, mut b) = (ms.remove(0), ms.remove(0));
    let others = owned(&[&a, &b]);
    let c1_shards = c1.owned();

    // c-1 leaves temporarily (memberEpoch -2) and releases its shards.
    c1.membership.begin_temporary_leave();
    c1.membership.drained_all();
    assert_eq!(c1.epoch(), -2);
    let r = beat(&api, p, &mut c1).await;
    assert_eq!(r["status"], "OK", "{r}");
    assert!(c1.membership.left(), "the leave is complete");
    let v = group_view(&api, p, "assignments").await;
    let reservations = v["staticReservations"].as_array().unwrap();
    assert_eq!(reservations.len(), 1, "{v}");
    assert_eq!(reservations[0]["reason"], "TEMPORARY_LEAVE");
    assert_eq!(reservations[0]["groupInstanceId"], "pod-c");
    assert_eq!(shards(&reservations[0]["shards"]), c1_shards);

    // The next process of pod-c (another member id) gets exactly those shards; a and b keep theirs.
    let mut c2 = Member::with_instance("c-2", "pod-c");
    for _ in 0..3 {
        for m in [&mut a, &mut b, &mut c2] {
            assert_eq!(beat(&api, p, m).await["status"], "OK");
        }
    }
    assert_eq!(c2.owned(), c1_shards);
    assert_eq!(owned(&[&a, &b]), others);
    let v = group_view(&api, p, "assignments").await;
    assert_eq!(v["staticReservations"], json!([]), "{v}");
    running.shutdown().await.unwrap();
}
