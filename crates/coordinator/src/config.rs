//! Coordinator configuration: defaults, then a TOML file, then `COORDINATOR_*` environment variables, then
//! command-line flags (`--listen`/`RSC_LISTEN`, `--redis-url`/`RSC_REDIS_URL`).
//!
//! Keys mirror the contract's property names (`coordinator.store.key-prefix`, …); an environment variable is
//! the upper-case form with `.` and `-` turned into `_` (`COORDINATOR_MEMBER_LEASE_TTL=3s`). Durations accept
//! `500ms`, `3s`, `10m`, `7d` or a number of milliseconds. Unknown keys and bad values fail start-up with a
//! message naming the key. The reference implementation's variables (`SPRING_DATA_REDIS_*`, `SERVER_PORT`,
//! its `COORDINATOR_*` spellings) are translated by `reference_env.rs`, below rsc's own variables.

use figment::Figment;
use figment::providers::{Format, Serialized, Toml};
use figment::value::{Dict, Map, Value};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

pub use crate::duration::Dur;
pub use redis_options::{RedisConfig, RedisTlsConfig};

mod cluster;
pub mod redis_options;
mod store;

pub use cluster::ClusterConfig;

pub use store::{AggregateCompression, LAYOUT_SPLIT, LAYOUT_WHOLE, StoreConfig};

/// The most runtime threads `coordinator.worker-threads` may ask for.
pub const MAX_WORKER_THREADS: u32 = 1_024;
pub mod reference_env;

/// The whole configuration file: everything lives under `[coordinator]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub coordinator: CoordinatorConfig,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct CoordinatorConfig {
    /// Instance id (health, metrics, audit). Default: `<hostname>-<pid>`.
    pub id: String,
    pub listen: String,
    pub redis_url: String,
    /// When non-empty, connect to a Redis Cluster through these node URLs instead of `redis-url`.
    pub redis_cluster_nodes: Vec<String>,
    /// Redis options beyond the address: the cluster node map and TLS (`config/redis_options.rs`).
    pub redis: RedisConfig,
    pub redis_connect_timeout: Dur,
    pub heartbeat_interval: Dur,
    pub member_lease_ttl: Dur,
    pub rebalance_timeout: Dur,
    pub stale_member_retention: Dur,
    /// How long SIGTERM waits for in-flight requests before exiting anyway.
    pub shutdown_grace: Dur,
    /// Threads of the async runtime that serve requests (`rsc serve`); 0 = one per CPU core. On a machine
    /// whose cores Redis and other busy processes share, fewer threads spend less CPU per request waking
    /// each other (BENCHMARKS.md, issue #21).
    pub worker_threads: u32,
    #[serde(rename = "loop")]
    pub reconciler: LoopConfig,
    /// Replicas: the registry lease, ownership of background work, the change feed.
    pub cluster: ClusterConfig,
    /// Consumer-group behaviour: static membership, member caps (`[coordinator.groups]` is read too, by
    /// `with_groups_table_read_as_group`).
    pub group: GroupConfig,
    pub store: StoreConfig,
    pub streams: StreamsConfig,
    pub defaults: DefaultsConfig,
    pub health: HealthConfig,
    /// Prometheus metrics: optional unauthenticated listener, refresh interval, series caps.
    pub metrics: crate::observability::metrics::MetricsConfig,
    /// Authentication, authorization, tokens, rate limits (see `security::config`).
    pub api: crate::security::config::ApiConfig,
    pub audit: crate::security::config::AuditConfig,
    /// Connection handling of the API and metrics listeners: timeouts and a connection cap.
    pub http: HttpConfig,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct HttpConfig {
    /// A connection must deliver a complete request head within this time from when the server starts
    /// waiting for it: after the connection opens, or after its previous response (so this also closes a
    /// kept-alive HTTP/1 connection left idle that long).
    pub header_read_timeout: Dur,
    /// A request body must arrive whole within this time after its head (408 otherwise).
    pub body_read_timeout: Dur,
    /// A connection on which no byte moves either way for this long is closed (HTTP/2 included).
    pub idle_timeout: Dur,
    /// Connections served at once per listener; one more is answered 503 and closed.
    pub max_connections: u32,
    /// Connections one client address may hold on a listener (behind a load balancer, which shares one
    /// address, raise it to `max-connections`).
    pub max_connections_per_address: u32,
    /// Bytes of record ids, field names and values in one page of the message browser or Grafana's message
    /// rows (past its first record); a page cut short says `nextCursor`.
    pub message_page_max_bytes: usize,
    /// The largest heartbeat body (every other route: 1 MiB). The default fits a member owning every shard of
    /// a group at the largest shard count (16,384) and reporting progress for each
    /// (`access::DEFAULT_HEARTBEAT_MAX_BODY_BYTES`); issue #32, finding 9.
    pub heartbeat_max_body_bytes: usize,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            header_read_timeout: Dur::from_secs(30),
            body_read_timeout: Dur::from_secs(30),
            idle_timeout: Dur::from_secs(120),
            max_connections: 10_000,
            max_connections_per_address: 256,
            message_page_max_bytes: 4 * 1024 * 1024,
            heartbeat_max_body_bytes: crate::security::access::DEFAULT_HEARTBEAT_MAX_BODY_BYTES,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct LoopConfig {
    pub enabled: bool,
    pub tick_interval: Dur,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct GroupConfig {
    /// How long a static member's target (members that send `groupInstanceId`) stays reserved after it
    /// stopped — its lease lapsed, or it left with `memberEpoch` -2 — for a member joining with the same
    /// instance id. Unset: twice `member-lease-ttl`. `0` turns reservations off.
    pub static_member_grace: Option<Dur>,
    /// Members one group admits; a join beyond it gets 409 `TOO_MANY_MEMBERS` (issue #32, finding 14).
    pub max_members: u32,
    /// Members one principal may hold in one group (unset: `max-members`).
    pub max_members_per_principal: Option<u32>,
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            static_member_grace: None,
            max_members: 10_000,
            max_members_per_principal: None,
        }
    }
}

impl CoordinatorConfig {
    /// The static-member grace in effect (see [`GroupConfig::static_member_grace`]).
    pub fn static_member_grace(&self) -> Dur {
        self.group
            .static_member_grace
            .unwrap_or(Dur(self.member_lease_ttl.0 * 2))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct StreamsConfig {
    /// Create shard streams and their Redis consumer groups (clients never do). On by default.
    pub provisioning_enabled: bool,
    /// Delete the streams of shards removed by a completed scale-in (a stale producer's XADD NOMKSTREAM
    /// then fails instead of writing where nobody reads). `false` keeps them.
    pub retire_removed_shards: bool,
    /// How long after routing changes (a scale activates or is rolled back) a removed shard's drain evidence
    /// starts to count: producers may keep writing with the routing they cached for as long as their routing
    /// lease lasts, so set it at least to the longest producer routing lease (the SDK's default is 60 s).
    pub drain_grace: Dur,
    /// A scale with `producerQuiesce` waits for the producers that fetched routing within this window (set
    /// it at least to the longest producer refresh interval; the SDK's default is 5 s).
    pub producer_refresh_window: Dur,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct DefaultsConfig {
    pub initial_shard_count: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct HealthConfig {
    /// A Redis PING slower than this makes health DEGRADED.
    pub redis_timeout: Dur,
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        CoordinatorConfig {
            id: default_instance_id(),
            listen: "127.0.0.1:8080".to_owned(),
            redis_url: "redis://127.0.0.1:6379".to_owned(),
            redis_cluster_nodes: Vec::new(),
            redis: RedisConfig::default(),
            redis_connect_timeout: Dur(Duration::from_secs(3)),
            heartbeat_interval: Dur::from_secs(3),
            member_lease_ttl: Dur::from_secs(15),
            rebalance_timeout: Dur::from_secs(60),
            stale_member_retention: Dur::from_secs(600),
            shutdown_grace: Dur::from_secs(10),
            worker_threads: 0,
            reconciler: LoopConfig::default(),
            cluster: ClusterConfig::default(),
            group: GroupConfig::default(),
            store: StoreConfig::default(),
            streams: StreamsConfig::default(),
            defaults: DefaultsConfig::default(),
            health: HealthConfig::default(),
            metrics: crate::observability::metrics::MetricsConfig::default(),
            api: Default::default(),
            audit: Default::default(),
            http: HttpConfig::default(),
        }
    }
}

impl Default for LoopConfig {
    fn default() -> Self {
        LoopConfig {
            enabled: true,
            tick_interval: Dur::from_secs(1),
        }
    }
}
impl Default for StreamsConfig {
    fn default() -> Self {
        StreamsConfig {
            provisioning_enabled: true,
            retire_removed_shards: true,
            drain_grace: Dur::from_secs(60),
            producer_refresh_window: Dur::from_secs(30),
        }
    }
}
impl Default for DefaultsConfig {
    fn default() -> Self {
        DefaultsConfig {
            initial_shard_count: 12,
        }
    }
}
impl Default for HealthConfig {
    fn default() -> Self {
        HealthConfig {
            redis_timeout: Dur(Duration::from_millis(300)),
        }
    }
}

fn default_instance_id() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "rsc".to_owned());
    format!("{host}-{}", std::process::id())
}

/// A configuration problem, naming the key (or file) and what to do about it.
#[derive(Debug, thiserror::Error)]
#[error("configuration error: {0}")]
pub struct ConfigError(pub String);

/// Overrides given on the command line (already merged with `RSC_LISTEN` / `RSC_REDIS_URL` by clap).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub listen: Option<String>,
    pub redis_url: Option<String>,
}

/// Loads the configuration: defaults < TOML file < the reference's variables < `COORDINATOR_*` env <
/// overrides; then validates it.
/// Merges a config file, reading a `[coordinator.groups]` table as `[coordinator.group]` (both spellings are
/// documented). A serde alias cannot do it: the defaults already carry `group`, and serde would see the
/// field twice. Only a file that uses the plural spelling takes this path, so every other file keeps its
/// source in error messages.
fn with_groups_table_read_as_group(figment: Figment, path: &Path) -> Result<Figment, ConfigError> {
    let file = Figment::from(Toml::file(path));
    if file.find_value("coordinator.groups").is_err() {
        return Ok(figment.merge(Toml::file(path)));
    }
    let mut document: Dict = file
        .extract()
        .map_err(|e| ConfigError(format!("config file {}: {e}", path.display())))?;
    if let Some(Value::Dict(_, coordinator)) = document.get_mut("coordinator") {
        if coordinator.contains_key("group") {
            return Err(ConfigError(format!(
                "config file {}: [coordinator.group] and [coordinator.groups] are the same table; keep one",
                path.display()
            )));
        }
        if let Some(groups) = coordinator.remove("groups") {
            coordinator.insert("group".into(), groups);
        }
    }
    Ok(figment.merge(Named::new(SOURCE_FILE_GROUPS, document)))
}

pub fn load(
    file: Option<&Path>,
    env: &BTreeMap<String, String>,
    overrides: &Overrides,
) -> Result<Config, ConfigError> {
    let mut figment = Figment::from(Serialized::defaults(Config::default()));
    if let Some(path) = file {
        if !path.is_file() {
            return Err(ConfigError(format!(
                "config file {} does not exist or is not a file",
                path.display()
            )));
        }
        figment = with_groups_table_read_as_group(figment, path)?;
    }
    // The reference implementation's variables (SPRING_DATA_REDIS_*, SERVER_PORT, …), below rsc's own.
    let reference = reference_env::translate(env, overrides).map_err(ConfigError)?;
    for warning in &reference.warnings {
        tracing::warn!("{warning}");
    }
    if let Some(mapped) = reference.summary() {
        tracing::info!("reference environment variables mapped: {mapped}");
    }
    figment = figment.merge(Named::new(SOURCE_REFERENCE, reference.document()));
    figment = figment.merge(Named::new(
        SOURCE_ENV,
        env_overrides(env, &reference.consumed)?,
    ));
    // The bootstrap admin's password from the environment (never logged; `Secret` hides it in Debug output).
    if let Some(pw) = env.get("RSC_ADMIN_PASSWORD").filter(|p| !p.is_empty()) {
        figment = figment.merge(Named::key(
            "environment variable RSC_ADMIN_PASSWORD",
            "coordinator.api.admin-password",
            pw,
        ));
    }
    // Redis's password apart from the URL, so that it is not on a command line (never logged).
    if let Some(pw) = env.get("RSC_REDIS_PASSWORD").filter(|p| !p.is_empty()) {
        figment = figment.merge(Named::key(
            "environment variable RSC_REDIS_PASSWORD",
            "coordinator.redis.password",
            pw,
        ));
    }
    if let Some(listen) = &overrides.listen {
        figment = figment.merge(Named::key(
            "--listen (or RSC_LISTEN)",
            "coordinator.listen",
            listen,
        ));
    }
    if let Some(url) = &overrides.redis_url {
        figment = figment.merge(Named::key(
            "--redis-url (or RSC_REDIS_URL)",
            "coordinator.redis-url",
            url,
        ));
    }
    let config: Config = figment
        .extract()
        .map_err(|e| ConfigError(describe_figment_error(e)))?;
    validate(&config)?;
    Ok(config)
}

/// Settings that weaken the coordinator's defences, one line each naming the key, so that `rsc serve` says
/// so when it starts (issue #32, Low): tokens living longer than 90 days, admin rate limits off,
/// unauthenticated heartbeats, and the unauthenticated metrics listener on every interface.
pub fn risky_settings(c: &CoordinatorConfig) -> Vec<String> {
    let mut out = Vec::new();
    if c.api.token_ttl.0 > Duration::from_secs(90 * 24 * 3600) {
        out.push(format!(
            "coordinator.api.token-ttl is {}: a stolen token stays valid that long (default 7d)",
            humantime::format_duration(c.api.token_ttl.0)
        ));
    }
    if !c.api.rate_limit.enabled {
        out.push(
            "coordinator.api.rate-limit.enabled is false: admin mutations are not rate limited"
                .to_owned(),
        );
    }
    if !c.api.authenticate_member_api {
        out.push(
            "coordinator.api.authenticate-member-api is false: anyone who reaches the API can send heartbeats \
             (closed networks only)"
                .to_owned(),
        );
    }
    let metrics = c.metrics.listen.trim();
    if metrics.starts_with("0.0.0.0:") || metrics.starts_with("[::]:") {
        out.push(format!(
            "coordinator.metrics.listen is {metrics}: unauthenticated /metrics on every interface"
        ));
    }
    out
}

/// The name of a config file's provider when its `[coordinator.groups]` table was read as `[coordinator.group]`.
const SOURCE_FILE_GROUPS: &str = "the config file";
/// The name the `COORDINATOR_*` variables' provider reports, so that an error can name the variable.
const SOURCE_ENV: &str = "COORDINATOR_* environment variables";
/// The name of the provider of the reference implementation's variables (see `reference_env.rs`).
const SOURCE_REFERENCE: &str =
    "the reference's environment variables (SPRING_DATA_REDIS_*, SERVER_PORT, …)";

/// A provider of one document (or one key) under a name a user recognises. figment names its own
/// `Serialized` and tuple providers after their Rust type, which is what an error message would then show.
struct Named {
    name: &'static str,
    data: Dict,
}

impl Named {
    fn new(name: &'static str, data: Dict) -> Self {
        Named { name, data }
    }

    fn key(name: &'static str, dotted: &str, value: &str) -> Self {
        let mut data = Dict::new();
        insert_path(&mut data, dotted, Value::from(value.to_owned()));
        Named { name, data }
    }
}

impl figment::Provider for Named {
    fn metadata(&self) -> figment::Metadata {
        figment::Metadata::named(self.name)
    }

    fn data(&self) -> Result<Map<figment::Profile, Dict>, figment::Error> {
        Ok(figment::Profile::Default.collect(self.data.clone()))
    }
}

fn describe_figment_error(e: figment::Error) -> String {
    e.into_iter()
        .map(|err| {
            let key = if err.path.is_empty() {
                String::from("(top level)")
            } else {
                err.path.join(".")
            };
            // Where the bad value came from, in the user's words: the variable, the flag or the file.
            let source = match err.metadata.as_ref() {
                Some(m) if m.name == SOURCE_ENV && !err.path.is_empty() => {
                    format!(" (from environment variable {})", env_name(&key))
                }
                Some(m) => match m.source.as_ref().and_then(|s| s.file_path()) {
                    Some(path) => format!(" (from {} {})", m.name, path.display()),
                    None => format!(" (from {})", m.name),
                },
                None => String::new(),
            };
            format!("key `{key}`: {}{source}", err.kind)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Every settable scalar key, as dotted paths, derived from the default configuration so it never drifts.
pub fn known_keys() -> Vec<String> {
    fn walk(prefix: &str, value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (k, v) in map {
                    let path = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&path, v, out);
                }
            }
            _ => out.push(prefix.to_owned()),
        }
    }
    let mut out = Vec::new();
    if let Ok(v) = serde_json::to_value(Config::default()) {
        walk("", &v, &mut out);
    }
    out
}

/// The environment variable that overrides a dotted key.
pub fn env_name(key: &str) -> String {
    key.chars()
        .map(|c| {
            if c == '.' || c == '-' {
                '_'
            } else {
                c.to_ascii_uppercase()
            }
        })
        .collect()
}

/// Builds a nested override document from `COORDINATOR_*` variables; unknown ones are an error, except the
/// reference's that `reference_env` handled (`consumed`).
fn env_overrides(
    env: &BTreeMap<String, String>,
    consumed: &std::collections::BTreeSet<String>,
) -> Result<Dict, ConfigError> {
    let keys: BTreeMap<String, String> = known_keys()
        .into_iter()
        .map(|k| (env_name(&k), k))
        .collect();
    let mut root = Dict::new();
    for (name, raw) in env
        .iter()
        .filter(|(n, _)| n.starts_with("COORDINATOR_") && !consumed.contains(*n))
    {
        if name == redis_options::NODE_MAP_ENV {
            insert_path(
                &mut root,
                redis_options::NODE_MAP_KEY,
                redis_options::node_map_from_env(raw).map_err(ConfigError)?,
            );
            continue;
        }
        let Some(key) = keys.get(name) else {
            let known: Vec<&String> = keys.keys().collect();
            return Err(ConfigError(format!(
                "environment variable {name} is not a configuration key; known: {}",
                known
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        let value = if key.ends_with("redis-cluster-nodes") || key.ends_with("api.trusted-proxies")
        {
            Value::from(
                raw.split(',')
                    .map(|s| s.trim().to_owned())
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>(),
            )
        } else {
            parse_env_scalar(raw)
        };
        insert_path(&mut root, key, value);
    }
    Ok(root)
}

fn parse_env_scalar(raw: &str) -> Value {
    match raw.trim() {
        "true" => Value::from(true),
        "false" => Value::from(false),
        t => t
            .parse::<u64>()
            .map(Value::from)
            .unwrap_or_else(|_| Value::from(t.to_owned())),
    }
}

fn insert_path(root: &mut Dict, dotted: &str, value: Value) {
    let parts: Vec<&str> = dotted.split('.').collect();
    let mut cursor: &mut Map<String, Value> = root;
    for part in &parts[..parts.len().saturating_sub(1)] {
        let entry = cursor
            .entry((*part).to_owned())
            .or_insert_with(|| Value::from(Dict::new()));
        if !matches!(entry, Value::Dict(..)) {
            *entry = Value::from(Dict::new());
        }
        let Value::Dict(_, dict) = entry else { return };
        cursor = dict;
    }
    if let Some(last) = parts.last() {
        cursor.insert((*last).to_owned(), value);
    }
}

fn validate(c: &Config) -> Result<(), ConfigError> {
    let k = &c.coordinator;
    let fail = |key: &str, msg: String| Err(ConfigError(format!("key `coordinator.{key}`: {msg}")));
    if k.heartbeat_interval.0.is_zero() {
        return fail("heartbeat-interval", "must be greater than zero".into());
    }
    if k.member_lease_ttl.0 < k.heartbeat_interval.0 * 2 {
        return fail(
            "member-lease-ttl",
            format!(
                "must be at least twice coordinator.heartbeat-interval ({}), or members expire between heartbeats",
                humantime::format_duration(k.heartbeat_interval.0)
            ),
        );
    }
    if k.rebalance_timeout.0.is_zero() {
        return fail("rebalance-timeout", "must be greater than zero".into());
    }
    if k.streams.producer_refresh_window.0.is_zero() {
        return fail(
            "streams.producer-refresh-window",
            "must be greater than zero".into(),
        );
    }
    if k.reconciler.tick_interval.0.is_zero() {
        return fail("loop.tick-interval", "must be greater than zero".into());
    }
    if k.worker_threads > MAX_WORKER_THREADS {
        return fail(
            "worker-threads",
            format!("must be at most {MAX_WORKER_THREADS} (0 = one per CPU core)"),
        );
    }
    if k.redis_connect_timeout.0.is_zero() {
        return fail("redis-connect-timeout", "must be greater than zero".into());
    }
    let kp = &k.store.key_prefix;
    if kp.trim().is_empty() || kp.contains('{') || kp.contains('}') {
        return fail(
            "store.key-prefix",
            "must be non-blank and must not contain '{' or '}'".into(),
        );
    }
    if ![store::LAYOUT_WHOLE, store::LAYOUT_SPLIT].contains(&k.store.layout) {
        return fail(
            "store.layout",
            format!(
                "must be {} (one document, read by every version) or {} (a header and one field per member \
                 entry), not {}",
                store::LAYOUT_WHOLE,
                store::LAYOUT_SPLIT,
                k.store.layout
            ),
        );
    }
    if k.defaults.initial_shard_count == 0
        || k.defaults.initial_shard_count > rsc_protocol::validate::MAX_SHARD_COUNT
    {
        return fail(
            "defaults.initial-shard-count",
            format!(
                "must be between 1 and {}",
                rsc_protocol::validate::MAX_SHARD_COUNT
            ),
        );
    }
    if k.listen.parse::<std::net::SocketAddr>().is_err() {
        return fail(
            "listen",
            format!("{:?} is not a socket address like 127.0.0.1:8080", k.listen),
        );
    }
    if k.redis_cluster_nodes.is_empty()
        && !k.redis_url.starts_with("redis://")
        && !k.redis_url.starts_with("rediss://")
    {
        return fail(
            "redis-url",
            format!(
                "{:?} must start with redis:// or rediss://",
                rsc_redis_connect::redact_url(&k.redis_url)
            ),
        );
    }
    let addresses = if k.redis_cluster_nodes.is_empty() {
        std::slice::from_ref(&k.redis_url)
    } else {
        &k.redis_cluster_nodes[..]
    };
    redis_options::validate(&k.redis, !k.redis_cluster_nodes.is_empty(), addresses)
        .map_err(ConfigError)?;
    crate::security::config::validate(&k.api, &k.audit).map_err(ConfigError)?;
    for (key, d) in [
        ("http.header-read-timeout", k.http.header_read_timeout),
        ("http.body-read-timeout", k.http.body_read_timeout),
        ("http.idle-timeout", k.http.idle_timeout),
    ] {
        if d.0 < Duration::from_millis(100) {
            return fail(key, "must be at least 100ms".into());
        }
    }
    if k.http.max_connections == 0 {
        return fail("http.max-connections", "must be at least 1".into());
    }
    if k.group.max_members == 0 {
        return fail("group.max-members", "must be at least 1".into());
    }
    if k.group.max_members_per_principal == Some(0) {
        return fail(
            "group.max-members-per-principal",
            "must be at least 1".into(),
        );
    }
    if !(1024..=256 * 1024 * 1024).contains(&k.http.message_page_max_bytes) {
        return fail(
            "http.message-page-max-bytes",
            format!(
                "{} must be between 1024 and 268435456",
                k.http.message_page_max_bytes
            ),
        );
    }
    if !(64 * 1024..=256 * 1024 * 1024).contains(&k.http.heartbeat_max_body_bytes) {
        return fail(
            "http.heartbeat-max-body-bytes",
            format!(
                "{} must be between 65536 and 268435456 (the default, {}, fits a member owning all 16384 \
                 shards of a group and reporting progress for each)",
                k.http.heartbeat_max_body_bytes,
                crate::security::access::DEFAULT_HEARTBEAT_MAX_BODY_BYTES
            ),
        );
    }
    if k.http.max_connections_per_address == 0 {
        return fail(
            "http.max-connections-per-address",
            "must be at least 1".into(),
        );
    }
    k.metrics.validate().map_err(ConfigError)?;
    k.cluster.validate().map_err(ConfigError)?;
    if k.id.trim().is_empty() {
        return fail("id", "must not be blank".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests;
