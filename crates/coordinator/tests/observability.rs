//! Operator visibility against a real redis-server: `/metrics` parsed after real scenarios (join, revoke,
//! expiry, routing), gauges kept current with nobody calling the monitoring API, series of departed members
//! and deleted groups disappearing, the unauthenticated metrics listener, and the monitoring API additions
//! (consumption, offsets, migrations, health components).

use crate::support;

use rsc_testkit::RedisServer;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;
use support::*;

const WAIT: Duration = Duration::from_secs(20);

fn obs_config(url: &str) -> rsc_coordinator::config::Config {
    let mut c = test_config(url);
    c.coordinator.metrics.refresh_interval =
        rsc_coordinator::config::Dur(Duration::from_millis(100));
    c.coordinator.metrics.listen = "127.0.0.1:0".into();
    c.coordinator.stale_member_retention = rsc_coordinator::config::Dur(Duration::from_millis(500));
    // Long enough that a slow scrape on a loaded machine never sees A's lease lapse while it waits on B.
    c.coordinator.member_lease_ttl = rsc_coordinator::config::Dur(Duration::from_secs(3));
    c
}

/// One parsed exposition: `# TYPE` per family and every sample as (name, labels) → value.
struct Exposition {
    types: BTreeMap<String, String>,
    samples: Vec<(String, BTreeMap<String, String>, f64)>,
}

fn parse(text: &str) -> Exposition {
    let mut types = BTreeMap::new();
    let mut samples = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split_whitespace();
            if let (Some(n), Some(t)) = (parts.next(), parts.next()) {
                types.insert(n.to_owned(), t.to_owned());
            }
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (head, value) = line.rsplit_once(' ').expect("sample line has a value");
        let (name, labels) = match head.split_once('{') {
            Some((n, rest)) => {
                let body = rest.trim_end_matches('}');
                let mut labels = BTreeMap::new();
                for pair in body.split("\",").filter(|p| !p.is_empty()) {
                    let (k, v) = pair.split_once("=\"").expect("label k=\"v\"");
                    labels.insert(k.to_owned(), v.trim_end_matches('"').to_owned());
                }
                (n.to_owned(), labels)
            }
            None => (head.to_owned(), BTreeMap::new()),
        };
        samples.push((name, labels, value.parse().expect("numeric sample")));
    }
    Exposition { types, samples }
}

impl Exposition {
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples
            .iter()
            .find(|(n, l, _)| {
                n == name
                    && labels
                        .iter()
                        .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|(_, _, v)| *v)
    }

    fn has_label(&self, key: &str, value: &str) -> bool {
        self.samples
            .iter()
            .any(|(_, l, _)| l.get(key).map(String::as_str) == Some(value))
    }
}

async fn scrape(metrics_base: &str) -> Exposition {
    let resp = reqwest::get(format!("{metrics_base}/metrics"))
        .await
        .expect("metrics listener answers");
    assert_eq!(resp.status().as_u16(), 200);
    let ct = resp.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(ct.starts_with("application/openmetrics-text"), "{ct}");
    parse(&resp.text().await.unwrap())
}

/// Waits until a scrape satisfies `ok`, returning it.
async fn scrape_until(base: &str, what: &str, ok: impl Fn(&Exposition) -> bool) -> Exposition {
    wait_for(what, WAIT, || async {
        let e = scrape(base).await;
        ok(&e).then_some(e)
    })
    .await
}

fn now_iso() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

/// A heartbeat body with one shard-progress row per owned shard.
fn with_progress(m: &Member, pending: i64) -> Value {
    let mut body = m.request();
    body["shardProgress"] = json!(m.owned().iter().map(|s| json!({
        "shard": {"shardIndex": s}, "streamKey": format!("obs:{s}"),
        "lastDeliveredId": "1-0", "lastAckedId": "1-0", "pendingCount": pending, "updatedAt": now_iso()
    })).collect::<Vec<_>>());
    body
}

async fn beat(api: &Api, m: &mut Member, pending: i64) -> Value {
    let r = api
        .send(
            "POST",
            &format!(
                "/coord/v1/streams/obs/groups/obs/members/{}/heartbeat",
                m.id()
            ),
            Some(with_progress(m, pending)),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    m.adopt(&r.body);
    r.body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_after_real_scenarios_have_the_runbook_names_types_and_labels() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(obs_config(&redis.url())).await;
    let metrics = format!("http://{}", running.metrics_addr.expect("metrics listener"));
    assert_eq!(api.create_stream("obs", 4).await.status, 201);

    // A joins and converges on all four shards, reporting progress with pending entries.
    let mut a = Member::new("a");
    for _ in 0..4 {
        beat(&api, &mut a, 7).await;
    }
    assert_eq!(a.owned(), vec![0, 1, 2, 3]);
    // A keeps heartbeating while we wait, so its lease stays current however slowly this machine scrapes;
    // the lease gauge must be positive and at most the TTL (3 s), the heartbeat age under the TTL.
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        beat(&api, &mut a, 7).await;
        let e = scrape(&metrics).await;
        let pending_seen = e.value(
            "redis_stream_coord_consumer_shard_pending",
            &[
                ("stream", "obs"),
                ("group", "obs"),
                ("member", "a"),
                ("shard", "2"),
            ],
        ) == Some(7.0);
        let progress_age = e.value(
            "redis_stream_coord_consumer_shard_progress_age_seconds",
            &[("member", "a"), ("shard", "0")],
        );
        let lease = e.value(
            "redis_stream_coord_member_lease_remaining_seconds",
            &[("member", "a")],
        );
        let heartbeat_age = e.value(
            "redis_stream_coord_member_heartbeat_age_seconds",
            &[("member", "a")],
        );
        if pending_seen
            && progress_age.is_some_and(|v| v < 60.0)
            && lease.is_some_and(|v| v > 0.0 && v <= 3.0)
            && heartbeat_age.is_some_and(|v| v < 3.0)
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "A's gauges never matched: pending(shard 2)={pending_seen} progress_age={progress_age:?} \
             lease_remaining={lease:?} heartbeat_age={heartbeat_age:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // B joins: shards are revoked from A, and revoke_pending rises before A releases them.
    let mut b = Member::new("b");
    beat(&api, &mut b, 0).await;
    scrape_until(&metrics, "revoke_pending > 0 after B joined", |e| {
        e.value(
            "redis_stream_coord_revoke_pending",
            &[("stream", "obs"), ("group", "obs")],
        )
        .is_some_and(|v| v >= 1.0)
    })
    .await;
    // A releases; B takes over. revoke_pending falls back to zero.
    for _ in 0..3 {
        beat(&api, &mut a, 0).await;
        beat(&api, &mut b, 0).await;
    }
    assert_disjoint(&[&a, &b]);
    scrape_until(&metrics, "revoke_pending back to 0", |e| {
        e.value(
            "redis_stream_coord_revoke_pending",
            &[("stream", "obs"), ("group", "obs")],
        ) == Some(0.0)
    })
    .await;
    // Two rebalances started (A's join, B's join) and, once both members hold their targets, ended: the
    // duration histogram has observed them.
    for _ in 0..2 {
        beat(&api, &mut a, 0).await;
        beat(&api, &mut b, 0).await;
    }
    let e = scrape_until(&metrics, "two rebalances counted and timed", |e| {
        e.value("redis_stream_coord_rebalance_total", &[])
            .is_some_and(|v| v >= 2.0)
            && e.value("redis_stream_coord_rebalance_duration_seconds_count", &[])
                .is_some_and(|v| v >= 2.0)
    })
    .await;
    assert!(
        e.value("redis_stream_coord_rebalance_duration_seconds_sum", &[])
            .is_some_and(|v| v >= 0.0)
    );

    // Producer routing: a success and an error (unknown group).
    assert_eq!(
        api.send(
            "GET",
            "/coord/v1/streams/obs/groups/obs/producer-routing",
            None
        )
        .await
        .status,
        200
    );
    assert_eq!(
        api.send(
            "GET",
            "/coord/v1/streams/obs/groups/nope/producer-routing",
            None
        )
        .await
        .status,
        404
    );

    // B stops heartbeating: its lease lapses, it is expired, then pruned — and its series disappear while A,
    // kept alive, keeps its own.
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        beat(&api, &mut a, 0).await;
        let e = scrape(&metrics).await;
        let expired = e
            .value("redis_stream_coord_member_expired_total", &[])
            .is_some_and(|v| v >= 1.0);
        if expired && !e.has_label("member", "b") && e.has_label("member", "a") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "B was not expired and pruned from the series"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Names, types and labels the runbook and dashboards rely on.
    let e = scrape(&metrics).await;
    for (family, kind) in [
        ("redis_stream_coord_member_expired", "counter"),
        ("redis_stream_coord_invariant_violation", "counter"),
        ("redis_stream_coord_state_conflict", "counter"),
        ("redis_stream_coord_producer_routing_request", "counter"),
        ("redis_stream_coord_heartbeat", "counter"),
        ("redis_stream_coord_metadata_version_regression", "counter"),
        ("redis_stream_coord_store_revision_regression", "counter"),
        ("redis_stream_coord_member_heartbeat_age_seconds", "gauge"),
        ("redis_stream_coord_member_lease_remaining_seconds", "gauge"),
        ("redis_stream_coord_revoke_pending", "gauge"),
        ("redis_stream_coord_consumer_shard_pending", "gauge"),
        (
            "redis_stream_coord_consumer_shard_progress_age_seconds",
            "gauge",
        ),
        ("redis_stream_coord_group_epoch", "gauge"),
        ("redis_stream_coord_assignment_epoch", "gauge"),
        ("redis_stream_coord_members", "gauge"),
        ("redis_stream_coord_migration_active", "gauge"),
        ("redis_stream_coord_migration_active_age_seconds", "gauge"),
        ("redis_stream_coord_shard_lag", "gauge"),
        ("redis_stream_coord_shard_pending", "gauge"),
        ("redis_stream_coord_health", "gauge"),
        (
            "redis_stream_coord_api_request_duration_seconds",
            "histogram",
        ),
        (
            "redis_stream_coord_redis_command_duration_seconds",
            "histogram",
        ),
    ] {
        assert_eq!(
            e.types.get(family).map(String::as_str),
            Some(kind),
            "TYPE of {family}"
        );
    }
    assert_eq!(
        e.value(
            "redis_stream_coord_producer_routing_request_total",
            &[("status", "SUCCESS")]
        ),
        Some(1.0)
    );
    assert_eq!(
        e.value(
            "redis_stream_coord_producer_routing_request_total",
            &[("status", "ERROR")]
        ),
        Some(1.0)
    );
    assert!(
        e.value("redis_stream_coord_heartbeat_total", &[("status", "OK")])
            .is_some_and(|v| v >= 10.0)
    );
    assert_eq!(
        e.value("redis_stream_coord_invariant_violation_total", &[]),
        Some(0.0)
    );
    assert_eq!(
        e.value("redis_stream_coord_health", &[("status", "UP")]),
        Some(1.0)
    );
    assert!(
        e.value(
            "redis_stream_coord_group_epoch",
            &[("stream", "obs"), ("group", "obs")]
        )
        .is_some_and(|v| v > 1.0)
    );
    assert_eq!(
        e.value(
            "redis_stream_coord_shard_lag",
            &[("stream", "obs"), ("shard", "3"), ("stream_key", "obs:3")]
        ),
        Some(0.0)
    );
    let routing_template =
        "/coord/v1/streams/{stream_prefix}/groups/{consumer_group}/producer-routing";
    assert_eq!(
        e.value(
            "redis_stream_coord_api_request_total",
            &[
                ("method", "GET"),
                ("route", routing_template),
                ("status", "404")
            ]
        ),
        Some(1.0),
        "requests are labelled by route template, never by raw path"
    );
    assert!(!e.has_label(
        "route",
        "/coord/v1/streams/obs/groups/nope/producer-routing"
    ));
    assert!(
        e.value(
            "redis_stream_coord_redis_command_duration_seconds_count",
            &[("operation", "heartbeat")]
        )
        .is_some_and(|v| v >= 1.0)
    );

    // /metrics on the API port needs READ; the dedicated listener needs nothing.
    assert_eq!(
        api.with_auth(Auth::None)
            .send("GET", "/metrics", None)
            .await
            .status,
        401
    );
    let authed = api.send("GET", "/metrics", None).await;
    assert_eq!(authed.status, 200);
    assert!(
        authed
            .body
            .as_str()
            .unwrap_or("")
            .contains("redis_stream_coord_up")
    );

    // Deleting the group removes its series.
    let del = api
        .send(
            "DELETE",
            "/coord/v1/streams/obs/groups/obs",
            Some(json!({"requestedBy": "test", "reason": "cleanup", "force": true})),
        )
        .await;
    assert_eq!(del.status, 200, "{}", del.body);
    scrape_until(&metrics, "the deleted group's series to disappear", |e| {
        !e.has_label("stream", "obs")
    })
    .await;
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitoring_api_shows_consumption_offsets_migrations_and_health_components() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(obs_config(&redis.url())).await;
    assert_eq!(api.create_stream("obs", 2).await.status, 201);
    let mut a = Member::new("a");
    for _ in 0..3 {
        beat(&api, &mut a, 3).await;
    }
    // Two records on shard 1, one delivered to the group and not acknowledged.
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    for v in ["x", "y"] {
        let _: String = redis::cmd("XADD")
            .arg("obs:1")
            .arg("*")
            .arg("payload")
            .arg(v)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    let _: Value = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg("obs")
        .arg("a")
        .arg("COUNT")
        .arg(1)
        .arg("STREAMS")
        .arg("obs:1")
        .arg(">")
        .query_async(&mut conn)
        .await
        .map(|_: redis::Value| Value::Null)
        .unwrap();

    let base = "/coord/v1/monitoring/streams/obs/groups/obs";
    let consumption = api.send("GET", &format!("{base}/consumption"), None).await;
    assert_eq!(consumption.status, 200);
    let rows = consumption.body["progress"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["memberId"], "a");
    assert_eq!(rows[0]["shard"]["shardIndex"], 0);
    assert_eq!(rows[1]["pendingCount"], 3);
    assert_eq!(rows[1]["memberState"], "ACTIVE");

    let offsets = api.send("GET", &format!("{base}/offsets"), None).await;
    assert_eq!(offsets.status, 200, "{}", offsets.body);
    let shard1 = &offsets.body["shards"][1];
    assert_eq!(shard1["streamKey"], "obs:1");
    assert_eq!(
        shard1["redisSlot"],
        rsc_protocol::slot::redis_slot(b"obs:1")
    );
    assert_eq!(shard1["streamLength"], 2);
    assert_eq!(shard1["pendingCount"], 1);
    assert_eq!(shard1["lag"], 1);
    assert_eq!(shard1["ownerMemberIds"], json!(["a"]));
    assert_eq!(offsets.body["totalStreamLength"], 2);
    assert_eq!(offsets.body["totalLag"], 1);

    let migrations = api.send("GET", &format!("{base}/migrations"), None).await;
    assert_eq!(migrations.status, 200);
    assert_eq!(
        migrations.body,
        json!({"migrations": [], "activeReshardingId": null})
    );

    let group = api.send("GET", base, None).await;
    assert_eq!(group.status, 200);
    assert_eq!(group.body["metadataDurability"]["status"], "OK");
    assert_eq!(group.body["shardCount"], 2);

    let health = api.send("GET", "/coord/v1/monitoring/health", None).await;
    assert_eq!(health.status, 200);
    assert_eq!(health.body["status"], "UP", "{}", health.body);
    for component in ["redis", "reconciler", "metadataDurability"] {
        assert_eq!(
            health.body["components"][component]["status"], "UP",
            "{component}: {}",
            health.body
        );
    }
    for (path, status) in [
        (
            format!("{base}/offsets").replace("/obs/groups/obs", "/obs/groups/missing"),
            404,
        ),
        (
            "/coord/v1/monitoring/streams/ob%7Bs/groups/obs/consumption".to_owned(),
            400,
        ),
    ] {
        let r = api.send("GET", &path, None).await;
        assert_eq!(r.status, status, "{path}: {}", r.body);
        assert!(r.body["errorCode"].is_string(), "{path}: {}", r.body);
    }

    // Shutting down: readiness fails and health stops being UP.
    running.coordinator.begin_termination();
    assert_eq!(
        api.with_auth(Auth::None)
            .send("GET", "/readyz", None)
            .await
            .status,
        503
    );
    let health = api.send("GET", "/coord/v1/monitoring/health", None).await;
    assert_eq!(health.body["status"], "DEGRADED");
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_is_down_and_readiness_fails_when_redis_stops() {
    let mut redis = RedisServer::start();
    let (running, api) = coordinator(obs_config(&redis.url())).await;
    let metrics = format!("http://{}", running.metrics_addr.unwrap());
    scrape_until(&metrics, "health UP", |e| {
        e.value("redis_stream_coord_health", &[("status", "UP")]) == Some(1.0)
    })
    .await;
    let login = api
        .with_auth(Auth::None)
        .send(
            "POST",
            "/coord/v1/auth/login",
            Some(json!({"username": "admin", "password": ADMIN_PASSWORD})),
        )
        .await;
    assert_eq!(login.status, 200, "{}", login.body);
    let token = login.body["accessToken"].as_str().unwrap().to_owned();
    redis.stop();
    // The health report itself (the API route sits behind authentication, which needs Redis for tokens).
    let health = wait_for("health DOWN", WAIT, || async {
        let h = running.coordinator.monitoring().health().await;
        (h["status"] == "DOWN").then_some(h)
    })
    .await;
    assert_eq!(health["components"]["redis"]["status"], "DOWN");
    assert_eq!(
        health["components"]["metadataDurability"]["status"],
        "UNKNOWN"
    );
    assert_eq!(
        api.with_auth(Auth::None)
            .send("GET", "/readyz", None)
            .await
            .status,
        503
    );
    assert_eq!(
        api.with_auth(Auth::None)
            .send("GET", "/healthz", None)
            .await
            .status,
        200
    );
    let e = scrape_until(&metrics, "health DOWN gauge and connection failures", |e| {
        e.value("redis_stream_coord_health", &[("status", "DOWN")]) == Some(1.0)
            && e.value(
                "redis_stream_coord_redis_connection_failures_total",
                &[("operation", "ping")],
            )
            .is_some_and(|v| v >= 1.0)
    })
    .await;
    assert_eq!(e.value("redis_stream_coord_redis_up", &[]), Some(0.0));

    // Through the API, as the runbook asks, an operator never reads a stale UP, and never a 503 either:
    // authentication needs Redis (token revocation, the shared sign-in throttle), so credentials that are not
    // in the 5 s credential cache cannot be checked now; health and metrics answer anyway, naming no group.
    for auth in [
        Auth::admin(),
        Auth::Bearer(token.clone()),
        Auth::Basic("admin".into(), "never-used-before".into()),
    ] {
        let h = api
            .with_auth(auth)
            .send("GET", "/coord/v1/monitoring/health", None)
            .await;
        assert_eq!(h.status, 200, "{}", h.body);
        assert_eq!(h.body["status"], "DOWN", "{}", h.body);
        assert_eq!(
            h.body["components"]["redis"]["status"], "DOWN",
            "{}",
            h.body
        );
    }
    let m = api
        .with_auth(Auth::Basic("admin".into(), "also-never-used".into()))
        .raw("GET", "/metrics", None)
        .await;
    let text = m.body.as_str().unwrap_or_default().to_owned();
    assert_eq!(m.status, 200, "{text}");
    let e = parse(&text);
    assert_eq!(
        e.value("redis_stream_coord_redis_up", &[]),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        e.value("redis_stream_coord_health", &[("status", "DOWN")]),
        Some(1.0),
        "{text}"
    );
    assert!(
        !text.contains("group=\""),
        "no group series for unchecked credentials: {text}"
    );
    // Without any credentials it is still a 401: the route needs them.
    assert_eq!(
        api.with_auth(Auth::None)
            .send("GET", "/coord/v1/monitoring/health", None)
            .await
            .status,
        401
    );
    running.shutdown().await.unwrap();
}

/// Issue #33 point 5: the labelled counters that alerts take `increase()` of have their series, at 0, before
/// their first event, so the first burst after a restart is seen: a group's `member_expired_total` from the
/// first metrics pass after it exists, and `redis_connection_failures_total` for every Redis operation from
/// the start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_used_by_alerts_have_series_at_zero_before_their_first_event() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(obs_config(&redis.url())).await;
    let metrics = format!("http://{}", running.metrics_addr.expect("metrics listener"));
    assert_eq!(api.create_stream("zero", 2).await.status, 201);
    let e = scrape_until(
        &metrics,
        "the new group's member_expired_total series",
        |e| {
            e.value(
                "redis_stream_coord_member_expired_total",
                &[("stream", "zero"), ("group", "zero")],
            )
            .is_some()
        },
    )
    .await;
    assert_eq!(
        e.value(
            "redis_stream_coord_member_expired_total",
            &[("stream", "zero"), ("group", "zero")],
        ),
        Some(0.0),
        "no member of the new group has expired"
    );
    for operation in ["cas", "heartbeat", "load", "ping", "revision", "xinfo"] {
        assert_eq!(
            e.value(
                "redis_stream_coord_redis_connection_failures_total",
                &[("operation", operation)],
            ),
            Some(0.0),
            "redis_connection_failures_total{{operation={operation:?}}} is exposed at 0 before any failure"
        );
    }
}

/// The health gauge of a coordinator that has just started agrees with its health endpoint: its first
/// snapshot waits for the reconciler's first pass. Taken at once, it said DEGRADED ("reconciler stalled")
/// for a whole refresh interval after every start (15 s by default; here the interval is a minute, so only
/// the first snapshot is scraped), while `GET …/monitoring/health` said UP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_just_started_coordinators_health_gauge_is_not_degraded() {
    let redis = RedisServer::start();
    let mut config = obs_config(&redis.url());
    config.coordinator.metrics.refresh_interval =
        rsc_coordinator::config::Dur(Duration::from_secs(60));
    let (running, api) = coordinator(config).await;
    let metrics = format!("http://{}", running.metrics_addr.expect("metrics listener"));
    let health =
        |e: &Exposition, status: &str| e.value("redis_stream_coord_health", &[("status", status)]);
    let first = scrape_until(&metrics, "the first health snapshot", |e| {
        health(e, "UP").is_some()
    })
    .await;
    assert_eq!(
        (health(&first, "UP"), health(&first, "DEGRADED")),
        (Some(1.0), Some(0.0)),
        "the first snapshot after start"
    );
    let endpoint = api
        .send("GET", "/coord/v1/monitoring/health", None)
        .await
        .body;
    assert_eq!(endpoint["status"], "UP", "{endpoint}");
    running.shutdown().await.unwrap();
}
