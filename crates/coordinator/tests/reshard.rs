//! Online resharding against real Redis with real streams and consuming members: every message produced
//! before and during each migration is acknowledged; drains, rollback, force-complete and resumption.

use crate::support;

use rsc_protocol::routing::shard_for_key;
use rsc_testkit::RedisServer;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::Duration;
use support::*;

/// Test-side consumers and producer over the coordinator protocol and Redis streams.
struct Harness {
    api: Api,
    redis: redis::aio::MultiplexedConnection,
    prefix: String,
    members: Vec<Member>,
    produced: BTreeSet<String>,
    acked: BTreeSet<String>,
    seq: u64,
    consuming: bool,
}

impl Harness {
    async fn new(api: Api, url: &str, prefix: &str, members: usize) -> Harness {
        let client = redis::Client::open(url).unwrap();
        let redis = client.get_multiplexed_async_connection().await.unwrap();
        Harness {
            api,
            redis,
            prefix: prefix.into(),
            members: (0..members)
                .map(|i| Member::new(&format!("m{i}")))
                .collect(),
            produced: BTreeSet::new(),
            acked: BTreeSet::new(),
            seq: 0,
            consuming: true,
        }
    }

    /// Publishes `n` keyed messages routed with the contract hash over the current producer routing.
    async fn produce(&mut self, n: usize) {
        let r = self
            .api
            .send(
                "GET",
                &format!(
                    "/coord/v1/streams/{p}/groups/{p}/producer-routing",
                    p = self.prefix
                ),
                None,
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        let count = r.body["shardCount"].as_u64().unwrap() as u32;
        for _ in 0..n {
            self.seq += 1;
            let key = format!("key-{}", self.seq);
            let Some(shard) = shard_for_key(key.as_bytes(), count) else {
                return;
            };
            let stream = r.body["shards"][shard as usize]["streamKey"]
                .as_str()
                .unwrap()
                .to_owned();
            let id: Option<String> = redis::cmd("XADD")
                .arg(&stream)
                .arg("NOMKSTREAM")
                .arg("*")
                .arg("key")
                .arg(&key)
                .query_async(&mut self.redis)
                .await
                .unwrap();
            assert!(id.is_some(), "routed stream {stream} exists");
            self.produced.insert(key);
        }
    }

    /// One round: every member heartbeats, then reads and acknowledges everything on its assigned shards.
    async fn round(&mut self) {
        for i in 0..self.members.len() {
            let r = self
                .api
                .heartbeat(&self.prefix, &self.prefix, &self.members[i])
                .await;
            self.members[i].adopt(&r);
        }
        assert_disjoint(&self.members.iter().collect::<Vec<_>>());
        if !self.consuming {
            return;
        }
        for m in &self.members {
            for s in m.owned() {
                let key = format!("{}:{s}", self.prefix);
                // A fenced shard is consumed up to its fence; what lies after it is delivered but stays pending
                // (as the SDK consumer holds it back), and is taken up again from this member's own pending
                // entries (`0`) once the fence is lifted.
                let fence = m.membership.fences().answered(s).map(str::to_owned);
                for start in ["0", ">"] {
                    let reply: redis::Value = redis::cmd("XREADGROUP")
                        .arg("GROUP")
                        .arg(&self.prefix)
                        .arg(m.id())
                        .arg("COUNT")
                        .arg(200)
                        .arg("STREAMS")
                        .arg(&key)
                        .arg(start)
                        .query_async(&mut self.redis)
                        .await
                        .unwrap();
                    for (id, k) in entries(&reply) {
                        if fence.as_deref().is_some_and(|f| rsc_member::beyond(&id, f)) {
                            continue;
                        }
                        let _: i64 = redis::cmd("XACK")
                            .arg(&key)
                            .arg(&self.prefix)
                            .arg(&id)
                            .query_async(&mut self.redis)
                            .await
                            .unwrap();
                        self.acked.insert(k);
                    }
                }
            }
        }
    }

    async fn migration(&self, id: &str) -> Value {
        let r = self
            .api
            .send(
                "GET",
                &format!(
                    "/coord/v1/streams/{p}/groups/{p}/migrations/{id}",
                    p = self.prefix
                ),
                None,
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        r.body
    }

    /// Runs rounds until the migration reaches `state` (bounded).
    async fn until_state(&mut self, id: &str, state: &str) -> Value {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            self.round().await;
            let m = self.migration(id).await;
            if m["state"] == state {
                return m;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "migration {id} did not reach {state}: {m}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits (bounded) until the stream's record names no active migration: the stream's pass (or an end)
    /// has filed its end there too, not only in the group.
    async fn until_the_stream_has_no_active_migration(&self) {
        let key = format!("redis-stream:coord:{{{}}}:stream", self.prefix);
        let conn = self.redis.clone();
        wait_for(
            "the stream's record no longer names the ended migration",
            Duration::from_secs(20),
            || {
                let (mut conn, key) = (conn.clone(), key.clone());
                async move {
                    let aggregate: Option<String> = redis::cmd("HGET")
                        .arg(&key)
                        .arg("aggregate")
                        .query_async(&mut conn)
                        .await
                        .unwrap();
                    let record: Value = serde_json::from_str(&aggregate?).ok()?;
                    record["activeMigration"].is_null().then_some(())
                }
            },
        )
        .await;
    }

    async fn until_all_acked(&mut self) {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while self.acked != self.produced {
            self.round().await;
            assert!(
                std::time::Instant::now() < deadline,
                "{} of {} messages acknowledged",
                self.acked.len(),
                self.produced.len()
            );
        }
    }

    async fn scale(&self, target: u32) -> (u16, Value) {
        let r = self
            .api
            .send(
                "POST",
                &format!("/coord/v1/streams/{}/scale", self.prefix),
                Some(json!({"targetShardCount": target, "requestedBy": "test", "reason": "test"})),
            )
            .await;
        (r.status, r.body)
    }
}

/// One stream of an XREADGROUP reply: its key and its (id, fields) entries.
type StreamEntries = (String, Vec<(String, Vec<(String, String)>)>);

/// Parses an XREADGROUP reply into (id, key field) pairs.
fn entries(v: &redis::Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let streams: Vec<StreamEntries> = match redis::from_redis_value(v.clone()) {
        Ok(s) => s,
        Err(_) => return out,
    };
    for (_, items) in streams {
        for (id, fields) in items {
            let key = fields
                .into_iter()
                .find(|(f, _)| f == "key")
                .map(|(_, v)| v)
                .unwrap_or_default();
            out.push((id, key));
        }
    }
    out
}

#[tokio::test]
async fn scale_out_in_and_to_zero_with_traffic_loses_nothing() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;
    assert_eq!(api.create_stream("r", 4).await.status, 201);
    let mut h = Harness::new(api.clone(), &redis.url(), "r", 3).await;
    h.produce(300).await;
    h.until_all_acked().await;

    // 4 → 8 during continuous producing.
    let (status, body) = h.scale(8).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["affectedConsumerGroups"], json!(["r"]));
    let id = body["migrations"][0]["reshardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    h.produce(200).await;
    let routing = api
        .send("GET", "/coord/v1/streams/r/groups/r/producer-routing", None)
        .await;
    assert_eq!(
        routing.body["shardCount"], 8,
        "routing switched at activation"
    );
    h.until_state(&id, "DEPRECATED").await;
    h.until_all_acked().await;

    // 8 → 3 with a backlog on the removed shards: consumers pause, producers fill all 8 shards.
    h.consuming = false;
    h.produce(400).await;
    let (status, body) = h.scale(3).await;
    assert_eq!(status, 202, "{body}");
    let id = body["migrations"][0]["reshardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    let routing = api
        .send("GET", "/coord/v1/streams/r/groups/r/producer-routing", None)
        .await;
    assert_eq!(routing.body["shardCount"], 3);
    // While the backlog is unconsumed, the removed shards stay assigned and the migration cannot complete.
    for _ in 0..5 {
        h.round().await;
    }
    let m = h.migration(&id).await;
    assert_ne!(m["state"], "DEPRECATED", "{m}");
    let owned: BTreeSet<u32> = h.members.iter().flat_map(|m| m.owned()).collect();
    assert!(
        (3..8).all(|s| owned.contains(&s)),
        "removed shards stay assigned while draining: {owned:?}"
    );
    h.consuming = true;
    h.produce(100).await;
    h.until_state(&id, "DEPRECATED").await;
    h.until_all_acked().await;
    let owned: BTreeSet<u32> = h.members.iter().flat_map(|m| m.owned()).collect();
    assert_eq!(
        owned,
        (0..3).collect(),
        "removed shards left the assignment once drained"
    );
    let mut conn = h.redis.clone();
    // The stream's pass retires the removed shard streams after the migration ended (not in the same write):
    // wait for it, bounded.
    wait_for(
        "drained removed shards are retired",
        Duration::from_secs(20),
        || {
            let mut conn = conn.clone();
            async move {
                let exists: i64 = redis::cmd("EXISTS")
                    .arg("r:5")
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                (exists == 0).then_some(())
            }
        },
    )
    .await;
    let stale: Option<String> = redis::cmd("XADD")
        .arg("r:5")
        .arg("NOMKSTREAM")
        .arg("*")
        .arg("k")
        .arg("v")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        stale, None,
        "a stale producer's write to a retired shard fails (NOMKSTREAM)"
    );

    // 3 → 0 drains and removes every shard.
    h.produce(50).await;
    let (status, body) = h.scale(0).await;
    assert_eq!(status, 202, "{body}");
    let id = body["migrations"][0]["reshardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    h.until_state(&id, "DEPRECATED").await;
    h.until_all_acked().await;
    let routing = api
        .send("GET", "/coord/v1/streams/r/groups/r/producer-routing", None)
        .await;
    assert_eq!(routing.body["shardCount"], 0);
    assert_eq!(routing.body["shards"], json!([]));
    assert_eq!(h.acked.len(), 1_050);
    let a = api
        .send(
            "GET",
            "/coord/v1/monitoring/streams/r/groups/r/assignments",
            None,
        )
        .await;
    assert_eq!(a.body["invariantViolations"], json!([]));
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_unconsumed_extra_group_blocks_the_drain_until_forced() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;
    api.create_stream("x", 2).await;
    let mut h = Harness::new(api.clone(), &redis.url(), "x", 1).await;
    let mut conn = h.redis.clone();
    let _: () = redis::cmd("XGROUP")
        .arg("CREATE")
        .arg("x:1")
        .arg("nobody-reads-this")
        .arg("$")
        .query_async(&mut conn)
        .await
        .unwrap();
    h.produce(40).await;
    h.until_all_acked().await;
    let (_, body) = h.scale(1).await;
    // Each group's migration names its group.
    assert_eq!(body["migrations"][0]["consumerGroup"], "x", "{body}");
    let id = body["migrations"][0]["reshardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    h.until_state(&id, "DRAINING").await;
    // Our group has consumed everything on the removed shard; the extra group has not.
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while std::time::Instant::now() < deadline {
        h.round().await;
        let m = h.migration(&id).await;
        assert_eq!(
            m["state"], "DRAINING",
            "stays DRAINING while another Redis group has a backlog: {m}"
        );
        assert_eq!(m["removedShards"][0]["pending"], 0);
        assert_eq!(m["removedShards"][0]["lag"], 0);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A second scale is refused while it is active…
    let (status, body) = h.scale(4).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["errorCode"], "ACTIVE_MIGRATION_EXISTS");
    // It names the state the migration view shows (the stream record's own state is still ACTIVE).
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("DRAINING") && !message.contains("ACTIVE"),
        "{body}"
    );
    // …force-complete needs a reason, then ends it.
    let path = format!("/coord/v1/streams/x/groups/x/migrations/{id}/force-complete");
    let r = api
        .send("POST", &path, Some(json!({"requestedBy": "ops"})))
        .await;
    assert_eq!(r.status, 400);
    assert!(r.body["message"].as_str().unwrap().contains("reason"));
    let r = api
        .send(
            "POST",
            &path,
            Some(json!({"requestedBy": "ops", "reason": "extra group abandoned"})),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(r.body["state"], "FORCE_COMPLETED");
    // Repeating it answers the migration it ended, like a repeated rollback.
    let again = api
        .send(
            "POST",
            &path,
            Some(json!({"requestedBy": "ops", "reason": "retry"})),
        )
        .await;
    assert_eq!(again.status, 202, "{}", again.body);
    assert_eq!(again.body["state"], "FORCE_COMPLETED");
    let owned = loop {
        h.round().await;
        let owned: BTreeSet<u32> = h.members.iter().flat_map(|m| m.owned()).collect();
        if owned == [0].into_iter().collect() {
            break owned;
        }
    };
    assert_eq!(owned.len(), 1);
    let (status, body) = h.scale(2).await;
    assert_eq!(
        status, 202,
        "scaling works again after the forced end: {body}"
    );
    // Force-completing a migration that completed on its own is not a rollback question.
    let id = body["migrations"][0]["reshardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    h.until_state(&id, "DEPRECATED").await;
    // The group's migration has ended; the stream's record names it active until the stream's pass ends it
    // there too, and a force-complete in between still reaches the stream's migration. Wait for the record
    // (bounded), then a force-complete of the ended migration is refused.
    h.until_the_stream_has_no_active_migration().await;
    let r = api
        .send(
            "POST",
            &format!("/coord/v1/streams/x/groups/x/migrations/{id}/force-complete"),
            Some(json!({"requestedBy": "ops", "reason": "late"})),
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(r.body["errorCode"], "MIGRATION_ALREADY_ENDED");
    assert!(
        r.body["message"].as_str().unwrap().contains("DEPRECATED"),
        "{}",
        r.body
    );
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn rollback_is_allowed_while_active_and_refused_after_completion() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;
    api.create_stream("rb", 2).await;
    let mut h = Harness::new(api.clone(), &redis.url(), "rb", 2).await;
    h.round().await;
    let (status, body) = h.scale(4).await;
    assert_eq!(status, 202);
    let id = body["migrations"][0]["reshardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, again) = h.scale(4).await;
    assert_eq!(status, 202, "repeating the same target is idempotent");
    assert_eq!(again["migrations"][0]["reshardingId"], id.as_str());
    // Records written to the added shards before the rollback are drained, not stranded.
    h.produce(100).await;
    let detail = h.migration(&id).await;
    assert_eq!(detail["rollbackAllowed"], true, "{detail}");
    let path = format!("/coord/v1/streams/rb/groups/rb/migrations/{id}/rollback");
    let r = api
        .send(
            "POST",
            &path,
            Some(json!({"requestedBy": "ops", "reason": "too early"})),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(r.body["state"], "ROLLED_BACK");
    let routing = api
        .send(
            "GET",
            "/coord/v1/streams/rb/groups/rb/producer-routing",
            None,
        )
        .await;
    assert_eq!(routing.body["shardCount"], 2);
    let r = api
        .send(
            "POST",
            &path,
            Some(json!({"requestedBy": "ops", "reason": "again"})),
        )
        .await;
    assert_eq!(
        r.status, 202,
        "a repeated rollback returns the rolled-back migration"
    );
    h.until_all_acked().await;

    let (_, body) = h.scale(3).await;
    let id = body["migrations"][0]["reshardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    h.until_state(&id, "DEPRECATED").await;
    // Until the stream's pass files the completion on the stream's record, a rollback still reaches the
    // stream's migration (and rolls this group's copy back with it): wait for the record first.
    h.until_the_stream_has_no_active_migration().await;
    let path = format!("/coord/v1/streams/rb/groups/rb/migrations/{id}/rollback");
    let r = api
        .send(
            "POST",
            &path,
            Some(json!({"requestedBy": "ops", "reason": "late"})),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(r.body["errorCode"], "ROLLBACK_NOT_ALLOWED");
    assert!(
        r.body["message"].as_str().unwrap().contains("DEPRECATED"),
        "says why: {}",
        r.body
    );
    let r = api
        .send(
            "GET",
            "/coord/v1/streams/rb/groups/rb/migrations/reshard-unknown",
            None,
        )
        .await;
    assert_eq!(r.body["errorCode"], "MIGRATION_NOT_FOUND");
    let (status, body) = h.scale(100_000).await;
    assert_eq!(status, 400, "{body}");
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_migration_interrupted_after_recording_resumes_from_redis() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;
    api.create_stream("k", 2).await;
    let mut h = Harness::new(api.clone(), &redis.url(), "k", 2).await;
    h.round().await;
    // A coordinator died right after step 1: the stream record holds a PREPARING migration, nothing else.
    let key = "redis-stream:coord:{k}:stream";
    let mut conn = h.redis.clone();
    let json: String = redis::cmd("HGET")
        .arg(key)
        .arg("aggregate")
        .query_async(&mut conn)
        .await
        .unwrap();
    let rev: u64 = redis::cmd("HGET")
        .arg(key)
        .arg("revision")
        .query_async::<String>(&mut conn)
        .await
        .unwrap()
        .parse()
        .unwrap();
    let mut record: Value = serde_json::from_str(&json).unwrap();
    record["activeMigration"] = json!({
        "reshardingId": "reshard-interrupted", "fromShardCount": 2, "toShardCount": 5, "state": "PREPARING",
        "requestedBy": "ops", "reason": "test", "createdAtMs": 1, "updatedAtMs": 1
    });
    record["storeRevision"] = json!(rev + 1);
    let _: () = redis::cmd("HSET")
        .arg(key)
        .arg("aggregate")
        .arg(record.to_string())
        .arg("revision")
        .arg(rev + 1)
        .query_async(&mut conn)
        .await
        .unwrap();
    // The reconciler (any replica) resumes: provisions, switches routing, the group adopts and completes.
    h.until_state("reshard-interrupted", "DEPRECATED").await;
    let routing = api
        .send("GET", "/coord/v1/streams/k/groups/k/producer-routing", None)
        .await;
    assert_eq!(routing.body["shardCount"], 5);
    let exists: i64 = redis::cmd("EXISTS")
        .arg("k:4")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(exists, 1, "new shard provisioned");
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_provisioning_failure_switches_nothing_and_a_retry_resumes() {
    let redis = RedisServer::start();
    let mut config = test_config(&redis.url());
    config.coordinator.reconciler.enabled = false;
    let (running, api) = coordinator(config).await;
    api.create_stream("pf", 2).await;
    let h = Harness::new(api.clone(), &redis.url(), "pf", 1).await;
    let mut conn = h.redis.clone();
    // A foreign key where shard 3 would be created is refused before anything is recorded (it would be
    // adopted as a shard); see also tests/security_domain.rs.
    let _: () = redis::cmd("SET")
        .arg("pf:3")
        .arg("not a stream")
        .query_async(&mut conn)
        .await
        .unwrap();
    let (status, body) = h.scale(4).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["errorCode"], "STREAM_PREFIX_ALREADY_EXISTS");
    let _: () = redis::cmd("DEL")
        .arg("pf:3")
        .query_async(&mut conn)
        .await
        .unwrap();
    // Provisioning itself fails: the coordinator's user may not run XGROUP for a while.
    let acl = |rule: &'static str| {
        let mut conn = conn.clone();
        async move {
            let () = redis::cmd("ACL")
                .arg("SETUSER")
                .arg("default")
                .arg(rule)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
    };
    acl("-xgroup").await;
    let (status, body) = h.scale(4).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["errorCode"], "REDIS_STREAM_PROVISIONING_FAILED");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("could not provision pf:"),
        "{body}"
    );
    acl("+xgroup").await;
    // (Routing re-provisions its shards, so it is asked only once XGROUP is allowed again.)
    let routing = api
        .send(
            "GET",
            "/coord/v1/streams/pf/groups/pf/producer-routing",
            None,
        )
        .await;
    assert_eq!(routing.body["shardCount"], 2, "routing unchanged");
    // A different target is refused while the recorded one is pending; the same target resumes.
    let (status, _) = h.scale(5).await;
    assert_eq!(status, 409);
    let (status, body) = h.scale(4).await;
    assert_eq!(status, 202, "{body}");
    let routing = api
        .send(
            "GET",
            "/coord/v1/streams/pf/groups/pf/producer-routing",
            None,
        )
        .await;
    assert_eq!(routing.body["shardCount"], 4);
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_producer_write_within_the_drain_grace_is_consumed_not_lost() {
    let redis = RedisServer::start();
    let mut config = test_config(&redis.url());
    config.coordinator.streams.drain_grace =
        rsc_coordinator::config::Dur(Duration::from_millis(2_000));
    let (running, api) = coordinator(config).await;
    assert_eq!(api.create_stream("g", 4).await.status, 201);
    let mut h = Harness::new(api.clone(), &redis.url(), "g", 2).await;
    h.produce(40).await;
    h.until_all_acked().await;

    let (status, body) = h.scale(2).await;
    assert_eq!(status, 202, "{body}");
    let id = body["migrations"][0]["reshardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    // Shards 2 and 3 are empty and acknowledged now, yet a producer that cached the old routing may still
    // write to them for as long as its routing lease lasts. Consumers drain them meanwhile.
    h.round().await;
    for n in 0..5 {
        let key = format!("late-{n}");
        let id: Option<String> = redis::cmd("XADD")
            .arg("g:3")
            .arg("NOMKSTREAM")
            .arg("*")
            .arg("key")
            .arg(&key)
            .query_async(&mut h.redis)
            .await
            .unwrap();
        assert!(
            id.is_some(),
            "the removed shard still exists during the grace"
        );
        h.produced.insert(key);
    }
    let done = h.until_state(&id, "DEPRECATED").await;
    h.until_all_acked().await;
    let ms = |v: &Value| iso_to_ms(v.as_str().unwrap());
    let activated = ms(&done["activatedAt"]);
    let evidence_from = ms(&done["drainEvidenceFrom"]);
    assert!(
        evidence_from >= activated + 2_000,
        "evidence counts only after the grace: {done}"
    );
    assert!(
        ms(&done["completedAt"]) >= evidence_from,
        "completed before the grace ended: {done}"
    );
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_lag_after_everything_was_delivered_does_not_block_the_drain() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;
    assert_eq!(api.create_stream("lag", 2).await.status, 201);
    let mut h = Harness::new(api.clone(), &redis.url(), "lag", 1).await;
    h.produce(30).await;
    h.until_all_acked().await;
    // What Redis can report after a restart: every entry delivered and acknowledged, yet a lag above 0
    // (its entries-read counter was lost). Reproduced here by resetting the counter.
    let _: () = redis::cmd("XGROUP")
        .arg("SETID")
        .arg("lag:1")
        .arg("lag")
        .arg("$")
        .arg("ENTRIESREAD")
        .arg(0)
        .query_async(&mut h.redis)
        .await
        .unwrap();
    // RESP2: each group is a flat [name, value, ...] array.
    let groups: Vec<Vec<redis::Value>> = redis::cmd("XINFO")
        .arg("GROUPS")
        .arg("lag:1")
        .query_async(&mut h.redis)
        .await
        .unwrap();
    let lag = groups[0].chunks(2).find_map(|kv| match kv {
        [redis::Value::BulkString(k), redis::Value::Int(v)] if k.as_slice() == b"lag" => Some(*v),
        _ => None,
    });
    assert!(
        lag.is_some_and(|l| l > 0),
        "the setup must produce a wrong lag: {lag:?}"
    );

    let (status, body) = h.scale(1).await;
    assert_eq!(status, 202, "{body}");
    let id = body["migrations"][0]["reshardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    h.until_state(&id, "DEPRECATED").await;
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_group_reports_its_active_migration_until_it_ends() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;
    api.create_stream("am", 2).await;
    let mut h = Harness::new(api.clone(), &redis.url(), "am", 2).await;
    h.round().await;
    let routes = [
        "/coord/v1/streams/am/groups/am",
        "/coord/v1/monitoring/streams/am/groups/am",
    ];
    for path in routes {
        let r = api.send("GET", path, None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body["activeMigration"], Value::Null, "{path}: {}", r.body);
    }
    let (status, body) = h.scale(4).await;
    assert_eq!(status, 202, "{body}");
    let id = body["migrations"][0]["reshardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    for path in routes {
        let r = api.send("GET", path, None).await;
        let m = &r.body["activeMigration"];
        assert_eq!(m["reshardingId"], id.as_str(), "{path}: {}", r.body);
        assert_eq!(m["fromShardCount"], 2, "{m}");
        assert_eq!(m["toShardCount"], 4, "{m}");
        assert!(
            m["state"] == "ACTIVE" || m["state"] == "DRAINING",
            "{path}: {m}"
        );
        for key in ["createdAt", "updatedAt"] {
            assert!(m[key].is_string(), "{path}: {m}");
        }
    }
    let r = api
        .send(
            "POST",
            &format!("/coord/v1/streams/am/groups/am/migrations/{id}/rollback"),
            Some(json!({"requestedBy": "ops", "reason": "test"})),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
    for path in routes {
        let r = api.send("GET", path, None).await;
        assert_eq!(
            r.body["activeMigration"],
            Value::Null,
            "ended by the rollback: {path}: {}",
            r.body
        );
    }
    running.shutdown().await.unwrap();
}

/// Ordered streams: a child shard of a scale-out is read by nobody until this group consumed its parent's
/// records from before the switch; the migration view shows who waits for whom; a scale-in fences the
/// surviving children at their switch points until every parent drained up to its own.
#[tokio::test]
async fn an_ordered_scale_grants_children_only_after_their_parents_drained() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;
    let bad = api
        .send(
            "POST",
            "/coord/v1/streams/bad",
            Some(json!({"initialShardCount": 4, "requestedBy": "t", "reason": "t", "ordering": "SOMETIMES"})),
        )
        .await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert_eq!(bad.body["errorCode"], "INVALID_REQUEST");
    let r = api
        .send(
            "POST",
            "/coord/v1/streams/o",
            Some(json!({"initialShardCount": 4, "requestedBy": "t", "reason": "t", "ordering": "KEY"})),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let mut h = Harness::new(api.clone(), &redis.url(), "o", 2).await;
    h.consuming = false;
    for _ in 0..3 {
        h.round().await;
    }
    h.produce(200).await;

    let (status, body) = h.scale(8).await;
    assert_eq!(status, 202, "{body}");
    let id = body["migrations"][0]["reshardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    h.produce(100).await;
    // Parents hold unconsumed pre-switch records: no member may read a child, however long we wait.
    let past_grace = std::time::Instant::now() + Duration::from_millis(600);
    while std::time::Instant::now() < past_grace {
        h.round().await;
        let owned: BTreeSet<u32> = h.members.iter().flat_map(|m| m.owned()).collect();
        assert_eq!(
            owned,
            (0..4).collect(),
            "children 4..7 wait; survivors keep being read"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let m = h.migration(&id).await;
    assert_eq!(m["ordering"], "KEY", "{m}");
    assert_eq!(m["state"], "ACTIVE", "cannot finish while gated: {m}");
    let gates = m["orderingGates"].as_array().unwrap();
    assert_eq!(gates.len(), 4, "{m}");
    assert_eq!(gates[0]["childShard"], 4);
    assert_eq!(gates[0]["waitingFor"][0]["shardIndex"], 0);
    assert!(
        gates[0]["waitingFor"][0]["lag"].as_i64().unwrap() > 0,
        "what is left in the parent: {m}"
    );
    let (status, body) = h.scale(3).await;
    assert_eq!(status, 409, "a migration is active: {body}");
    let set = |ordering: &'static str| {
        let api = api.clone();
        async move {
            api.send(
                "POST",
                "/coord/v1/streams/o/ordering",
                Some(json!({"ordering": ordering, "requestedBy": "t", "reason": "t"})),
            )
            .await
        }
    };
    let r = set("NONE").await;
    assert_eq!(r.status, 409, "the gates were decided with KEY: {}", r.body);

    // Consumers catch up on the parents: the gates open, the children are read, the migration ends.
    h.consuming = true;
    h.until_state(&id, "DEPRECATED").await;
    h.until_all_acked().await;
    let owned: BTreeSet<u32> = h.members.iter().flat_map(|m| m.owned()).collect();
    assert_eq!(owned, (0..8).collect());
    assert_eq!(h.migration(&id).await["orderingGates"], json!([]));

    // 8 -> 3: every old shard is a parent of every new one; 0, 1 and 2 survive and are read fenced at their
    // switch points, so their own pre-switch records are consumed while moved keys' records wait.
    h.consuming = false;
    h.produce(300).await;
    let (status, body) = h.scale(3).await;
    assert_eq!(status, 202, "{body}");
    let id = body["migrations"][0]["reshardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    h.produce(100).await;
    let mut fenced = BTreeSet::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while fenced != (0..3).collect() {
        h.round().await;
        fenced = h
            .members
            .iter()
            .flat_map(|m| {
                (0..3).filter(|s| {
                    m.owned().contains(s) && m.membership.fences().answered(*s).is_some()
                })
            })
            .collect();
        assert!(
            std::time::Instant::now() < deadline,
            "survivors granted fenced: {fenced:?}"
        );
    }
    let m = h.migration(&id).await;
    let gates = m["orderingGates"].as_array().unwrap();
    assert_eq!(gates.len(), 3, "{m}");
    for (j, gate) in gates.iter().enumerate() {
        assert_eq!(gate["childShard"], j, "{m}");
        let fence = gate["readFence"]
            .as_str()
            .expect("a surviving child is fenced");
        let owner = h
            .members
            .iter()
            .find(|mm| mm.owned().contains(&(j as u32)))
            .unwrap();
        assert_eq!(owner.membership.fences().answered(j as u32), Some(fence));
        let parents = gate["waitingFor"].as_array().unwrap();
        assert_eq!(parents.len(), 7, "every other old shard: {m}");
        assert!(parents.iter().all(|p| p["switchPoint"].is_string()), "{m}");
    }
    let routing_version = h.members[0]
        .membership
        .fences()
        .routing_version()
        .expect("answers carry routingVersion");
    let routing = api
        .send("GET", "/coord/v1/streams/o/groups/o/producer-routing", None)
        .await;
    assert_eq!(routing.body["shardCount"], 3);
    assert_eq!(routing.body["routingVersion"], routing_version);
    // Consumers read up to the fences (and the removed shards wholly): the gates open, the fences lift.
    h.consuming = true;
    h.until_state(&id, "DEPRECATED").await;
    h.until_all_acked().await;
    assert_eq!(h.migration(&id).await["orderingGates"], json!([]));
    for mm in &h.members {
        for s in mm.owned() {
            assert_eq!(mm.membership.fences().answered(s), None, "fence lifted");
        }
    }
    let routing = api
        .send("GET", "/coord/v1/streams/o/groups/o/producer-routing", None)
        .await;
    assert_eq!(routing.body["shardCount"], 3);
    let r = api
        .send(
            "POST",
            "/coord/v1/streams/o/ordering",
            Some(json!({"ordering": "KEY", "requestedBy": "t"})),
        )
        .await;
    assert_eq!(r.status, 400, "reason is required: {}", r.body);
    // With ordering NONE a scale is an ordinary (at-least-once) one: no gates.
    let r = set("NONE").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["ordering"], "NONE");
    let (status, body) = h.scale(6).await;
    assert_eq!(status, 202, "{body}");
    let id = body["migrations"][0]["reshardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(h.migration(&id).await["orderingGates"], json!([]));
    running.shutdown().await.unwrap();
}
