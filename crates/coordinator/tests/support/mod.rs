//! Shared helpers for the coordinator's integration tests: an in-process coordinator over a real
//! redis-server, and a small HTTP client for the coord/v1 API.
#![allow(dead_code)]

use rsc_coordinator::config::{Config, Dur};
use rsc_coordinator::security::config::Secret;
use rsc_coordinator::server::{Running, start};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Test timing: short enough for expiry tests, long enough for a loaded 2-core machine.
pub fn test_config(redis_url: &str) -> Config {
    let mut c = Config::default();
    let k = &mut c.coordinator;
    k.listen = "127.0.0.1:0".into();
    k.redis_url = redis_url.into();
    k.id = "test-coordinator".into();
    k.heartbeat_interval = Dur(Duration::from_millis(200));
    k.member_lease_ttl = Dur(Duration::from_millis(1_500));
    k.rebalance_timeout = Dur(Duration::from_secs(5));
    k.reconciler.tick_interval = Dur(Duration::from_millis(100));
    k.shutdown_grace = Dur(Duration::from_secs(2));
    // Test producers refresh routing at once; a short grace keeps scale-ins quick.
    k.streams.drain_grace = Dur(Duration::from_millis(300));
    // Authentication is on, as in production: the admin has a known password, and verified credentials are
    // cached long enough that a test's steady heartbeats never need Redis or Argon2 for them.
    k.api.admin_password = Some(Secret(ADMIN_PASSWORD.into()));
    k.api.credential_cache_ttl = Dur(Duration::from_secs(60));
    c
}

/// The bootstrap admin's password in `test_config`.
pub const ADMIN_PASSWORD: &str = "test-admin-password";

/// The password of every user made by [`user`].
pub const USER_PASSWORD: &str = "user-password-1";

/// One Argon2id hash of [`USER_PASSWORD`] for every test user (hashing is slow in debug builds).
pub fn user_hash() -> &'static str {
    static HASH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HASH.get_or_init(|| rsc_coordinator::security::password::hash(USER_PASSWORD).unwrap())
}

/// A configured user with [`USER_PASSWORD`], these roles and stream scopes (none: unscoped).
pub fn user(
    name: &str,
    roles: &[&str],
    scopes: &[&str],
) -> rsc_coordinator::security::config::UserConfig {
    rsc_coordinator::security::config::UserConfig {
        username: name.into(),
        password_hash: user_hash().into(),
        roles: roles.iter().map(|r| r.to_string()).collect(),
        stream_prefixes: scopes.iter().map(|s| s.to_string()).collect(),
    }
}

/// A connection to a test's redis-server, for looking at what the coordinator stored.
pub async fn redis_conn(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// The credentials an `Api` sends.
#[derive(Clone, Debug)]
pub enum Auth {
    None,
    Basic(String, String),
    Bearer(String),
    /// A raw `Authorization` header value.
    Header(String),
}

impl Auth {
    pub fn admin() -> Auth {
        Auth::Basic("admin".into(), ADMIN_PASSWORD.into())
    }
}

pub async fn coordinator(config: Config) -> (Running, Api) {
    let running = start(config).await.expect("coordinator starts");
    let api = Api::new(&format!("http://{}", running.addr));
    (running, api)
}

#[derive(Clone)]
pub struct Api {
    pub base: String,
    pub http: reqwest::Client,
    /// Sent with every request; the admin's Basic credentials unless changed with `with_auth`.
    pub auth: Auth,
}

pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub headers: reqwest::header::HeaderMap,
}

impl Api {
    pub fn new(base: &str) -> Self {
        Api {
            base: base.to_owned(),
            http: reqwest::Client::new(),
            auth: Auth::admin(),
        }
    }

    /// The same API, called with other credentials (`Auth::None` for none).
    pub fn with_auth(&self, auth: Auth) -> Api {
        Api {
            auth,
            ..self.clone()
        }
    }

    pub async fn send(&self, method: &str, path: &str, body: Option<Value>) -> Reply {
        self.raw(method, path, body.map(|b| b.to_string())).await
    }

    pub async fn raw(&self, method: &str, path: &str, body: Option<String>) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = self.http.request(method, format!("{}{}", self.base, path));
        req = match &self.auth {
            Auth::None => req,
            Auth::Basic(u, p) => req.basic_auth(u, Some(p)),
            Auth::Bearer(t) => req.bearer_auth(t),
            Auth::Header(h) => req.header("authorization", h),
        };
        if let Some(b) = body {
            req = req.header("content-type", "application/json").body(b);
        }
        let resp = req.send().await.expect("request reaches the coordinator");
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.unwrap_or_default();
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Reply {
            status,
            body,
            headers,
        }
    }

    pub async fn create_stream(&self, prefix: &str, shards: u32) -> Reply {
        self.send(
            "POST",
            &format!("/coord/v1/streams/{prefix}"),
            Some(json!({"initialShardCount": shards, "requestedBy": "test", "reason": "test"})),
        )
        .await
    }

    pub async fn heartbeat(&self, p: &str, g: &str, m: &Member) -> Value {
        let r = self
            .send(
                "POST",
                &format!(
                    "/coord/v1/streams/{p}/groups/{g}/members/{}/heartbeat",
                    m.id
                ),
                Some(m.request()),
            )
            .await;
        assert_eq!(r.status, 200, "heartbeat must answer 200: {}", r.body);
        r.body
    }
}

/// A test member that follows the protocol like the Spring starter (revoke reports).
#[derive(Debug, Clone)]
pub struct Member {
    pub id: String,
    pub epoch: i64,
    pub metadata_version: i64,
    pub owned: Vec<u32>,
    pub revoking: Vec<(u32, &'static str, i64)>,
    pub seq: u64,
}

impl Member {
    pub fn new(id: &str) -> Self {
        Member {
            id: id.into(),
            epoch: 0,
            metadata_version: 0,
            owned: vec![],
            revoking: vec![],
            seq: 0,
        }
    }

    pub fn request(&self) -> Value {
        json!({
            "protocolVersion": 1,
            "requestId": format!("{}-{}", self.id, self.seq),
            "memberId": self.id,
            "memberName": self.id,
            "memberEpoch": self.epoch,
            "metadataVersion": self.metadata_version,
            "runtimeConsumerCapacity": {"runtimeMaxConcurrency": 2, "availableConcurrency": 2},
            "ownedShards": self.owned.iter().map(|s| json!({"shardIndex": s})).collect::<Vec<_>>(),
            "revokingShards": self.revoking.iter().map(|(s, st, f)| json!({"shard": {"shardIndex": s}, "state": st, "inFlight": f})).collect::<Vec<_>>(),
            "shardProgress": [],
        })
    }

    /// Adopts an OK response: reads exactly `assignedShards`; shards it lost are reported REVOKED next time.
    pub fn adopt(&mut self, resp: &Value) {
        self.seq += 1;
        let status = resp["status"].as_str().unwrap_or("");
        match status {
            "OK" => {
                let assigned = shards(&resp["assignment"]["assignedShards"]);
                let lost: Vec<u32> = self
                    .owned
                    .iter()
                    .copied()
                    .filter(|s| !assigned.contains(s))
                    .collect();
                self.revoking.retain(|(s, _, _)| !assigned.contains(s));
                for s in lost {
                    self.revoking.push((s, "REVOKED", 0));
                }
                self.owned = assigned;
                self.epoch = resp["memberEpoch"].as_i64().unwrap_or(0);
                self.metadata_version = resp["metadataVersion"].as_i64().unwrap_or(0);
            }
            "FENCED_MEMBER_EPOCH" | "UNKNOWN_MEMBER_ID" => {
                self.owned.clear();
                self.revoking.clear();
                self.epoch = 0;
            }
            _ => {}
        }
    }
}

pub fn shards(v: &Value) -> Vec<u32> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s["shardIndex"].as_u64().map(|i| i as u32))
                .collect()
        })
        .unwrap_or_default()
}

/// Polls `check` until it returns Some, or panics after `timeout` with `what`.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Asserts that no shard appears in two members' `owned` sets.
pub fn assert_disjoint(members: &[&Member]) {
    let mut seen = std::collections::BTreeMap::new();
    for m in members {
        for s in &m.owned {
            if let Some(other) = seen.insert(*s, m.id.clone()) {
                panic!("shard {s} assigned to both {other} and {}", m.id);
            }
        }
    }
}
