//! `ClientError`: every way an SDK call can fail, typed so applications can decide what to retry.
//!
//! The split that matters to callers is [`ClientError::is_retryable`]: transport trouble, a coordinator
//! that is down or overloaded, and an expired routing lease are worth retrying later; bad input,
//! missing groups and rejected credentials are not.

use std::fmt;

/// An SDK error.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The SDK was configured with a value it cannot use (the message names the setting).
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// No coordinator URL could be reached (every configured URL was tried).
    #[error("coordinator unreachable: {0}")]
    Unreachable(String),
    /// The coordinator rejected the credentials (HTTP 401).
    #[error(
        "coordinator rejected the credentials (HTTP 401) at {url}; check the username and password"
    )]
    Unauthorized {
        /// The URL that answered 401.
        url: String,
    },
    /// The credentials lack the role the call needs (HTTP 403).
    #[error("the principal lacks the role needed for {url} (HTTP 403)")]
    Forbidden {
        /// The URL that answered 403.
        url: String,
    },
    /// The coordinator answered with a contract error body (`errorCode` + message).
    #[error("coordinator answered HTTP {status}{}: {message}", code_suffix(.error_code))]
    Api {
        /// The HTTP status.
        status: u16,
        /// The body's `errorCode` (e.g. `GROUP_NOT_FOUND`), when it had one.
        error_code: Option<String>,
        /// The body's `message`, or (the start of) the body itself when it was not an error body.
        message: String,
    },
    /// The coordinator answered something that does not follow the wire contract.
    #[error("unexpected coordinator response: {0}")]
    Protocol(String),
    /// The TLS connection to Redis failed: the server's certificate did not verify or named another host,
    /// the server wanted a client certificate, or the port does not speak TLS (the message says which).
    #[error("redis: {0}")]
    RedisTls(String),
    /// A Redis command failed.
    #[error("redis error: {0}")]
    Redis(#[from] redis::RedisError),
    /// The routing cache has expired and could not be refreshed: publishing fails closed. Retry later.
    #[error(
        "producer routing for {stream_prefix}/{consumer_group} expired and could not be refreshed: {reason}"
    )]
    RoutingUnavailable {
        /// The producer's stream.
        stream_prefix: String,
        /// The group whose routing the producer reads.
        consumer_group: String,
        /// Why the refresh failed.
        reason: String,
    },
    /// A scale had producers quiesced for longer than the publish timeout: the publish did not start.
    #[error(
        "publishing to {stream_prefix} is paused while scale {resharding_id} waits for producers to quiesce; waited {waited:?}"
    )]
    Quiesced {
        /// The producer's stream.
        stream_prefix: String,
        /// The scale that waits for producers.
        resharding_id: String,
        /// How long the publish waited before giving up.
        waited: std::time::Duration,
    },
    /// The stream currently has zero shards: there is nowhere to publish (fails closed).
    #[error("stream {stream_prefix} has no shards (shardCount 0); nothing can be published")]
    NoShards {
        /// The producer's stream.
        stream_prefix: String,
    },
    /// The shard stream is missing even after refreshing the routing once (`XADD … NOMKSTREAM` gave nil).
    #[error(
        "shard stream {stream_key} does not exist even after a routing refresh; is the group provisioned?"
    )]
    StreamMissing {
        /// The missing shard stream.
        stream_key: String,
    },
    /// Every attempt was refused because the routing in use was older than the shard's routing boundary (a
    /// scale switched routing and the refreshed routing was still the old one). Nothing was written.
    #[error(
        "append to {stream_key} refused: routing version {routing_version} is older than the shard's boundary {floor}, even after refreshing routing"
    )]
    StaleRouting {
        /// The shard stream that refused the append.
        stream_key: String,
        /// The routing version the producer appended with.
        routing_version: i64,
        /// The shard's boundary: the lowest routing version it accepts.
        floor: i64,
    },
    /// Every attempt was refused because the routing in use was newer than any the coordinator published for
    /// the stream (the shard's routing ceiling). Nothing was written.
    #[error(
        "append to {stream_key} refused: routing version {routing_version} is newer than any the coordinator published ({ceiling}), even after refreshing routing"
    )]
    RoutingAhead {
        /// The shard stream that refused the append.
        stream_key: String,
        /// The routing version the producer appended with.
        routing_version: i64,
        /// The highest routing version the coordinator published for the stream.
        ceiling: i64,
    },
    /// The client was shut down.
    #[error("the client has been shut down")]
    Shutdown,
}

fn code_suffix(code: &Option<String>) -> String {
    code.as_ref().map(|c| format!(" {c}")).unwrap_or_default()
}

impl ClientError {
    /// Whether trying the same call again later may succeed without any change by the caller.
    pub fn is_retryable(&self) -> bool {
        match self {
            ClientError::Unreachable(_)
            | ClientError::RoutingUnavailable { .. }
            | ClientError::Quiesced { .. }
            | ClientError::StreamMissing { .. }
            | ClientError::StaleRouting { .. }
            | ClientError::RoutingAhead { .. } => true,
            ClientError::Api { status, .. } => *status == 429 || *status >= 500 || *status == 409,
            ClientError::Redis(e) => {
                e.is_io_error()
                    || e.is_timeout()
                    || e.is_connection_dropped()
                    || e.is_cluster_error()
            }
            _ => false,
        }
    }

    /// The contract `errorCode`, when the coordinator sent one.
    pub fn error_code(&self) -> Option<&str> {
        match self {
            ClientError::Api { error_code, .. } => error_code.as_deref(),
            _ => None,
        }
    }
}

/// A short, secret-free description of a reqwest error for messages.
pub(crate) struct TransportError<'a>(pub &'a reqwest::Error);

impl fmt::Display for TransportError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = self.0;
        let kind = if e.is_timeout() {
            "timed out"
        } else if e.is_connect() {
            "connection failed"
        } else if e.is_decode() || e.is_body() {
            "bad response body"
        } else {
            "request failed"
        };
        // URLs never carry credentials in this SDK (auth goes in headers), so the error text is safe to show.
        write!(f, "{kind}: {e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_classification() {
        assert!(ClientError::Unreachable("x".into()).is_retryable());
        assert!(
            ClientError::Api {
                status: 503,
                error_code: Some("REDIS_UNAVAILABLE".into()),
                message: "m".into()
            }
            .is_retryable()
        );
        assert!(
            !ClientError::Api {
                status: 404,
                error_code: Some("GROUP_NOT_FOUND".into()),
                message: "m".into()
            }
            .is_retryable()
        );
        assert!(!ClientError::Unauthorized { url: "u".into() }.is_retryable());
        assert!(
            ClientError::RoutingUnavailable {
                stream_prefix: "p".into(),
                consumer_group: "g".into(),
                reason: "down".into()
            }
            .is_retryable()
        );
    }

    #[test]
    fn api_error_message_names_the_code() {
        let e = ClientError::Api {
            status: 404,
            error_code: Some("GROUP_NOT_FOUND".into()),
            message: "no such group".into(),
        };
        assert_eq!(
            e.to_string(),
            "coordinator answered HTTP 404 GROUP_NOT_FOUND: no such group"
        );
        assert_eq!(e.error_code(), Some("GROUP_NOT_FOUND"));
    }
}
