//! Security and governance over a real redis-server: login and tokens, authentication on every route,
//! roles and scoped principals, request ids, audit records, rate limits shared by replicas, revocation.

use crate::support;

use rsc_coordinator::config::{Config, Dur};
use rsc_coordinator::http::api::routes::{self, Access};
use rsc_testkit::RedisServer;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::time::Duration;
use support::*;

/// `test_config` plus a READ, a WRITE, a MEMBER user and two scoped principals of team A.
fn config_with_users(redis_url: &str) -> Config {
    let mut c = test_config(redis_url);
    c.coordinator.api.users = vec![
        user("reader", &["READ"], &[]),
        user("writer", &["WRITE"], &[]),
        user("member", &["MEMBER"], &[]),
        user("team-a", &["WRITE", "READ"], &["team-a-*"]),
        user("team-a-member", &["MEMBER"], &["team-a-*"]),
        user("data-reader", &["DATA_READ"], &[]),
    ];
    c
}

fn basic(name: &str) -> Auth {
    Auth::Basic(name.into(), USER_PASSWORD.into())
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
        json!(["ADMIN", "DATA_READ", "MEMBER", "MONITOR", "READ", "WRITE"])
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

    // A token cannot mint another (a deliberate departure from the coord/v1 contract's token exchange): login
    // needs a username and password.
    let again = bearer.send("POST", "/coord/v1/auth/login", None).await;
    assert_eq!(again.status, 401, "{}", again.body);
    assert_eq!(again.body["errorCode"], "UNAUTHORIZED");
    assert!(
        again.body["message"]
            .as_str()
            .unwrap()
            .contains("username and password"),
        "{}",
        again.body
    );
    assert!(!expires_at.is_empty());
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
        // A JSON sign-in is no Basic request: no challenge a browser would cache credentials for.
        assert!(!r.headers.contains_key("www-authenticate"));
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
    let lt = &mut config.coordinator.api.login_throttle;
    lt.failures_before_delay = 100_000;
    lt.max_failures_per_address = 100_000;
    lt.max_failures_per_username = u32::MAX;
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
    // Reviewed: sign-in, probes, the index, and the API's description (the OpenAPI document and its reference
    // page describe routes, never data).
    let public = [
        "loginCoordinatorApi",
        "healthz",
        "readyz",
        "getIndex",
        "getConsole",
        "getConsoleAsset",
        "getOpenApiJson",
        "getOpenApiYaml",
        "getApiReference",
        "getApiReferenceFile",
    ];
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
        ("DATA_READ", basic("data-reader")),
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
                // Record payloads need DATA_READ (or ADMIN): READ and WRITE are refused (issue #32, finding 13).
                (Access::DataRead, "DATA_READ") => Expect::Allowed,
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
                // The Basic challenge goes only to a request that used Basic (issue #32, finding 1).
                assert_eq!(
                    r.headers.contains_key("www-authenticate"),
                    matches!(auth, Auth::Basic(..)),
                    "{} {} as {kind}: {:?}",
                    spec.method,
                    path,
                    r.headers
                );
            }
            assert!(
                r.headers.contains_key("x-request-id"),
                "{} echoes a request id",
                spec.path
            );
            // The same body as a form would send it, or with no media type: 415 wherever the caller is let
            // through (after authentication, so an anonymous caller still gets its 401 first).
            if let Some(b) = &body {
                for content_type in [
                    Some("text/plain"),
                    Some("application/x-www-form-urlencoded"),
                    Some("multipart/form-data; boundary=x"),
                    None,
                ] {
                    let r = api
                        .with_auth(auth.clone())
                        .typed(
                            spec.method.as_str(),
                            &path,
                            Some(b.to_string()),
                            content_type,
                        )
                        .await;
                    let want = match expect {
                        Expect::Allowed => 415,
                        Expect::Unauthorized => 401,
                        Expect::Forbidden => 403,
                    };
                    assert_eq!(
                        r.status, want,
                        "{} {} as {kind} with Content-Type {content_type:?}: {}",
                        spec.method, path, r.body
                    );
                    if want == 415 {
                        assert_eq!(r.body["errorCode"], "UNSUPPORTED_MEDIA_TYPE", "{}", r.body);
                    }
                }
            }
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

/// Every key's content in a canonical form, except the keys that refused requests may legitimately touch:
/// the audit streams and the sign-in throttle's counters; and the replica registry, whose lease each replica
/// renews on its own (nobody's request); and the deployment's cluster id, which the first reader of `GET /`
/// creates once (SET NX) and never changes.
async fn state_of(url: &str) -> std::collections::BTreeMap<String, String> {
    let mut conn = redis_conn(url).await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query_async(&mut conn)
        .await
        .unwrap();
    let mut out = std::collections::BTreeMap::new();
    for k in keys {
        if k.contains(":audit")
            || k.contains(":login-throttle:")
            || k.ends_with(":replicas")
            || k.ends_with(":cluster-id")
        {
            continue;
        }
        let kind: String = redis::cmd("TYPE")
            .arg(&k)
            .query_async(&mut conn)
            .await
            .unwrap();
        if kind == "hash" {
            let fields: std::collections::BTreeMap<String, String> = redis::cmd("HGETALL")
                .arg(&k)
                .query_async(&mut conn)
                .await
                .unwrap();
            out.insert(format!("{kind} {k}"), format!("{fields:?}"));
            continue;
        }
        let content: redis::Value = match kind.as_str() {
            "zset" => redis::cmd("ZRANGE")
                .arg(&k)
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES")
                .query_async(&mut conn)
                .await
                .unwrap(),
            "stream" => redis::cmd("XINFO")
                .arg("STREAM")
                .arg(&k)
                .arg("FULL")
                .query_async(&mut conn)
                .await
                .unwrap(),
            "string" => redis::cmd("GET")
                .arg(&k)
                .query_async(&mut conn)
                .await
                .unwrap(),
            _ => redis::cmd("DUMP")
                .arg(&k)
                .query_async(&mut conn)
                .await
                .unwrap(),
        };
        out.insert(format!("{kind} {k}"), format!("{content:?}"));
    }
    out
}

/// The methods a caller can send: every standard one, and an unknown token.
const EVERY_METHOD: [&str; 9] = [
    "GET",
    "HEAD",
    "POST",
    "PUT",
    "PATCH",
    "DELETE",
    "OPTIONS",
    "TRACE",
    "FROBNICATE",
];

#[tokio::test]
async fn every_method_on_every_route_is_refused_without_credentials_and_changes_nothing() {
    let redis = RedisServer::start();
    let mut config = config_with_users(&redis.url());
    // The walk sends a wrong password on every route and method: keep login throttling out of its way.
    let lt = &mut config.coordinator.api.login_throttle;
    lt.failures_before_delay = 100_000;
    lt.max_failures_per_address = 100_000;
    lt.max_failures_per_username = u32::MAX;
    let (running, api) = coordinator(config).await;
    // A real group to aim at, so that a request that slipped through would find something to change (no
    // member joins: its lease would lapse during the walk, a change of state that is nobody's request).
    assert_eq!(api.create_stream("team-b", 4).await.status, 201);
    let r = api
        .send(
            "POST",
            "/coord/v1/streams/team-b/groups/g",
            Some(json!({"initialShardCount": 4, "requestedBy": "t", "reason": "t"})),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let read_token = token_of(&api, "reader", USER_PASSWORD).await;
    let before = state_of(&redis.url()).await;

    let table = routes::table();
    let mut paths: Vec<&str> = table.iter().map(|s| s.path).collect();
    paths.sort_unstable();
    paths.dedup();
    let anonymous: Vec<(&str, Auth)> = vec![
        ("none", Auth::None),
        ("bad token", Auth::Bearer(format!("rsc_{}", "B".repeat(43)))),
        ("garbage header", Auth::Header("Token abc".into())),
        (
            "wrong password",
            Auth::Basic("admin".into(), "nope-nope".into()),
        ),
    ];
    let mut sent = 0;
    for path in &paths {
        let concrete = path
            .replace("{stream_prefix}", "team-b")
            .replace("{consumer_group}", "g")
            .replace("{member_id}", "m")
            .replace("{resharding_id}", "reshard-x")
            .replace("{migration_id}", "reshard-x")
            .replace("{shard_index}", "0");
        // A routing read with an observation far above the stored version: raising a suspicion is a change.
        let concrete = if concrete.ends_with("/producer-routing") {
            format!("{concrete}?observedMetadataVersion=1000000")
        } else {
            concrete
        };
        for method in EVERY_METHOD {
            let resolved = if method == "HEAD" { "GET" } else { method };
            let spec = table
                .iter()
                .find(|s| s.path == *path && s.method.as_str() == resolved);
            let body =
                Some(json!({"requestedBy": "mallory", "reason": "probe", "initialShardCount": 2}));
            for (kind, auth) in &anonymous {
                let r = api
                    .with_auth(auth.clone())
                    .send(method, &concrete, body.clone())
                    .await;
                sent += 1;
                let public = spec.is_some_and(|s| s.access == Access::Public);
                assert!(
                    r.status < 500,
                    "{method} {concrete} as {kind}: a 5xx ({}) {}",
                    r.status,
                    r.body
                );
                if public {
                    continue;
                }
                let want: &[u16] = match spec {
                    Some(_) => &[401],
                    None => &[405],
                };
                assert!(
                    want.contains(&r.status),
                    "{method} {concrete} as {kind}: want {want:?}, got {} {}",
                    r.status,
                    r.body
                );
                if method != "HEAD" {
                    assert!(
                        r.body["errorCode"].is_string(),
                        "{method} {concrete}: JSON error body, got {}",
                        r.body
                    );
                }
            }
            // HEAD is the GET it maps to, with GET's access: a READ caller may, a MEMBER caller may not.
            if method == "HEAD"
                && let Some(spec) = spec
                && spec.access == Access::Read
            {
                let reader = api.with_auth(Auth::Bearer(read_token.clone()));
                let plain = concrete.split('?').next().unwrap_or(&concrete);
                let r = reader.send("HEAD", plain, None).await;
                assert!(r.status < 500, "HEAD {plain} as READ: {}", r.status);
                assert_ne!(r.status, 401, "HEAD {plain} as READ");
                let r = api
                    .with_auth(basic("member"))
                    .send("HEAD", plain, None)
                    .await;
                assert_eq!(r.status, 403, "HEAD {plain} as MEMBER");
            }
        }
    }
    assert!(sent >= paths.len() * EVERY_METHOD.len() * anonymous.len());
    // Unknown paths are refused whatever the method, before any handler.
    for method in EVERY_METHOD {
        let r = api
            .with_auth(Auth::None)
            .send(
                method,
                "/coord/v1/streams/team-b/groups/g/nothing-here",
                None,
            )
            .await;
        assert_eq!(r.status, 404, "{method} of an unknown path");
    }
    assert_eq!(
        state_of(&redis.url()).await,
        before,
        "anonymous requests changed nothing in Redis (audit and throttle counters aside)"
    );
    // The group took no suspicion: its admin changes still work.
    let r = api
        .send(
            "POST",
            "/coord/v1/streams/team-b/groups/g/scale",
            Some(json!({"targetShardCount": 4, "requestedBy": "t", "reason": "no-op"})),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
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
        // Each principal its own member id: a member belongs to the principal that joined it.
        let own = Member::new(who);
        let r = api
            .with_auth(basic(who))
            .send(
                "POST",
                &heartbeat_path(prefix, prefix, who),
                Some(own.request()),
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
/// Every record of one audit stream (`audit`, or `audit:rejected` for refused requests), oldest first.
async fn audit_stream(url: &str, stream: &str) -> Vec<Value> {
    let mut conn = redis_conn(url).await;
    let entries: Vec<(String, Vec<String>)> = redis::cmd("XRANGE")
        .arg(format!("redis-stream:coord:{stream}"))
        .arg("-")
        .arg("+")
        .query_async(&mut conn)
        .await
        .unwrap();
    entries
        .into_iter()
        .filter_map(|(_, f)| serde_json::from_str::<Value>(&f[1]).ok())
        .collect()
}

/// The records of one request id in either audit stream.
async fn audit_in_redis(url: &str, request_id: &str) -> Vec<Value> {
    let mut all = audit_stream(url, "audit").await;
    all.extend(audit_stream(url, "audit:rejected").await);
    all.retain(|r| r["requestId"] == request_id);
    all
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
                .header("content-type", "application/json")
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
        json!(["ADMIN", "DATA_READ", "MEMBER", "MONITOR", "READ", "WRITE"])
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
    // The test client reaches the coordinator from 127.0.0.1, a trusted proxy: X-Forwarded-For names the
    // client address.
    config.coordinator.api.trusted_proxies = vec!["127.0.0.1".into()];
    // Verify every request (no cached credentials), so that each one meets the throttle.
    config.coordinator.api.credential_cache_ttl = Dur(Duration::ZERO);
    let lt = &mut config.coordinator.api.login_throttle;
    lt.failures_before_delay = 3;
    lt.max_failures_per_address = 6;
    // Delays longer than the test: a delayed attempt stays refused.
    lt.initial_delay = Dur(Duration::from_secs(3600));
    lt.max_delay = Dur(Duration::from_secs(3600));
    lt.window = Dur(Duration::from_secs(7200));
    let (running, api) = coordinator(config).await;
    let from = |addr: &str, username: &str, password: &str| {
        let api = api.clone();
        let (addr, body) = (
            addr.to_owned(),
            json!({"username": username, "password": password}),
        );
        async move {
            let resp = api
                .http
                .post(format!("{}/coord/v1/auth/login", api.base))
                .header("x-forwarded-for", addr)
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = resp.status().as_u16();
            let retry = resp.headers().get("retry-after").cloned();
            let body: Value = resp.json().await.unwrap_or(Value::Null);
            (status, retry, body)
        }
    };
    let guesser = "192.0.2.66";
    for _ in 0..3 {
        assert_eq!(from(guesser, "writer", "guess-guess").await.0, 401);
    }
    // The guessing address is delayed for that username, even with the right password…
    let (status, retry, body) = from(guesser, "writer", USER_PASSWORD).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["errorCode"], "RATE_LIMIT_EXCEEDED");
    assert!(retry.is_some());
    // …and for Basic credentials alike.
    let r = api
        .http
        .get(format!("{}/coord/v1/monitoring/groups", api.base))
        .header("x-forwarded-for", guesser)
        .basic_auth("writer", Some("guess-again"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 429);
    // Another address is not: the user is not locked out.
    assert_eq!(from("192.0.2.7", "writer", USER_PASSWORD).await.0, 200);
    // The guessing address may still try other usernames until its own budget (6) is spent too.
    assert_eq!(from(guesser, "reader", USER_PASSWORD).await.0, 200);
    for _ in 0..3 {
        assert_eq!(from(guesser, "member", "guess-guess").await.0, 401);
    }
    let (status, _, body) = from(guesser, "reader", USER_PASSWORD).await;
    assert_eq!(status, 429, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("too many failed sign-in attempts from this client address"),
        "{body}"
    );
    assert_eq!(from("192.0.2.7", "reader", USER_PASSWORD).await.0, 200);
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn refused_requests_are_folded_per_address_and_cannot_push_real_records_out() {
    let redis = RedisServer::start();
    let mut config = config_with_users(&redis.url());
    config.coordinator.audit.redis_max_entries = 100;
    config.coordinator.audit.rejection_window = Dur(Duration::from_secs(1));
    let (running, api) = coordinator(config).await;
    let r = api
        .raw(
            "POST",
            "/coord/v1/streams/real",
            Some(r#"{"initialShardCount":1,"requestedBy":"ops","reason":"real change"}"#.into()),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);

    // 1,000 anonymous mutations, fired concurrently like a flood: each refused with 401.
    let anonymous = api.with_auth(Auth::None);
    let mut statuses = Vec::new();
    for chunk in 0..20 {
        let batch = (0..50).map(|i| {
            let a = anonymous.clone();
            async move {
                a.raw(
                    "POST",
                    &format!("/coord/v1/streams/flood-{chunk}-{i}"),
                    Some(r#"{"requestedBy":"mallory","reason":"flood"}"#.into()),
                )
                .await
                .status
            }
        });
        statuses.extend(futures_join_all(batch).await);
    }
    assert!(statuses.iter().all(|s| *s == 401), "{statuses:?}");

    // The real record is still there, and the flood did not add one record per request.
    let real = audit_stream(&redis.url(), "audit").await;
    assert_eq!(real.len(), 1, "{real:?}");
    assert_eq!(real[0]["reason"], "real change");
    // One record for the first refusal, then (once the 1 s window has ended) one summary counting the rest.
    let summary = wait_for(
        "the window's summary record",
        Duration::from_secs(20),
        || {
            let url = redis.url();
            async move {
                let rejected = audit_stream(&url, "audit:rejected").await;
                let total: u64 = rejected
                    .iter()
                    .map(|r| r["repeats"]["count"].as_u64().unwrap_or(0))
                    .sum();
                (total >= 1000 - 1).then_some(rejected)
            }
        },
    )
    .await;
    // The flood spans at most a few 1-second windows: a first record and a summary per window.
    assert!(
        summary.len() <= 2 * 30,
        "bounded: {} records",
        summary.len()
    );
    let counted: u64 = summary
        .iter()
        .map(|r| r["repeats"]["count"].as_u64().unwrap_or(1).max(1))
        .sum::<u64>();
    assert!(counted >= 1000, "every refusal is counted: {counted}");
    assert!(
        summary
            .iter()
            .all(|r| r["status"] == 401 && r["clientAddress"] == "127.0.0.1")
    );
    // The audit endpoint shows both kinds, newest first.
    let read = api
        .send("GET", "/coord/v1/monitoring/audit?limit=1000", None)
        .await;
    assert_eq!(read.status, 200);
    let records = read.body["records"].as_array().unwrap();
    assert!(records.iter().any(|r| r["reason"] == "real change"));
    assert!(records.iter().any(|r| r["outcome"] == "UNAUTHORIZED"));
    running.shutdown().await.unwrap();
}

/// Joins futures without pulling in the futures crate: spawn each, await in order.
async fn futures_join_all<F>(futs: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futs.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

#[tokio::test]
async fn sign_ins_are_audited_without_their_password_and_query_strings_keep_known_parameters() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(config_with_users(&redis.url())).await;
    let ok = login(&api, "reader", USER_PASSWORD).await;
    assert_eq!(ok.status, 200);
    let bad = login(&api, "writer", "not-the-password").await;
    assert_eq!(bad.status, 401);

    let signed_in: Vec<Value> = audit_stream(&redis.url(), "audit:signins")
        .await
        .into_iter()
        .filter(|r| r["action"] == "LOGIN")
        .collect();
    assert_eq!(signed_in.len(), 1, "{signed_in:?}");
    assert_eq!(signed_in[0]["principal"], "reader");
    assert_eq!(signed_in[0]["outcome"], "SUCCESS");
    assert_eq!(
        signed_in[0]["requestBodySha256"],
        Value::Null,
        "no digest of a password"
    );
    let failed: Vec<Value> = audit_stream(&redis.url(), "audit:rejected")
        .await
        .into_iter()
        .filter(|r| r["action"] == "LOGIN")
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["attemptedUsername"], "writer");
    assert_eq!(failed[0]["principal"], Value::Null);
    assert_eq!(failed[0]["status"], 401);
    for r in signed_in.iter().chain(&failed) {
        let text = r.to_string();
        assert!(
            !text.contains(USER_PASSWORD) && !text.contains("not-the-password"),
            "{text}"
        );
    }

    // A secret pasted into a query string never reaches the audit record.
    let r = api
        .with_auth(basic("writer"))
        .send(
            "POST",
            "/coord/v1/streams/q1?password=hunter2&force=true",
            Some(json!({"requestedBy": "ops", "reason": "query test"})),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.headers["x-request-id"].to_str().unwrap().to_owned();
    let recs = audit_in_redis(&redis.url(), &id).await;
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["queryString"], "force=true");
    assert!(!recs[0].to_string().contains("hunter2"));
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn admin_bodies_are_json_objects_of_known_fields() {
    let redis = RedisServer::start();
    let (running, api) = coordinator(config_with_users(&redis.url())).await;
    // An array would be read by position as {initialShardCount, requestedBy, reason}.
    let r = api
        .raw(
            "POST",
            "/coord/v1/streams/arr",
            Some(r#"[1,"mallory","x"]"#.into()),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    let msg = r.body["message"].as_str().unwrap();
    assert!(
        msg.contains("JSON object") && msg.contains("an array"),
        "{msg}"
    );
    assert!(
        msg.contains("requestedBy") && msg.contains("reason"),
        "{msg}"
    );
    // A misspelt field is named, not ignored.
    let r = api
        .send(
            "POST",
            "/coord/v1/streams/typo",
            Some(json!({"shardCount": 4, "requestedBy": "ops", "reason": "typo"})),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    let msg = r.body["message"].as_str().unwrap();
    assert!(
        msg.contains("shardCount") && msg.contains("initialShardCount"),
        "{msg}"
    );
    for body in ["\"text\"", "42", "null", "true"] {
        let r = api
            .raw("POST", "/coord/v1/streams/scalar", Some(body.into()))
            .await;
        assert_eq!(r.status, 400, "{body}: {}", r.body);
    }
    // Nothing was created by any of them.
    let groups = api.send("GET", "/coord/v1/monitoring/groups", None).await;
    assert_eq!(groups.body["groups"], json!([]), "{}", groups.body);
    // Every admin body refuses unknown fields: delete, scale and migration actions too.
    assert_eq!(api.create_stream("known", 2).await.status, 201);
    for (method, path) in [
        ("DELETE", "/coord/v1/streams/known/groups/known"),
        ("POST", "/coord/v1/streams/known/scale"),
        ("POST", "/coord/v1/streams/known/groups/known/scale"),
        (
            "POST",
            "/coord/v1/streams/known/groups/known/migrations/reshard-x/rollback",
        ),
        (
            "POST",
            "/coord/v1/streams/known/groups/known/migrations/reshard-x/force-complete",
        ),
        ("POST", "/coord/v1/streams/known/groups/known/recreate"),
        ("POST", "/coord/v1/streams/known/groups/known/offsets/reset"),
        (
            "POST",
            "/coord/v1/streams/known/groups/known/durability/dismiss",
        ),
    ] {
        let r = api
            .send(
                method,
                path,
                Some(json!({"requestedBy": "ops", "reason": "r", "targetShardCount": 2, "frobnicate": 1})),
            )
            .await;
        assert_eq!(r.status, 400, "{method} {path}: {}", r.body);
        assert!(
            r.body["message"].as_str().unwrap().contains("frobnicate"),
            "{method} {path}: {}",
            r.body
        );
    }
    // Heartbeats keep accepting fields they do not know (newer clients).
    let mut m = Member::new("m1").request();
    m["someFutureField"] = json!({"x": 1});
    let r = api
        .send("POST", &heartbeat_path("known", "known", "m1"), Some(m))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    running.shutdown().await.unwrap();
}
