//! Shared helpers for the coordinator's integration tests: an in-process coordinator over a real
//! redis-server, a small HTTP client for the coord/v1 API, and test members driven by the SDK's model of
//! the member protocol (`rsc_member::Membership`).
#![allow(dead_code)]

pub mod streams;

use rsc_coordinator::config::{Config, Dur};
use rsc_coordinator::security::config::Secret;
use rsc_coordinator::server::{Running, start};
use rsc_member::{LocalShard, Membership, Outgoing};
use rsc_protocol::wire::{HeartbeatResponse, RuntimeConsumerCapacity};
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
    k.cluster.replica_lease = Dur(Duration::from_secs(1));
    k.cluster.renew_interval = Dur(Duration::from_millis(200));
    k.cluster.sweep_interval = Dur(Duration::from_secs(1));
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

impl Reply {
    /// Asserts a 400 `INVALID_REQUEST` whose message names `needle`; `what` labels the failure.
    pub fn assert_invalid(&self, what: &str, needle: &str) {
        assert_eq!(self.status, 400, "{what}: {}", self.body);
        assert_eq!(self.body["errorCode"], "INVALID_REQUEST", "{what}");
        assert!(
            self.body["message"].as_str().unwrap().contains(needle),
            "{what}: {}",
            self.body
        );
    }
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
        self.typed(method, path, body, Some("application/json"))
            .await
    }

    /// A request whose body (if any) is sent with this `Content-Type` (None: no such header).
    pub async fn typed(
        &self,
        method: &str,
        path: &str,
        body: Option<String>,
        content_type: Option<&str>,
    ) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = self.http.request(method, format!("{}{}", self.base, path));
        req = match &self.auth {
            Auth::None => req,
            Auth::Basic(u, p) => req.basic_auth(u, Some(p)),
            Auth::Bearer(t) => req.bearer_auth(t),
            Auth::Header(h) => req.header("authorization", h),
        };
        if let Some(b) = body {
            if let Some(t) = content_type {
                req = req.header("content-type", t);
            }
            req = req.body(b);
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
                    m.id()
                ),
                Some(m.request()),
            )
            .await;
        assert_eq!(r.status, 200, "heartbeat must answer 200: {}", r.body);
        r.body
    }
}

/// A test member: the SDK's model of the member protocol ([`Membership`]) whose local work finishes at
/// once (a shard it loses is reported REVOKED in its next request, until an accepted answer confirms
/// it), plus fields to forge a request (a replayed old epoch, a leave, a version from the future).
#[derive(Debug, Clone)]
pub struct Member {
    pub membership: Membership,
    /// Sent instead of the membership's epoch.
    pub forged_epoch: Option<i64>,
    /// Sent instead of the membership's metadata version.
    pub forged_metadata_version: Option<i64>,
}

impl Member {
    pub fn new(id: &str) -> Self {
        Member {
            membership: Membership::new(id, Duration::from_secs(1)).with_member_name(id),
            forged_epoch: None,
            forged_metadata_version: None,
        }
    }

    /// A static member: it sends `groupInstanceId` with every request.
    pub fn with_instance(id: &str, instance: &str) -> Self {
        let mut m = Member::new(id);
        m.membership = m.membership.with_group_instance_id(instance);
        m
    }

    pub fn id(&self) -> &str {
        self.membership.member_id()
    }

    /// The epoch the next request carries.
    pub fn epoch(&self) -> i64 {
        self.forged_epoch.unwrap_or(self.membership.epoch())
    }

    /// The metadata version the next request carries.
    pub fn metadata_version(&self) -> i64 {
        self.forged_metadata_version
            .unwrap_or(self.membership.metadata_version())
    }

    /// The shards this member reads (reported owned).
    pub fn owned(&self) -> Vec<u32> {
        self.membership.owned().iter().copied().collect()
    }

    /// The next request as JSON, without changing the member: sending it twice is a retry.
    pub fn request(&self) -> Value {
        let mut req = self
            .membership
            .clone()
            .request(member_outgoing(), |_| LocalShard::default());
        req.member_epoch = self.epoch();
        req.metadata_version = self.metadata_version();
        serde_json::to_value(req).expect("a request serialises")
    }

    /// Adopts the answer to [`Member::request`] (an error body, which is no heartbeat answer, changes
    /// nothing): on OK it reads exactly `assignedShards`, and a shard it lost is REVOKED at once.
    pub fn adopt(&mut self, resp: &Value) {
        let Ok(resp) = serde_json::from_value::<HeartbeatResponse>(resp.clone()) else {
            return;
        };
        // The membership moves on as if it had sent the request this answers.
        self.membership
            .request(member_outgoing(), |_| LocalShard::default());
        self.membership.on_response(Instant::now(), &resp);
        self.membership.drained_all();
    }
}

/// What a test member's heartbeat carries besides its protocol state.
fn member_outgoing() -> Outgoing<'static> {
    Outgoing {
        capacity: RuntimeConsumerCapacity {
            runtime_max_concurrency: 2,
            available_concurrency: 2,
        },
        request_id_suffix: "",
        acked_at: None,
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

/// Waits until Redis's clock (the one the coordinator's estimate of time follows) is 20 ms past the first
/// sighting of every producer of stream `p` recorded so far, so that a change made next (a scale, a group
/// created) is stamped strictly later than all of them, whatever the estimate's jitter.
pub async fn wait_past_producer_sightings(redis_url: &str, p: &str) {
    let kp = Config::default().coordinator.store.key_prefix;
    let key = rsc_protocol::names::producers_first_seen_key(&kp, p);
    let mut conn = redis_conn(redis_url).await;
    let seen: Vec<i64> = redis::cmd("HVALS")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .unwrap();
    let latest = seen
        .into_iter()
        .max()
        .expect("a producer sighting of the stream");
    wait_for(
        "Redis's clock passes the sightings",
        Duration::from_secs(5),
        || {
            let mut conn = conn.clone();
            async move {
                let (secs, micros): (i64, i64) =
                    redis::cmd("TIME").query_async(&mut conn).await.unwrap();
                (secs * 1000 + micros / 1000 > latest + 20).then_some(())
            }
        },
    )
    .await;
}

/// Asserts that no shard appears in two members' `owned` sets.
pub fn assert_disjoint(members: &[&Member]) {
    let mut seen = std::collections::BTreeMap::new();
    for m in members {
        for s in m.owned() {
            if let Some(other) = seen.insert(s, m.id().to_owned()) {
                panic!("shard {s} assigned to both {other} and {}", m.id());
            }
        }
    }
}

/// A heartbeat of `m` to group `p` of stream `p` that must be answered OK; `m` adopts the answer.
pub async fn beat_ok(api: &Api, p: &str, m: &mut Member) -> Value {
    let r = api.heartbeat(p, p, m).await;
    assert_eq!(r["status"], "OK", "{r}");
    m.adopt(&r);
    r
}

/// The value of the counter `redis_stream_coord_<name>` on `/metrics` (a line without labels).
pub async fn metric_total(api: &Api, name: &str) -> f64 {
    let metrics = api.send("GET", "/metrics", None).await;
    let text = metrics.body.as_str().unwrap_or_default().to_owned();
    let series = format!("redis_stream_coord_{name} ");
    let line = text
        .lines()
        .find(|l| l.starts_with(&series))
        .unwrap_or_else(|| panic!("redis_stream_coord_{name} missing from /metrics"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// `member`'s lease deadline in group `p` of stream `p` (Redis ms), as the lease set holds it.
pub async fn lease_deadline(
    conn: &mut redis::aio::MultiplexedConnection,
    key_prefix: &str,
    p: &str,
    member: &str,
) -> i64 {
    let leases = rsc_protocol::names::group_leases_key(key_prefix, p, p);
    redis::cmd("ZSCORE")
        .arg(&leases)
        .arg(member)
        .query_async(conn)
        .await
        .unwrap()
}

/// An ISO-8601 (RFC 3339) time of a view, in Unix milliseconds.
pub fn iso_to_ms(iso: &str) -> i64 {
    let t = time::OffsetDateTime::parse(iso, &time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|e| panic!("{iso:?} is not an RFC 3339 time: {e}"));
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

/// Redis time in milliseconds.
pub async fn redis_now(conn: &mut redis::aio::MultiplexedConnection) -> i64 {
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(conn).await.unwrap();
    secs * 1_000 + micros / 1_000
}

/// Waits (bounded) until Redis time has reached `at_ms`.
pub async fn until_redis_time(conn: &mut redis::aio::MultiplexedConnection, at_ms: i64) {
    let waiting = Instant::now();
    while redis_now(conn).await < at_ms {
        assert!(
            waiting.elapsed() < Duration::from_secs(5),
            "Redis time did not reach {at_ms}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A monitoring view (`assignments`, `members`, …) of group `p` of stream `p`, which must answer 200.
pub async fn group_view(api: &Api, p: &str, what: &str) -> Value {
    let r = api
        .send(
            "GET",
            &format!("/coord/v1/monitoring/streams/{p}/groups/{p}/{what}"),
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}
