//! Building clients: a standalone [`redis::Client`] or a [`ClusterClientBuilder`], with the TLS options
//! applied. TLS options need `rediss://` addresses (host:port cluster seeds become `rediss://` when TLS
//! options are given); a `rediss://` address without options verifies the server with the system's trust
//! store. Server-name verification is always on.

use std::collections::BTreeMap;
use std::sync::Once;

use redis::cluster::{ClusterClient, ClusterClientBuilder};

use crate::nodes::{parse_node_map, seed_url};
use crate::tls::{RedisTls, TlsError};

/// Why a client could not be built (nothing was connected yet).
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// A TLS option is unusable (file missing, malformed, unpaired, or a plain-text address).
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The address is not a Redis URL the client accepts.
    #[error("invalid Redis address {url}: {source}")]
    Url {
        url: String,
        #[source]
        source: redis::RedisError,
    },
    /// A cluster node map entry is not `host:port`.
    #[error("{0}")]
    NodeMap(String),
}

/// A client for one standalone Redis at `url`, with `tls` applied (the files are read now).
pub fn standalone_client(url: &str, tls: Option<&RedisTls>) -> Result<redis::Client, ConnectError> {
    let bad_url = |source| ConnectError::Url {
        url: crate::redact_url(url),
        source,
    };
    match tls {
        Some(tls) => {
            if !url.starts_with("rediss://") {
                return Err(TlsError::PlainUrl {
                    url: crate::redact_url(url),
                }
                .into());
            }
            let certs = tls.load()?;
            install_crypto_provider();
            redis::Client::build_with_tls(url, certs).map_err(bad_url)
        }
        None => {
            if url.starts_with("rediss://") {
                install_crypto_provider();
            }
            redis::Client::open(url).map_err(bad_url)
        }
    }
}

/// A cluster client builder for these seed nodes (`host:port` or URLs), node map and TLS options. The
/// caller adds its timeouts and builds.
pub fn cluster_builder(
    nodes: &[String],
    node_map: &BTreeMap<String, String>,
    tls: Option<&RedisTls>,
) -> Result<ClusterClientBuilder, ConnectError> {
    let seeds: Vec<String> = nodes.iter().map(|n| seed_url(n, tls.is_some())).collect();
    for seed in &seeds {
        redis::Client::open(seed.as_str()).map_err(|source| ConnectError::Url {
            url: crate::redact_url(seed),
            source,
        })?;
        if tls.is_some() && !seed.starts_with("rediss://") {
            return Err(TlsError::PlainUrl {
                url: crate::redact_url(seed),
            }
            .into());
        }
    }
    let map = parse_node_map(node_map).map_err(ConnectError::NodeMap)?;
    let mut builder =
        ClusterClient::builder(seeds.iter().map(String::as_str)).node_address_map(map);
    if let Some(tls) = tls {
        builder = builder.certs(tls.load()?);
    }
    if seeds.iter().any(|s| s.starts_with("rediss://")) {
        install_crypto_provider();
    }
    Ok(builder)
}

/// The redis client's rustls asks for the process-wide crypto provider; more than one may be compiled in
/// (reqwest's), so one is installed explicitly. Installing fails harmlessly when one already is.
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_options_need_a_rediss_address() {
        let tls = RedisTls::new().ca_file("/nonexistent/ca.pem");
        let err = standalone_client("redis://127.0.0.1:6379", Some(&tls)).unwrap_err();
        assert!(err.to_string().contains("use rediss://"), "{err}");
        let err = cluster_builder(
            &["redis://127.0.0.1:7000".into()],
            &BTreeMap::new(),
            Some(&tls),
        )
        .unwrap_err();
        assert!(err.to_string().contains("use rediss://"), "{err}");
    }

    #[test]
    fn a_rediss_address_without_options_uses_the_system_store() {
        assert!(standalone_client("rediss://127.0.0.1:6380", None).is_ok());
        let tls = RedisTls::new().ca_file("/nonexistent/ca.pem");
        let err = standalone_client("rediss://127.0.0.1:6380", Some(&tls)).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/ca.pem"), "{err}");
    }
}
