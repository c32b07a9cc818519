//! The Grafana dashboards under deploy/grafana: every file parses as JSON, every Prometheus expression
//! queries only metrics that a real coordinator's `/metrics` exposes after a small real scenario (a group
//! with a consuming member), every JSON API panel reads a Grafana route of the route table that answers an
//! array, and the provisioning files name the data sources the panels use.

use crate::support;

use rsc_testkit::RedisServer;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;
use support::*;

fn grafana_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/grafana")
}

/// Every dashboard file, parsed.
fn dashboards() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for dir in [grafana_dir(), grafana_dir().join("dashboards")] {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                let text = std::fs::read_to_string(&path).unwrap();
                let v: Value = serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
                out.push((path.display().to_string(), v));
            }
        }
    }
    assert!(
        out.len() >= 5,
        "the four dashboards per concern and the combined one"
    );
    out
}

/// Every value of key `key` anywhere in `v`.
fn strings_of<'a>(v: &'a Value, key: &str, out: &mut Vec<&'a Value>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == key {
                    out.push(x);
                }
                strings_of(x, key, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| strings_of(x, key, out)),
        _ => {}
    }
}

/// The rsc metric names an expression queries.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = expr;
    while let Some(i) = rest.find("redis_stream_coord_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        out.insert(tail[..end].to_owned());
        rest = &tail[end..];
    }
    out
}

/// (sample names, family names from `# TYPE`) of an exposition.
fn exposed(text: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut samples, mut families) = (BTreeSet::new(), BTreeSet::new());
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            families.insert(rest.split_whitespace().next().unwrap_or("").to_owned());
        } else if !line.starts_with('#') && !line.is_empty() {
            let end = line.find(['{', ' ']).unwrap_or(line.len());
            samples.insert(line[..end].to_owned());
        }
    }
    (samples, families)
}

/// Whether `name` is exposed: as a sample, or as a family declared by `# TYPE`.
fn is_exposed(name: &str, samples: &BTreeSet<String>, families: &BTreeSet<String>) -> bool {
    samples.contains(name)
        || ["_total", "_bucket", "_count", "_sum"]
            .iter()
            .filter_map(|s| name.strip_suffix(s))
            .chain([name])
            .any(|base| families.contains(base))
}

/// Counters that have series only once the event happened, which this scenario does not cause.
const ONLY_AFTER_A_FAULT: [&str; 1] = ["redis_stream_coord_redis_connection_failures_total"];

/// One heartbeat of `m` in group dash/dash with a progress row per owned shard.
async fn beat(api: &Api, m: &mut Member) {
    let mut body = m.request();
    body["shardProgress"] = json!(m.owned().iter().map(|s| json!({
        "shard": {"shardIndex": s}, "streamKey": format!("dash:{s}"), "lastDeliveredId": "1-0",
        "lastAckedId": "1-0", "pendingCount": 0,
        "updatedAt": time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339).unwrap()
    })).collect::<Vec<_>>());
    let r = api
        .send(
            "POST",
            &format!(
                "/coord/v1/streams/dash/groups/dash/members/{}/heartbeat",
                m.id()
            ),
            Some(body),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    m.adopt(&r.body);
}

#[test]
fn dashboards_parse_and_provisioning_names_their_data_sources() {
    let provisioning =
        std::fs::read_to_string(grafana_dir().join("provisioning/datasources/rsc.yml")).unwrap();
    for (file, d) in dashboards() {
        assert!(d["title"].is_string() && d["panels"].is_array(), "{file}");
        let mut uids = Vec::new();
        strings_of(&d, "datasource", &mut uids);
        for ds in uids {
            if let Some(uid) = ds.get("uid").and_then(Value::as_str)
                && !uid.starts_with('$')
                && !uid.starts_with("${")
            {
                assert!(
                    provisioning.contains(&format!("uid: {uid}")),
                    "{file}: data source {uid} is not provisioned"
                );
            }
        }
    }
    assert!(
        std::fs::read_to_string(grafana_dir().join("provisioning/dashboards/rsc.yml"))
            .unwrap()
            .contains("type: file")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_and_route_the_dashboards_query_exists_on_a_real_coordinator() {
    let redis = RedisServer::start();
    let mut config = test_config(&redis.url());
    config.coordinator.metrics.refresh_interval =
        rsc_coordinator::config::Dur(Duration::from_millis(100));
    let (running, api) = coordinator(config).await;
    assert_eq!(api.create_stream("dash", 2).await.status, 201);
    let mut conn = redis_conn(&redis.url()).await;
    let _: String = redis::cmd("XADD")
        .arg("dash:0")
        .arg("*")
        .arg("payload")
        .arg("x")
        .query_async(&mut conn)
        .await
        .unwrap();
    // "a" keeps heartbeating with progress; "b" joins once and is left to expire (member_expired_total).
    let mut a = Member::new("a");
    let mut b = Member::new("b");
    beat(&api, &mut b).await;
    for _ in 0..3 {
        beat(&api, &mut a).await;
    }
    let mut wanted: BTreeSet<String> = BTreeSet::new();
    let mut routes: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for (_, d) in dashboards() {
        let mut exprs = Vec::new();
        strings_of(&d, "expr", &mut exprs);
        strings_of(&d, "query", &mut exprs);
        for e in exprs.iter().filter_map(|e| e.as_str()) {
            wanted.extend(metric_names(e));
        }
        let mut paths = Vec::new();
        strings_of(&d, "targets", &mut paths);
        for t in paths
            .iter()
            .flat_map(|t| t.as_array().into_iter().flatten())
        {
            if let Some(p) = t.get("urlPath").and_then(Value::as_str) {
                let params = t["params"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|kv| {
                        (
                            kv[0].as_str().unwrap().to_owned(),
                            kv[1]
                                .as_str()
                                .unwrap()
                                .replace("$stream", "dash")
                                .replace("$group", "dash"),
                        )
                    })
                    .collect();
                routes.push((p.to_owned(), params));
            }
        }
    }
    assert!(wanted.len() >= 25, "{wanted:?}");
    // The gauges are rebuilt every 100 ms: poll until every name is there, bounded, then name what is not.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let missing = loop {
        beat(&api, &mut a).await;
        let r = api.send("GET", "/metrics", None).await;
        let (samples, families) = exposed(r.body.as_str().unwrap_or_default());
        let missing: Vec<&String> = wanted
            .iter()
            .filter(|n| !ONLY_AFTER_A_FAULT.contains(&n.as_str()))
            .filter(|n| !is_exposed(n, &samples, &families))
            .collect();
        if missing.is_empty() || std::time::Instant::now() > deadline {
            break missing;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        missing.is_empty(),
        "queried by a dashboard but not exposed: {missing:?}"
    );

    let served: BTreeSet<&str> = rsc_coordinator::http::api::routes::table()
        .iter()
        .map(|s| s.path)
        .collect();
    assert!(!routes.is_empty());
    for (path, params) in routes {
        assert!(
            served.contains(path.as_str()),
            "{path} is not a route of the table"
        );
        let query: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let r = api
            .send("GET", &format!("{path}?{}", query.join("&")), None)
            .await;
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        assert!(r.body.is_array(), "{path}: {}", r.body);
    }
    running.shutdown().await.unwrap();
}
