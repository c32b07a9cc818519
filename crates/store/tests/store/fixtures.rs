//! Shared test fixtures: Redis servers, a connected store, per-scenario keys and raw inspection.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use redis::FromRedisValue;
use rsc_store::{GroupName, Keyspace, RedisTopology, Store};
use rsc_testkit::{RedisCluster, RedisServer};

/// The key prefix the tests' stores name their keys under.
pub const KEY_PREFIX: &str = "rsc-test";

/// Bound for connecting and for every command in tests.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// A standalone server of the test's own, and a store connected to it.
pub struct Standalone {
    pub server: RedisServer,
    pub store: Store,
}

pub async fn standalone() -> Standalone {
    standalone_with(RedisServer::start()).await
}

pub async fn standalone_with(server: RedisServer) -> Standalone {
    let store = Store::connect(&RedisTopology::Standalone(server.url()), TIMEOUT)
        .await
        .expect("connect to the test server")
        .with_key_prefix(KEY_PREFIX);
    Standalone { server, store }
}

static CLUSTER: OnceLock<RedisCluster> = OnceLock::new();

/// The cluster shared by all tests of this binary, started on first use.
pub fn cluster() -> &'static RedisCluster {
    CLUSTER.get_or_init(RedisCluster::start)
}

/// A store connected to the shared cluster (each test gets its own connection).
pub async fn cluster_store() -> Store {
    Store::connect(&RedisTopology::cluster(cluster().node_urls()), TIMEOUT)
        .await
        .expect("connect to the test cluster")
        .with_key_prefix(KEY_PREFIX)
}

/// Group `name` of stream `t` (what the store's methods take, by deref) and the names of its three keys under
/// [`KEY_PREFIX`], all under the hash tag `{t:<name>}`, for the tests that look at Redis directly.
#[derive(Debug, Clone)]
pub struct TestGroup {
    pub name: GroupName,
    pub metadata: String,
    pub leases: String,
    pub progress: String,
}

impl std::ops::Deref for TestGroup {
    type Target = GroupName;
    fn deref(&self) -> &GroupName {
        &self.name
    }
}

/// Group `name` of stream `t`.
pub fn group(name: &str) -> TestGroup {
    let keys = Keyspace::new(KEY_PREFIX).group("t", name);
    assert_eq!(keys.metadata, format!("rsc-test:{{t:{name}}}:metadata"));
    TestGroup {
        name: GroupName::new("t", name),
        metadata: keys.metadata,
        leases: keys.leases,
        progress: keys.progress,
    }
}

/// Runs a raw command through the store's own connection (works in both topologies).
pub async fn raw<T: FromRedisValue>(store: &Store, cmd: &redis::Cmd) -> T {
    cmd.query_async(&mut store.connection())
        .await
        .unwrap_or_else(|e| panic!("raw command failed: {e}"))
}

/// Everything Redis holds for a group, byte for byte, for "nothing was written" checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub metadata: BTreeMap<Vec<u8>, Vec<u8>>,
    pub leases: Vec<(String, String)>,
    pub progress: BTreeMap<String, String>,
    pub metadata_ttl: i64,
}

pub async fn snapshot(store: &Store, keys: &TestGroup) -> Snapshot {
    Snapshot {
        metadata: raw(store, redis::cmd("HGETALL").arg(&keys.metadata)).await,
        leases: raw(
            store,
            redis::cmd("ZRANGE")
                .arg(&keys.leases)
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES"),
        )
        .await,
        progress: raw(store, redis::cmd("HGETALL").arg(&keys.progress)).await,
        metadata_ttl: raw(store, redis::cmd("TTL").arg(&keys.metadata)).await,
    }
}

/// How many of the group's three keys exist.
pub async fn existing_keys(store: &Store, keys: &TestGroup) -> i64 {
    let mut total = 0;
    for key in [&keys.metadata, &keys.leases, &keys.progress] {
        let n: i64 = raw(store, redis::cmd("EXISTS").arg(key)).await;
        total += n;
    }
    total
}

/// Creates group `keys` at revision 1 with live leases for `members` (60 s) and returns the
/// Redis time of creation.
pub async fn create_group(store: &Store, keys: &TestGroup, members: &[&str]) -> i64 {
    let members: Vec<String> = members.iter().map(|m| m.to_string()).collect();
    match store
        .create(
            keys,
            r#"{"v":1}"#,
            "2026-01-01T00:00:00.000Z",
            &members,
            60_000,
        )
        .await
        .expect("create")
    {
        rsc_store::CreateOutcome::Created { revision, now_ms } => {
            assert_eq!(revision, 1);
            now_ms
        }
        other => panic!("expected Created, got {other:?}"),
    }
}

/// Sets `member`'s lease deadline directly, e.g. into the past to make it lapsed.
pub async fn set_lease(store: &Store, keys: &TestGroup, member: &str, deadline_ms: i64) {
    let _: i64 = raw(
        store,
        redis::cmd("ZADD")
            .arg(&keys.leases)
            .arg(deadline_ms)
            .arg(member),
    )
    .await;
}
