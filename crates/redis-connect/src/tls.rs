//! TLS options for a Redis connection: a CA file to verify the server with (default: the system's trust
//! store), and a client certificate with its key for mutual TLS. The files are read and checked when a
//! client is built, so a missing, unreadable or malformed file fails start-up with a message naming it.
//! The server's name is always verified against its certificate; there is no option to skip that.

use std::path::{Path, PathBuf};

use redis::{ClientTlsConfig, TlsCertificates};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The environment variable of the CA file (`rsc demo`, `rsc bench`, [`RedisTls::from_env`]).
pub const ENV_CA_FILE: &str = "RSC_REDIS_TLS_CA_FILE";
/// The environment variable of the client certificate file.
pub const ENV_CERT_FILE: &str = "RSC_REDIS_TLS_CERT_FILE";
/// The environment variable of the client key file.
pub const ENV_KEY_FILE: &str = "RSC_REDIS_TLS_KEY_FILE";

/// TLS options of a `rediss://` connection. All PEM files.
///
/// ```
/// use rsc_redis_connect::RedisTls;
/// let tls = RedisTls::new()
///     .ca_file("/etc/rsc/redis-ca.pem")
///     .client_cert("/etc/rsc/client.pem", "/etc/rsc/client-key.pem");
/// assert!(tls.check_pairing().is_ok());
/// assert!(RedisTls::new().cert_file("c.pem").check_pairing().is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RedisTls {
    /// CA certificate(s) the server's certificate must chain to; `None`: the system's trust store.
    pub ca_file: Option<PathBuf>,
    /// Client certificate (chain) for mutual TLS; needs `key_file`.
    pub cert_file: Option<PathBuf>,
    /// The client certificate's private key; needs `cert_file`.
    pub key_file: Option<PathBuf>,
}

/// A TLS option that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Only one of the client certificate and its key was given.
    #[error(
        "a Redis TLS client certificate needs both a certificate file and a key file; {given} is set but {missing} is not"
    )]
    Unpaired {
        given: &'static str,
        missing: &'static str,
    },
    /// A file could not be read.
    #[error("cannot read the Redis TLS {what} {}: {source}", path.display())]
    Read {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file holds no usable PEM object of the kind expected.
    #[error("the Redis TLS {what} {} is not usable: {detail}", path.display())]
    BadPem {
        what: &'static str,
        path: PathBuf,
        detail: String,
    },
    /// TLS options were given for a plain-text `redis://` address.
    #[error("Redis TLS options are set but {url} is a plain-text address: use rediss:// for TLS")]
    PlainUrl { url: String },
}

impl RedisTls {
    /// No files: a `rediss://` URL then verifies the server with the system's trust store.
    pub fn new() -> Self {
        RedisTls::default()
    }

    /// Verify the server with the CA certificate(s) in this PEM file.
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_file = Some(path.into());
        self
    }

    /// The client certificate file (mutual TLS); give [`RedisTls::key_file`] too.
    pub fn cert_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.cert_file = Some(path.into());
        self
    }

    /// The client key file (mutual TLS); give [`RedisTls::cert_file`] too.
    pub fn key_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.key_file = Some(path.into());
        self
    }

    /// The client certificate and its key (mutual TLS).
    pub fn client_cert(self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        self.cert_file(cert).key_file(key)
    }

    /// The options in `RSC_REDIS_TLS_CA_FILE`, `RSC_REDIS_TLS_CERT_FILE` and `RSC_REDIS_TLS_KEY_FILE`
    /// (empty values count as unset); `None` when none is set.
    pub fn from_env() -> Option<RedisTls> {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let tls = RedisTls {
            ca_file: var(ENV_CA_FILE),
            cert_file: var(ENV_CERT_FILE),
            key_file: var(ENV_KEY_FILE),
        };
        (tls != RedisTls::default()).then_some(tls)
    }

    /// Checks that a client certificate comes with its key and a key with its certificate.
    pub fn check_pairing(&self) -> Result<(), TlsError> {
        match (&self.cert_file, &self.key_file) {
            (Some(_), None) => Err(TlsError::Unpaired {
                given: "the certificate file",
                missing: "the key file",
            }),
            (None, Some(_)) => Err(TlsError::Unpaired {
                given: "the key file",
                missing: "the certificate file",
            }),
            _ => Ok(()),
        }
    }

    /// Reads and checks the files: the CA file must hold at least one certificate, the certificate file
    /// a certificate and the key file a private key (PKCS#8, PKCS#1 or SEC1 PEM).
    pub fn load(&self) -> Result<TlsCertificates, TlsError> {
        self.check_pairing()?;
        let root_cert = match &self.ca_file {
            Some(path) => {
                let pem = read("CA file", path)?;
                certificates("CA file", path, &pem)?;
                let mut roots = rustls::RootCertStore::empty();
                for der in CertificateDer::pem_slice_iter(&pem).flatten() {
                    roots.add(der).map_err(|e| TlsError::BadPem {
                        what: "CA file",
                        path: path.clone(),
                        detail: format!("a certificate is not a usable trust anchor: {e}"),
                    })?;
                }
                Some(pem)
            }
            None => None,
        };
        let client_tls = match (&self.cert_file, &self.key_file) {
            (Some(cert), Some(key)) => {
                let client_cert = read("certificate file", cert)?;
                certificates("certificate file", cert, &client_cert)?;
                let client_key = read("key file", key)?;
                PrivateKeyDer::from_pem_slice(&client_key).map_err(|e| TlsError::BadPem {
                    what: "key file",
                    path: key.clone(),
                    detail: format!("no PEM private key in it ({e})"),
                })?;
                Some(ClientTlsConfig {
                    client_cert,
                    client_key,
                })
            }
            _ => None,
        };
        Ok(TlsCertificates {
            client_tls,
            root_cert,
        })
    }
}

fn read(what: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        what,
        path: path.to_owned(),
        source,
    })
}

/// Checks that `pem` holds at least one well-formed PEM certificate; the error names the file.
fn certificates(what: &'static str, path: &Path, pem: &[u8]) -> Result<(), TlsError> {
    let bad = |detail: String| TlsError::BadPem {
        what,
        path: path.to_owned(),
        detail,
    };
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("malformed PEM ({e})")))?;
    if certs.is_empty() {
        return Err(bad(
            "no PEM certificate (-----BEGIN CERTIFICATE-----) in it".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_named() {
        let err = RedisTls::new()
            .ca_file("/nonexistent/ca.pem")
            .load()
            .unwrap_err()
            .to_string();
        assert!(err.contains("CA file /nonexistent/ca.pem"), "{err}");
        assert!(err.contains("No such file"), "{err}");
    }

    #[test]
    fn a_file_without_pem_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, "not a certificate\n").unwrap();
        let err = RedisTls::new().ca_file(&ca).load().unwrap_err().to_string();
        assert!(err.contains("no PEM certificate"), "{err}");
        assert!(err.contains(&ca.display().to_string()), "{err}");
    }

    #[test]
    fn a_certificate_needs_its_key_and_a_key_its_certificate() {
        let cert_only = RedisTls::new().cert_file("c.pem").load().unwrap_err();
        assert!(
            cert_only.to_string().contains("key file is not"),
            "{cert_only}"
        );
        let key_only = RedisTls::new()
            .key_file("k.pem")
            .check_pairing()
            .unwrap_err();
        assert!(
            key_only.to_string().contains("certificate file is not"),
            "{key_only}"
        );
    }
}
