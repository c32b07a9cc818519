//! Redis connection plumbing shared by the coordinator's store (`rsc-store`) and the SDK (`rsc-client`):
//! TLS options ([`RedisTls`]: a CA file, an optional client certificate and key), building a standalone
//! [`redis::Client`] or a cluster client builder with them ([`standalone_client`], [`cluster_builder`]),
//! cluster seed URLs and the announced-address node map ([`seed_url`], [`parse_node_map`]), and turning a
//! failed TLS connection into a message that says what to check ([`explain`]), and URLs without their
//! passwords for messages ([`redact_url`], [`scrub`]).
//!
//! Only how to reach Redis lives here; what is done over the connection belongs to the store and the SDK.
#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::expect_used)]

mod build;
mod explain;
mod nodes;
mod redact;
mod tls;

pub use build::{ConnectError, cluster_builder, standalone_client};
pub use explain::{connect_hint, explain, explain_connect, tls_hint};
pub use nodes::{parse_node_map, seed_url};
pub use redact::{redact_url, scrub, with_password};
pub use tls::{ENV_CA_FILE, ENV_CERT_FILE, ENV_KEY_FILE, RedisTls, TlsError};
