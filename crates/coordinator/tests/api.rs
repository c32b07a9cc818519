//! coord/v1 admin, routing and heartbeat behaviour of a real coordinator over a real redis-server.

use crate::support;

use rsc_coordinator::server::Running;
use rsc_testkit::RedisServer;
use serde_json::{Value, json};
use std::time::Duration;
use support::*;

async fn redis_cmd(url: &str, args: &[&str]) -> redis::Value {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query_async(&mut conn).await.unwrap()
}

#[tokio::test]
async fn create_stream_provisions_every_shard_and_routing_matches_the_contract() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;

    let r = api.create_stream("orders", 4).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(
        r.body,
        json!({"streamPrefix": "orders", "shardCount": 4, "metadataVersion": 1})
    );

    for i in 0..4 {
        let groups = redis_cmd(&redis.url(), &["XINFO", "GROUPS", &format!("orders:{i}")]).await;
        assert!(
            format!("{groups:?}").contains("orders"),
            "shard {i} has the consumer group: {groups:?}"
        );
    }
    let ttl = redis_cmd(
        &redis.url(),
        &["TTL", "redis-stream:coord:{orders:orders}:metadata"],
    )
    .await;
    assert_eq!(ttl, redis::Value::Int(-1), "metadata keys never expire");

    let r = api
        .send(
            "GET",
            "/coord/v1/streams/orders/groups/orders/producer-routing",
            None,
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["shardCount"], 4);
    assert_eq!(r.body["streamKeyPattern"], "orders:{shardIndex}");
    assert_eq!(
        r.body["shards"][0],
        json!({"shardIndex": 0, "streamKey": "orders:0", "redisSlot": 8578})
    );
    assert_eq!(r.body["shards"][1]["redisSlot"], 12707);
    assert_eq!(r.body["shards"].as_array().unwrap().len(), 4);

    let again = api.create_stream("orders", 4).await;
    assert_eq!(again.status, 409);
    assert_eq!(again.body["errorCode"], "STREAM_PREFIX_ALREADY_EXISTS");

    // A prefix whose shard keys already hold foreign data is refused, naming the keys.
    redis_cmd(&redis.url(), &["XADD", "legacy:1", "*", "f", "v"]).await;
    let r = api.create_stream("legacy", 3).await;
    assert_eq!(r.status, 409);
    assert!(
        r.body["message"].as_str().unwrap().contains("legacy:1"),
        "{}",
        r.body
    );

    // A second group of the same stream adopts the stream's shard count.
    let r = api
        .send(
            "POST",
            "/coord/v1/streams/orders/groups/audit",
            Some(json!({"requestedBy": "t"})),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["shardCount"], 4);
    let r = api
        .send(
            "POST",
            "/coord/v1/streams/orders/groups/billing",
            Some(json!({"requestedBy": "t", "initialShardCount": 8})),
        )
        .await;
    assert_eq!(r.status, 400);
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .contains("initialShardCount")
    );
    let r = api
        .send(
            "POST",
            "/coord/v1/streams/orders/groups/audit",
            Some(json!({"requestedBy": "t"})),
        )
        .await;
    assert_eq!(r.body["errorCode"], "GROUP_ALREADY_EXISTS");

    let r = api.send("GET", "/coord/v1/monitoring/groups", None).await;
    let names: Vec<&str> = r.body["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["consumerGroup"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["audit", "orders"]);
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_input_gets_a_4xx_with_an_error_code_naming_the_field() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;
    api.create_stream("s", 2).await;
    let hb_path = "/coord/v1/streams/s/groups/s/members/m1/heartbeat";
    let cases: Vec<(&str, &str, Option<String>, u16, &str)> = vec![
        ("POST", "/coord/v1/streams/bad%7Bbrace", Some(json!({"requestedBy": "t"}).to_string()), 400, "streamPrefix"),
        ("POST", "/coord/v1/streams/ok", Some(json!({"requestedBy": " "}).to_string()), 400, "requestedBy"),
        ("POST", "/coord/v1/streams/ok", Some(json!({"reason": "x"}).to_string()), 400, "requestedBy"),
        ("POST", "/coord/v1/streams/ok", Some(json!({"requestedBy": "t", "initialShardCount": 0}).to_string()), 400, "initialShardCount"),
        ("POST", "/coord/v1/streams/ok", Some(json!({"requestedBy": "t", "initialShardCount": 100000}).to_string()), 400, "initialShardCount"),
        ("POST", "/coord/v1/streams/ok", Some(json!({"requestedBy": "t", "initialShardCount": "many"}).to_string()), 400, "initialShardCount"),
        ("POST", "/coord/v1/streams/ok", Some("{not json".to_owned()), 400, "JSON"),
        ("POST", "/coord/v1/streams/ok", None, 400, "body"),
        ("POST", hb_path, Some(json!({"protocolVersion": 0, "requestId": "r", "memberId": "m1", "memberEpoch": 0, "metadataVersion": 0, "runtimeConsumerCapacity": {"runtimeMaxConcurrency": 1, "availableConcurrency": 1}}).to_string()), 400, "protocolVersion"),
        ("POST", hb_path, Some(json!({"protocolVersion": 1, "requestId": "r", "memberId": "m1", "memberEpoch": 0, "metadataVersion": 0}).to_string()), 400, "runtimeConsumerCapacity"),
        ("POST", hb_path, Some(json!({"protocolVersion": 1, "requestId": "r", "memberId": "m1", "memberEpoch": 0, "metadataVersion": 0, "runtimeConsumerCapacity": {"runtimeMaxConcurrency": 0, "availableConcurrency": 1}}).to_string()), 400, "runtimeMaxConcurrency"),
        ("POST", hb_path, Some(json!({"protocolVersion": 1, "requestId": "r", "memberId": "m1", "memberEpoch": 0, "metadataVersion": 0, "runtimeConsumerCapacity": {"runtimeMaxConcurrency": 1, "availableConcurrency": 1}, "ownedShards": [{"shardIndex": -3}]}).to_string()), 400, "ownedShards"),
        ("DELETE", "/coord/v1/streams/s/groups/s", Some(json!({"requestedBy": "t"}).to_string()), 400, "reason"),
        ("GET", "/coord/v1/streams/s/groups/nope", None, 404, "nope"),
        ("GET", "/coord/v1/no/such/route", None, 404, "no route"),
        ("PUT", "/coord/v1/streams/s/groups/s", None, 405, "PUT"),
    ];
    for (method, path, body, status, needle) in cases {
        let r = api.raw(method, path, body.clone()).await;
        assert_eq!(r.status, status, "{method} {path} {body:?} → {}", r.body);
        assert!(
            r.body["errorCode"].is_string(),
            "{method} {path}: error body has an errorCode: {}",
            r.body
        );
        let message = r.body["message"].as_str().unwrap_or("");
        assert!(
            message.contains(needle),
            "{method} {path}: message {message:?} should mention {needle:?}"
        );
    }
    // Nothing was created by any of the rejected requests.
    let r = api.send("GET", "/coord/v1/monitoring/groups", None).await;
    assert_eq!(r.body["groups"].as_array().unwrap().len(), 1);
    running.shutdown().await.unwrap();
}

/// A 404 for a missing group says whether its stream exists and which call creates what is missing, and
/// following that hint works (the hint used to name the stream route, which answers 409 for an existing one).
#[tokio::test]
async fn a_missing_group_is_answered_with_the_call_that_creates_it() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;
    api.create_stream("orders", 2).await;
    let hint = |r: &Reply| r.body["message"].as_str().unwrap_or_default().to_owned();

    let r = api
        .send(
            "GET",
            "/coord/v1/streams/orders/groups/orders-consumer",
            None,
        )
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(r.body["errorCode"], "GROUP_NOT_FOUND");
    assert!(
        hint(&r).contains("stream \"orders\" exists (groups: orders)")
            && hint(&r).contains("POST /coord/v1/streams/orders/groups/orders-consumer"),
        "{}",
        r.body
    );
    let created = api
        .send(
            "POST",
            "/coord/v1/streams/orders/groups/orders-consumer",
            Some(json!({"requestedBy": "t"})),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["shardCount"], 2);

    let r = api
        .send(
            "GET",
            "/coord/v1/monitoring/streams/nos/groups/nos/assignments",
            None,
        )
        .await;
    assert_eq!(r.status, 404);
    assert!(
        hint(&r).contains(
            "stream \"nos\" does not exist either; create it with POST /coord/v1/streams/nos "
        ),
        "{}",
        r.body
    );
    let r = api
        .send("GET", "/coord/v1/streams/nos/groups/g", None)
        .await;
    assert!(
        hint(&r).contains("create both with POST /coord/v1/streams/nos/groups/g"),
        "{}",
        r.body
    );
    let created = api
        .send(
            "POST",
            "/coord/v1/streams/nos/groups/g",
            Some(json!({"requestedBy": "t", "initialShardCount": 3})),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);

    // A number sent as a string is "a whole number" to the user, not an i64.
    let r = api
        .send(
            "POST",
            "/coord/v1/streams/more",
            Some(json!({"requestedBy": "t", "initialShardCount": "4"})),
        )
        .await;
    assert_eq!(r.status, 400);
    assert!(
        hint(&r)
            .starts_with("initialShardCount: invalid type: string \"4\", expected a whole number"),
        "{}",
        r.body
    );
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn heartbeat_statuses_follow_the_contract() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;
    api.create_stream("s", 2).await;
    let mut m = Member::new("m1");

    let unknown_group = m.clone();
    let r = api.heartbeat("s", "nogroup", &unknown_group).await;
    assert_eq!(r["status"], "UNKNOWN_MEMBER_ID");
    assert_eq!(r["heartbeatIntervalMs"], 200);
    // Every non-OK answer says what happened and what to do; a missing group says how to create it.
    let says = |r: &Value, needles: &[&str]| {
        let message = r["message"].as_str().unwrap_or_default();
        for needle in needles {
            assert!(message.contains(needle), "{needle:?} not in {r}");
        }
    };
    says(
        &r,
        &[
            "stream \"s\" exists but has no consumer group \"nogroup\"",
            "POST /coord/v1/streams/s/groups/nogroup",
        ],
    );
    let r = api.heartbeat("nostream", "nostream", &unknown_group).await;
    assert_eq!(r["status"], "UNKNOWN_MEMBER_ID");
    says(
        &r,
        &[
            "stream \"nostream\" does not exist",
            "POST /coord/v1/streams/nostream",
        ],
    );
    let r = api.heartbeat("nostream", "g", &unknown_group).await;
    says(&r, &["POST /coord/v1/streams/nostream/groups/g"]);

    let mut req = m.request();
    req["protocolVersion"] = json!(2);
    let r = api
        .send(
            "POST",
            "/coord/v1/streams/s/groups/s/members/m1/heartbeat",
            Some(req),
        )
        .await;
    assert_eq!(r.body["status"], "UNSUPPORTED_PROTOCOL");
    says(&r.body, &["protocolVersion 2 is not supported"]);

    let mut req = m.request();
    req["memberId"] = json!("someone-else");
    let r = api
        .send(
            "POST",
            "/coord/v1/streams/s/groups/s/members/m1/heartbeat",
            Some(req),
        )
        .await;
    assert_eq!(r.body["status"], "INVALID_REQUEST");
    says(
        &r.body,
        &["\"someone-else\" differs from the path's \"m1\""],
    );

    let mut stranger = Member::new("m9");
    stranger.forged_epoch = Some(7);
    let r = api.heartbeat("s", "s", &stranger).await;
    assert_eq!(r["status"], "UNKNOWN_MEMBER_ID");
    says(&r, &["member \"m9\" is not in group s/s", "memberEpoch 0"]);

    let join = api.heartbeat("s", "s", &m).await;
    assert_eq!(join["status"], "OK");
    assert!(
        join.get("message").is_none(),
        "OK answers carry no message: {join}"
    );
    assert_eq!(shards(&join["assignment"]["assignedShards"]), vec![0, 1]);
    for field in [
        "responseTo",
        "memberId",
        "memberEpoch",
        "heartbeatIntervalMs",
        "rebalanceTimeoutMs",
        "groupEpoch",
        "assignmentEpoch",
        "metadataVersion",
    ] {
        assert!(!join[field].is_null(), "{field} present");
    }
    // The join response is lost: the retry (epoch 0 again) gets the same answer, not a rejection.
    let retry = api.heartbeat("s", "s", &m).await;
    assert_eq!(retry["status"], "OK");
    assert_eq!(retry["memberEpoch"], join["memberEpoch"]);
    assert_eq!(retry["assignment"], join["assignment"]);
    m.adopt(&join);
    assert_eq!(api.heartbeat("s", "s", &m).await["status"], "OK");

    // A second member joins: m1 is answered with the revocation even on its old epoch (never fenced).
    let mut m2 = Member::new("m2");
    let j2 = api.heartbeat("s", "s", &m2).await;
    m2.adopt(&j2);
    assert_eq!(
        shards(&j2["assignment"]["assignedShards"]),
        Vec::<u32>::new(),
        "nothing granted while m1 holds it"
    );
    assert_eq!(shards(&j2["assignment"]["pendingShards"]).len(), 1);
    let r = api.heartbeat("s", "s", &m).await;
    assert_eq!(r["status"], "OK");
    assert_eq!(shards(&r["assignment"]["assignedShards"]).len(), 1);
    m.adopt(&r);
    assert_disjoint(&[&m, &m2]);
    // m1 reports the lost shard REVOKED; only then does m2 get it.
    let r = api.heartbeat("s", "s", &m).await;
    m.adopt(&r);
    let r2 = api.heartbeat("s", "s", &m2).await;
    m2.adopt(&r2);
    assert_eq!(m2.owned().len(), 1, "{r2}");
    assert_disjoint(&[&m, &m2]);

    // Epoch below the member's incarnation: fenced. Epoch -2: invalid.
    let mut old = m.clone();
    old.forged_epoch = Some(1);
    let r = api.heartbeat("s", "s", &old).await;
    assert_eq!(r["status"], "FENCED_MEMBER_EPOCH");
    says(
        &r,
        &["earlier incarnation of member \"m1\"", "memberEpoch 0"],
    );
    old.forged_epoch = Some(-2);
    let r = api.heartbeat("s", "s", &old).await;
    assert_eq!(r["status"], "INVALID_REQUEST");
    says(&r, &["memberEpoch -2 is not valid"]);

    // A crashed member restarting with the same id gets a clean incarnation, its old shard back after the hold.
    let mut reborn = Member::new("m1");
    let r = api.heartbeat("s", "s", &reborn).await;
    assert_eq!(r["status"], "OK");
    reborn.adopt(&r);
    assert!(
        reborn.owned().is_empty(),
        "old incarnation's shard is held first: {r}"
    );
    let api2 = api.clone();
    wait_for(
        "the restarted member gets its shard back",
        Duration::from_secs(10),
        || {
            let api = api2.clone();
            let mut probe = reborn.clone();
            async move {
                let r = api.heartbeat("s", "s", &probe).await;
                probe.adopt(&r);
                (probe.owned().len() == 1).then_some(())
            }
        },
    )
    .await;
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn steady_heartbeats_cost_one_redis_command_each() {
    let redis = RedisServer::start();
    let mut config = test_config(&redis.url());
    config.coordinator.reconciler.enabled = false;
    config.coordinator.member_lease_ttl = rsc_coordinator::config::Dur(Duration::from_secs(60));
    let (running, api) = coordinator(config).await;
    api.create_stream("hot", 8).await;
    let mut members: Vec<Member> = (0..3).map(|i| Member::new(&format!("m{i}"))).collect();
    // Converge: heartbeat until nobody's answer changes.
    for _ in 0..8 {
        for m in members.iter_mut() {
            let r = api.heartbeat("hot", "hot", m).await;
            m.adopt(&r);
        }
    }
    let group = api
        .send("GET", "/coord/v1/streams/hot/groups/hot", None)
        .await;
    assert_eq!(group.body["state"], "STABLE", "{}", group.body);

    let revision_before = redis_cmd(
        &redis.url(),
        &["HGET", "redis-stream:coord:{hot:hot}:metadata", "revision"],
    )
    .await;
    rsc_testkit::reset_stats(&redis.url()).await;
    for i in 0..100 {
        let m = &members[i % 3];
        let r = api.heartbeat("hot", "hot", m).await;
        assert_eq!(r["status"], "OK");
    }
    let calls = rsc_testkit::command_calls(&redis.url()).await;
    // One round trip per heartbeat: one EVALSHA. Redis also counts the commands the script runs inside
    // that call: TIME, HGET of the revision, ZSCORE + ZADD of the lease, HSET of the progress, ZRANGE of the
    // lowest lease deadline (is an expiry due, or due within an interval?) — all O(1) or O(log n) in the group size, and none of
    // them reads or writes the aggregate.
    let mut calls = calls;
    calls.remove("config|resetstat");
    let expected: std::collections::BTreeMap<String, u64> = [
        "evalsha", "time", "hget", "zscore", "zadd", "hset", "zrange",
    ]
    .iter()
    .map(|c| (c.to_string(), 100))
    .collect();
    assert_eq!(
        calls, expected,
        "exactly one EVALSHA (and its in-script commands) per steady heartbeat"
    );
    let aggregate_after = redis_cmd(
        &redis.url(),
        &["HGET", "redis-stream:coord:{hot:hot}:metadata", "revision"],
    )
    .await;
    assert_eq!(
        aggregate_after, revision_before,
        "steady heartbeats never rewrite the aggregate"
    );
    running.shutdown().await.unwrap();
}

/// Two replicas on one Redis (each caches groups on its own, no reconciler, 60 s leases), a stream `prefix`
/// with 4 shards whose group member "a" joined through the first.
async fn two_replicas_with_a_joined(prefix: &str) -> (RedisServer, [(Running, Api); 2]) {
    let redis = RedisServer::start();
    let mut config = test_config(&redis.url());
    config.coordinator.reconciler.enabled = false;
    config.coordinator.member_lease_ttl = rsc_coordinator::config::Dur(Duration::from_secs(60));
    let first = coordinator(config.clone()).await;
    let second = coordinator(config).await;
    first.1.create_stream(prefix, 4).await;
    let r = first.1.heartbeat(prefix, prefix, &Member::new("a")).await;
    assert_eq!(r["status"], "OK", "{r}");
    (redis, [first, second])
}

#[tokio::test]
async fn a_rejection_on_a_cached_group_is_confirmed_by_its_revision_not_by_a_reload() {
    let (redis, [(first, api), (second, other_api)]) = two_replicas_with_a_joined("rev").await;

    // A member the group does not know, at a non-zero epoch: rejected on the cache, confirmed with one HGET.
    let mut ghost = Member::new("ghost");
    ghost.forged_epoch = Some(5);
    rsc_testkit::reset_stats(&redis.url()).await;
    let r = api.heartbeat("rev", "rev", &ghost).await;
    assert_eq!(r["status"], "UNKNOWN_MEMBER_ID", "{r}");
    let mut calls = rsc_testkit::command_calls(&redis.url()).await;
    calls.remove("config|resetstat");
    let expected: std::collections::BTreeMap<String, u64> =
        [("hget".to_string(), 1)].into_iter().collect();
    assert_eq!(calls, expected, "one HGET of the revision, no reload");

    // "b" joins through the other replica: the first one's cache no longer knows it, finds out from the
    // revision, reloads and answers OK (not UNKNOWN_MEMBER_ID).
    let mut b = Member::new("b");
    let r = other_api.heartbeat("rev", "rev", &b).await;
    assert_eq!(r["status"], "OK", "{r}");
    b.adopt(&r);
    rsc_testkit::reset_stats(&redis.url()).await;
    let r = api.heartbeat("rev", "rev", &b).await;
    assert_eq!(
        r["status"], "OK",
        "a member that joined elsewhere is answered: {r}"
    );
    let calls = rsc_testkit::command_calls(&redis.url()).await;
    assert_eq!(calls.get("hgetall"), Some(&1), "one reload: {calls:?}");
    first.shutdown().await.unwrap();
    second.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_reconciler_pass_reads_the_aggregate_only_when_its_revision_moved() {
    let (redis, [(first, _), (second, other_api)]) = two_replicas_with_a_joined("tick").await;
    let name = rsc_coordinator::runtime::cache::GroupName::new("tick", "tick");
    let reads = |calls: &std::collections::BTreeMap<String, u64>| {
        (
            calls.get("hget").copied().unwrap_or(0),
            calls.get("hgetall").copied().unwrap_or(0),
        )
    };

    // Nothing due, cache current: one HGET of the revision, no read of the aggregate, nothing written.
    rsc_testkit::reset_stats(&redis.url()).await;
    first.coordinator.reconciler().reconcile_group(&name).await;
    let calls = rsc_testkit::command_calls(&redis.url()).await;
    assert_eq!(reads(&calls), (1, 0), "{calls:?}");
    assert!(
        !calls.contains_key("evalsha"),
        "nothing to commit: {calls:?}"
    );

    // Another replica moves the group on: the next pass reads it again.
    let r = other_api.heartbeat("tick", "tick", &Member::new("b")).await;
    assert_eq!(r["status"], "OK", "{r}");
    rsc_testkit::reset_stats(&redis.url()).await;
    first.coordinator.reconciler().reconcile_group(&name).await;
    let calls = rsc_testkit::command_calls(&redis.url()).await;
    assert_eq!(reads(&calls), (1, 1), "{calls:?}");
    first.shutdown().await.unwrap();
    second.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joins_waiting_on_one_group_are_committed_together_in_one_write() {
    let redis = RedisServer::start();
    let mut config = test_config(&redis.url());
    config.coordinator.reconciler.enabled = false;
    config.coordinator.member_lease_ttl = rsc_coordinator::config::Dur(Duration::from_secs(60));
    let (running, api) = coordinator(config).await;
    api.create_stream("batch", 40).await;
    let coordinator = running.coordinator.clone();
    let name = rsc_coordinator::runtime::cache::GroupName::new("batch", "batch");

    // Hold the group's lock, as a long write would, while 20 members join: they all queue up.
    let lock = coordinator.cache().lock_for(&name);
    let held = lock.lock().await;
    let joins: Vec<_> = (0..20)
        .map(|i| {
            let api = api.clone();
            tokio::spawn(async move {
                let m = Member::new(&format!("m{i:02}"));
                api.heartbeat("batch", "batch", &m).await
            })
        })
        .collect();
    wait_for("20 joins queued", Duration::from_secs(20), || {
        let queued = coordinator.heartbeats().queued(&name);
        async move { (queued == 20).then_some(()) }
    })
    .await;
    let revision = |url: String| async move {
        redis_cmd(
            &url,
            &[
                "HGET",
                "redis-stream:coord:{batch:batch}:metadata",
                "revision",
            ],
        )
        .await
    };
    let before = revision(redis.url()).await;
    drop(held);

    let mut granted = std::collections::BTreeSet::new();
    for j in joins {
        let r = j.await.unwrap();
        assert_eq!(r["status"], "OK", "{r}");
        assert!(r["memberEpoch"].as_i64().unwrap() >= 1, "{r}");
        for s in shards(&r["assignment"]["assignedShards"]) {
            assert!(granted.insert(s), "shard {s} granted twice: {r}");
        }
    }
    let after = revision(redis.url()).await;
    let as_int = |v: &redis::Value| match v {
        redis::Value::BulkString(b) => String::from_utf8_lossy(b).parse::<u64>().unwrap(),
        other => panic!("revision: {other:?}"),
    };
    assert_eq!(
        as_int(&after),
        as_int(&before) + 1,
        "twenty joins, one compare-and-set"
    );
    assert_eq!(
        rsc_coordinator::observability::stats::Stats::get(&coordinator.stats().transition_batches),
        1
    );
    assert_eq!(
        rsc_coordinator::observability::stats::Stats::get(&coordinator.stats().batched_transitions),
        20
    );
    // Every member is in the group, each answer was true when it was sent.
    let members = api
        .send(
            "GET",
            "/coord/v1/monitoring/streams/batch/groups/batch/members",
            None,
        )
        .await;
    assert_eq!(members.status, 200, "{}", members.body);
    assert_eq!(
        members.body.to_string().matches("\"memberId\"").count(),
        20,
        "{}",
        members.body
    );
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn unreadable_or_missing_metadata_fails_closed() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;
    api.create_stream("c", 2).await;
    api.create_stream("lost", 2).await;
    // A foreign writer corrupts the aggregate (and, as any writer does, moves the revision).
    redis_cmd(
        &redis.url(),
        &[
            "HSET",
            "redis-stream:coord:{c:c}:metadata",
            "aggregate",
            "{garbage",
            "revision",
            "7",
        ],
    )
    .await;
    let r = api.send("GET", "/coord/v1/streams/c/groups/c", None).await;
    assert_eq!(r.status, 409);
    assert_eq!(r.body["errorCode"], "METADATA_CORRUPT");
    let hb = api.heartbeat("c", "c", &Member::new("m")).await;
    assert_eq!(
        hb["status"], "UNKNOWN_MEMBER_ID",
        "no assignment is handed out from unreadable metadata"
    );
    assert_eq!(
        redis_cmd(
            &redis.url(),
            &["HGET", "redis-stream:coord:{c:c}:metadata", "aggregate"]
        )
        .await,
        redis::Value::BulkString(b"{garbage".to_vec()),
        "never rebuilt"
    );

    redis_cmd(
        &redis.url(),
        &[
            "HSET",
            "redis-stream:coord:{c:c}:metadata",
            "schemaVersion",
            "9",
        ],
    )
    .await;
    let r = api.send("GET", "/coord/v1/streams/c/groups/c", None).await;
    assert_eq!(r.body["errorCode"], "METADATA_CORRUPT");

    redis_cmd(
        &redis.url(),
        &["DEL", "redis-stream:coord:{lost:lost}:metadata"],
    )
    .await;
    let r = api
        .send("GET", "/coord/v1/streams/lost/groups/lost", None)
        .await;
    assert_eq!(r.status, 409);
    assert_eq!(r.body["errorCode"], "METADATA_MISSING", "{}", r.body);
    let hb = api.heartbeat("lost", "lost", &Member::new("m")).await;
    assert_eq!(hb["status"], "UNKNOWN_MEMBER_ID");
    let exists = redis_cmd(
        &redis.url(),
        &["EXISTS", "redis-stream:coord:{lost:lost}:metadata"],
    )
    .await;
    assert_eq!(
        exists,
        redis::Value::Int(0),
        "a heartbeat never recreates a lost group"
    );
    running.shutdown().await.unwrap();
}

/// Two members split 4 shards of `prefix`, then a stops heartbeating: returns b once it owns all four
/// (a's 1.5 s lease lapsed and a was expired). Returns (a as it last was, b).
async fn b_takes_over_after_a_stops(api: &Api, prefix: &str) -> (Member, Member) {
    api.create_stream(prefix, 4).await;
    let mut a = Member::new("a");
    let mut b = Member::new("b");
    for _ in 0..4 {
        for m in [&mut a, &mut b] {
            let r = api.heartbeat(prefix, prefix, m).await;
            m.adopt(&r);
        }
    }
    assert_eq!((a.owned().len(), b.owned().len()), (2, 2));
    let b_final = wait_for(
        "b owns all shards after a's lease (1.5 s) lapsed",
        Duration::from_secs(15),
        || {
            let api = api.clone();
            let mut bb = b.clone();
            let prefix = prefix.to_owned();
            async move {
                let r = api.heartbeat(&prefix, &prefix, &bb).await;
                bb.adopt(&r);
                (bb.owned().len() == 4).then_some(bb)
            }
        },
    )
    .await;
    assert_eq!(b_final.owned(), vec![0, 1, 2, 3]);
    (a, b_final)
}

/// Failover must not wait for the reconciler's tick: the first heartbeat of another member after a lease
/// lapsed has it expired. With a tick of an hour, nothing else could move the shards.
#[tokio::test]
async fn another_members_heartbeat_has_a_lapsed_lease_expired_without_waiting_for_the_tick() {
    let redis = RedisServer::start();
    let mut config = test_config(&redis.url());
    config.coordinator.reconciler.tick_interval =
        rsc_coordinator::config::Dur(Duration::from_secs(3_600));
    let (running, api) = coordinator(config).await;
    b_takes_over_after_a_stops(&api, "f").await;
    running.shutdown().await.unwrap();
}

/// A lost lease set (evicted, or metadata restored by hand without it) must not leave members that can never
/// lapse: the reconciler treats a live member with no lease entry as lapsed, so its shards move on.
#[tokio::test]
async fn a_live_member_whose_lease_entry_is_gone_is_expired_and_its_shards_move() {
    let redis = RedisServer::start();
    let mut config = test_config(&redis.url());
    // Long enough that only expiry (not the rebalance timeout) can free a's shards within the wait below.
    config.coordinator.rebalance_timeout = rsc_coordinator::config::Dur(Duration::from_secs(600));
    let (running, api) = coordinator(config).await;
    api.create_stream("lost", 4).await;
    let mut a = Member::new("a");
    for _ in 0..3 {
        let r = api.heartbeat("lost", "lost", &a).await;
        a.adopt(&r);
    }
    assert_eq!(a.owned(), vec![0, 1, 2, 3]);
    let deleted = redis_cmd(
        &redis.url(),
        &[
            "DEL",
            &rsc_protocol::names::group_leases_key("redis-stream:coord", "lost", "lost"),
        ],
    )
    .await;
    assert_eq!(deleted, redis::Value::Int(1), "the lease set existed");
    // a stops; the reconciler must expire it although no deadline of it is left to lapse.
    wait_for("a expired", Duration::from_secs(10), || {
        let api = api.clone();
        async move {
            let m = api
                .send(
                    "GET",
                    "/coord/v1/monitoring/streams/lost/groups/lost/members",
                    None,
                )
                .await;
            (m.body["members"][0]["state"] == "EXPIRED").then_some(())
        }
    })
    .await;
    let b = Member::new("b");
    let b = wait_for("b owns every shard", Duration::from_secs(10), || {
        let api = api.clone();
        let mut bb = b.clone();
        async move {
            let r = api.heartbeat("lost", "lost", &bb).await;
            bb.adopt(&r);
            (bb.owned().len() == 4).then_some(bb)
        }
    })
    .await;
    assert_eq!(b.owned(), vec![0, 1, 2, 3]);
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn expired_members_lose_their_shards_and_delete_needs_force() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;
    // a stops heartbeating; b keeps going and gets a's shards once a's lease (1.5 s) expired.
    let (a, _b) = b_takes_over_after_a_stops(&api, "e").await;
    let members = api
        .send(
            "GET",
            "/coord/v1/monitoring/streams/e/groups/e/members",
            None,
        )
        .await;
    let states: Vec<(String, String)> = members.body["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["memberId"].as_str().unwrap().to_owned(),
                m["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("a".to_owned(), "EXPIRED".to_owned()),
            ("b".to_owned(), "ACTIVE".to_owned())
        ]
    );
    // An expired member still shows when it was last heard from.
    let last = &members.body["members"][0]["lastHeartbeatAt"];
    assert!(
        last.is_string(),
        "expired member keeps lastHeartbeatAt: {}",
        members.body
    );
    let expired_hb = api.heartbeat("e", "e", &a).await;
    assert_eq!(expired_hb["status"], "FENCED_MEMBER_EPOCH");
    let message = expired_hb["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("member \"a\" expired")
            && message.contains("member lease (1s 500ms)")
            && message.contains("memberEpoch 0"),
        "{expired_hb}"
    );

    let r = api
        .send(
            "DELETE",
            "/coord/v1/streams/e/groups/e",
            Some(json!({"requestedBy": "t", "reason": "r"})),
        )
        .await;
    assert_eq!(r.status, 409);
    assert_eq!(r.body["errorCode"], "GROUP_HAS_ACTIVE_MEMBERS");
    // A producer fetched routing: its sighting is kept for producer quiesce.
    let r = api
        .send(
            "GET",
            "/coord/v1/streams/e/groups/e/producer-routing?producerId=p1",
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let seen = redis_cmd(
        &redis.url(),
        &["EXISTS", "redis-stream:coord:{e}:producers:seen"],
    )
    .await;
    assert_eq!(seen, redis::Value::Int(1));
    let r = api
        .send(
            "DELETE",
            "/coord/v1/streams/e/groups/e",
            Some(json!({"requestedBy": "t", "reason": "r", "force": true})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["consumerGroup"], "e");
    let r = api.send("GET", "/coord/v1/streams/e/groups/e", None).await;
    assert_eq!(r.status, 404);
    let streams_kept = redis_cmd(&redis.url(), &["EXISTS", "e:0"]).await;
    assert_eq!(
        streams_kept,
        redis::Value::Int(1),
        "delete leaves the streams in place"
    );
    // The stream's last group is gone: its coordinator keys go too (the stream record, the sightings).
    let left = redis_cmd(&redis.url(), &["KEYS", "redis-stream:coord:{e}:*"]).await;
    assert_eq!(left, redis::Value::Array(vec![]), "{left:?}");
    let _: Value = json!(null);
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn terminating_coordinator_refuses_new_mutations_and_heartbeats() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;
    api.create_stream("t", 1).await;
    running.coordinator.begin_termination();
    let r = api
        .send(
            "POST",
            "/coord/v1/streams/t/groups/t/members/m/heartbeat",
            Some(Member::new("m").request()),
        )
        .await;
    assert_eq!(r.status, 503);
    assert_eq!(r.body["errorCode"], "COORDINATOR_TERMINATING");
    let r = api.create_stream("u", 1).await;
    assert_eq!(r.body["errorCode"], "COORDINATOR_TERMINATING");
    let r = api.send("GET", "/readyz", None).await;
    assert_eq!(r.status, 503);
    running.shutdown().await.unwrap();
}

/// The one shutdown check covers every route that changes state (the route table's WRITE and MEMBER routes),
/// before the handler reads the body, while reads keep answering.
#[tokio::test]
async fn terminating_coordinator_refuses_every_mutating_route_and_keeps_answering_reads() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;
    api.create_stream("t", 1).await;
    running.coordinator.begin_termination();
    let body = json!({"requestedBy": "t", "reason": "shutdown test"});
    let g = "/coord/v1/streams/t/groups/t";
    for (method, path) in [
        ("POST", "/coord/v1/streams/u".to_owned()),
        ("POST", "/coord/v1/streams/t/groups/other".to_owned()),
        ("DELETE", g.to_owned()),
        ("POST", format!("{g}/recreate")),
        ("POST", format!("{g}/durability/dismiss")),
        ("POST", "/coord/v1/streams/t/scale".to_owned()),
        ("POST", "/coord/v1/streams/t/ordering".to_owned()),
        ("POST", "/coord/v1/streams/t/producers/quiesced".to_owned()),
        ("POST", format!("{g}/scale")),
        ("POST", format!("{g}/migrations/x/rollback")),
        ("POST", format!("{g}/migrations/x/force-complete")),
        ("POST", format!("{g}/offsets/reset")),
        ("POST", format!("{g}/members/m/heartbeat")),
    ] {
        let r = api.send(method, &path, Some(body.clone())).await;
        assert_eq!(r.status, 503, "{method} {path}: {}", r.body);
        assert_eq!(
            r.body["errorCode"], "COORDINATOR_TERMINATING",
            "{method} {path}"
        );
    }
    let r = api.send("GET", g, None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = api.send("GET", "/coord/v1/monitoring/health", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    running.shutdown().await.unwrap();
}

/// `jq -r .accessToken` prints `null` for a failed login's error body; the runbook's snippet then stores
/// RSC_TOKEN=null. The 401 that follows says so instead of only "not an rsc token".
#[tokio::test]
async fn a_null_bearer_token_is_recognised_as_a_failed_logins_output() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;
    let r = api
        .with_auth(Auth::Header("Bearer null".into()))
        .send("GET", "/coord/v1/monitoring/health", None)
        .await;
    assert_eq!(r.status, 401);
    let message = r.body["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("this looks like a failed login's output (null)"),
        "{}",
        r.body
    );
    running.shutdown().await.unwrap();
}

/// `GET /` is a small public index pointing at the probes and the API, revealing nothing about the deployment.
#[tokio::test]
async fn the_root_is_a_public_index_of_where_to_go() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;
    let r = api.with_auth(Auth::None).send("GET", "/", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["name"], "rsc");
    assert_eq!(r.body["links"]["liveness"], "/healthz");
    assert_eq!(r.body["links"]["readiness"], "/readyz");
    assert_eq!(r.body["links"]["health"], "/coord/v1/monitoring/health");
    let text = r.body.to_string();
    assert!(
        !text.contains("test-coordinator") && !text.contains("redis://"),
        "{text}"
    );
    // The deployment's cluster id (issue #33): random, kept in Redis, the same on every answer.
    let id = r.body["clusterId"]
        .as_str()
        .expect("a cluster id")
        .to_owned();
    assert_eq!(id.len(), 36, "{id}");
    let again = api.with_auth(Auth::None).send("GET", "/", None).await;
    assert_eq!(again.body["clusterId"], id.as_str());
    running.shutdown().await.unwrap();
}

/// The README walk-through's member: a join and its first echo, both of which change the aggregate (no steady
/// heartbeat in between). Its last heartbeat time is known while it is active and stays known once it has
/// expired (it used to be `null` in both cases: only steady heartbeats stored progress, and expiry deleted it).
#[tokio::test]
async fn a_members_last_heartbeat_is_kept_through_writes_and_expiry() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;
    api.create_stream("w", 2).await;
    let mut m = Member::new("worker-1");
    for _ in 0..2 {
        let r = api.heartbeat("w", "w", &m).await;
        assert_eq!(r["status"], "OK", "{r}");
        m.adopt(&r);
    }
    let members = |api: Api| async move {
        api.send(
            "GET",
            "/coord/v1/monitoring/streams/w/groups/w/members",
            None,
        )
        .await
        .body["members"][0]
            .clone()
    };
    let active = members(api.clone()).await;
    assert_eq!(active["state"], "ACTIVE", "{active}");
    let last = active["lastHeartbeatAt"].clone();
    assert!(last.is_string(), "{active}");
    let api2 = api.clone();
    let expired = wait_for(
        "worker-1 expires (1.5 s lease)",
        Duration::from_secs(15),
        || {
            let api = api2.clone();
            async move {
                let m = members(api).await;
                (m["state"] == "EXPIRED").then_some(m)
            }
        },
    )
    .await;
    assert_eq!(expired["lastHeartbeatAt"], last, "{expired}");
    running.shutdown().await.unwrap();
}
