//! The test kit's own tests: servers start, restart on the same port and directory, keep AOF data,
//! die when killed, count commands, and three nodes form a working cluster.

use std::collections::BTreeSet;

use redis::AsyncCommands;
use rsc_testkit::{RedisCluster, RedisServer, command_calls, reset_stats};

async fn connect(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .expect("valid url")
        .get_multiplexed_async_connection()
        .await
        .expect("server is up")
}

#[tokio::test]
async fn servers_get_distinct_ports_and_dirs() {
    let a = RedisServer::start();
    let b = RedisServer::start();
    assert_ne!(a.port(), b.port());
    assert_ne!(a.dir(), b.dir());
    assert_eq!(a.url(), format!("redis://127.0.0.1:{}", a.port()));
    assert!(a.dir().join("redis.log").exists());
    let mut conn = connect(&a.url()).await;
    let pong: String = redis::cmd("PING")
        .query_async(&mut conn)
        .await
        .expect("ping");
    assert_eq!(pong, "PONG");
}

#[tokio::test]
async fn aof_data_survives_stop_and_kill_restarts_on_same_port() {
    let mut server = RedisServer::builder().appendonly(true).start();
    let port = server.port();
    let dir = server.dir().to_path_buf();
    {
        let mut conn = connect(&server.url()).await;
        let () = conn.set("k", "v1").await.expect("set");
    }
    server.stop();
    assert!(!server.is_running());
    server.restart();
    assert_eq!(server.port(), port);
    assert_eq!(server.dir(), dir.as_path());
    {
        let mut conn = connect(&server.url()).await;
        let value: Option<String> = conn.get("k").await.expect("get");
        assert_eq!(value.as_deref(), Some("v1"));
    }
    // A crash after a graceful restart still finds the data (it is in the AOF already).
    server.kill();
    assert!(!server.is_running());
    assert!(
        redis::Client::open(server.url())
            .expect("valid url")
            .get_multiplexed_async_connection()
            .await
            .is_err()
    );
    server.restart();
    let mut conn = connect(&server.url()).await;
    let value: Option<String> = conn.get("k").await.expect("get");
    assert_eq!(value.as_deref(), Some("v1"));
}

#[tokio::test]
async fn without_aof_a_restart_starts_empty() {
    let mut server = RedisServer::start();
    {
        let mut conn = connect(&server.url()).await;
        let () = conn.set("k", "v").await.expect("set");
    }
    server.restart();
    let mut conn = connect(&server.url()).await;
    let value: Option<String> = conn.get("k").await.expect("get");
    assert_eq!(value, None);
}

#[tokio::test]
async fn command_calls_counts_what_ran_since_reset() {
    let server = RedisServer::start();
    let mut conn = connect(&server.url()).await;
    reset_stats(&server.url()).await;
    for i in 0..5 {
        let () = conn.set(format!("k{i}"), i).await.expect("set");
    }
    let _: Option<String> = conn.get("k0").await.expect("get");
    let calls = command_calls(&server.url()).await;
    assert_eq!(calls.get("set"), Some(&5), "{calls:?}");
    assert_eq!(calls.get("get"), Some(&1), "{calls:?}");
    // Nothing from the stats helper's own connection handshake is counted.
    assert_eq!(calls.get("client|setinfo"), None, "{calls:?}");
}

#[tokio::test]
async fn three_masters_form_a_cluster_that_serves_all_slots() {
    let cluster = RedisCluster::start();
    let urls = cluster.node_urls();
    assert_eq!(urls.len(), 3);
    for url in &urls {
        let mut conn = connect(url).await;
        let info: String = redis::cmd("CLUSTER")
            .arg("INFO")
            .query_async(&mut conn)
            .await
            .expect("cluster info");
        assert!(info.contains("cluster_state:ok"), "{info}");
        assert!(info.contains("cluster_slots_assigned:16384"), "{info}");
    }
    let client = redis::cluster::ClusterClient::new(urls).expect("cluster client");
    let mut conn = client
        .get_async_connection()
        .await
        .expect("cluster connection");
    let mut owners = BTreeSet::new();
    for i in 0..20 {
        let key = format!("key-{i}");
        let () = conn.set(&key, i).await.expect("set");
        let back: i64 = conn.get(&key).await.expect("get");
        assert_eq!(back, i);
        owners.insert(cluster.node_index_for_key(&key));
    }
    assert_eq!(owners.len(), 3, "20 keys should spread over all 3 masters");
}
