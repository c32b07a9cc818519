//! `rsc produce`, `rsc messages` (finding a produced record on its shard and in the merged view, its search
//! bounded over every shard) and `rsc offsets reset` with the real binary, a real `rsc serve` and redis-server, and SDK
//! consumers reading before and after: records produced with `rsc produce` land where the printed shard and
//! id say; a reset is planned per shard and asked for (refused without a terminal or `--yes`), refused while a
//! consumer runs, and once applied the SDK's consumers are handed exactly the records after the new position
//! again (EARLIEST: all of them; DATETIME: those appended at or after the time, not the earlier ones); a
//! `--shift-by -1` plan reads one record again per shard that has one (clamped where none).

use crate::operator_cli;

use operator_cli::{rsc, text};
use rsc_client::{Consumer, ConsumerConfig, CoordinatorClient, Credentials, Delivery};
use rsc_testkit::{RedisServer, RscBuilder};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ADMIN_PASSWORD: &str = "offsets-test-admin-password";
const SHARDS: u32 = 3;

/// How often each `seq` was handed to a handler.
type Handled = Arc<Mutex<BTreeMap<u64, u32>>>;

async fn wait_for(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn consumer(
    coord: &CoordinatorClient,
    redis_url: &str,
    member: &str,
    handled: &Handled,
) -> Consumer {
    let handled = handled.clone();
    let config = ConsumerConfig::new("orders", redis_url)
        .member_id(member)
        .poll_timeout(Duration::from_millis(100))
        .assignment_lease(Duration::from_millis(1800))
        .heartbeat_timeout(Duration::from_millis(500))
        .shutdown_timeout(Duration::from_secs(10));
    Consumer::start(coord.clone(), config, move |d: Delivery| {
        let handled = handled.clone();
        async move {
            let seq: u64 = d
                .field_str("seq")
                .and_then(|s| s.parse().ok())
                .expect("seq");
            *handled.lock().unwrap().entry(seq).or_default() += 1;
            d.ack().await.expect("ack");
        }
    })
    .await
    .expect("consumer starts")
}

/// Waits until no process may read for the group: no live member (a stopped consumer's member stays
/// LEAVING until its lease lapses) and no hold on a departed member's shards.
async fn until_nobody_reads(coord: &CoordinatorClient) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let base = [
            "coord",
            "v1",
            "monitoring",
            "streams",
            "orders",
            "groups",
            "orders",
        ];
        let members = coord
            .get_json(&[&base[..], &["members"]].concat())
            .await
            .unwrap();
        let assignments = coord
            .get_json(&[&base[..], &["assignments"]].concat())
            .await
            .unwrap();
        let live = members["members"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["state"] == "ACTIVE" || m["state"] == "LEAVING");
        if !live && assignments["holds"] == serde_json::json!([]) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the group's members still may read: {members}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Runs a consumer until every seq of `want` was handled `times` times, then stops it (a graceful leave).
async fn consume_until(
    coord: &CoordinatorClient,
    redis_url: &str,
    member: &str,
    handled: &Handled,
    want: std::ops::Range<u64>,
    times: u32,
) {
    let c = consumer(coord, redis_url, member, handled).await;
    let h = handled.clone();
    wait_for(
        &format!("seq {want:?} handled {times} times"),
        Duration::from_secs(30),
        || {
            let h = h.lock().unwrap();
            want.clone()
                .all(|s| h.get(&s).copied().unwrap_or(0) >= times)
        },
    )
    .await;
    c.shutdown().await;
    until_nobody_reads(coord).await;
}

fn produce(url: &str, dir: &Path, redis_url: &str, seq: u64) -> (u32, String) {
    let o = rsc(
        url,
        dir,
        &[
            "produce",
            "orders",
            "--key",
            &format!("customer-{seq}"),
            "--field",
            &format!("seq={seq}"),
            "--redis-url",
            redis_url,
        ],
        None,
    );
    assert!(o.status.success(), "{}", text(&o));
    // produced to orders shard 2 (orders:2) id 1764756000000-0
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let words: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(words[..4], ["produced", "to", "orders", "shard"], "{out}");
    let shard: u32 = words[4].parse().unwrap();
    assert_eq!(words[5], format!("(orders:{shard})"), "{out}");
    (shard, words[7].to_owned())
}

async fn redis_time_ms(conn: &mut redis::aio::MultiplexedConnection) -> i64 {
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(conn).await.unwrap();
    secs * 1000 + micros / 1000
}

/// Per shard: (last-delivered id, pending) of the group, and the stream's last id.
async fn positions(conn: &mut redis::aio::MultiplexedConnection) -> Vec<(String, i64, String)> {
    let mut out = Vec::new();
    for shard in 0..SHARDS {
        let key = format!("orders:{shard}");
        let groups: Vec<std::collections::HashMap<String, redis::Value>> = redis::cmd("XINFO")
            .arg("GROUPS")
            .arg(&key)
            .query_async(conn)
            .await
            .unwrap();
        let g = &groups[0];
        let info: std::collections::HashMap<String, redis::Value> = redis::cmd("XINFO")
            .arg("STREAM")
            .arg(&key)
            .query_async(conn)
            .await
            .unwrap();
        out.push((
            redis::from_redis_value_ref(&g["last-delivered-id"]).unwrap(),
            redis::from_redis_value_ref(&g["pending"]).unwrap(),
            redis::from_redis_value_ref(&info["last-generated-id"]).unwrap(),
        ));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produce_then_reset_to_earliest_and_to_a_datetime_redelivers_exactly_the_records_after_it()
{
    let redis = RedisServer::start();
    let redis_url = redis.url();
    let server = RscBuilder::new(env!("CARGO_BIN_EXE_rsc"), &redis_url)
        .fast_timings(Duration::from_secs(3), Duration::from_secs(10))
        .admin_password(ADMIN_PASSWORD)
        .start();
    let url = server.url();
    let dir = tempfile::tempdir().unwrap();
    let o = rsc(
        &url,
        dir.path(),
        &["login", "--username", "admin", "--password-stdin"],
        Some(&format!("{ADMIN_PASSWORD}\n")),
    );
    assert!(o.status.success(), "{}", text(&o));
    let coord = CoordinatorClient::builder([url.as_str()])
        .credentials(Some(Credentials::new("admin", ADMIN_PASSWORD)))
        .build()
        .unwrap();
    coord
        .create_stream("orders", SHARDS, "offsets-test")
        .await
        .unwrap();
    let mut conn = redis::Client::open(redis_url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();

    // `rsc produce` puts each record where it says.
    for seq in 0..6 {
        let (shard, id) = produce(&url, dir.path(), &redis_url, seq);
        let found: Vec<(String, Vec<(String, String)>)> = redis::cmd("XRANGE")
            .arg(format!("orders:{shard}"))
            .arg(&id)
            .arg(&id)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(found.len(), 1, "seq {seq} at orders:{shard} {id}");
        assert_eq!(found[0].1, vec![("seq".to_owned(), seq.to_string())]);
        // `rsc messages` finds it again: by its field value, and by jumping to its id.
        let shard_arg = shard.to_string();
        let seq_field = format!("seq={seq}");
        let o = rsc(
            &url,
            dir.path(),
            &[
                "messages", "orders", "--shard", &shard_arg, "--field", &seq_field, "-o", "json",
            ],
            None,
        );
        assert!(o.status.success(), "{}", text(&o));
        let page: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(page["records"][0]["recordId"], id.as_str(), "{page}");
        assert_eq!(page["records"].as_array().unwrap().len(), 1, "{page}");
        assert_eq!(page["search"]["stoppedAtBound"], false);
        let o = rsc(
            &url,
            dir.path(),
            &[
                "messages",
                "orders",
                "--shard",
                &shard_arg,
                "--from-id",
                &id,
                "--limit",
                "1",
            ],
            None,
        );
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "{}", text(&o));
        assert!(out.contains(&id) && out.contains(&seq_field), "{out}");
    }
    // The merged view: all six, oldest first, each naming its shard.
    let o = rsc(
        &url,
        dir.path(),
        &[
            "messages",
            "orders",
            "--merged",
            "--direction",
            "forward",
            "-o",
            "json",
        ],
        None,
    );
    assert!(o.status.success(), "{}", text(&o));
    let page: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let seqs: Vec<&str> = page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["fields"]["seq"].as_str().unwrap())
        .collect();
    assert_eq!(seqs, ["0", "1", "2", "3", "4", "5"], "{page}");
    // The merged search: a field value over every shard, all six scanned; with a budget of 2 records it
    // stops at the bound and prints the cursor that continues it on every shard.
    let o = rsc(
        &url,
        dir.path(),
        &[
            "messages",
            "orders",
            "--merged",
            "--direction",
            "forward",
            "--field",
            "seq=4",
            "-o",
            "json",
        ],
        None,
    );
    assert!(o.status.success(), "{}", text(&o));
    let page: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(page["records"].as_array().unwrap().len(), 1, "{page}");
    assert_eq!(page["records"][0]["fields"]["seq"], "4", "{page}");
    assert_eq!(page["search"]["scanned"], 6, "{page}");
    let o = rsc(
        &url,
        dir.path(),
        &[
            "messages",
            "orders",
            "--merged",
            "--direction",
            "forward",
            "--field",
            "seq=1",
            "--scan-limit",
            "2",
        ],
        None,
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        out.contains("scanned 2 records")
            && out.contains("stopped at the scan bound, 1 matched")
            && out.contains("more: continue with --cursor "),
        "{out}"
    );
    let o = rsc(
        &url,
        dir.path(),
        &[
            "messages",
            "orders",
            "--shard",
            "0",
            "--from-time",
            "yesterday",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("fromTime"),
        "{}",
        text(&o)
    );
    let bad = rsc(
        &url,
        dir.path(),
        &["produce", "orders", "--key", "k", "--field", "novalue"],
        None,
    );
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad));

    // A consumer reads all six; while it runs, a reset is refused.
    let handled: Handled = Arc::default();
    let c1 = consumer(&coord, &redis_url, "c1", &handled).await;
    let h = handled.clone();
    wait_for("six records handled", Duration::from_secs(30), || {
        h.lock().unwrap().len() == 6
    })
    .await;
    let refused = reset_orders(
        &url,
        dir.path(),
        &["--to-earliest", "--yes", "--reason", "replay"],
    );
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        text(&refused).contains("GROUP_HAS_ACTIVE_MEMBERS"),
        "{}",
        text(&refused)
    );
    c1.shutdown().await;
    until_nobody_reads(&coord).await;
    let before = positions(&mut conn).await;

    // Without a terminal and without --yes: the plan is printed, nothing changes.
    let unconfirmed = reset_orders(&url, dir.path(), &["--to-earliest", "--reason", "replay"]);
    assert_eq!(unconfirmed.status.code(), Some(1), "{}", text(&unconfirmed));
    let out = String::from_utf8_lossy(&unconfirmed.stdout).into_owned();
    assert!(
        out.contains("PLAN for orders/orders (to EARLIEST)"),
        "{}",
        text(&unconfirmed)
    );
    assert!(out.contains("SHARD") && out.contains("REREAD"), "{out}");
    assert!(
        text(&unconfirmed).contains("not confirmed"),
        "{}",
        text(&unconfirmed)
    );
    let dry = reset_orders(
        &url,
        dir.path(),
        &[
            "--to-earliest",
            "--dry-run",
            "--shards",
            "0",
            "--reason",
            "look",
        ],
    );
    assert!(dry.status.success(), "{}", text(&dry));
    let plan = String::from_utf8_lossy(&dry.stdout).into_owned();
    assert_eq!(
        plan.lines().filter(|l| l.starts_with("0 ")).count(),
        1,
        "{plan}"
    );
    assert!(!plan.lines().any(|l| l.starts_with("1 ")), "{plan}");
    assert_eq!(positions(&mut conn).await, before, "a plan changes nothing");

    // EARLIEST: every record is handed to a consumer again, once.
    let done = reset_orders(
        &url,
        dir.path(),
        &["--to-earliest", "--yes", "--reason", "replay"],
    );
    assert!(done.status.success(), "{}", text(&done));
    assert!(
        String::from_utf8_lossy(&done.stdout).contains("done (request id rsc-"),
        "{}",
        text(&done)
    );
    consume_until(&coord, &redis_url, "c2", &handled, 0..6, 2).await;

    // Two more records after a time T, read once; then DATETIME T: only those two are read again.
    let t = redis_time_ms(&mut conn).await + 5;
    while redis_time_ms(&mut conn).await <= t {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for seq in 6..8 {
        produce(&url, dir.path(), &redis_url, seq);
    }
    consume_until(&coord, &redis_url, "c3", &handled, 6..8, 1).await;
    let iso = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(t) * 1_000_000)
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let done = reset_orders(
        &url,
        dir.path(),
        &["--to-datetime", &iso, "--yes", "--reason", "replay"],
    );
    assert!(done.status.success(), "{}", text(&done));
    consume_until(&coord, &redis_url, "c4", &handled, 6..8, 2).await;
    let counts = handled.lock().unwrap().clone();
    assert_eq!(
        counts,
        (0..8).map(|s| (s, 2)).collect::<BTreeMap<_, _>>(),
        "records before T are not handed over again"
    );
    // …and nothing is left to deliver: each shard's position is at or past its last record (a shard with no
    // record after T stays at T's position), nothing pending.
    let id = |s: &str| {
        let (ms, seq) = s.split_once('-').unwrap();
        (ms.parse::<u64>().unwrap(), seq.parse::<u64>().unwrap())
    };
    for (shard, (delivered, pending, last)) in positions(&mut conn).await.into_iter().enumerate() {
        assert!(
            id(&delivered) >= id(&last) && pending == 0,
            "shard {shard}: delivered up to {delivered}, last {last}, pending {pending}"
        );
    }

    // SHIFT by -1 (a negative number after the flag): every shard with a record at or before its position
    // reads one again; one without goes to 0-0 reading none, clamped. The plan only.
    let shifted = reset_orders(
        &url,
        dir.path(),
        &[
            "--shift-by",
            "-1",
            "--dry-run",
            "--reason",
            "one back",
            "-o",
            "json",
        ],
    );
    assert!(shifted.status.success(), "{}", text(&shifted));
    let answer: serde_json::Value = serde_json::from_slice(&shifted.stdout).unwrap();
    let answer = &answer["answer"];
    assert_eq!(answer["to"], "SHIFT", "{answer}");
    assert_eq!(answer["shift"], -1);
    let rows = answer["shards"].as_array().unwrap();
    for row in rows {
        let one = row["recordsReread"] == 1 && row["clamped"] == false;
        let none = row["recordsReread"] == 0 && row["clamped"] == true;
        assert!(one || none, "{row}");
    }
    assert!(rows.iter().any(|r| r["recordsReread"] == 1), "{answer}");
    let text_plan = reset_orders(
        &url,
        dir.path(),
        &["--shift-by", "-1", "--dry-run", "--reason", "one back"],
    );
    let out = String::from_utf8_lossy(&text_plan.stdout).into_owned();
    assert!(
        out.contains("(to SHIFT -1)") && out.contains("1 re-read"),
        "{}",
        text(&text_plan)
    );
    assert_eq!(positions(&mut conn).await.len(), SHARDS as usize);

    // Every reset is in the audit log with its reason.
    let audit = rsc(
        &url,
        dir.path(),
        &["audit", "--action", "RESET_OFFSETS", "-o", "json"],
        None,
    );
    assert!(audit.status.success(), "{}", text(&audit));
    assert!(
        String::from_utf8_lossy(&audit.stdout).contains("replay"),
        "{}",
        text(&audit)
    );
}

/// `rsc offsets reset orders orders <flags>` against the coordinator at `url`.
fn reset_orders(url: &str, dir: &Path, flags: &[&str]) -> Output {
    let args: Vec<&str> = ["offsets", "reset", "orders", "orders"]
        .into_iter()
        .chain(flags.iter().copied())
        .collect();
    rsc(url, dir, &args, None)
}
