//! Password hashing with Argon2id (default parameters: 19 MiB, 2 passes, 1 lane), random passwords and
//! random bytes. Hashing and verifying take tens of milliseconds, so async callers use the `*_blocking`
//! forms that run on tokio's blocking pool — at most [`MAX_CONCURRENT_ARGON2`] at a time, since each one
//! holds 19 MiB: unbounded, a burst of Basic-authenticated requests (or an attacker's) took gigabytes.

use argon2::{Argon2, PasswordHash, PasswordHasher, PasswordVerifier};
use base64::Engine;
use std::sync::OnceLock;
use tokio::sync::Semaphore;

/// Argon2 computations allowed at once (each holds 19 MiB); the rest queue.
pub const MAX_CONCURRENT_ARGON2: usize = 2;
static ARGON2_PERMITS: Semaphore = Semaphore::const_new(MAX_CONCURRENT_ARGON2);

/// Hashes a password into an Argon2id PHC string with a fresh random salt.
pub fn hash(password: &str) -> Result<String, String> {
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|h| h.to_string())
        .map_err(|e| format!("cannot hash the password: {e}"))
}

/// Whether `password` matches the PHC string. Malformed hashes never match.
pub fn verify(password: &str, phc: &str) -> bool {
    match PasswordHash::new(phc) {
        Ok(h) => Argon2::default()
            .verify_password(password.as_bytes(), &h)
            .is_ok(),
        Err(_) => false,
    }
}

/// Verifies against `phc`, or — for an unknown user — against a dummy hash, so that the answer takes
/// as long either way and does not reveal which usernames exist.
pub async fn verify_blocking(password: String, phc: Option<String>) -> bool {
    let Ok(_permit) = ARGON2_PERMITS.acquire().await else {
        return false;
    };
    tokio::task::spawn_blocking(move || match phc {
        Some(h) => verify(&password, &h),
        None => {
            let _ = verify(&password, dummy_hash());
            false
        }
    })
    .await
    .unwrap_or(false)
}

pub async fn hash_blocking(password: String) -> Result<String, String> {
    let _permit = ARGON2_PERMITS
        .acquire()
        .await
        .map_err(|e| format!("cannot hash the password: {e}"))?;
    tokio::task::spawn_blocking(move || hash(&password))
        .await
        .map_err(|e| format!("cannot hash the password: {e}"))?
}

fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| hash(&random_token(16)).unwrap_or_default())
}

/// Whether `s` parses as an Argon2id PHC string.
pub fn is_argon2id_hash(s: &str) -> bool {
    PasswordHash::new(s).is_ok_and(|h| h.algorithm.as_str() == "argon2id")
}

/// `n` bytes from the operating system's CSPRNG.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    if getrandom::fill(&mut buf).is_err() {
        // Without an OS random source nothing here can be secure: refuse to continue.
        panic!("the operating system's random number generator is unavailable");
    }
    buf
}

/// A random string of `bytes` random bytes, base64url without padding.
pub fn random_token(bytes: usize) -> String {
    let raw: [u8; 48] = random_bytes();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&raw[..bytes.min(48)])
}

/// A strong generated password (24 characters, 144 bits).
pub fn generate_password() -> String {
    random_token(18)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_salted_argon2id_and_verify() {
        let a = hash("correct horse battery").unwrap();
        let b = hash("correct horse battery").unwrap();
        assert_ne!(a, b, "every hash has its own salt");
        assert!(a.starts_with("$argon2id$") && is_argon2id_hash(&a));
        assert!(verify("correct horse battery", &a));
        assert!(!verify("wrong", &a));
        assert!(!verify("x", "not a hash"));
        assert!(!is_argon2id_hash("$2b$12$abcdefghijklmnopqrstuv"));
    }

    #[test]
    fn generated_passwords_are_long_and_distinct() {
        let (a, b) = (generate_password(), generate_password());
        assert_eq!(a.len(), 24);
        assert_ne!(a, b);
    }
}
