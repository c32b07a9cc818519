//! Security and governance over a real redis-server: login and tokens, authentication on every route,
//! roles and scoped principals, request ids, audit records, rate limits shared by replicas, revocation.

mod support;

use rsc_coordinator::api::routes::{self, Access};
use rsc_coordinator::config::{Config, Dur};
use rsc_coordinator::security::config::UserConfig;
use rsc_testkit::RedisServer;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::OnceLock;
use std::time::Duration;
use support::*;

/// One Argon2id hash for every test user (hashing is slow in debug builds).
fn user_hash() -> &'static str {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| rsc_coordinator::security::password::hash(USER_PASSWORD).unwrap())
}

const USER_PASSWORD: &str = "user-password-1";

fn user(name: &str, roles: &[&str], scopes: &[&str]) -> UserConfig {
    UserConfig {
        username: name.into(),
        password_hash: user_hash().into(),
        roles: roles.iter().map(|r| r.to_string()).collect(),
        stream_prefixes: scopes.iter().map(|s| s.to_string()).collect(),
    }
}

/// `test_config` plus a READ, a WRITE, a MEMBER user and two scoped principals of team A.
fn config_with_users(redis_url: &str) -> Config {
    let mut c = test_config(redis_url);
    c.coordinator.api.users = vec![
        user("reader", &["READ"], &[]),
        user("writer", &["WRITE"], &[]),
        user("member", &["MEMBER"], &[]),
        user("team-a", &["WRITE", "READ"], &["team-a-*"]),
        user("team-a-member", &["MEMBER"], &["team-a-*"]),
    ];
    c
}

fn basic(name: &str) -> Auth {
    Auth::Basic(name.into(), USER_PASSWORD.into())
}

async fn redis_conn(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

async fn login(api: &Api, username: &str, password: &str) -> Reply {
    api.with_auth(Auth::None)
        .send(
            "POST",
            "/coord/v1/auth/login",
            Some(json!({"username": username, "password": password})),
        )
        .await
}

async fn token_of(api: &Api, username: &str, password: &str) -> String {
    let r = login(api, username, password).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["accessToken"].as_str().unwrap().to_owned()
}

fn heartbeat_path(p: &str, g: &str, m: &str) -> String {
    format!("/coord/v1/streams/{p}/groups/{g}/members/{m}/heartbeat")
}

#[tokio::test]
async fn login_issues_bearer_tokens_and_bad_credentials_get_a_json_401() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(config_with_users(&redis.url())).await;

    let r = login(&api, "admin", ADMIN_PASSWORD).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["tokenType"], "Bearer");
    assert_eq!(r.body["expiresInSeconds"], 604_800);
    assert_eq!(
        r.body["roles"],
        json!(["ADMIN", "MEMBER", "MONITOR", "READ", "WRITE"])
    );
    let token = r.body["accessToken"].as_str().unwrap().to_owned();
    assert!(token.starts_with("rsc_") && token.len() == 47, "{token}");
    let expires_at = r.body["expiresAt"].as_str().unwrap().to_owned();

    let bearer = api.with_auth(Auth::Bearer(token.clone()));
    let health = bearer
        .send("GET", "/coord/v1/monitoring/health", None)
        .await;
    assert_eq!(health.status, 200, "{}", health.body);
    let session = bearer
        .send("GET", "/coord/v1/monitoring/session", None)
        .await;
    assert_eq!(session.body["authenticated"], true);
    assert_eq!(session.body["username"], "admin");
    assert_eq!(session.body["authMethod"], "BEARER");

    // Only the token's SHA-256 is stored in Redis, with the session's expiry.
    let mut conn = redis_conn(&redis.url()).await;
    let digest: String = Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let key = format!("redis-stream:coord:auth:token:{{{digest}}}");
    let ttl: i64 = redis::cmd("PTTL")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(ttl > 604_000_000 && ttl <= 604_800_000, "{ttl}");

    // Exchanging a token (login with Authorization: Bearer) never extends its session.
    let again = bearer.send("POST", "/coord/v1/auth/login", None).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_ne!(again.body["accessToken"], token.as_str());
    assert!(again.body["expiresAt"].as_str().unwrap() <= expires_at.as_str());
    // The contract's login also takes Basic credentials.
    let basic_login = api
        .with_auth(basic("reader"))
        .send("POST", "/coord/v1/auth/login", None)
        .await;
    assert_eq!(basic_login.status, 200);
    assert_eq!(basic_login.body["roles"], json!(["READ"]));

    for (u, p) in [("admin", "wrong-password"), ("nobody", "whatever1")] {
        let r = login(&api, u, p).await;
        assert_eq!(r.status, 401, "{}", r.body);
        assert_eq!(r.body["errorCode"], "UNAUTHORIZED");
        assert!(r.headers.contains_key("www-authenticate"));
    }
    let r = api
        .with_auth(Auth::None)
        .raw("POST", "/coord/v1/auth/login", Some("{not json".into()))
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    running.shutdown().await.unwrap();
}

/// What a caller kind should get on a route: allowed (any status but 401/403), 401 or 403.
#[derive(Debug, PartialEq)]
enum Expect {
    Allowed,
    Unauthorized,
    Forbidden,
}

#[tokio::test]
async fn every_route_rejects_callers_without_the_right_credentials_role_or_scope() {
    let redis = RedisServer::start();
    let mut config = config_with_users(&redis.url());
    // The walk sends a wrong password on every route: keep login throttling out of its way.
    config
        .coordinator
        .api
        .login_throttle
        .max_failures_per_username = 100_000;
    config
        .coordinator
        .api
        .login_throttle
        .max_failures_per_address = 100_000;
    let (running, api) = coordinator(config).await;
    // An expired token: present in Redis (no TTL) but past its session end.
    let expired = format!("rsc_{}", "E".repeat(43));
    let digest: String = Sha256::digest(expired.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut conn = redis_conn(&redis.url()).await;
    let () = redis::cmd("SET")
        .arg(format!("redis-stream:coord:auth:token:{{{digest}}}"))
        .arg(r#"{"user":"admin","expiresMs":1000,"issuedMs":0}"#)
        .query_async(&mut conn)
        .await
        .unwrap();
    let read_token = token_of(&api, "reader", USER_PASSWORD).await;

    // Routes that may be public, and nothing else.
    let public = ["loginCoordinatorApi", "healthz", "readyz", "getIndex"];
    let callers: Vec<(&str, Auth)> = vec![
        ("none", Auth::None),
        ("bad token", Auth::Bearer(format!("rsc_{}", "B".repeat(43)))),
        ("garbage header", Auth::Header("Token abc".into())),
        ("expired token", Auth::Bearer(expired)),
        (
            "wrong password",
            Auth::Basic("writer".into(), "nope-nope".into()),
        ),
        ("READ (token)", Auth::Bearer(read_token)),
        ("WRITE", basic("writer")),
        ("MEMBER", basic("member")),
        ("scoped WRITE of team-a", basic("team-a")),
    ];
    let table = routes::table();
    assert!(table.len() >= 16, "the walk covers the whole table");
    for spec in &table {
        if spec.access == Access::Public {
            assert!(
                public.contains(&spec.operation_id),
                "route {} {} is public: add it to the reviewed list or protect it",
                spec.method,
                spec.path
            );
        }
        // Another team's stream: a scoped principal must be refused wherever a prefix is involved.
        let path = spec
            .path
            .replace("{stream_prefix}", "team-b")
            .replace("{consumer_group}", "g")
            .replace("{member_id}", "m")
            .replace(['{', '}'], "");
        // Revocation names some other token, so the walk does not revoke its own callers' tokens.
        let body = match spec.operation_id {
            "revokeAccessToken" => Some(json!({"token": format!("rsc_{}", "Z".repeat(43))})),
            _ => (spec.method != "GET").then(|| json!({})),
        };
        for (kind, auth) in &callers {
            let expect = match (spec.access, *kind) {
                (Access::Public, _) => Expect::Allowed,
                (
                    _,
                    "none" | "bad token" | "garbage header" | "expired token" | "wrong password",
                ) => Expect::Unauthorized,
                (Access::Authenticated, _) => Expect::Allowed,
                (Access::Read, "READ (token)" | "WRITE") => Expect::Allowed,
                (Access::Write, "WRITE") => Expect::Allowed,
                (Access::Member, "MEMBER") => Expect::Allowed,
                (Access::Read, "scoped WRITE of team-a")
                    if !spec.path.contains("{stream_prefix}") =>
                {
                    Expect::Allowed
                }
                _ => Expect::Forbidden,
            };
            let r = api
                .with_auth(auth.clone())
                .send(spec.method.as_str(), &path, body.clone())
                .await;
            let got = match r.status {
                // Login is public: the guard lets every caller through, and login itself answers 401 to
                // callers without valid credentials.
                401 if spec.operation_id == "loginCoordinatorApi" => Expect::Allowed,
                401 => Expect::Unauthorized,
                403 => Expect::Forbidden,
                _ => Expect::Allowed,
            };
            assert_eq!(
                got, expect,
                "{} {} as {kind}: status {} {}",
                spec.method, path, r.status, r.body
            );
            if r.status == 401 || r.status == 403 {
                assert!(
                    r.body["errorCode"].is_string(),
                    "JSON error body: {}",
                    r.body
                );
            }
            if r.status == 401 {
                assert!(r.headers.contains_key("www-authenticate"));
            }
            assert!(
                r.headers.contains_key("x-request-id"),
                "{} echoes a request id",
                spec.path
            );
        }
    }
    // Probes reveal nothing beyond up/ready.
    let r = api
        .with_auth(Auth::None)
        .send("GET", "/healthz", None)
        .await;
    assert_eq!(r.body, json!({"status": "UP"}));
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn heartbeats_need_member_unless_switched_off_and_scopes_bind_members_and_writers() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(config_with_users(&redis.url())).await;
    let team = api.with_auth(basic("team-a"));
    let r = team.create_stream("team-a-orders", 2).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let r = team.create_stream("team-b-orders", 2).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(
        r.body["message"].as_str().unwrap().contains("team-a-*"),
        "{}",
        r.body
    );
    api.create_stream("team-b-orders", 2).await;
    let m = Member::new("m1");
    for (who, prefix, status) in [
        ("member", "team-a-orders", 200),
        ("team-a-member", "team-a-orders", 200),
        ("team-a-member", "team-b-orders", 403),
        ("reader", "team-a-orders", 403),
        ("writer", "team-a-orders", 403),
    ] {
        let r = api
            .with_auth(basic(who))
            .send(
                "POST",
                &heartbeat_path(prefix, prefix, "m1"),
                Some(m.request()),
            )
            .await;
        assert_eq!(r.status, status, "{who} on {prefix}: {}", r.body);
    }
    let r = api
        .with_auth(Auth::None)
        .send(
            "POST",
            &heartbeat_path("team-a-orders", "team-a-orders", "m1"),
            Some(m.request()),
        )
        .await;
    assert_eq!(r.status, 401);
    running.shutdown().await.unwrap();

    let mut open = test_config(&redis.url());
    open.coordinator.api.authenticate_member_api = false;
    let (running, api) = coordinator(open).await;
    let r = api
        .with_auth(Auth::None)
        .send(
            "POST",
            &heartbeat_path("team-a-orders", "team-a-orders", "m1"),
            Some(m.request()),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_scoped_principal_lists_only_the_groups_of_its_own_streams() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(config_with_users(&redis.url())).await;
    for prefix in ["team-a-orders", "team-a-billing", "team-b-orders"] {
        let r = api.create_stream(prefix, 1).await;
        assert_eq!(r.status, 201, "{}", r.body);
    }
    for (who, expected) in [
        ("team-a", vec!["team-a-billing", "team-a-orders"]),
        (
            "reader",
            vec!["team-a-billing", "team-a-orders", "team-b-orders"],
        ),
    ] {
        let r = api
            .with_auth(basic(who))
            .send("GET", "/coord/v1/monitoring/groups", None)
            .await;
        assert_eq!(r.status, 200, "{who}: {}", r.body);
        let mut listed: Vec<&str> = r.body["groups"]
            .as_array()
            .expect("a list of groups")
            .iter()
            .map(|g| g["streamPrefix"].as_str().expect("streamPrefix"))
            .collect();
        listed.sort_unstable();
        assert_eq!(listed, expected, "{who} sees");
    }
    running.shutdown().await.unwrap();
}

/// Reads the audit stream directly (not through the API) and returns the record with this request id.
async fn audit_in_redis(url: &str, request_id: &str) -> Vec<Value> {
    let mut conn = redis_conn(url).await;
    let entries: Vec<(String, Vec<String>)> = redis::cmd("XRANGE")
        .arg("redis-stream:coord:audit")
        .arg("-")
        .arg("+")
        .query_async(&mut conn)
        .await
        .unwrap();
    entries
        .into_iter()
        .filter_map(|(_, f)| serde_json::from_str::<Value>(&f[1]).ok())
        .filter(|r| r["requestId"] == request_id)
        .collect()
}

#[tokio::test]
async fn every_admin_mutation_yields_exactly_one_audit_record_whatever_its_outcome() {
    let redis = RedisServer::start();
    let mut config = config_with_users(&redis.url());
    config.coordinator.api.rate_limit.group_mutations_per_minute = 5;
    let (running, api) = coordinator(config).await;

    let send = |auth: Auth, method: &'static str, path: String, body: String, id: &'static str| {
        let api = api.clone();
        async move {
            let mut req = api
                .http
                .request(
                    reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
                    format!("{}{}", api.base, path),
                )
                .header("x-request-id", id)
                .header("user-agent", "audit-test/1")
                .body(body);
            req = match auth {
                Auth::Basic(u, p) => req.basic_auth(u, Some(p)),
                _ => req,
            };
            let r = req.send().await.unwrap();
            assert_eq!(r.headers()["x-request-id"], id, "the request id is echoed");
            r.status().as_u16()
        }
    };
    let create = r#"{"initialShardCount":2,"requestedBy":"gitops","reason":"new team stream"}"#;
    let admin = Auth::admin();

    // Success: the record is in Redis by the time the response arrives (no polling).
    let status = send(
        admin.clone(),
        "POST",
        "/coord/v1/streams/audited".into(),
        create.into(),
        "req-ok",
    )
    .await;
    assert_eq!(status, 201);
    let recs = audit_in_redis(&redis.url(), "req-ok").await;
    assert_eq!(recs.len(), 1, "{recs:?}");
    let r = &recs[0];
    let sha: String = Sha256::digest(create.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(r["action"], "CREATE_STREAM");
    assert_eq!(r["outcome"], "SUCCESS");
    assert_eq!(r["status"], 201);
    assert_eq!(r["principal"], "admin");
    assert_eq!(
        r["roles"],
        json!(["ADMIN", "MEMBER", "MONITOR", "READ", "WRITE"])
    );
    assert_eq!(r["method"], "POST");
    assert_eq!(r["route"], "/coord/v1/streams/{stream_prefix}");
    assert_eq!(r["path"], "/coord/v1/streams/audited");
    assert_eq!(r["requestBodySha256"], sha.as_str());
    assert_eq!(r["clientAddress"], "127.0.0.1");
    assert_eq!(r["userAgent"], "audit-test/1");
    assert_eq!(r["streamPrefix"], "audited");
    assert_eq!(r["requestedBy"], "gitops");
    assert_eq!(r["reason"], "new team stream");
    assert_eq!(r["requestSummary"], json!({"initialShardCount": 2}));
    assert_eq!(r["coordinatorId"], "test-coordinator");
    assert!(r["durationMs"].is_u64());

    // Each rejection kind.
    let g = "/coord/v1/streams/audited/groups/audited".to_owned();
    // (caller, method, path, body, request id, status, outcome, errorCode)
    type Case = (
        Auth,
        &'static str,
        String,
        String,
        &'static str,
        u16,
        &'static str,
        &'static str,
    );
    let cases: Vec<Case> = vec![
        (
            admin.clone(),
            "POST",
            "/coord/v1/streams/x1".into(),
            r#"{"initialShardCount":2}"#.into(),
            "req-400",
            400,
            "FAILED",
            "INVALID_REQUEST",
        ),
        (
            Auth::None,
            "POST",
            "/coord/v1/streams/x2".into(),
            create.into(),
            "req-401",
            401,
            "UNAUTHORIZED",
            "UNAUTHORIZED",
        ),
        (
            basic("reader"),
            "DELETE",
            g.clone(),
            r#"{"requestedBy":"r","reason":"r"}"#.into(),
            "req-403",
            403,
            "FORBIDDEN",
            "FORBIDDEN",
        ),
        (
            basic("team-a"),
            "POST",
            "/coord/v1/streams/x3".into(),
            create.into(),
            "req-403s",
            403,
            "FORBIDDEN",
            "FORBIDDEN",
        ),
        (
            admin.clone(),
            "DELETE",
            "/coord/v1/streams/nope/groups/nope".into(),
            r#"{"requestedBy":"r","reason":"r"}"#.into(),
            "req-404",
            404,
            "FAILED",
            "GROUP_NOT_FOUND",
        ),
        (
            admin.clone(),
            "POST",
            "/coord/v1/streams/audited".into(),
            create.into(),
            "req-409",
            409,
            "FAILED",
            "STREAM_PREFIX_ALREADY_EXISTS",
        ),
    ];
    for (auth, method, path, body, id, want, outcome, code) in cases {
        let status = send(auth, method, path.clone(), body.clone(), id).await;
        assert_eq!(status, want, "{id}");
        let recs = audit_in_redis(&redis.url(), id).await;
        assert_eq!(recs.len(), 1, "exactly one record for {id}: {recs:?}");
        assert_eq!(recs[0]["status"], want, "{id}");
        assert_eq!(recs[0]["outcome"], outcome, "{id}");
        assert_eq!(recs[0]["errorCode"], code, "{id}");
        assert_eq!(recs[0]["path"], path.as_str());
    }
    assert_eq!(
        audit_in_redis(&redis.url(), "req-403").await[0]["principal"],
        "reader"
    );
    assert_eq!(
        audit_in_redis(&redis.url(), "req-401").await[0]["principal"],
        Value::Null
    );

    // 429: the group's budget (5/min) is spent by repeated creates of the same stream.
    let mut limited = None;
    for _ in 0..6 {
        let s = send(
            admin.clone(),
            "POST",
            "/coord/v1/streams/audited".into(),
            create.into(),
            "req-429",
        )
        .await;
        if s == 429 {
            limited = Some(s);
            break;
        }
    }
    assert_eq!(limited, Some(429));
    let recs = audit_in_redis(&redis.url(), "req-429").await;
    let last = recs.last().unwrap();
    assert_eq!(last["status"], 429);
    assert_eq!(last["errorCode"], "RATE_LIMIT_EXCEEDED");

    // The audit endpoint filters by group, principal and time range; reads and heartbeats are not audited.
    let read = api
        .with_auth(basic("reader"))
        .send("GET", "/coord/v1/monitoring/audit?principal=reader", None)
        .await;
    assert_eq!(read.status, 200, "{}", read.body);
    let records = read.body["records"].as_array().unwrap();
    assert_eq!(records.len(), 1, "{}", read.body);
    assert_eq!(records[0]["requestId"], "req-403");
    let by_group = api
        .send(
            "GET",
            "/coord/v1/monitoring/audit?streamPrefix=audited&outcome=SUCCESS",
            None,
        )
        .await;
    assert_eq!(by_group.body["records"].as_array().unwrap().len(), 1);
    let future = api
        .send(
            "GET",
            "/coord/v1/monitoring/audit?since=2999-01-01T00:00:00Z",
            None,
        )
        .await;
    assert_eq!(future.body["records"], json!([]));
    let bad = api
        .send("GET", "/coord/v1/monitoring/audit?since=yesterday", None)
        .await;
    assert_eq!(bad.status, 400);
    assert!(bad.body["message"].as_str().unwrap().contains("since"));
    // The scoped principal sees only its own streams' records (none here).
    let scoped = api
        .with_auth(basic("team-a"))
        .send("GET", "/coord/v1/monitoring/audit", None)
        .await;
    assert_eq!(scoped.body["records"], json!([]));

    // 503 while terminating is audited too.
    running.coordinator.begin_termination();
    let status = send(
        admin.clone(),
        "POST",
        "/coord/v1/streams/late".into(),
        create.into(),
        "req-503",
    )
    .await;
    assert_eq!(status, 503);
    let recs = audit_in_redis(&redis.url(), "req-503").await;
    assert_eq!(recs[0]["errorCode"], "COORDINATOR_TERMINATING");
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn request_ids_are_generated_when_absent_and_bad_ones_are_refused() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(test_config(&redis.url())).await;
    let a = api.send("GET", "/coord/v1/monitoring/health", None).await;
    let b = api.send("GET", "/coord/v1/monitoring/health", None).await;
    let id = |r: &Reply| r.headers["x-request-id"].to_str().unwrap().to_owned();
    assert_eq!(id(&a).len(), 36);
    assert_ne!(id(&a), id(&b));
    let r = api
        .http
        .get(format!("{}/coord/v1/monitoring/health", api.base))
        .basic_auth("admin", Some(ADMIN_PASSWORD))
        .header("x-correlation-id", "corr-7")
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["x-request-id"], "corr-7");
    let r = api
        .http
        .get(format!("{}/coord/v1/monitoring/health", api.base))
        .basic_auth("admin", Some(ADMIN_PASSWORD))
        .header("x-request-id", "x".repeat(300))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn two_replicas_share_rate_limits_that_never_touch_heartbeats_or_reads() {
    let redis = RedisServer::start();
    let mut config = config_with_users(&redis.url());
    config.coordinator.api.rate_limit.admin_mutations_per_minute = 3;
    let (r1, api1) = coordinator(config.clone()).await;
    config.coordinator.id = "second".into();
    let (r2, api2) = coordinator(config).await;
    let w1 = api1.with_auth(basic("writer"));
    let w2 = api2.with_auth(basic("writer"));
    assert_eq!(w1.create_stream("rl-a", 2).await.status, 201);
    assert_eq!(w2.create_stream("rl-b", 2).await.status, 201);
    assert_eq!(w1.create_stream("rl-c", 2).await.status, 201);
    let r = w2.create_stream("rl-d", 2).await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert_eq!(r.body["errorCode"], "RATE_LIMIT_EXCEEDED");
    let retry: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    // Another principal has its own budget; reads and heartbeats are never limited.
    assert_eq!(api2.create_stream("rl-e", 2).await.status, 201);
    for _ in 0..10 {
        assert_eq!(
            w1.send("GET", "/coord/v1/monitoring/groups", None)
                .await
                .status,
            200
        );
        let hb = api2
            .with_auth(basic("member"))
            .send(
                "POST",
                &heartbeat_path("rl-a", "rl-a", "m"),
                Some(Member::new("m").request()),
            )
            .await;
        assert_eq!(hb.status, 200, "{}", hb.body);
    }
    r1.shutdown().await.unwrap();
    r2.shutdown().await.unwrap();
}

#[tokio::test]
async fn revoked_tokens_and_removed_users_stop_working_on_every_replica() {
    let redis = RedisServer::start();
    let mut config = config_with_users(&redis.url());
    config.coordinator.api.credential_cache_ttl = Dur(Duration::from_millis(300));
    let (r1, api1) = coordinator(config.clone()).await;
    let mut second = config.clone();
    second
        .coordinator
        .api
        .users
        .retain(|u| u.username != "writer");
    let (r2, api2) = coordinator(second).await;

    let token = token_of(&api1, "admin", ADMIN_PASSWORD).await;
    let on1 = api1.with_auth(Auth::Bearer(token.clone()));
    let on2 = api2.with_auth(Auth::Bearer(token.clone()));
    assert_eq!(
        on2.send("GET", "/coord/v1/monitoring/session", None)
            .await
            .status,
        200
    );
    let r = on1.send("POST", "/coord/v1/auth/revoke", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["revoked"], true);
    assert_eq!(
        on1.send("GET", "/coord/v1/monitoring/session", None)
            .await
            .status,
        401
    );
    wait_for(
        "replica 2 refuses the revoked token",
        Duration::from_secs(5),
        || {
            let on2 = on2.clone();
            async move {
                (on2.send("GET", "/coord/v1/monitoring/session", None)
                    .await
                    .status
                    == 401)
                    .then_some(())
            }
        },
    )
    .await;

    // Revoking by naming a token.
    let other = token_of(&api1, "reader", USER_PASSWORD).await;
    let r = api1
        .send(
            "POST",
            "/coord/v1/auth/revoke",
            Some(json!({"token": other})),
        )
        .await;
    assert_eq!(r.body["revoked"], true);
    let r = api1
        .with_auth(Auth::Bearer(other))
        .send("GET", "/coord/v1/monitoring/session", None)
        .await;
    assert_eq!(r.status, 401);

    // A user removed from a replica's configuration: that replica refuses the user's tokens.
    let writer = token_of(&api1, "writer", USER_PASSWORD).await;
    let r = api2
        .with_auth(Auth::Bearer(writer))
        .send("GET", "/coord/v1/monitoring/groups", None)
        .await;
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .contains("no longer exists")
    );
    r1.shutdown().await.unwrap();
    r2.shutdown().await.unwrap();
}

#[tokio::test]
async fn password_guessing_is_throttled_per_username_and_per_address() {
    let redis = RedisServer::start();
    let mut config = config_with_users(&redis.url());
    config
        .coordinator
        .api
        .login_throttle
        .max_failures_per_username = 3;
    config
        .coordinator
        .api
        .login_throttle
        .max_failures_per_address = 6;
    let (running, api) = coordinator(config).await;
    for _ in 0..3 {
        assert_eq!(login(&api, "writer", "guess-guess").await.status, 401);
    }
    // Blocked now, even with the right password, for logins and for Basic credentials alike.
    let r = login(&api, "writer", USER_PASSWORD).await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert_eq!(r.body["errorCode"], "RATE_LIMIT_EXCEEDED");
    assert!(r.headers.contains_key("retry-after"));
    let r = api
        .with_auth(Auth::Basic("writer".into(), "guess-again".into()))
        .send("GET", "/coord/v1/monitoring/groups", None)
        .await;
    assert_eq!(r.status, 429);
    // Other users still log in until the address's budget (6) is spent too.
    assert_eq!(login(&api, "reader", USER_PASSWORD).await.status, 200);
    for _ in 0..3 {
        assert_eq!(login(&api, "member", "guess-guess").await.status, 401);
    }
    assert_eq!(login(&api, "reader", USER_PASSWORD).await.status, 429);
    running.shutdown().await.unwrap();
}
