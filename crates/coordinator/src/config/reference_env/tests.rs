//! Tests of the reference's environment variables: the table over an environment map (mapped, warned,
//! refused, overruled by rsc's own spelling), value translation, and the result through `config::load`.

use super::*;
use crate::config::load;

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn tr(pairs: &[(&str, &str)]) -> Translation {
    translate(&env(pairs), &Overrides::default()).unwrap()
}

fn text(t: &Translation, key: &str) -> String {
    match &t.settings[key].0 {
        Setting::Text(s) => s.clone(),
        other => panic!("{key} is {other:?}"),
    }
}

#[test]
fn redis_parts_become_one_url_with_the_password_encoded() {
    let t = tr(&[
        ("SPRING_DATA_REDIS_HOST", "redis.internal"),
        ("SPRING_DATA_REDIS_PORT", "6380"),
        ("SPRING_DATA_REDIS_USERNAME", "coord"),
        ("SPRING_DATA_REDIS_PASSWORD", "p@ss:w/rd"),
        ("SPRING_DATA_REDIS_DATABASE", "2"),
    ]);
    assert_eq!(
        text(&t, "coordinator.redis-url"),
        "redis://coord:p%40ss%3Aw%2Frd@redis.internal:6380/2"
    );
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    // The summary names variables and keys, never values.
    let summary = t.summary().unwrap();
    assert!(
        summary.contains("SPRING_DATA_REDIS_PASSWORD") && summary.contains("coordinator.redis-url")
    );
    assert!(
        !summary.contains("p@ss") && !summary.contains("p%40ss"),
        "{summary}"
    );
}

#[test]
fn defaults_of_the_redis_parts_and_ssl_as_rediss() {
    let t = tr(&[
        ("SPRING_DATA_REDIS_PORT", "7000"),
        ("SPRING_DATA_REDIS_SSL_ENABLED", "true"),
    ]);
    assert_eq!(text(&t, "coordinator.redis-url"), "rediss://localhost:7000");
    let t = tr(&[
        ("SPRING_DATA_REDIS_PASSWORD", "secret"),
        ("SPRING_DATA_REDIS_DATABASE", "0"),
    ]);
    assert_eq!(
        text(&t, "coordinator.redis-url"),
        "redis://:secret@localhost:6379"
    );
    let t = tr(&[("SPRING_DATA_REDIS_HOST", "::1")]);
    assert_eq!(text(&t, "coordinator.redis-url"), "redis://[::1]:6379");
}

#[test]
fn a_url_wins_over_host_and_port_with_a_warning() {
    let t = tr(&[
        ("SPRING_DATA_REDIS_URL", "redis://u:p@r1:6379"),
        ("SPRING_DATA_REDIS_HOST", "other"),
        ("SPRING_DATA_REDIS_SSL_ENABLED", "true"),
        ("SPRING_DATA_REDIS_DATABASE", "3"),
    ]);
    assert_eq!(text(&t, "coordinator.redis-url"), "rediss://u:p@r1:6379/3");
    assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
    assert!(
        t.warnings[0].contains("SPRING_DATA_REDIS_HOST"),
        "{:?}",
        t.warnings
    );
}

#[test]
fn cluster_nodes_become_node_urls_carrying_the_credentials() {
    let t = tr(&[
        (
            "SPRING_DATA_REDIS_CLUSTER_NODES",
            "10.0.0.1:7000, 10.0.0.2:7001",
        ),
        ("SPRING_DATA_REDIS_PASSWORD", "pw"),
        ("SPRING_DATA_REDIS_HOST", "ignored"),
    ]);
    assert_eq!(
        t.settings["coordinator.redis-cluster-nodes"].0,
        Setting::List(vec![
            "redis://:pw@10.0.0.1:7000".into(),
            "redis://:pw@10.0.0.2:7001".into()
        ])
    );
    assert!(!t.settings.contains_key("coordinator.redis-url"));
    assert!(
        t.warnings
            .iter()
            .any(|w| w.contains("SPRING_DATA_REDIS_HOST"))
    );
    let err = translate(
        &env(&[("SPRING_DATA_REDIS_CLUSTER_NODES", "a:1,b")]),
        &Overrides::default(),
    )
    .unwrap_err();
    assert!(
        err.contains("SPRING_DATA_REDIS_CLUSTER_NODES") && err.contains("\"b\""),
        "{err}"
    );
}

#[test]
fn timeouts_take_the_longer_of_the_two_in_any_spring_duration_form() {
    let t = tr(&[
        ("SPRING_DATA_REDIS_TIMEOUT", "PT2.5S"),
        ("SPRING_DATA_REDIS_CONNECT_TIMEOUT", "1s"),
    ]);
    assert_eq!(text(&t, "coordinator.redis-connect-timeout"), "2500ms");
    assert_eq!(spring_duration("1500").unwrap(), 1_500);
    assert_eq!(spring_duration("15s").unwrap(), 15_000);
    assert_eq!(spring_duration("P1DT1H1M1S").unwrap(), 90_061_000);
    assert_eq!(spring_duration("pt0.5s").unwrap(), 500);
    for bad in ["", "PT", "P1S", "PT1S1M", "-PT1S", "soon"] {
        assert!(spring_duration(bad).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn server_port_and_address_make_the_listen_address_like_spring() {
    let t = tr(&[("SERVER_PORT", "9090")]);
    assert_eq!(text(&t, "coordinator.listen"), "0.0.0.0:9090");
    let t = tr(&[("SERVER_ADDRESS", "127.0.0.1")]);
    assert_eq!(text(&t, "coordinator.listen"), "127.0.0.1:8080");
    let err = translate(&env(&[("SERVER_PORT", "http")]), &Overrides::default()).unwrap_err();
    assert!(err.contains("SERVER_PORT"), "{err}");
}

#[test]
fn rsc_own_spelling_wins_with_a_warning() {
    let t = translate(
        &env(&[
            ("SERVER_PORT", "9090"),
            ("SPRING_DATA_REDIS_HOST", "r"),
            ("COORDINATOR_REDIS_URL", "redis://mine:6379"),
            ("COORDINATOR_MEMBERLEASETTL", "20s"),
            ("COORDINATOR_MEMBER_LEASE_TTL", "30s"),
        ]),
        &Overrides {
            listen: Some("127.0.0.1:1".into()),
            redis_url: None,
        },
    )
    .unwrap();
    assert!(t.settings.is_empty(), "{:?}", t.settings.keys());
    let all = t.warnings.join("\n");
    for (reference, own) in [
        ("SERVER_PORT", "--listen"),
        ("SPRING_DATA_REDIS_HOST", "COORDINATOR_REDIS_URL"),
        ("COORDINATOR_MEMBERLEASETTL", "COORDINATOR_MEMBER_LEASE_TTL"),
    ] {
        assert!(
            all.lines()
                .any(|l| l.contains(reference) && l.contains(own)),
            "{reference} / {own}: {all}"
        );
    }
}

#[test]
fn store_type_redis_is_accepted_and_anything_else_refused() {
    let t = tr(&[("COORDINATOR_STORE_TYPE", "redis")]);
    assert!(t.warnings.is_empty() && t.settings.is_empty());
    assert!(t.consumed.contains("COORDINATOR_STORE_TYPE"));
    for other in ["memory", "jdbc"] {
        let err = translate(
            &env(&[("COORDINATOR_STORE_TYPE", other)]),
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(
            err.contains("COORDINATOR_STORE_TYPE") && err.contains("Redis only"),
            "{err}"
        );
    }
}

#[test]
fn variables_without_a_meaning_warn_once_each_and_never_show_their_value() {
    let t = tr(&[
        ("REDIS_STREAM_COORDINATOR_TOKEN_SECRET", "s3cr3t-value"),
        ("COORDINATOR_COORDINATION_STATE_MUTEX_TTL_MS", "30000"),
        ("COORDINATOR_API_USERS_0_PASSWORD", "hunter22"),
        ("COORDINATOR_MONITORING_OFFSETCACHETTLMS", "15000"),
        ("SPRING_PROFILES_ACTIVE", "prod"),
        ("MANAGEMENT_SERVER_PORT", "8081"),
        ("SPRING_DATA_REDIS_LETTUCE_POOL_MAX_ACTIVE", "8"),
        ("JAVA_OPTS", "-Xmx1g"),
        ("PATH", "/usr/bin"),
        ("SERVER_SOFTWARE", "x"),
    ]);
    assert_eq!(t.warnings.len(), 8, "{:#?}", t.warnings);
    let all = t.warnings.join("\n");
    for secret in ["s3cr3t-value", "hunter22"] {
        assert!(!all.contains(secret), "{all}");
    }
    assert!(
        all.contains("REDIS_STREAM_COORDINATOR_TOKEN_SECRET") && all.contains("compare-and-set")
    );
    // The reference's COORDINATOR_* variables are taken off rsc's strict check.
    assert!(t.consumed.contains("COORDINATOR_API_USERS_0_PASSWORD"));
}

#[test]
fn refused_settings_name_the_variable() {
    let err = translate(
        &env(&[("SPRING_DATA_REDIS_SENTINEL_MASTER", "m")]),
        &Overrides::default(),
    )
    .unwrap_err();
    assert!(
        err.contains("SPRING_DATA_REDIS_SENTINEL_MASTER") && err.contains("Sentinel"),
        "{err}"
    );
    let err = translate(
        &env(&[("SERVER_SSL_KEY_STORE", "/ks.p12")]),
        &Overrides::default(),
    )
    .unwrap_err();
    assert!(
        err.contains("SERVER_SSL_KEY_STORE") && err.contains("TLS proxy"),
        "{err}"
    );
    let t = tr(&[
        ("SERVER_SSL_ENABLED", "false"),
        ("SERVER_SSL_KEY_STORE", "/ks.p12"),
    ]);
    assert_eq!(t.warnings.len(), 2, "{:?}", t.warnings);
}

#[test]
fn node_mappings_become_the_node_map() {
    let t = tr(&[
        (
            "COORDINATOR_REDIS_CLUSTER_NODE_MAPPINGS_0_ADVERTISED_HOST",
            "10.0.0.5",
        ),
        (
            "COORDINATOR_REDIS_CLUSTER_NODE_MAPPINGS_0_ADVERTISED_PORT",
            "6379",
        ),
        (
            "COORDINATOR_REDISCLUSTER_NODEMAPPINGS_0_CONNECTHOST",
            "127.0.0.1",
        ),
        (
            "COORDINATOR_REDISCLUSTER_NODEMAPPINGS_0_CONNECTPORT",
            "16379",
        ),
    ]);
    assert_eq!(
        t.settings["coordinator.redis.cluster-node-map"].0,
        Setting::Map(BTreeMap::from([(
            "10.0.0.5:6379".into(),
            "127.0.0.1:16379".into()
        )]))
    );
    assert_eq!(t.consumed.len(), 4);
    let err = translate(
        &env(&[(
            "COORDINATOR_REDIS_CLUSTER_NODE_MAPPINGS_1_CONNECT_HOST",
            "h",
        )]),
        &Overrides::default(),
    )
    .unwrap_err();
    assert!(
        err.contains("[1]") && err.contains("advertised-host"),
        "{err}"
    );
}

#[test]
fn through_load_the_reference_variables_configure_rsc() {
    let c = load(
        None,
        &env(&[
            ("COORDINATOR_STORE_TYPE", "redis"),
            ("COORDINATOR_STREAMS_PROVISIONINGENABLED", "false"),
            ("COORDINATOR_MEMBERLEASETTL", "PT20S"),
            ("COORDINATOR_HEALTH_REDIS_TIMEOUT_MS", "750"),
            ("REDIS_STREAM_COORDINATOR_ADMIN_PASSWORD", "long-enough-pw"),
            ("SPRING_DATA_REDIS_HOST", "redis.internal"),
            ("SERVER_PORT", "9000"),
            ("COORDINATOR_COORDINATION_STATE_MUTEX_ENABLED", "true"),
        ]),
        &Overrides::default(),
    )
    .unwrap()
    .coordinator;
    assert_eq!(c.redis_url, "redis://redis.internal:6379");
    assert_eq!(c.listen, "0.0.0.0:9000");
    assert_eq!(c.member_lease_ttl.ms(), 20_000);
    assert_eq!(c.health.redis_timeout.ms(), 750);
    assert!(!c.streams.provisioning_enabled);
    assert_eq!(c.api.admin_password.unwrap().0, "long-enough-pw");
    // rsc's own strictness stays for everything else.
    let err = load(
        None,
        &env(&[("COORDINATOR_HEARTBEAT_INTERVALL", "3s")]),
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("COORDINATOR_HEARTBEAT_INTERVALL"), "{err}");
    // A bad translated value names where it came from.
    let err = load(
        None,
        &env(&[("SPRING_DATA_REDIS_URL", "http://x")]),
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("redis-url"), "{err}");
}
