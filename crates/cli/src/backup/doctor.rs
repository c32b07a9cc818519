//! `rsc doctor`: checks a Redis deployment against the runbook's recommendations and prints one
//! PASS/WARN/FAIL line per check — Redis version, persistence, eviction policy, whether the key prefix is
//! shared with application keys, clock skew between this host, Redis and the coordinator, and whether the
//! connection's ACL user may delete coordinator keys (and whether other users may too). Exit 0 when nothing
//! FAILs, 1 otherwise. Read-only.

use clap::Args;
use rsc_store::Keyspace;
use rsc_store::{AclAnswer, Store};
use serde_json::json;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{Failure, Output, RedisArgs, connect, redact, store_failure};

#[derive(Args, Debug)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub redis: RedisArgs,
    /// A coordinator to compare clocks with (its HTTP `Date` header), e.g. http://127.0.0.1:8080.
    #[arg(long, env = "RSC_COORDINATOR")]
    pub coordinator: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub output: Output,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Level {
    Pass,
    Warn,
    Fail,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Pass => "PASS",
            Level::Warn => "WARN",
            Level::Fail => "FAIL",
        }
    }
}

struct Check {
    name: &'static str,
    level: Level,
    detail: String,
}

fn check(name: &'static str, level: Level, detail: impl Into<String>) -> Check {
    Check {
        name,
        level,
        detail: detail.into(),
    }
}

/// Keys looked at for the shared-prefix check.
const SCAN_LIMIT: usize = 100_000;

pub async fn run(args: DoctorArgs) -> Result<ExitCode, Failure> {
    let url = &args.redis.redis_url;
    let kp = &args.redis.key_prefix;
    let store = connect(url, kp).await?;
    let fail = |what: &str, e: rsc_store::StoreError| store_failure(what, &e, url);
    let mut checks = Vec::new();

    let server = store
        .info("server")
        .await
        .map_err(|e| fail("INFO server", e))?;
    checks.push(version_check(
        server.get("redis_version").map(String::as_str),
    ));

    let persistence = store
        .info("persistence")
        .await
        .map_err(|e| fail("INFO persistence", e))?;
    let save = store.config_value("save").await.ok().flatten();
    checks.push(persistence_check(
        persistence.get("aof_enabled").map(String::as_str),
        save.as_deref(),
    ));

    let memory = store
        .info("memory")
        .await
        .map_err(|e| fail("INFO memory", e))?;
    checks.push(eviction_check(
        memory.get("maxmemory_policy").map(String::as_str),
    ));

    match store.keys_under(kp, SCAN_LIMIT).await {
        Ok(keys) => {
            checks.push(prefix_check(kp, &keys));
            let mut layouts = Vec::new();
            for key in keys.iter().filter(|k| is_group_metadata_key(kp, k)) {
                match store.layout_version(key).await {
                    Ok(layout) => layouts.push(layout.unwrap_or_default()),
                    Err(e) => {
                        layouts.clear();
                        checks.push(check(
                            "store layout",
                            Level::Warn,
                            format!("not checked: {e}"),
                        ));
                        break;
                    }
                }
            }
            if !checks.iter().any(|c| c.name == "store layout") {
                checks.push(layout_check(&layouts));
            }
        }
        Err(e) => checks.push(check(
            "key prefix",
            Level::Warn,
            format!("not checked: {e}"),
        )),
    }

    checks.push(redis_clock_check(&store).await);
    if let Some(c) = &args.coordinator {
        checks.push(coordinator_clock_check(c).await);
    }
    checks.extend(acl_checks(&store, kp).await);

    let worst = checks.iter().map(|c| c.level).max().unwrap_or(Level::Pass);
    match args.output {
        Output::Json => println!(
            "{}",
            json!({
                "redis": redact(url), "keyPrefix": kp, "result": worst.as_str(),
                "checks": checks.iter().map(|c| json!({"check": c.name, "result": c.level.as_str(), "detail": c.detail})).collect::<Vec<_>>(),
            })
        ),
        Output::Text => {
            println!("rsc doctor: {} (key prefix {kp})", redact(url));
            for c in &checks {
                println!("{}  {:<18} {}", c.level.as_str(), c.name, c.detail);
            }
        }
    }
    Ok(if worst == Level::Fail {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn version_check(version: Option<&str>) -> Check {
    let Some(v) = version else {
        return check("redis version", Level::Warn, "INFO did not say");
    };
    let major: u32 = v
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    match major {
        7.. => check("redis version", Level::Pass, v.to_string()),
        6 => check(
            "redis version",
            Level::Warn,
            format!("{v}: 7.0 or later recommended (ACL DRYRUN, stream lag)"),
        ),
        _ => check(
            "redis version",
            Level::Fail,
            format!("{v}: rsc needs Redis 6.2 or later (7 recommended)"),
        ),
    }
}

fn persistence_check(aof: Option<&str>, save: Option<&str>) -> Check {
    let rdb = save.is_some_and(|s| !s.trim().is_empty());
    match (aof == Some("1"), rdb) {
        (true, _) => check("persistence", Level::Pass, "AOF on (appendonly yes)"),
        (false, true) => check(
            "persistence",
            Level::Pass,
            format!(
                "RDB snapshots (save {}); AOF off: writes since the last snapshot are lost on a crash",
                save.unwrap_or("")
            ),
        ),
        (false, false) if save.is_none() => check(
            "persistence",
            Level::Warn,
            "AOF off and CONFIG GET save refused: cannot tell whether RDB snapshots are on",
        ),
        (false, false) => check(
            "persistence",
            Level::Fail,
            "appendonly no and no RDB save points: a restart loses every group (set appendonly yes)",
        ),
    }
}

fn eviction_check(policy: Option<&str>) -> Check {
    match policy {
        None => check("maxmemory-policy", Level::Warn, "INFO did not say"),
        Some(p) if p == "noeviction" || p.starts_with("volatile-") => check(
            "maxmemory-policy",
            Level::Pass,
            format!("{p}: coordinator keys (no TTL) are never evicted"),
        ),
        Some(p) => check(
            "maxmemory-policy",
            Level::Fail,
            format!(
                "{p}: Redis may evict coordinator metadata under memory pressure (use noeviction)"
            ),
        ),
    }
}

/// Whether `key` is a group's metadata hash under `kp`.
fn is_group_metadata_key(kp: &str, key: &str) -> bool {
    const M: &str = "\u{1}";
    fits(&Keyspace::new(kp).group(M, M).metadata, M, key)
}

/// How the groups found are stored (`layoutVersion` of each metadata hash): whole ("1", "2", "3") or split
/// ("4", which versions before it cannot read: the rolling upgrade sets `coordinator.store.layout = 3` until
/// every replica runs this version). A layout this build does not know was written by a newer version: FAIL.
fn layout_check(layouts: &[String]) -> Check {
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for l in layouts {
        *counts.entry(l.as_str()).or_default() += 1;
    }
    let known = ["1", "2", "3", rsc_store::LAYOUT_SPLIT];
    let unknown: Vec<&str> = counts
        .keys()
        .copied()
        .filter(|l| !known.contains(l))
        .collect();
    let listed: Vec<String> = counts
        .iter()
        .map(|(l, n)| format!("{n} in layout {l:?}"))
        .collect();
    let split = counts.get(rsc_store::LAYOUT_SPLIT).copied().unwrap_or(0);
    if !unknown.is_empty() {
        return check(
            "store layout",
            Level::Fail,
            format!(
                "groups in a layoutVersion this version does not read ({}): a newer version wrote them; run that version",
                unknown.join(", ")
            ),
        );
    }
    let detail = if layouts.is_empty() {
        "no group found".to_owned()
    } else if split > 0 {
        format!(
            "{} group(s): {}; layout \"4\" (split) is read by this version and later only",
            layouts.len(),
            listed.join(", ")
        )
    } else {
        format!(
            "{} group(s): {} (whole documents)",
            layouts.len(),
            listed.join(", ")
        )
    };
    check("store layout", Level::Pass, detail)
}

/// Whether `key` has the shape of a key the coordinator writes under `kp` (the one list in rsc-store).
fn is_coordinator_key(kp: &str, key: &str) -> bool {
    rsc_store::coordinator_key_kind(kp, key).is_some()
}

/// Whether `key` is `shape` with every `marker` replaced by some non-empty text.
fn fits(shape: &str, marker: &str, key: &str) -> bool {
    let pieces: Vec<&str> = shape.split(marker).collect();
    let (first, last) = (pieces[0], pieces[pieces.len() - 1]);
    if !key.starts_with(first) || !key.ends_with(last) || key.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &key[first.len()..key.len() - last.len()];
    for piece in &pieces[1..pieces.len() - 1] {
        match rest.get(1..).and_then(|r| r.find(piece)) {
            Some(i) => rest = &rest[1 + i + piece.len()..],
            None => return false,
        }
    }
    !rest.is_empty()
}

fn prefix_check(kp: &str, keys: &[String]) -> Check {
    let foreign: Vec<&String> = keys.iter().filter(|k| !is_coordinator_key(kp, k)).collect();
    if foreign.is_empty() {
        check(
            "key prefix",
            Level::Pass,
            format!("{} key(s) under {kp}:, all the coordinator's", keys.len()),
        )
    } else {
        let shown: Vec<&str> = foreign.iter().take(3).map(|k| k.as_str()).collect();
        check(
            "key prefix",
            Level::Fail,
            format!(
                "{} key(s) under {kp}: are not the coordinator's (e.g. {}): give the coordinator a prefix of its own",
                foreign.len(),
                shown.join(", ")
            ),
        )
    }
}

fn host_now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

async fn redis_clock_check(store: &Store) -> Check {
    let before = host_now_ms();
    let redis = match store.server_time_ms().await {
        Ok(t) => t,
        Err(e) => return check("clock redis", Level::Warn, format!("TIME failed: {e}")),
    };
    let after = host_now_ms();
    let skew = redis - (before + after) / 2;
    let level = match skew.abs() {
        0..=500 => Level::Pass,
        501..=5_000 => Level::Warn,
        _ => Level::Fail,
    };
    check(
        "clock redis",
        level,
        format!(
            "Redis TIME is {skew:+} ms from this host (leases are judged by Redis time; tokens and audit by the coordinator's)"
        ),
    )
}

async fn coordinator_clock_check(base: &str) -> Check {
    let url = format!("{}/healthz", base.trim_end_matches('/'));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build();
    let before = host_now_ms();
    let answer = match client {
        Ok(c) => c.get(&url).send().await,
        Err(e) => {
            return check(
                "clock coordinator",
                Level::Warn,
                format!("no HTTP client: {e}"),
            );
        }
    };
    let after = host_now_ms();
    let response = match answer {
        Ok(r) => r,
        Err(e) => {
            return check(
                "clock coordinator",
                Level::Fail,
                format!(
                    "{} unreachable: {}",
                    redact(base),
                    super::scrub(&e.to_string(), base)
                ),
            );
        }
    };
    let date = response
        .headers()
        .get(reqwest::header::DATE)
        .and_then(|d| d.to_str().ok())
        .and_then(httpdate);
    let Some(date_ms) = date else {
        return check(
            "clock coordinator",
            Level::Warn,
            "the coordinator sent no Date header",
        );
    };
    // Date has whole seconds: the coordinator's clock is within [date, date + 1 s).
    let mid = (before + after) / 2;
    let skew = if mid < date_ms {
        date_ms - mid
    } else if mid >= date_ms + 1000 {
        date_ms + 1000 - mid
    } else {
        0
    };
    let level = if skew.abs() <= 1_000 {
        Level::Pass
    } else if skew.abs() <= 5_000 {
        Level::Warn
    } else {
        Level::Fail
    };
    check(
        "clock coordinator",
        level,
        format!(
            "{} sends a Date {skew:+} ms from this host (1 s resolution)",
            redact(base).trim_end_matches('/')
        ),
    )
}

/// An IMF-fixdate (`Tue, 01 Dec 2026 06:40:00 GMT`) as Unix milliseconds.
fn httpdate(text: &str) -> Option<i64> {
    let format = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    let t = time::PrimitiveDateTime::parse(text, format).ok()?;
    Some((t.assume_utc().unix_timestamp_nanos() / 1_000_000) as i64)
}

async fn acl_checks(store: &Store, kp: &str) -> Vec<Check> {
    let key = Keyspace::new(kp).group_index();
    let mut out = Vec::new();
    let own = match store.acl_may_delete(None, &key).await {
        Ok(AclAnswer::Allowed { user }) => {
            out.push(check(
                "acl",
                Level::Pass,
                format!("user {user:?} may DEL coordinator keys"),
            ));
            Some(user)
        }
        Ok(AclAnswer::Denied { user, reason }) => {
            out.push(check(
                "acl",
                Level::Fail,
                format!("user {user:?} may not DEL coordinator keys ({reason}): the coordinator deletes groups and retires streams"),
            ));
            Some(user)
        }
        Ok(AclAnswer::Unknown { reason }) => {
            out.push(check("acl", Level::Warn, format!("not checked: {reason}")));
            None
        }
        Err(e) => {
            out.push(check("acl", Level::Warn, format!("not checked: {e}")));
            None
        }
    };
    if let Some(own) = own {
        let users = store.acl_users().await.unwrap_or_default();
        let others: Vec<String> = users.into_iter().filter(|u| *u != own).collect();
        let mut may = Vec::new();
        for u in &others {
            if let Ok(AclAnswer::Allowed { .. }) = store.acl_may_delete(Some(u), &key).await {
                may.push(u.clone());
            }
        }
        out.push(if may.is_empty() {
            check(
                "acl other users",
                Level::Pass,
                format!(
                    "none of the {} other ACL user(s) may DEL coordinator keys",
                    others.len()
                ),
            )
        } else {
            check(
                "acl other users",
                Level::Warn,
                format!(
                    "{} may DEL coordinator keys (runbook: application users must not)",
                    may.join(", ")
                ),
            )
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinator_keys_are_recognised() {
        let kp = "redis-stream:coord";
        for k in [
            "redis-stream:coord:{orders:billing}:metadata",
            "redis-stream:coord:{orders:billing}:leases",
            "redis-stream:coord:{orders:billing}:metadata:aggregate",
            "redis-stream:coord:{orders:billing}:metadata:aggregate-staging",
            "redis-stream:coord:{orders}:stream",
            "redis-stream:coord:{orders}:producers:seen",
            "redis-stream:coord:{orders}:producers:quiesced",
            "redis-stream:coord:{orders}:producers:first-seen",
            "redis-stream:coord:group-index",
            "redis-stream:coord:audit",
            "redis-stream:coord:audit:rejected",
            "redis-stream:coord:replicas",
            "redis-stream:coord:changes",
            "redis-stream:coord:auth:token:{ab12}",
            "redis-stream:coord:login-throttle:{login-throttle}:addr:127.0.0.1",
            "redis-stream:coord:ratelimit:{group:orders:*}",
        ] {
            assert!(is_coordinator_key(kp, k), "{k}");
        }
        for k in [
            "redis-stream:coord:session:42",
            "redis-stream:coord:{}:metadata",
            "redis-stream:coord:cache",
            "redis-stream:coord:{orders}:stream:x",
        ] {
            assert!(!is_coordinator_key(kp, k), "{k}");
        }
    }

    #[test]
    fn the_layout_check_counts_groups_by_layout_and_fails_on_an_unknown_one() {
        let layouts = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let split = layout_check(&layouts(&["4", "1", "4"]));
        assert_eq!(split.level, Level::Pass);
        assert!(
            split.detail.contains("2 in layout \"4\"") && split.detail.contains("later only"),
            "{}",
            split.detail
        );
        assert_eq!(layout_check(&layouts(&["3"])).level, Level::Pass);
        assert_eq!(layout_check(&layouts(&["4", "9"])).level, Level::Fail);
        assert!(is_group_metadata_key("kp", "kp:{a:b}:metadata"));
        assert!(!is_group_metadata_key("kp", "kp:{a:b}:metadata:aggregate"));
    }

    #[test]
    fn levels_of_the_config_checks() {
        assert_eq!(persistence_check(Some("0"), Some("")).level, Level::Fail);
        assert_eq!(persistence_check(Some("1"), Some("")).level, Level::Pass);
        assert_eq!(
            persistence_check(Some("0"), Some("3600 1")).level,
            Level::Pass
        );
        assert_eq!(eviction_check(Some("allkeys-lru")).level, Level::Fail);
        assert_eq!(eviction_check(Some("volatile-lru")).level, Level::Pass);
        assert_eq!(eviction_check(Some("noeviction")).level, Level::Pass);
        assert_eq!(version_check(Some("7.2.4")).level, Level::Pass);
        assert_eq!(version_check(Some("5.0.0")).level, Level::Fail);
        assert_eq!(
            httpdate("Tue, 01 Dec 2026 06:40:00 GMT"),
            Some(1_796_107_200_000)
        );
    }
}
