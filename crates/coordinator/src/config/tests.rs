//! Tests of the coordinator configuration: defaults, file, environment and flag layering, durations, key
//! names and validation.

use super::*;

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn defaults_match_the_contract() {
    let c = load(None, &env(&[]), &Overrides::default())
        .unwrap()
        .coordinator;
    assert_eq!(c.heartbeat_interval.ms(), 3_000);
    assert_eq!(c.member_lease_ttl.ms(), 15_000);
    assert_eq!(c.rebalance_timeout.ms(), 60_000);
    assert_eq!(c.store.key_prefix, "redis-stream:coord");
    assert_eq!(c.listen, "127.0.0.1:8080");
    assert_eq!(c.redis_url, "redis://127.0.0.1:6379");
}

#[test]
fn env_overrides_file_and_accepts_human_durations() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rsc.toml");
    std::fs::write(&path, "[coordinator]\nmember-lease-ttl = \"20s\"\nheartbeat-interval = 1000\n[coordinator.store]\nkey-prefix = \"from-file\"\n").unwrap();
    let c = load(
        Some(&path),
        &env(&[
            ("COORDINATOR_MEMBER_LEASE_TTL", "3s"),
            ("COORDINATOR_STORE_KEY_PREFIX", "from-env"),
        ]),
        &Overrides {
            listen: Some("127.0.0.1:9999".into()),
            redis_url: None,
        },
    )
    .unwrap()
    .coordinator;
    assert_eq!(c.member_lease_ttl.ms(), 3_000);
    assert_eq!(c.heartbeat_interval.ms(), 1_000);
    assert_eq!(c.store.key_prefix, "from-env");
    assert_eq!(c.listen, "127.0.0.1:9999");
}

#[test]
fn unknown_keys_and_bad_values_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, "[coordinator]\nheartbeat-intervall = \"3s\"\n").unwrap();
    let err = load(Some(&path), &env(&[]), &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("heartbeat-intervall"), "{err}");

    let err = load(
        None,
        &env(&[("COORDINATOR_MEMBER_LEASE_TTL", "soon")]),
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("member-lease-ttl") && err.contains("soon"),
        "{err}"
    );
    // It names the variable the value came from, not a Rust type.
    assert!(
        err.contains("(from environment variable COORDINATOR_MEMBER_LEASE_TTL)"),
        "{err}"
    );
    assert!(
        !err.contains("BTreeMap") && !err.contains("figment"),
        "{err}"
    );

    let err = load(
        None,
        &env(&[("COORDINATOR_DEFAULTS_INITIAL_SHARD_COUNT", "many")]),
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("(from environment variable COORDINATOR_DEFAULTS_INITIAL_SHARD_COUNT)"),
        "{err}"
    );

    let err = load(Some(&path), &env(&[]), &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("bad.toml"), "{err}");

    let err = load(
        None,
        &env(&[("COORDINATOR_NO_SUCH_THING", "1")]),
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("COORDINATOR_NO_SUCH_THING"), "{err}");

    let err = load(
        None,
        &env(&[("COORDINATOR_MEMBER_LEASE_TTL", "1s")]),
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("coordinator.member-lease-ttl"), "{err}");

    let err = load(
        None,
        &env(&[]),
        &Overrides {
            listen: Some("nonsense".into()),
            redis_url: None,
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("coordinator.listen"), "{err}");
}

#[test]
fn every_known_key_has_an_env_name() {
    let keys = known_keys();
    assert!(keys.contains(&"coordinator.store.key-prefix".to_owned()));
    assert!(keys.contains(&"coordinator.loop.tick-interval".to_owned()));
    assert_eq!(
        env_name("coordinator.store.key-prefix"),
        "COORDINATOR_STORE_KEY_PREFIX"
    );
}

#[test]
fn static_member_grace_defaults_to_twice_the_lease_and_is_set_by_file_or_env() {
    let c = load(None, &env(&[]), &Overrides::default())
        .unwrap()
        .coordinator;
    assert_eq!(c.group.static_member_grace, None);
    assert_eq!(c.static_member_grace().ms(), 30_000);
    let c = load(
        None,
        &env(&[("COORDINATOR_MEMBER_LEASE_TTL", "8s")]),
        &Overrides::default(),
    )
    .unwrap()
    .coordinator;
    assert_eq!(c.static_member_grace().ms(), 16_000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rsc.toml");
    std::fs::write(
        &path,
        "[coordinator.group]\nstatic-member-grace = \"45s\"\n",
    )
    .unwrap();
    let c = load(Some(&path), &env(&[]), &Overrides::default())
        .unwrap()
        .coordinator;
    assert_eq!(c.static_member_grace().ms(), 45_000);
    let c = load(
        Some(&path),
        &env(&[("COORDINATOR_GROUP_STATIC_MEMBER_GRACE", "0")]),
        &Overrides::default(),
    )
    .unwrap()
    .coordinator;
    assert_eq!(c.static_member_grace().ms(), 0);
    let err = load(
        None,
        &env(&[("COORDINATOR_GROUP_STATIC_MEMBER_GRACE", "soon")]),
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("group.static-member-grace"), "{err}");
}

#[test]
fn redis_tls_files_come_from_file_or_env_and_need_rediss_and_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rsc.toml");
    std::fs::write(
        &path,
        "[coordinator]\nredis-url = \"rediss://redis.example:6380\"\n[coordinator.redis.tls]\nca-file = \"/etc/rsc/ca.pem\"\n",
    )
    .unwrap();
    let c = load(Some(&path), &env(&[]), &Overrides::default())
        .unwrap()
        .coordinator;
    assert_eq!(
        c.redis.tls.ca_file.as_deref(),
        Some(std::path::Path::new("/etc/rsc/ca.pem"))
    );
    assert!(c.redis.tls.options().is_some());
    assert!(
        load(None, &env(&[]), &Overrides::default())
            .unwrap()
            .coordinator
            .redis
            .tls
            .options()
            .is_none()
    );

    let c = load(
        Some(&path),
        &env(&[
            ("COORDINATOR_REDIS_TLS_CA_FILE", "/run/ca.pem"),
            ("COORDINATOR_REDIS_TLS_CERT_FILE", "/run/client.pem"),
            ("COORDINATOR_REDIS_TLS_KEY_FILE", "/run/client-key.pem"),
        ]),
        &Overrides::default(),
    )
    .unwrap()
    .coordinator;
    let tls = c.redis.tls.options().unwrap();
    assert_eq!(tls.ca_file.unwrap(), std::path::Path::new("/run/ca.pem"));
    assert_eq!(
        tls.cert_file.unwrap(),
        std::path::Path::new("/run/client.pem")
    );
    assert_eq!(
        tls.key_file.unwrap(),
        std::path::Path::new("/run/client-key.pem")
    );

    let err = load(
        Some(&path),
        &env(&[("COORDINATOR_REDIS_TLS_CERT_FILE", "/run/client.pem")]),
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("coordinator.redis.tls.cert-file") && err.contains("key-file too"),
        "{err}"
    );
    let err = load(
        Some(&path),
        &env(&[("COORDINATOR_REDIS_TLS_KEY_FILE", "/run/client-key.pem")]),
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("coordinator.redis.tls.key-file"), "{err}");

    let err = load(
        None,
        &env(&[("COORDINATOR_REDIS_TLS_CA_FILE", "/run/ca.pem")]),
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("redis://127.0.0.1:6379") && err.contains("use rediss://"),
        "{err}"
    );
    let err = load(
        None,
        &env(&[
            ("COORDINATOR_REDIS_TLS_CA_FILE", "/run/ca.pem"),
            ("COORDINATOR_REDIS_CLUSTER_NODES", "redis://10.0.0.1:7000"),
        ]),
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("use rediss://"), "{err}");
    assert!(
        load(
            None,
            &env(&[
                ("COORDINATOR_REDIS_TLS_CA_FILE", "/run/ca.pem"),
                ("COORDINATOR_REDIS_CLUSTER_NODES", "10.0.0.1:7000"),
            ]),
            &Overrides::default(),
        )
        .is_ok()
    );

    let err = load(
        None,
        &env(&[("COORDINATOR_REDIS_TLS_CA_FIEL", "/run/ca.pem")]),
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("COORDINATOR_REDIS_TLS_CA_FILE"), "{err}");
}

#[test]
fn the_admin_password_comes_from_rsc_admin_password_and_env_keys_work() {
    let env: BTreeMap<String, String> = [
        ("RSC_ADMIN_PASSWORD", "from-the-environment"),
        ("COORDINATOR_API_ADMIN_PASSWORD", "from-a-config-key"),
        ("COORDINATOR_API_AUTHENTICATE_MEMBER_API", "false"),
        ("COORDINATOR_API_TRUSTED_PROXIES", "10.0.0.0/8, 127.0.0.1"),
        ("COORDINATOR_API_RATE_LIMIT_ADMIN_MUTATIONS_PER_MINUTE", "5"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    let c = load(None, &env, &Overrides::default())
        .unwrap()
        .coordinator
        .api;
    assert_eq!(
        c.admin_password,
        Some(crate::security::config::Secret(
            "from-the-environment".into()
        ))
    );
    assert!(!c.authenticate_member_api);
    assert_eq!(c.trusted_proxies, ["10.0.0.0/8", "127.0.0.1"]);
    assert_eq!(c.rate_limit.admin_mutations_per_minute, 5);
    let short: BTreeMap<String, String> =
        [("RSC_ADMIN_PASSWORD".to_owned(), "short".to_owned())].into();
    let err = load(None, &short, &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("coordinator.api.admin-password"), "{err}");
    assert!(!err.contains("short"), "the secret is not echoed: {err}");
}

#[test]
fn worker_threads_default_to_one_per_core_and_are_bounded() {
    let c = load(None, &env(&[]), &Overrides::default())
        .unwrap()
        .coordinator;
    assert_eq!(c.worker_threads, 0, "0 = one per CPU core");
    let c = load(
        None,
        &env(&[("COORDINATOR_WORKER_THREADS", "1")]),
        &Overrides::default(),
    )
    .unwrap()
    .coordinator;
    assert_eq!(c.worker_threads, 1);
    let err = load(
        None,
        &env(&[("COORDINATOR_WORKER_THREADS", "5000")]),
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("worker-threads") && err.contains("at most 1024"),
        "{err}"
    );
}

#[test]
fn aggregate_compression_defaults_to_lz4_and_can_be_turned_off() {
    let c = load(None, &env(&[]), &Overrides::default())
        .unwrap()
        .coordinator;
    assert_eq!(c.store.aggregate_compression, AggregateCompression::Lz4);
    let c = load(
        None,
        &env(&[("COORDINATOR_STORE_AGGREGATE_COMPRESSION", "off")]),
        &Overrides::default(),
    )
    .unwrap()
    .coordinator;
    assert_eq!(c.store.aggregate_compression, AggregateCompression::Off);
    let err = load(
        None,
        &env(&[("COORDINATOR_STORE_AGGREGATE_COMPRESSION", "gzip")]),
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("aggregate-compression"), "{err}");
}

#[test]
fn the_store_layout_defaults_to_split_and_can_be_set_back_to_whole() {
    let c = load(None, &env(&[]), &Overrides::default())
        .unwrap()
        .coordinator;
    assert_eq!(c.store.layout, 4);
    let c = load(
        None,
        &env(&[("COORDINATOR_STORE_LAYOUT", "3")]),
        &Overrides::default(),
    )
    .unwrap()
    .coordinator;
    assert_eq!(c.store.layout, 3);
    for bad in ["2", "5", "split"] {
        let err = load(
            None,
            &env(&[("COORDINATOR_STORE_LAYOUT", bad)]),
            &Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("store.layout"), "{bad}: {err}");
    }
}

#[test]
fn risky_settings_are_named_and_defaults_have_none() {
    let c = load(None, &env(&[]), &Overrides::default()).unwrap();
    assert!(super::risky_settings(&c.coordinator).is_empty());
    let c = load(
        None,
        &env(&[
            ("COORDINATOR_API_TOKEN_TTL", "36500d"),
            ("COORDINATOR_API_RATE_LIMIT_ENABLED", "false"),
            ("COORDINATOR_API_AUTHENTICATE_MEMBER_API", "false"),
            ("COORDINATOR_METRICS_LISTEN", "0.0.0.0:9464"),
        ]),
        &Overrides::default(),
    )
    .unwrap();
    let risks = super::risky_settings(&c.coordinator).join("\n");
    for key in [
        "token-ttl",
        "rate-limit.enabled",
        "authenticate-member-api",
        "metrics.listen",
    ] {
        assert!(risks.contains(key), "{key}: {risks}");
    }
}

/// The member cap (issue #32's `coordinator.group.max-members`) is also read as issue #36 names it,
/// `coordinator.groups.max-members`; either spelling, in a file or the environment, sets the one setting.
#[test]
fn the_member_cap_is_read_under_group_and_groups() {
    let c = load(None, &env(&[]), &Overrides::default())
        .unwrap()
        .coordinator;
    assert_eq!(c.group.max_members, 10_000);
    let dir = tempfile::tempdir().unwrap();
    for table in ["group", "groups"] {
        let path = dir.path().join(format!("{table}.toml"));
        std::fs::write(
            &path,
            format!("[coordinator.{table}]\nmax-members = 20000\n"),
        )
        .unwrap();
        let c = load(Some(&path), &env(&[]), &Overrides::default())
            .unwrap()
            .coordinator;
        assert_eq!(c.group.max_members, 20_000, "[coordinator.{table}]");
        std::fs::write(&path, format!("[coordinator.{table}]\nmax-members = 0\n")).unwrap();
        let err = load(Some(&path), &env(&[]), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("group.max-members"), "{err}");
    }
    let c = load(
        None,
        &env(&[("COORDINATOR_GROUP_MAX_MEMBERS", "500")]),
        &Overrides::default(),
    )
    .unwrap()
    .coordinator;
    assert_eq!(c.group.max_members, 500);
}

#[test]
fn the_heartbeat_body_limit_fits_the_largest_group_and_is_set_by_file_or_env() {
    let c = load(None, &env(&[]), &Overrides::default())
        .unwrap()
        .coordinator;
    assert_eq!(
        c.http.heartbeat_max_body_bytes,
        crate::security::access::DEFAULT_HEARTBEAT_MAX_BODY_BYTES
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rsc.toml");
    std::fs::write(
        &path,
        "[coordinator.http]\nheartbeat-max-body-bytes = 2097152\n",
    )
    .unwrap();
    let c = load(Some(&path), &env(&[]), &Overrides::default())
        .unwrap()
        .coordinator;
    assert_eq!(c.http.heartbeat_max_body_bytes, 2_097_152);
    let c = load(
        Some(&path),
        &env(&[("COORDINATOR_HTTP_HEARTBEAT_MAX_BODY_BYTES", "33554432")]),
        &Overrides::default(),
    )
    .unwrap()
    .coordinator;
    assert_eq!(c.http.heartbeat_max_body_bytes, 33_554_432);
    let err = load(
        None,
        &env(&[("COORDINATOR_HTTP_HEARTBEAT_MAX_BODY_BYTES", "1000")]),
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("http.heartbeat-max-body-bytes"), "{err}");
}
