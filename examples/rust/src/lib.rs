//! What both examples need to reach rsc: the coordinator's URLs, the Redis that holds the shard streams, and
//! credentials, from the same environment variables (and defaults) as the `rsc` CLI.
#![forbid(unsafe_code)]

use clap::Args;
use rsc_client::{CoordinatorClient, Credentials};

/// Where the coordinator and Redis are, and who we are. Every flag also reads its environment variable.
#[derive(Debug, Args)]
pub struct Connection {
    /// Coordinator URLs, comma-separated: the next is tried when one does not answer.
    #[arg(
        long,
        env = "RSC_COORDINATOR",
        default_value = "http://127.0.0.1:8080",
        value_delimiter = ','
    )]
    pub coordinator: Vec<String>,
    /// The Redis holding the shard streams (the coordinator's Redis).
    #[arg(long, env = "RSC_REDIS_URL", default_value = "redis://127.0.0.1:6379")]
    pub redis_url: String,
    /// A principal of the coordinator: MEMBER for a consumer, READ for a producer's routing (or admin).
    #[arg(long, env = "RSC_USERNAME", default_value = "admin")]
    pub username: String,
    /// Its password; from the environment, so that it stays out of the shell history and `ps`.
    #[arg(long, env = "RSC_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
}

impl Connection {
    /// A coordinator client that logs in with these credentials (and renews its token).
    pub fn coordinator(&self) -> Result<CoordinatorClient, String> {
        let Some(password) = self.password.as_deref().filter(|p| !p.is_empty()) else {
            return Err(format!(
                "no password for {:?}: set RSC_PASSWORD (read -rsp 'Coordinator password: ' RSC_PASSWORD; export RSC_PASSWORD)",
                self.username
            ));
        };
        CoordinatorClient::builder(self.coordinator.iter())
            .credentials(Some(Credentials::new(&self.username, password)))
            .build()
            .map_err(|e| format!("coordinator {}: {e}", self.coordinator.join(",")))
    }
}
