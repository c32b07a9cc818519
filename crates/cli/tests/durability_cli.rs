//! `rsc durability` with the real binary against a real `rsc serve`: a member reports a metadataVersion above
//! what Redis holds (rollback evidence); `rsc health` names the suspected group, `rsc groups` flags it,
//! `rsc durability show` prints the evidence, `rsc durability dismiss` dismisses it without any timestamp
//! from the operator, and `rsc durability recreate` repairs a group as a new lifecycle. And `rsc describe | true`
//! ends quietly (no panic on the closed pipe).

use rsc_client::{CoordinatorClient, Credentials, Method};
use rsc_testkit::{RedisServer, RscBuilder};
use serde_json::{Value, json};
use std::process::{Command, Output};
use std::time::Duration;

const PASSWORD: &str = "durability-cli-admin-password";

fn rsc(url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rsc"))
        .args(args)
        .env("RSC_COORDINATOR", url)
        .env("RSC_USERNAME", "admin")
        .env("RSC_PASSWORD", PASSWORD)
        .env(
            "RSC_CONFIG_DIR",
            std::env::temp_dir().join("rsc-durability-cli"),
        )
        .env_remove("RSC_TOKEN")
        .output()
        .expect("rsc runs")
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The monitoring view of a stream's default group.
async fn group_view(c: &CoordinatorClient, stream: &str) -> Value {
    c.get_json(&[
        "coord",
        "v1",
        "monitoring",
        "streams",
        stream,
        "groups",
        stream,
    ])
    .await
    .unwrap()
}

async fn heartbeat(c: &CoordinatorClient, member: &str, epoch: i64, version: i64) -> Value {
    heartbeat_on(c, "ledger", member, epoch, version).await
}

async fn heartbeat_on(
    c: &CoordinatorClient,
    stream: &str,
    member: &str,
    epoch: i64,
    version: i64,
) -> Value {
    let body = json!({
        "protocolVersion": 1, "requestId": format!("{member}-{epoch}-{version}"), "memberId": member,
        "memberEpoch": epoch, "metadataVersion": version,
        "runtimeConsumerCapacity": {"runtimeMaxConcurrency": 1, "availableConcurrency": 1},
        "ownedShards": [], "revokingShards": [], "shardProgress": [],
    });
    c.send_json(
        Method::POST,
        &[
            "coord",
            "v1",
            "streams",
            stream,
            "groups",
            stream,
            "members",
            member,
            "heartbeat",
        ],
        &[],
        Some(&body),
        None,
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durability_repairs_from_the_cli() {
    let redis = RedisServer::start();
    let server = RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), &redis.url())
        .fast_timings(Duration::from_secs(3), Duration::from_secs(10))
        .admin_password(PASSWORD)
        .start();
    let url = server.url();
    let c = CoordinatorClient::builder([url.as_str()])
        .credentials(Some(Credentials::new("admin", PASSWORD)))
        .build()
        .unwrap();
    c.create_stream("ledger", 2, "durability-cli")
        .await
        .unwrap();
    let joined = heartbeat(&c, "m1", 0, 0).await;
    let epoch = joined["memberEpoch"].as_i64().unwrap();
    let version = joined["metadataVersion"].as_i64().unwrap();
    let ahead = heartbeat(&c, "m1", epoch, version + 7).await;
    assert_eq!(ahead["status"], "SYNC_METADATA", "{ahead}");

    let health = tokio::task::spawn_blocking({
        let url = url.clone();
        move || rsc(&url, &["health"])
    })
    .await
    .unwrap();
    assert!(
        String::from_utf8_lossy(&health.stdout)
            .contains("suspected of a metadata rollback: ledger/ledger"),
        "{}",
        text(&health)
    );
    let url2 = url.clone();
    let groups = tokio::task::spawn_blocking(move || rsc(&url2, &["groups"]))
        .await
        .unwrap();
    let line = String::from_utf8_lossy(&groups.stdout)
        .lines()
        .find(|l| l.starts_with("ledger"))
        .map(str::to_owned)
        .unwrap_or_default();
    assert!(line.trim_end().ends_with("SUSPECTED"), "{}", text(&groups));

    let url2 = url.clone();
    let show = tokio::task::spawn_blocking(move || {
        rsc(&url2, &["durability", "show", "ledger", "ledger"])
    })
    .await
    .unwrap();
    assert!(show.status.success(), "{}", text(&show));
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(shown.contains("SUSPECTED ROLLBACK"), "{}", text(&show));
    assert!(shown.contains("from m1"), "{}", text(&show));

    // Without --yes and no terminal: nothing is sent.
    let url2 = url.clone();
    let unconfirmed = tokio::task::spawn_blocking(move || {
        rsc(
            &url2,
            &[
                "durability",
                "dismiss",
                "ledger",
                "ledger",
                "--reason",
                "a test client",
            ],
        )
    })
    .await
    .unwrap();
    assert_eq!(unconfirmed.status.code(), Some(1), "{}", text(&unconfirmed));
    let url2 = url.clone();
    let dismissed = tokio::task::spawn_blocking(move || {
        rsc(
            &url2,
            &[
                "durability",
                "dismiss",
                "ledger",
                "ledger",
                "--reason",
                "a test client",
                "--yes",
            ],
        )
    })
    .await
    .unwrap();
    assert!(dismissed.status.success(), "{}", text(&dismissed));
    assert!(
        String::from_utf8_lossy(&dismissed.stdout).contains("last dismissal"),
        "{}",
        text(&dismissed)
    );
    let view = group_view(&c, "ledger").await;
    assert!(
        view["metadataDurability"]["rollbackSuspicion"].is_null(),
        "{view}"
    );
    assert_eq!(
        view["metadataDurability"]["lastDismissal"]["reason"],
        "a test client"
    );

    // For an hour after the dismissal, newer evidence from the same principal does not raise it again
    // (issue #32: a dismissed client cannot re-freeze the group), so recreate refuses a healthy group.
    heartbeat(&c, "m1", epoch, version + 20).await;
    let view = group_view(&c, "ledger").await;
    assert!(
        view["metadataDurability"]["rollbackSuspicion"].is_null(),
        "{view}"
    );
    let url2 = url.clone();
    let refused = tokio::task::spawn_blocking(move || {
        rsc(
            &url2,
            &[
                "durability",
                "recreate",
                "ledger",
                "ledger",
                "--reason",
                "not needed",
                "--yes",
            ],
        )
    })
    .await
    .unwrap();
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("not suspected"),
        "{}",
        text(&refused)
    );

    // Recreate repairs a suspected group: another stream's group, raised and not dismissed.
    c.create_stream("journal", 2, "durability-cli")
        .await
        .unwrap();
    let joined = heartbeat_on(&c, "journal", "m1", 0, 0).await;
    let journal_epoch = joined["memberEpoch"].as_i64().unwrap();
    let journal_version = joined["metadataVersion"].as_i64().unwrap();
    let ahead = heartbeat_on(&c, "journal", "m1", journal_epoch, journal_version + 7).await;
    assert_eq!(ahead["status"], "SYNC_METADATA", "{ahead}");
    let url2 = url.clone();
    let recreated = tokio::task::spawn_blocking(move || {
        rsc(
            &url2,
            &[
                "durability",
                "recreate",
                "journal",
                "journal",
                "--reason",
                "repair after a restore",
                "--yes",
            ],
        )
    })
    .await
    .unwrap();
    assert!(recreated.status.success(), "{}", text(&recreated));
    let view = group_view(&c, "journal").await;
    assert!(
        view["metadataDurability"]["rollbackSuspicion"].is_null(),
        "{view}"
    );
    assert_eq!(view["shardCount"], 2, "{view}");

    // A reader that is gone before the verb prints (`| true` exits at once, while describe still makes its
    // HTTP calls) ends the verb quietly: no panic about a broken pipe.
    let bin = env!("CARGO_BIN_EXE_rsc");
    let piped = tokio::task::spawn_blocking(move || {
        Command::new("bash")
            .args(["-c", &format!("'{bin}' describe ledger ledger | true")])
            .env("RSC_COORDINATOR", &url)
            .env("RSC_USERNAME", "admin")
            .env("RSC_PASSWORD", PASSWORD)
            .env_remove("RSC_TOKEN")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let err = String::from_utf8_lossy(&piped.stderr);
    assert!(!err.contains("panicked"), "{err}");
}
