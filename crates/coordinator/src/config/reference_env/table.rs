//! The table of the reference's environment variables: each property (in both of Spring's environment
//! spellings) or variable name, and what it means in rsc.

use super::super::env_name;

/// What one reference variable (or property family, for a prefix row) means in rsc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Meaning {
    /// The same setting, under this rsc key; the value is used as written.
    Key(&'static str),
    /// A Spring `Duration` (`15s`, `PT15S`, or milliseconds) for this rsc key.
    Duration(&'static str),
    /// Milliseconds (the reference's `*-ms` properties) for this rsc duration key.
    Millis(&'static str),
    /// One part of the Redis connection; the parts are composed into one address.
    Redis(RedisPart),
    /// `server.port` or `server.address`: composed into `coordinator.listen`.
    Listen(ListenPart),
    /// `coordinator.store.type`: only `redis` exists here.
    StoreType,
    /// Spring's server TLS: rsc's API does not terminate TLS, so it refuses rather than serve plain HTTP.
    ServerTls,
    /// No meaning in rsc: why, and what to use instead.
    Nothing(&'static str),
    /// Asks for something rsc cannot do: start-up fails with this reason.
    Refused(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum RedisPart {
    Url,
    Host,
    Port,
    Username,
    Password,
    Database,
    Ssl,
    ClusterNodes,
    Timeout,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ListenPart {
    Port,
    Address,
}

/// One row of the table: a reference property (lower-case dotted, matched in both of Spring's environment
/// spellings) or a literal environment variable name (upper case), and whether it names a whole family.
pub(super) struct Row {
    pub(super) name: &'static str,
    pub(super) prefix: bool,
    pub(super) meaning: Meaning,
}

const fn row(name: &'static str, meaning: Meaning) -> Row {
    Row {
        name,
        prefix: false,
        meaning,
    }
}

const fn family(name: &'static str, meaning: Meaning) -> Row {
    Row {
        name,
        prefix: true,
        meaning,
    }
}

const NO_MUTEX: &str =
    "rsc serialises a group's changes by compare-and-set in Redis, not by a mutex";
const NO_MONITORING_CACHE: &str = "rsc has no offset cache or query fan-out settings";
const NO_USERS: &str = "rsc's users carry Argon2id hashes, not passwords, and are set in the TOML file \
    ([[coordinator.api.users]], hashes from `rsc hash-password`)";
const NO_TOKEN_SECRET: &str = "rsc's tokens are random and kept in Redis, not signed with a secret";
const NO_SPRING: &str = "a Spring Boot setting; rsc is not a Spring application";

/// The reference's variables, first match wins (so specific rows come before the families that hold them).
pub(super) const ROWS: &[Row] = &[
    // coordinator.* properties the reference and rsc share (rsc's own spelling is handled before the table;
    // these rows catch Spring's dash-less spelling, and translate Spring durations).
    row(
        "coordinator.heartbeat-interval",
        Meaning::Duration("coordinator.heartbeat-interval"),
    ),
    row(
        "coordinator.member-lease-ttl",
        Meaning::Duration("coordinator.member-lease-ttl"),
    ),
    row(
        "coordinator.stale-member-retention",
        Meaning::Duration("coordinator.stale-member-retention"),
    ),
    row(
        "coordinator.rebalance-timeout",
        Meaning::Duration("coordinator.rebalance-timeout"),
    ),
    row(
        "coordinator.loop.tick-interval",
        Meaning::Duration("coordinator.loop.tick-interval"),
    ),
    row(
        "coordinator.api.admin-username",
        Meaning::Key("coordinator.api.admin-username"),
    ),
    row(
        "coordinator.api.admin-password",
        Meaning::Key("coordinator.api.admin-password"),
    ),
    row(
        "coordinator.api.token-ttl",
        Meaning::Duration("coordinator.api.token-ttl"),
    ),
    row(
        "coordinator.api.authenticate-member-api",
        Meaning::Key("coordinator.api.authenticate-member-api"),
    ),
    row(
        "coordinator.api.rate-limit.enabled",
        Meaning::Key("coordinator.api.rate-limit.enabled"),
    ),
    row(
        "coordinator.api.rate-limit.admin-mutations-per-minute",
        Meaning::Key("coordinator.api.rate-limit.admin-mutations-per-minute"),
    ),
    row(
        "coordinator.store.key-prefix",
        Meaning::Key("coordinator.store.key-prefix"),
    ),
    row(
        "coordinator.streams.provisioning-enabled",
        Meaning::Key("coordinator.streams.provisioning-enabled"),
    ),
    row(
        "coordinator.audit.redis-max-entries",
        Meaning::Key("coordinator.audit.redis-max-entries"),
    ),
    row(
        "coordinator.defaults.initial-shard-count",
        Meaning::Key("coordinator.defaults.initial-shard-count"),
    ),
    row(
        "coordinator.health.redis-timeout-ms",
        Meaning::Millis("coordinator.health.redis-timeout"),
    ),
    // coordinator.* properties that differ or mean nothing here.
    row("coordinator.store.type", Meaning::StoreType),
    row(
        "coordinator.api.token-secret",
        Meaning::Nothing(NO_TOKEN_SECRET),
    ),
    family("coordinator.api.users", Meaning::Nothing(NO_USERS)),
    family("coordinator.coordination", Meaning::Nothing(NO_MUTEX)),
    row(
        "coordinator.health.cache-ttl-ms",
        Meaning::Nothing(
            "rsc's health is computed on each request (a Redis PING bounded by coordinator.health.redis-timeout)",
        ),
    ),
    row(
        "coordinator.audit.sink",
        Meaning::Nothing(
            "rsc writes every audit record both to the log (target rsc::audit) and to the Redis stream <key-prefix>:audit",
        ),
    ),
    row(
        "coordinator.defaults.consumer-max-concurrency",
        Meaning::Nothing("unused by the reference's logic too"),
    ),
    family(
        "coordinator.monitoring",
        Meaning::Nothing(NO_MONITORING_CACHE),
    ),
    // The reference's placeholders in its application.yml.
    row(
        "REDIS_STREAM_COORDINATOR_ADMIN_PASSWORD",
        Meaning::Key("coordinator.api.admin-password"),
    ),
    row(
        "REDIS_STREAM_COORDINATOR_TOKEN_TTL",
        Meaning::Duration("coordinator.api.token-ttl"),
    ),
    row(
        "REDIS_STREAM_COORDINATOR_TOKEN_SECRET",
        Meaning::Nothing(NO_TOKEN_SECRET),
    ),
    // The HTTP server.
    row("server.port", Meaning::Listen(ListenPart::Port)),
    row("server.address", Meaning::Listen(ListenPart::Address)),
    family("server.ssl", Meaning::ServerTls),
    row(
        "server.shutdown",
        Meaning::Nothing(
            "rsc always shuts down gracefully, waiting up to coordinator.shutdown-grace",
        ),
    ),
    row(
        "spring.lifecycle.timeout-per-shutdown-phase",
        Meaning::Duration("coordinator.shutdown-grace"),
    ),
    // Redis.
    row("spring.data.redis.url", Meaning::Redis(RedisPart::Url)),
    row("spring.data.redis.host", Meaning::Redis(RedisPart::Host)),
    row("spring.data.redis.port", Meaning::Redis(RedisPart::Port)),
    row(
        "spring.data.redis.username",
        Meaning::Redis(RedisPart::Username),
    ),
    row(
        "spring.data.redis.password",
        Meaning::Redis(RedisPart::Password),
    ),
    row(
        "spring.data.redis.database",
        Meaning::Redis(RedisPart::Database),
    ),
    row(
        "spring.data.redis.ssl.enabled",
        Meaning::Redis(RedisPart::Ssl),
    ),
    row(
        "spring.data.redis.cluster.nodes",
        Meaning::Redis(RedisPart::ClusterNodes),
    ),
    row(
        "spring.data.redis.timeout",
        Meaning::Redis(RedisPart::Timeout),
    ),
    row(
        "spring.data.redis.connect-timeout",
        Meaning::Redis(RedisPart::Timeout),
    ),
    row(
        "spring.data.redis.ssl.bundle",
        Meaning::Nothing(
            "rsc reads TLS files from coordinator.redis.tls.*, not Spring SSL bundles",
        ),
    ),
    row(
        "spring.data.redis.cluster.max-redirects",
        Meaning::Nothing("rsc follows every MOVED/ASK redirect of a slot migration"),
    ),
    row(
        "spring.data.redis.client-name",
        Meaning::Nothing("rsc does not name its Redis connections"),
    ),
    row(
        "spring.data.redis.client-type",
        Meaning::Nothing("rsc has one Redis client"),
    ),
    family(
        "spring.data.redis.lettuce",
        Meaning::Nothing("a setting of the Java Redis client Lettuce"),
    ),
    family(
        "spring.data.redis.jedis",
        Meaning::Nothing("a setting of the Java Redis client Jedis"),
    ),
    family(
        "spring.data.redis.sentinel",
        Meaning::Refused(
            "rsc cannot follow Redis Sentinel; give it the master's address (COORDINATOR_REDIS_URL) or a Redis Cluster",
        ),
    ),
    family(
        "spring.redis",
        Meaning::Nothing(
            "Spring Boot 2's spelling, which the reference does not read either; use SPRING_DATA_REDIS_* or COORDINATOR_REDIS_URL",
        ),
    ),
    // The rest of a Spring deployment.
    family(
        "management",
        Meaning::Nothing(
            "rsc serves Prometheus metrics at /metrics (coordinator.metrics.listen for a separate listener), health at /healthz and /readyz",
        ),
    ),
    family(
        "logging",
        Meaning::Nothing("rsc's log level is set with RSC_LOG (e.g. RSC_LOG=info,rsc=debug)"),
    ),
    row("JAVA_OPTS", Meaning::Nothing("rsc is not a JVM program")),
    row(
        "JAVA_TOOL_OPTIONS",
        Meaning::Nothing("rsc is not a JVM program"),
    ),
    row(
        "JDK_JAVA_OPTIONS",
        Meaning::Nothing("rsc is not a JVM program"),
    ),
    family("spring", Meaning::Nothing(NO_SPRING)),
];

/// The reference's `coordinator.redis-cluster.node-mappings[i].*` (address rewriting for cluster redirects).
pub(super) const NODE_MAPPINGS: &str = "coordinator.redis-cluster.node-mappings";
pub(super) const MAPPING_FIELDS: [&str; 4] = [
    "advertised-host",
    "advertised-port",
    "connect-host",
    "connect-port",
];
/// Whether `name` is one of the row's environment spellings (or, for a family, starts with one and `_`).
pub(super) fn matches(row: &Row, name: &str) -> bool {
    spellings(row.name).iter().any(|s| {
        name == s
            || (row.prefix
                && name
                    .strip_prefix(s.as_str())
                    .is_some_and(|r| r.starts_with('_')))
    })
}

/// Spring's two environment spellings of a property (dashes removed, and the legacy dashes-as-underscores),
/// or the name itself when the row names a variable.
pub(super) fn spellings(property: &str) -> Vec<String> {
    if property.chars().any(|c| c.is_ascii_uppercase()) {
        return vec![property.to_owned()];
    }
    let canonical = property
        .replace('-', "")
        .replace('.', "_")
        .to_ascii_uppercase();
    let legacy = env_name(property);
    if canonical == legacy {
        vec![legacy]
    } else {
        vec![canonical, legacy]
    }
}
