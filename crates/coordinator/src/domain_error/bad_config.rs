//! Refusals at start: the coordinator's configuration, or the bootstrap admin hash it finds in Redis.

/// What stops the coordinator's security from starting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadConfig {
    /// The admin password could not be hashed.
    PasswordHash {
        /// The hasher's error.
        cause: String,
    },
    /// The bootstrap admin hash vanished between claiming and reading it.
    AdminHashVanished {
        /// Its Redis key.
        key: String,
    },
    /// The bootstrap admin key holds something else than an Argon2id hash.
    NotAnAdminHash {
        /// Its Redis key.
        key: String,
    },
    /// `coordinator.api.trusted-proxies` does not parse.
    TrustedProxies {
        /// Why.
        cause: String,
    },
}

impl std::fmt::Display for BadConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadConfig::PasswordHash { cause } => f.write_str(cause),
            BadConfig::AdminHashVanished { key } => write!(
                f,
                "the bootstrap admin hash at {key} vanished while starting; start again"
            ),
            BadConfig::NotAnAdminHash { key } => write!(
                f,
                "Redis key {key} does not hold an Argon2id hash; delete it to generate a new admin password, or \
                 set RSC_ADMIN_PASSWORD"
            ),
            BadConfig::TrustedProxies { cause } => {
                write!(f, "key `coordinator.api.trusted-proxies`: {cause}")
            }
        }
    }
}
