//! The Redis password never reaches `rsc serve`'s output (issue #32, finding 10), and it can be given apart
//! from the URL (`RSC_REDIS_PASSWORD`, `coordinator.redis.password-file`) so that it is not on the command
//! line where `ps` shows it. Real `rsc serve` processes against a real redis-server with `requirepass`.

use rsc_testkit::{RedisServer, RscBuilder, free_port};
use std::time::Duration;

const REDIS_PASSWORD: &str = "redis-secret-Xq7";
const ADMIN_PASSWORD: &str = "admin-password-for-redis-test";

fn serve(redis_url: &str) -> RscBuilder {
    RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), redis_url)
        .admin_password(ADMIN_PASSWORD)
        .env("COORDINATOR_REDIS_CONNECT_TIMEOUT", "1s")
}

/// A redis-server that requires `password` (set once it is up: the test kit's readiness check is a PING).
fn redis_with_password(password: &str) -> RedisServer {
    let redis = RedisServer::start();
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_connection().unwrap();
    let () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg(password)
        .query(&mut conn)
        .unwrap();
    redis
}

#[test]
fn a_refused_or_unreachable_redis_password_is_never_printed() {
    let redis = redis_with_password("the-right-one");
    let refused = format!(
        "redis://default:{REDIS_PASSWORD}@127.0.0.1:{}",
        redis.port()
    );
    let down = format!("redis://default:{REDIS_PASSWORD}@127.0.0.1:{}", free_port());
    for url in [refused, down] {
        let mut rsc = serve(&url).spawn();
        let code = rsc.wait_exit(Duration::from_secs(30));
        assert_ne!(code, Some(0), "rsc serve must fail: {}", rsc.log_text());
        assert!(code.is_some(), "rsc serve did not exit: {}", rsc.log_text());
        let log = rsc.log_text();
        assert!(
            !log.contains(REDIS_PASSWORD),
            "the password was printed:\n{log}"
        );
        assert!(log.contains("***"), "the URL is shown redacted:\n{log}");
    }
}

#[test]
fn the_redis_password_can_come_from_the_environment_or_a_file() {
    let redis = redis_with_password(REDIS_PASSWORD);
    let bare = format!("redis://127.0.0.1:{}", redis.port());
    let rsc = serve(&bare)
        .env("RSC_REDIS_PASSWORD", REDIS_PASSWORD)
        .start();
    assert!(!rsc.log_text().contains(REDIS_PASSWORD));
    drop(rsc);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("redis-password");
    std::fs::write(&file, format!("{REDIS_PASSWORD}\n")).unwrap();
    let rsc = serve(&bare)
        .env(
            "COORDINATOR_REDIS_PASSWORD_FILE",
            file.to_str().unwrap().to_owned(),
        )
        .start();
    drop(rsc);
    // A wrong password from the environment fails as the URL's would, without printing it.
    let mut wrong = serve(&bare)
        .env("RSC_REDIS_PASSWORD", "wrong-Zz9-password")
        .spawn();
    assert!(matches!(wrong.wait_exit(Duration::from_secs(30)), Some(c) if c != 0));
    assert!(
        !wrong.log_text().contains("wrong-Zz9-password"),
        "{}",
        wrong.log_text()
    );
}
