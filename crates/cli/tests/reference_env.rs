//! The real `rsc serve` started only with the reference implementation's environment variables (a Spring
//! Boot deployment's `SPRING_DATA_REDIS_*`, `SERVER_PORT`, `COORDINATOR_STORE_TYPE`): it starts, warns about
//! the variable that means nothing here without showing any secret, and really uses the Redis they name.

use rsc_testkit::{RedisServer, RscBuilder, free_port};
use std::time::Duration;

const REDIS_PASSWORD: &str = "r3dis-Pa55:word@x";
const ADMIN_PASSWORD: &str = "reference-admin-pw";

#[tokio::test]
async fn a_coordinator_configured_the_reference_way_starts_warns_and_uses_that_redis() {
    let redis = RedisServer::start();
    // The Redis needs the password, so only a URL composed with it can reach it.
    let admin = redis::Client::open(redis.url()).unwrap();
    let mut conn = admin.get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg(REDIS_PASSWORD)
        .query_async(&mut conn)
        .await
        .unwrap();

    let port = free_port();
    let mut rsc = RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), "redis://unused")
        .address_by_env()
        .port(port)
        .env("RSC_LOG", "info")
        .env("SERVER_PORT", port.to_string())
        .env("SERVER_ADDRESS", "127.0.0.1")
        .env("SPRING_DATA_REDIS_HOST", "127.0.0.1")
        .env("SPRING_DATA_REDIS_PORT", redis.port().to_string())
        .env("SPRING_DATA_REDIS_PASSWORD", REDIS_PASSWORD)
        .env("COORDINATOR_STORE_TYPE", "redis")
        .env("REDIS_STREAM_COORDINATOR_ADMIN_PASSWORD", ADMIN_PASSWORD)
        .env("SPRING_PROFILES_ACTIVE", "prod")
        .start();

    // Started (start() waited for /healthz), with one warning naming the variable that means nothing here.
    let lines = rsc.next_lines(Duration::from_secs(30), |l| l.contains("listening"));
    let log = lines.join("\n");
    assert!(
        lines.iter().any(|l| l.contains("WARN")
            && l.contains("SPRING_PROFILES_ACTIVE")
            && l.contains("no meaning")),
        "{log}"
    );
    assert!(
        !log.contains(REDIS_PASSWORD) && !log.contains("r3dis-Pa55"),
        "{log}"
    );
    assert!(!log.contains(ADMIN_PASSWORD), "{log}");

    // A stream created through the API lands in that Redis (the admin password came from the reference's
    // placeholder variable).
    let response = reqwest::Client::new()
        .post(format!("{}/coord/v1/streams/orders", rsc.url()))
        .basic_auth("admin", Some(ADMIN_PASSWORD))
        .json(&serde_json::json!({"initialShardCount": 2, "requestedBy": "test", "reason": "reference env"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status().as_u16(),
        201,
        "{}",
        response.text().await.unwrap()
    );
    let _: () = redis::cmd("AUTH")
        .arg(REDIS_PASSWORD)
        .query_async(&mut conn)
        .await
        .unwrap();
    let shards: u32 = redis::cmd("EXISTS")
        .arg("orders:0")
        .arg("orders:1")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        shards, 2,
        "the shard streams are not in the Redis the reference variables named"
    );
}
