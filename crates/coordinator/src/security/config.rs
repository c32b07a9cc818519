//! The `coordinator.api.*` and `coordinator.audit.*` configuration: users and their Argon2id hashes, the
//! bootstrap admin, token lifetime, credential caching, rate limits, login throttling and trusted proxies.
//!
//! Secure by default: there is no default password (without one rsc generates a random one on first start),
//! heartbeats need the MEMBER role, admin mutations are rate limited, and `X-Forwarded-For` is ignored unless
//! the peer is a configured trusted proxy. Plain-text secrets are wrapped in [`Secret`], whose `Debug` never
//! shows them.

use super::proxies::TrustedProxies;
use super::roles::Role;
use super::scope::Scopes;
use crate::duration::Dur;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::time::Duration;

/// A secret configuration value (a password). `Debug` prints `"<redacted>"`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("\"<redacted>\"")
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // An all-digit password set through the environment arrives as a number.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Text(String),
            Number(u64),
        }
        Ok(Secret(match Raw::deserialize(d)? {
            Raw::Text(t) => t,
            Raw::Number(n) => n.to_string(),
        }))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct ApiConfig {
    /// Lifetime of a token from its password login.
    pub token_ttl: Dur,
    /// Live tokens per user; a login beyond it revokes that user's oldest tokens.
    pub max_tokens_per_user: u32,
    /// Heartbeats need the MEMBER (or ADMIN) role. `false` serves them without authentication (the
    /// reference's default, for closed networks only).
    pub authenticate_member_api: bool,
    /// Whether the bootstrap admin user (all roles) exists.
    pub admin_enabled: bool,
    pub admin_username: String,
    /// The admin's password in plain text (prefer `RSC_ADMIN_PASSWORD` or `admin-password-hash`).
    pub admin_password: Option<Secret>,
    /// The admin's password as an Argon2id PHC string (`rsc hash-password` prints one).
    pub admin_password_hash: Option<String>,
    /// Further users (TOML only: `[[coordinator.api.users]]`).
    pub users: Vec<UserConfig>,
    /// How long a verified credential (token or Basic pair) is trusted without asking Redis or Argon2
    /// again. Bounds how late a revocation on another replica takes effect.
    pub credential_cache_ttl: Dur,
    /// Most cached credentials per replica.
    pub credential_cache_size: usize,
    pub rate_limit: RateLimitConfig,
    pub login_throttle: LoginThrottleConfig,
    /// Peers (IP or CIDR, e.g. `10.0.0.0/8`) whose `X-Forwarded-For` is believed (TOML only).
    pub trusted_proxies: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct UserConfig {
    pub username: String,
    /// Argon2id PHC string, e.g. from `rsc hash-password`.
    pub password_hash: String,
    /// Any of READ, WRITE, MEMBER, ADMIN, MONITOR, DATA_READ (record payloads).
    pub roles: Vec<String>,
    /// When non-empty, the user may only touch streams whose prefix matches one of these patterns:
    /// an exact prefix, or a pattern ending in `*` (`team-a-*`).
    #[serde(default)]
    pub stream_prefixes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct RateLimitConfig {
    pub enabled: bool,
    /// Admin mutations per principal per minute (all replicas together).
    pub admin_mutations_per_minute: u32,
    /// Admin mutations per consumer group (or per stream for stream-level actions) per minute.
    pub group_mutations_per_minute: u32,
    /// Successful sign-ins per principal per minute (all replicas together); one beyond it gets 429 and no
    /// token. Counted only once the password is verified, so nobody else can spend a user's budget.
    pub logins_per_minute: u32,
}

/// Sign-in throttling (see `throttle.rs`). Failures are counted per (username, client address), per client
/// address and per username; counting and checking is one atomic step in Redis, before Argon2 runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct LoginThrottleConfig {
    /// Failed sign-ins for one username from one client address before that address's further attempts
    /// at that username are delayed (`initial-delay`, doubling up to `max-delay`).
    pub failures_before_delay: u32,
    /// Failed sign-ins from one client address, whatever the usernames, before all its attempts are
    /// delayed the same way.
    pub max_failures_per_address: u32,
    /// Ceiling for one username over all client addresses within `window`: beyond it, an address that has
    /// failed for that username gets no further attempt until the window ends. Addresses that have not
    /// failed are never refused. Must stay far above what one address can reach.
    pub max_failures_per_username: u32,
    /// The first delay once a budget is spent; each further failure doubles it.
    pub initial_delay: Dur,
    /// The longest delay.
    pub max_delay: Dur,
    /// How long failures are remembered: an address's and a (username, address) pair's count is forgotten
    /// this long after its last failure; the username ceiling counts failures within windows of this length.
    pub window: Dur,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct AuditConfig {
    /// The audit stream `<key-prefix>:audit` keeps about this many newest records (and so does
    /// `<key-prefix>:audit:rejected`, the stream of refused requests and failed sign-ins).
    pub redis_max_entries: u32,
    /// Refused requests of one client address, principal, action and status within this window are
    /// recorded once, plus one summary with their count when the window ends.
    pub rejection_window: Dur,
    /// Distinct refused-request records per window and replica; the rest share one overflow summary.
    pub max_rejection_records_per_window: u32,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            token_ttl: Dur::from_secs(7 * 24 * 3600),
            max_tokens_per_user: 100,
            authenticate_member_api: true,
            admin_enabled: true,
            admin_username: "admin".to_owned(),
            admin_password: None,
            admin_password_hash: None,
            users: Vec::new(),
            credential_cache_ttl: Dur::from_secs(5),
            credential_cache_size: 10_000,
            rate_limit: RateLimitConfig::default(),
            login_throttle: LoginThrottleConfig::default(),
            trusted_proxies: Vec::new(),
        }
    }
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        RateLimitConfig {
            enabled: true,
            admin_mutations_per_minute: 60,
            group_mutations_per_minute: 60,
            logins_per_minute: 120,
        }
    }
}

impl Default for LoginThrottleConfig {
    fn default() -> Self {
        LoginThrottleConfig {
            failures_before_delay: 5,
            max_failures_per_address: 50,
            max_failures_per_username: 1000,
            initial_delay: Dur(Duration::from_secs(1)),
            max_delay: Dur(Duration::from_secs(300)),
            window: Dur(Duration::from_secs(900)),
        }
    }
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            redis_max_entries: 10_000,
            rejection_window: Dur::from_secs(60),
            max_rejection_records_per_window: 100,
        }
    }
}

/// Checks the security keys; the message names the key.
pub fn validate(api: &ApiConfig, audit: &AuditConfig) -> Result<(), String> {
    let fail = |key: &str, msg: String| Err(format!("key `coordinator.{key}`: {msg}"));
    if api.token_ttl.0 < Duration::from_secs(60) {
        return fail("api.token-ttl", "must be at least 1m".into());
    }
    if api.credential_cache_ttl.0 > Duration::from_secs(300) {
        return fail(
            "api.credential-cache-ttl",
            "must be at most 5m: it bounds how late a revocation takes effect".into(),
        );
    }
    if api.credential_cache_size == 0 {
        return fail("api.credential-cache-size", "must be at least 1".into());
    }
    if api.admin_enabled && !valid_username(&api.admin_username) {
        return fail(
            "api.admin-username",
            "must be 1-64 characters of letters, digits, '.', '_', '-' or '@'".into(),
        );
    }
    if let Some(p) = &api.admin_password
        && p.0.chars().count() < 8
    {
        return fail(
            "api.admin-password",
            "must be at least 8 characters (or leave it unset to have one generated)".into(),
        );
    }
    if let Some(h) = &api.admin_password_hash
        && !super::password::is_argon2id_hash(h)
    {
        return fail(
            "api.admin-password-hash",
            "must be an Argon2id PHC string ($argon2id$…); create one with `rsc hash-password`"
                .into(),
        );
    }
    let too_costly = |h: &str| {
        super::password::argon2_memory_kib(h)
            .is_some_and(|m| m > super::password::MAX_ARGON2_MEMORY_KIB)
    };
    let costly = |m: &str| {
        format!(
            "asks Argon2 for more than 256 MiB per check (m={m} KiB); create a hash with `rsc hash-password` \
             (19 MiB)"
        )
    };
    if let Some(h) = &api.admin_password_hash
        && too_costly(h)
    {
        let m = super::password::argon2_memory_kib(h).unwrap_or_default();
        return fail("api.admin-password-hash", costly(&m.to_string()));
    }
    let mut seen = std::collections::BTreeSet::new();
    for (i, u) in api.users.iter().enumerate() {
        let key = format!("api.users[{i}]");
        if !valid_username(&u.username) {
            return fail(
                &format!("{key}.username"),
                format!(
                    "{:?} must be 1-64 characters of letters, digits, '.', '_', '-' or '@'",
                    u.username
                ),
            );
        }
        if !seen.insert(u.username.as_str())
            || (api.admin_enabled && u.username == api.admin_username)
        {
            return fail(
                &format!("{key}.username"),
                format!("{:?} is defined twice", u.username),
            );
        }
        if !super::password::is_argon2id_hash(&u.password_hash) {
            return fail(
                &format!("{key}.password-hash"),
                "must be an Argon2id PHC string ($argon2id$…); create one with `rsc hash-password`"
                    .into(),
            );
        }
        if too_costly(&u.password_hash) {
            let m = super::password::argon2_memory_kib(&u.password_hash).unwrap_or_default();
            return fail(&format!("{key}.password-hash"), costly(&m.to_string()));
        }
        if u.roles.is_empty() {
            return fail(
                &format!("{key}.roles"),
                "must name at least one of READ, WRITE, MEMBER, ADMIN, MONITOR, DATA_READ".into(),
            );
        }
        for r in &u.roles {
            if Role::parse(r).is_none() {
                return fail(
                    &format!("{key}.roles"),
                    format!(
                        "unknown role {r:?}; use READ, WRITE, MEMBER, ADMIN, MONITOR or DATA_READ"
                    ),
                );
            }
        }
        if let Err(e) = Scopes::parse(&u.stream_prefixes) {
            return fail(&format!("{key}.stream-prefixes"), e);
        }
    }
    if let Err(e) = TrustedProxies::parse(&api.trusted_proxies) {
        return fail("api.trusted-proxies", e);
    }
    let rl = &api.rate_limit;
    if rl.enabled
        && (rl.admin_mutations_per_minute == 0
            || rl.group_mutations_per_minute == 0
            || rl.logins_per_minute == 0)
    {
        return fail(
            "api.rate-limit",
            "limits must be at least 1 per minute (set enabled = false to turn limiting off)"
                .into(),
        );
    }
    if api.max_tokens_per_user == 0 || api.max_tokens_per_user > 100_000 {
        return fail(
            "api.max-tokens-per-user",
            format!("{} must be between 1 and 100000", api.max_tokens_per_user),
        );
    }
    validate_throttle(&api.login_throttle)?;
    if audit.redis_max_entries < 100 {
        return fail("audit.redis-max-entries", "must be at least 100".into());
    }
    if audit.rejection_window.0 < Duration::from_secs(1) {
        return fail("audit.rejection-window", "must be at least 1s".into());
    }
    if audit.max_rejection_records_per_window == 0 {
        return fail(
            "audit.max-rejection-records-per-window",
            "must be at least 1".into(),
        );
    }
    Ok(())
}

fn validate_throttle(lt: &LoginThrottleConfig) -> Result<(), String> {
    let fail =
        |key: &str, msg: String| Err(format!("key `coordinator.api.login-throttle.{key}`: {msg}"));
    if lt.failures_before_delay == 0 {
        return fail("failures-before-delay", "must be at least 1".into());
    }
    if lt.max_failures_per_address == 0 {
        return fail("max-failures-per-address", "must be at least 1".into());
    }
    if lt.initial_delay.0 < Duration::from_millis(10) {
        return fail("initial-delay", "must be at least 10ms".into());
    }
    if lt.max_delay.0 < lt.initial_delay.0 {
        return fail("max-delay", "must be at least initial-delay".into());
    }
    if lt.window.0 <= lt.max_delay.0 {
        return fail(
            "window",
            format!(
                "must be longer than max-delay ({}): otherwise failures are forgotten while a client waits \
                 out its delay",
                humantime::format_duration(lt.max_delay.0)
            ),
        );
    }
    let reach = lt.reach_per_address();
    let floor = reach.saturating_mul(10);
    if u64::from(lt.max_failures_per_username) < floor {
        return fail(
            "max-failures-per-username",
            format!(
                "{} is too low: it is the ceiling for one username over all client addresses, and one address \
                 can reach {reach} failures within `window`, so it must be at least {floor} (10 times that) \
                 for no single address to lock a user out. Guessing from one address is limited by \
                 failures-before-delay and the delays",
                lt.max_failures_per_username
            ),
        );
    }
    Ok(())
}

impl LoginThrottleConfig {
    /// The delay after the `n`-th failure of a budget of `free` (0 while within it).
    pub fn delay_ms(&self, n: u64, free: u64) -> u64 {
        if n < free {
            return 0;
        }
        let initial = u64::try_from(self.initial_delay.0.as_millis()).unwrap_or(u64::MAX);
        let max = u64::try_from(self.max_delay.0.as_millis()).unwrap_or(u64::MAX);
        let doublings = u32::try_from((n - free).min(63)).unwrap_or(63);
        initial.saturating_mul(1u64 << doublings).min(max)
    }

    /// The most failures one client address can add to a username's count within one `window`: its free
    /// budget, then one per delay that fits.
    pub fn reach_per_address(&self) -> u64 {
        let free = u64::from(self.failures_before_delay);
        let window = u64::try_from(self.window.0.as_millis()).unwrap_or(u64::MAX);
        let (mut n, mut spent) = (free, 0u64);
        loop {
            spent = spent.saturating_add(self.delay_ms(n, free));
            if spent > window {
                return n;
            }
            n += 1;
        }
    }
}

/// Usernames: 1-64 of `[A-Za-z0-9._@-]` (they appear in Redis keys and logs).
pub fn valid_username(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'))
}

#[cfg(test)]
mod argon2_cost_tests {
    use super::*;

    #[test]
    fn a_hash_asking_for_more_than_256_mib_is_refused_at_start_up() {
        let mut api = ApiConfig::default();
        let salt = "c29tZXNhbHRzb21lc2FsdA";
        let hash = "aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g";
        api.admin_password_hash = Some(format!("$argon2id$v=19$m=4194304,t=1,p=1${salt}${hash}"));
        let e = validate(&api, &AuditConfig::default()).unwrap_err();
        assert!(
            e.contains("admin-password-hash") && e.contains("256 MiB"),
            "{e}"
        );
        api.admin_password_hash = Some(format!("$argon2id$v=19$m=19456,t=2,p=1${salt}${hash}"));
        assert!(validate(&api, &AuditConfig::default()).is_ok());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_show_in_debug_output() {
        let c = ApiConfig {
            admin_password: Some(Secret("hunter2-very-secret".into())),
            ..ApiConfig::default()
        };
        let shown = format!("{c:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("<redacted>"));
    }

    #[test]
    fn defaults_are_secure() {
        let c = ApiConfig::default();
        assert!(c.authenticate_member_api);
        assert!(c.admin_password.is_none() && c.admin_password_hash.is_none());
        assert!(c.rate_limit.enabled);
        assert_eq!(c.token_ttl.0, Duration::from_secs(604_800));
        assert!(c.trusted_proxies.is_empty());
        assert_eq!(validate(&c, &AuditConfig::default()), Ok(()));
    }

    #[test]
    fn throttle_delays_double_up_to_the_cap_and_the_username_ceiling_must_stay_out_of_reach() {
        let lt = LoginThrottleConfig::default();
        let d: Vec<u64> = (0..16).map(|n| lt.delay_ms(n, 5)).collect();
        assert_eq!(&d[..5], &[0; 5]);
        assert_eq!(&d[5..10], &[1_000, 2_000, 4_000, 8_000, 16_000]);
        assert_eq!(d[13], 256_000);
        assert_eq!(d[14], 300_000, "capped at max-delay");
        assert_eq!(lt.delay_ms(u64::MAX, 5), 300_000);
        // 5 free, then 1+2+…+256 s = 511 s and one 300 s delay fit in 15 minutes.
        assert_eq!(lt.reach_per_address(), 15);
        let a = AuditConfig::default();
        let with = |f: &dyn Fn(&mut LoginThrottleConfig)| {
            let mut c = ApiConfig::default();
            f(&mut c.login_throttle);
            validate(&c, &a)
        };
        // The old meaning (a lock-out after 10 failures from anywhere) is refused with the reason.
        let err = with(&|t| t.max_failures_per_username = 10).unwrap_err();
        assert!(
            err.contains("login-throttle.max-failures-per-username")
                && err.contains("at least 150"),
            "{err}"
        );
        assert_eq!(with(&|t| t.max_failures_per_username = 150), Ok(()));
        let err = with(&|t| t.window = Dur(Duration::from_secs(60))).unwrap_err();
        assert!(err.contains("login-throttle.window"), "{err}");
        let err = with(&|t| t.failures_before_delay = 0).unwrap_err();
        assert!(err.contains("failures-before-delay"), "{err}");
        let err = with(&|t| t.max_delay = Dur(Duration::from_millis(10))).unwrap_err();
        assert!(err.contains("max-delay"), "{err}");
        let c = ApiConfig {
            max_tokens_per_user: 0,
            ..ApiConfig::default()
        };
        assert!(
            validate(&c, &a)
                .unwrap_err()
                .contains("api.max-tokens-per-user")
        );
    }

    #[test]
    fn bad_users_name_the_key() {
        let user = |roles: &[&str], hash: &str, scopes: &[&str]| ApiConfig {
            users: vec![UserConfig {
                username: "team-a".into(),
                password_hash: hash.into(),
                roles: roles.iter().map(|s| s.to_string()).collect(),
                stream_prefixes: scopes.iter().map(|s| s.to_string()).collect(),
            }],
            ..ApiConfig::default()
        };
        let a = AuditConfig::default();
        let err = validate(&user(&["READ"], "plain", &[]), &a).unwrap_err();
        assert!(err.contains("api.users[0].password-hash"), "{err}");
        let good = super::super::password::hash("correct horse").unwrap();
        let err = validate(&user(&["OWNER"], &good, &[]), &a).unwrap_err();
        assert!(
            err.contains("api.users[0].roles") && err.contains("OWNER"),
            "{err}"
        );
        let err = validate(&user(&["READ"], &good, &["a*b"]), &a).unwrap_err();
        assert!(err.contains("api.users[0].stream-prefixes"), "{err}");
        assert_eq!(
            validate(&user(&["WRITE"], &good, &["team-a-*"]), &a),
            Ok(())
        );
    }
}
