//! `rsc backup`, `rsc restore` and `rsc doctor`: the operator verbs that talk to Redis directly (through
//! `rsc-store`), not to the coordinator. `file.rs` is the backup file format, `take.rs` takes a backup,
//! `restore.rs` writes one back under the runbook's durability rules, `doctor.rs` checks a Redis deployment
//! against the runbook's recommendations. This file holds what they share: arguments, the Redis
//! connection, redaction of credentials in URLs they echo, and one-line errors.

mod checks;
pub mod doctor;
mod file;
pub mod restore;
pub mod take;

use clap::Args;
use rsc_store::{RedisTopology, Store};
use std::time::Duration;

pub use doctor::DoctorArgs;
pub use restore::RestoreArgs;
pub use take::BackupArgs;

/// The coordinator's default `coordinator.store.key-prefix`.
pub const DEFAULT_KEY_PREFIX: &str = "redis-stream:coord";

/// Bound for connecting to Redis and for every command.
const REDIS_TIMEOUT: Duration = Duration::from_secs(5);

pub use crate::operator::{Failure, Output};

/// The Redis a verb talks to.
#[derive(Args, Debug, Clone)]
pub struct RedisArgs {
    /// Redis URL (standalone), e.g. redis://user:password@host:6379. Credentials are never printed.
    #[arg(long, env = "RSC_REDIS_URL")]
    pub redis_url: String,
    /// The coordinator's coordinator.store.key-prefix.
    #[arg(long, default_value = DEFAULT_KEY_PREFIX)]
    pub key_prefix: String,
}

/// The HMAC key of `--key-file`: the file's bytes without trailing whitespace, at least 32 of them, in a file
/// only its owner may read (a key others can read proves nothing).
pub fn read_key_file(path: &std::path::Path) -> Result<Vec<u8>, Failure> {
    let fail = |why: String| Failure::new(format!("--key-file {}: {why}", path.display()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map_err(|e| fail(e.to_string()))?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            return Err(fail(format!(
                "is readable by others (mode {:o}); run chmod 600 on it",
                mode & 0o777
            )));
        }
    }
    let mut key = std::fs::read(path).map_err(|e| fail(e.to_string()))?;
    while key.last().is_some_and(u8::is_ascii_whitespace) {
        key.pop();
    }
    if key.len() < 32 {
        return Err(fail(format!(
            "holds {} bytes; a key needs at least 32 (e.g. head -c 32 /dev/urandom | base64 > key)",
            key.len()
        )));
    }
    Ok(key)
}

/// Connects to the Redis of `url`; errors name the URL with its credentials redacted.
pub async fn connect(url: &str, key_prefix: &str) -> Result<Store, Failure> {
    Store::connect(&RedisTopology::Standalone(url.to_owned()), REDIS_TIMEOUT)
        .await
        .map(|store| store.with_key_prefix(key_prefix))
        .map_err(|e| Failure::new(scrub(&e.to_string(), url)))
}

/// A store error as one line, with the credentials of `url` redacted.
pub fn store_failure(context: &str, e: &rsc_store::StoreError, url: &str) -> Failure {
    Failure::new(format!("{context}: {}", scrub(&e.to_string(), url)))
}

/// `url` with its password (and a username that stands alone) replaced by `***`.
pub fn redact(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            } else if !u.username().is_empty() {
                // redis://secret@host: a lone user-info part is the password (AUTH with one argument).
                let _ = u.set_username("***");
            }
            u.to_string()
        }
        Err(_) => "<the given URL>".to_owned(),
    }
}

/// `text` with every occurrence of `url` replaced by its redacted form, and its password, if any is left.
pub fn scrub(text: &str, url: &str) -> String {
    let mut out = text.replace(url, &redact(url));
    if let Ok(u) = reqwest::Url::parse(url) {
        // The password, or a lone user-info part (which is the password).
        let secret = u.password().unwrap_or(u.username());
        if secret.len() >= 3 {
            out = out.replace(secret, "***");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact("redis://app:s3cret@127.0.0.1:6379/0"),
            "redis://app:***@127.0.0.1:6379/0"
        );
        assert_eq!(
            redact("redis://s3cret@127.0.0.1:6379"),
            "redis://***@127.0.0.1:6379"
        );
        assert_eq!(redact("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert_eq!(redact("not a url s3cret"), "<the given URL>");
        let url = "redis://app:s3cret@127.0.0.1:1";
        let text = format!("Redis at {url} is unreachable (s3cret)");
        assert!(!scrub(&text, url).contains("s3cret"));
    }
}
