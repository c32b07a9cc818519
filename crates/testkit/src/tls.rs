//! A real `redis-server` speaking TLS, with certificates made for the test.
//!
//! [`TlsCerts`] generates, in a temp directory, a CA, a server certificate for `localhost` and
//! `127.0.0.1` (not `127.0.0.2`, so connecting there is a server-name mismatch), a client certificate for
//! mutual TLS, and a second, unrelated CA that verifies nothing here. [`TlsRedis`] starts a TLS-only
//! server (no plain-text port, listening on 127.0.0.1 and 127.0.0.2), so one process serves the working
//! case and the failure cases: a wrong CA, a wrong name. A plain-text Redis behind a `rediss://` URL is
//! an ordinary [`RedisServer`]; a TLS cluster is [`crate::RedisClusterBuilder::tls`].

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};

use crate::RedisServer;

/// PEM files for a TLS test, in a temp directory removed on drop.
#[derive(Debug)]
pub struct TlsCerts {
    dir: tempfile::TempDir,
}

impl TlsCerts {
    /// Generates the CA, server and client certificates and the unrelated CA. Panics if it cannot.
    pub fn generate() -> TlsCerts {
        let dir = tempfile::Builder::new()
            .prefix("rsc-tls-")
            .tempdir()
            .expect("temp dir for certificates");
        let write = |name: &str, text: String| {
            std::fs::write(dir.path().join(name), text)
                .unwrap_or_else(|e| panic!("cannot write {name}: {e}"));
        };
        let (ca, ca_key) = new_ca("rsc test CA");
        write("ca.pem", ca.pem());
        let (other, _) = new_ca("unrelated test CA");
        write("other-ca.pem", other.pem());
        for (name, names, usage) in [
            (
                "server",
                vec!["localhost".to_owned(), "127.0.0.1".to_owned()],
                ExtendedKeyUsagePurpose::ServerAuth,
            ),
            (
                "client",
                vec!["rsc-test-client".to_owned()],
                ExtendedKeyUsagePurpose::ClientAuth,
            ),
        ] {
            let mut params = CertificateParams::new(names).expect("certificate names");
            params.distinguished_name.push(DnType::CommonName, name);
            params.extended_key_usages = vec![usage];
            let key = KeyPair::generate().expect("key pair");
            let cert = params.signed_by(&key, &ca, &ca_key).expect("sign");
            write(&format!("{name}.pem"), cert.pem());
            write(&format!("{name}-key.pem"), key.serialize_pem());
        }
        TlsCerts { dir }
    }

    /// The CA that signed the server and client certificates.
    pub fn ca_file(&self) -> PathBuf {
        self.path("ca.pem")
    }

    /// A CA that signed nothing here (a server verified with it fails).
    pub fn other_ca_file(&self) -> PathBuf {
        self.path("other-ca.pem")
    }

    /// The client certificate (mutual TLS).
    pub fn client_cert_file(&self) -> PathBuf {
        self.path("client.pem")
    }

    /// The client certificate's key.
    pub fn client_key_file(&self) -> PathBuf {
        self.path("client-key.pem")
    }

    /// `redis-server` options serving with these certificates (the server certificate, the CA clients
    /// are checked against, `--tls-auth-clients yes|no`), for [`crate::RedisServerBuilder::tls_only`].
    /// Cluster nodes and replicas also connect to each other with the server certificate.
    pub fn server_args(&self, client_certs_required: bool) -> Vec<String> {
        let file = |name: &str| self.path(name).display().to_string();
        vec![
            "--tls-cert-file".to_owned(),
            file("server.pem"),
            "--tls-key-file".to_owned(),
            file("server-key.pem"),
            "--tls-ca-cert-file".to_owned(),
            file("ca.pem"),
            "--tls-auth-clients".to_owned(),
            if client_certs_required { "yes" } else { "no" }.to_owned(),
        ]
    }

    /// The directory holding the files.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn new_ca(name: &str) -> (rcgen::Certificate, KeyPair) {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate().expect("CA key pair");
    let cert = params.self_signed(&key).expect("self-signed CA");
    (cert, key)
}

/// A TLS-only `redis-server` (no plain-text port: see [`crate::RedisServerBuilder::tls_only`]), killed on
/// drop. It listens on 127.0.0.1 and 127.0.0.2, the second being a name its certificate does not carry.
#[derive(Debug)]
pub struct TlsRedis {
    server: RedisServer,
    certs: TlsCerts,
}

impl TlsRedis {
    /// Starts a server on fresh certificates; with `client_certs_required` it refuses clients without a
    /// certificate signed by the CA (`--tls-auth-clients yes`).
    pub fn start(client_certs_required: bool) -> TlsRedis {
        let certs = TlsCerts::generate();
        let server = RedisServer::builder()
            .tls_only(certs.server_args(client_certs_required))
            .args(["--bind", "127.0.0.1", "127.0.0.2"])
            .start();
        TlsRedis { server, certs }
    }

    /// `rediss://127.0.0.1:<tls port>` (the name the server certificate carries).
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// `rediss://127.0.0.2:<tls port>`: the same server under a name its certificate does not carry.
    pub fn url_with_wrong_name(&self) -> String {
        format!("rediss://127.0.0.2:{}", self.server.port())
    }

    /// The Unix socket, to look at the data without TLS (`redis-cli -s`).
    pub fn unix_socket(&self) -> PathBuf {
        self.server
            .unix_socket()
            .expect("a TLS-only server has a Unix socket")
    }

    /// The TLS port.
    pub fn tls_port(&self) -> u16 {
        self.server.port()
    }

    /// The certificates the server was started with.
    pub fn certs(&self) -> &TlsCerts {
        &self.certs
    }

    /// The server process (log tail, restart).
    pub fn server(&self) -> &RedisServer {
        &self.server
    }
}
