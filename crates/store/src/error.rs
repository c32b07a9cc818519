//! The store's typed errors.
//!
//! Callers must tell apart "Redis is down, retry later" (transient), "the stored metadata is not
//! something we can trust" (fail closed, invariant 7) and "this rsc is too old for the data"
//! (unknown schema/layout). Each gets its own variant so the API layer can map it to the right
//! status and the health report can name the key.

use thiserror::Error;

/// Everything that can go wrong talking to the metadata store.
#[derive(Debug, Error)]
pub enum StoreError {
    /// The address is not a valid Redis URL.
    #[error("invalid Redis address {url}: {source}")]
    InvalidUrl {
        url: String,
        #[source]
        source: redis::RedisError,
    },

    /// Redis could not be reached (connection refused, timed out) when connecting.
    #[error(
        "Redis at {url} is unreachable: {source}. Is it running? \
         For a local test instance start one with: redis-server --port 6379"
    )]
    Unreachable {
        url: String,
        #[source]
        source: redis::RedisError,
    },

    /// The connection options are unusable (a TLS file missing or malformed, TLS options with a plain-text
    /// address, a bad node map entry); nothing was connected.
    #[error("{0}")]
    Connect(rsc_redis_connect::ConnectError),

    /// The TLS handshake failed: the certificate did not verify, named another host, or the port does
    /// not speak TLS. The detail says which.
    #[error("Redis at {url}: TLS connection failed: {detail}")]
    Tls { url: String, detail: String },

    /// A command failed: I/O, timeout, cluster redirection trouble, or a server error.
    #[error("Redis command failed: {0}")]
    Redis(#[from] redis::RedisError),

    /// The group's metadata exists but cannot be trusted (missing or malformed fields, wrong
    /// key type). Never repaired silently: an operator restores it from a backup.
    #[error("corrupt metadata in {key}: {detail}")]
    Corrupt { key: String, detail: String },

    /// The metadata was written with a `schemaVersion` this build does not understand.
    #[error("metadata in {key} has unknown schemaVersion {found:?} (this build reads \"1\")")]
    UnknownSchema { key: String, found: String },

    /// The metadata was written with a `layoutVersion` this build does not understand.
    #[error(
        "metadata in {key} has unknown layoutVersion {found:?} (this build reads \"1\", \"2\" and \"3\")"
    )]
    UnknownLayout { key: String, found: String },

    /// Redis answered with something the store's scripts never return.
    #[error("unexpected reply from Redis: {detail}")]
    UnexpectedReply { detail: String },

    /// The caller passed an argument the store refuses (e.g. a non-positive lease TTL).
    #[error("invalid argument: {detail}")]
    InvalidArgument { detail: String },

    /// A value to be written could not be encoded as JSON; nothing was written.
    #[error("could not encode the {what} as JSON: {source}")]
    Encode {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

impl From<rsc_scripts::ScriptError> for StoreError {
    fn from(e: rsc_scripts::ScriptError) -> Self {
        match e {
            rsc_scripts::ScriptError::UnexpectedReply { detail } => {
                StoreError::UnexpectedReply { detail }
            }
        }
    }
}

impl From<rsc_redis_connect::ConnectError> for StoreError {
    /// A bad address stays [`StoreError::InvalidUrl`]; TLS and node-map problems are [`StoreError::Connect`].
    fn from(e: rsc_redis_connect::ConnectError) -> Self {
        match e {
            rsc_redis_connect::ConnectError::Url { url, source } => {
                StoreError::InvalidUrl { url, source }
            }
            other => StoreError::Connect(other),
        }
    }
}

impl StoreError {
    /// True when retrying the same call later may succeed: Redis unreachable, I/O or timeout,
    /// a cluster in transition, or a server still loading its data. False for corrupt or unknown
    /// data and for caller mistakes, which no retry can fix.
    pub fn is_transient(&self) -> bool {
        match self {
            StoreError::Unreachable { .. } => true,
            StoreError::Redis(e) => is_transient_redis(e),
            StoreError::InvalidUrl { .. }
            | StoreError::Connect(_)
            | StoreError::Tls { .. }
            | StoreError::Corrupt { .. }
            | StoreError::UnknownSchema { .. }
            | StoreError::UnknownLayout { .. }
            | StoreError::UnexpectedReply { .. }
            | StoreError::InvalidArgument { .. }
            | StoreError::Encode { .. } => false,
        }
    }

    /// True when Redis could not be reached at all (refused, dropped, timed out, I/O), as opposed to a refused or
    /// corrupt answer: the coordinator's connection-failure metric counts these.
    pub fn is_connection_failure(&self) -> bool {
        match self {
            StoreError::Unreachable { .. } => true,
            StoreError::Redis(e) => {
                e.is_io_error()
                    || e.is_connection_dropped()
                    || e.is_connection_refusal()
                    || e.is_timeout()
                    || e.is_unrecoverable_error()
            }
            _ => false,
        }
    }

    /// The error's text as a raw Redis call reports it: for a failed command, Redis's own error without the
    /// store's "Redis command failed" prefix; anything else as [`std::fmt::Display`] writes it.
    pub fn cause_text(&self) -> String {
        match self {
            StoreError::Redis(inner) => inner.to_string(),
            other => other.to_string(),
        }
    }

    /// Builds an [`StoreError::UnexpectedReply`].
    pub(crate) fn unexpected(detail: impl Into<String>) -> StoreError {
        StoreError::UnexpectedReply {
            detail: detail.into(),
        }
    }
}

fn is_transient_redis(e: &redis::RedisError) -> bool {
    use redis::{ErrorKind, ServerErrorKind};
    if e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_cluster_error()
    {
        return true;
    }
    matches!(
        e.kind(),
        ErrorKind::ClusterConnectionNotFound
            | ErrorKind::Server(ServerErrorKind::BusyLoading)
            | ErrorKind::Server(ServerErrorKind::MasterDown)
            | ErrorKind::Server(ServerErrorKind::ReadOnly)
            | ErrorKind::Server(ServerErrorKind::TryAgain)
            | ErrorKind::Server(ServerErrorKind::ClusterDown)
    )
}

/// Turns a WRONGTYPE error on one of a group's keys into [`StoreError::Corrupt`]: a group key of
/// the wrong Redis type is damaged metadata, not a Redis failure.
pub(crate) fn on_group_key(key: &str, e: redis::RedisError) -> StoreError {
    // A transaction (a load, a staged write) reports its commands' errors together.
    let wrong_type = e.code() == Some("WRONGTYPE")
        || e.clone()
            .into_server_errors()
            .is_some_and(|errors| errors.iter().any(|(_, s)| s.code() == "WRONGTYPE"));
    if wrong_type {
        StoreError::Corrupt {
            key: key.to_string(),
            detail: format!("a key of this group has the wrong Redis type: {e}"),
        }
    } else {
        StoreError::Redis(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_are_transient_and_data_errors_are_not() {
        let io = redis::RedisError::from(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "refused",
        ));
        assert!(StoreError::Redis(io.clone()).is_transient());
        assert!(
            StoreError::Unreachable {
                url: "redis://127.0.0.1:1".into(),
                source: io
            }
            .is_transient()
        );
        let corrupt = StoreError::Corrupt {
            key: "k".into(),
            detail: "d".into(),
        };
        assert!(!corrupt.is_transient());
        assert!(!StoreError::unexpected("x").is_transient());
    }

    #[test]
    fn a_refused_connection_is_a_connection_failure_and_a_refused_answer_is_not() {
        let io = redis::RedisError::from(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "refused",
        ));
        let failed = StoreError::Redis(io);
        assert!(failed.is_connection_failure());
        assert!(
            !failed.cause_text().starts_with("Redis command failed"),
            "{}",
            failed.cause_text()
        );
        let answer = StoreError::Redis(redis::RedisError::from((
            redis::ErrorKind::Server(redis::ServerErrorKind::ResponseError),
            "refused by the script",
        )));
        assert!(!answer.is_connection_failure());
        assert!(!StoreError::unexpected("x").is_connection_failure());
        assert_eq!(
            StoreError::unexpected("x").cause_text(),
            "unexpected reply from Redis: x"
        );
    }

    #[test]
    fn unreachable_message_says_how_to_start_redis() {
        let io = redis::RedisError::from(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "refused",
        ));
        let e = StoreError::Unreachable {
            url: "redis://127.0.0.1:1".into(),
            source: io,
        };
        let text = e.to_string();
        assert!(text.contains("redis://127.0.0.1:1"), "{text}");
        assert!(text.contains("redis-server --port 6379"), "{text}");
    }
}
