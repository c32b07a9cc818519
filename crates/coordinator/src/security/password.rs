//! Password hashing with Argon2id (default parameters: 19 MiB, 2 passes, 1 lane), random passwords and
//! random bytes. [`hash`] and [`verify`] allocate their own working memory and are for start-up and tests;
//! the request path verifies through [`Phc::verify_in`], which computes into memory the caller provides
//! (see `verifier.rs`: a small pool of reused areas, so failed logins cannot make the process hold more
//! memory — each fresh 19 MiB allocation used to stay in the allocator's arenas).

use argon2::{
    Algorithm, Argon2, Block, Params, PasswordHash, PasswordHasher, PasswordVerifier, Version,
};
use base64::Engine;
use tokio::sync::Semaphore;

/// Hashing at start-up (the bootstrap admin) runs one at a time.
static HASH_PERMITS: Semaphore = Semaphore::const_new(1);

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

pub async fn hash_blocking(password: String) -> Result<String, String> {
    let _permit = HASH_PERMITS
        .acquire()
        .await
        .map_err(|e| format!("cannot hash the password: {e}"))?;
    tokio::task::spawn_blocking(move || hash(&password))
        .await
        .map_err(|e| format!("cannot hash the password: {e}"))?
}

/// A parsed Argon2 PHC string: everything needed to recompute the hash into caller-provided memory.
#[derive(Clone)]
pub struct Phc {
    algorithm: Algorithm,
    version: Version,
    params: Params,
    salt: Vec<u8>,
    expected: Vec<u8>,
}

impl std::fmt::Debug for Phc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Phc")
            .field("algorithm", &self.algorithm)
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl Phc {
    /// Parses an Argon2 (i, d or id) PHC string; None when it is not one or lacks a salt or hash.
    pub fn parse(phc: &str) -> Option<Phc> {
        let h = PasswordHash::new(phc).ok()?;
        let algorithm = Algorithm::try_from(h.algorithm.as_str()).ok()?;
        let version = match h.version {
            Some(v) => Version::try_from(v).ok()?,
            None => Version::default(),
        };
        let params = Params::try_from(&h).ok()?;
        let salt: &[u8] = h.salt.as_ref()?;
        let expected = h.hash.as_ref()?.as_bytes().to_vec();
        Some(Phc {
            algorithm,
            version,
            params,
            salt: salt.to_vec(),
            expected,
        })
    }

    /// A stand-in for unknown usernames: default parameters, a random salt and a random hash that no
    /// password matches, so that checking a wrong username costs as much as checking a wrong password.
    pub fn unmatchable() -> Phc {
        let salt: [u8; 16] = random_bytes();
        let expected: [u8; 32] = random_bytes();
        Phc {
            algorithm: Algorithm::Argon2id,
            version: Version::default(),
            params: Params::default(),
            salt: salt.to_vec(),
            expected: expected.to_vec(),
        }
    }

    /// The 1 KiB blocks of working memory this hash needs (its `m` parameter).
    pub fn memory_blocks(&self) -> usize {
        self.params.block_count()
    }

    /// Whether `password` matches, computing in `memory` (at least [`Phc::memory_blocks`] long; a shorter
    /// area never matches). Compares in constant time.
    pub fn verify_in(&self, password: &[u8], memory: &mut [Block]) -> bool {
        let Some(area) = memory.get_mut(..self.memory_blocks()) else {
            return false;
        };
        let mut out = vec![0u8; self.expected.len()];
        let argon = Argon2::new(self.algorithm, self.version, self.params.clone());
        if argon
            .hash_password_into_with_memory(password, &self.salt, &mut out, area)
            .is_err()
        {
            return false;
        }
        let diff = out
            .iter()
            .zip(&self.expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(diff) == 0
    }
}

/// A zeroed working area of `blocks` Argon2 blocks.
pub fn memory_area(blocks: usize) -> Box<[Block]> {
    vec![Block::new(); blocks].into_boxed_slice()
}

/// Whether `s` parses as an Argon2id PHC string.
pub fn is_argon2id_hash(s: &str) -> bool {
    PasswordHash::new(s).is_ok_and(|h| h.algorithm.as_str() == "argon2id")
}

/// The most memory a configured Argon2id hash may ask for per check (KiB): 256 MiB. A hash with a larger
/// `m` would make every sign-in of that user allocate it (issue #32, Low).
pub const MAX_ARGON2_MEMORY_KIB: u32 = 256 * 1024;

/// The memory cost (`m`, KiB) an Argon2 PHC string asks for, if it says.
pub fn argon2_memory_kib(s: &str) -> Option<u32> {
    PasswordHash::new(s).ok()?.params.get_decimal("m")
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
    fn verifying_in_reused_memory_agrees_with_the_library() {
        let default = hash("correct horse battery").unwrap();
        // Other parameters too (small memory, two lanes, three passes; Argon2i).
        let small = Argon2::new(
            Algorithm::Argon2i,
            Version::V0x13,
            Params::new(64, 3, 2, Some(24)).unwrap(),
        )
        .hash_password(b"correct horse battery")
        .unwrap()
        .to_string();
        let mut area = memory_area(Params::default().block_count());
        for _ in 0..2 {
            for phc in [&default, &small] {
                let p = Phc::parse(phc).unwrap();
                assert!(p.verify_in(b"correct horse battery", &mut area), "{phc}");
                assert!(!p.verify_in(b"correct horse batterz", &mut area), "{phc}");
                assert!(verify("correct horse battery", phc));
            }
        }
        let p = Phc::parse(&default).unwrap();
        assert_eq!(p.memory_blocks(), 19 * 1024);
        assert!(
            !p.verify_in(b"correct horse battery", &mut area[..100]),
            "too little memory never matches"
        );
        assert!(Phc::parse("not a hash").is_none());
        let u = Phc::unmatchable();
        assert!(!u.verify_in(b"", &mut area));
    }

    #[test]
    fn generated_passwords_are_long_and_distinct() {
        let (a, b) = (generate_password(), generate_password());
        assert_eq!(a.len(), 24);
        assert_ne!(a, b);
    }
}
