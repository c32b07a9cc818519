//! A fixed-window counter in Redis, shared by every replica: the building block of admin-mutation rate
//! limits and the rollback-suspicion budget. The counter itself is `rsc_store`'s (`Store::window_hit`);
//! this module maps its errors and makes untrusted text key-safe.

use crate::domain_error::CoordError;
use rsc_store::Store;

/// A counter's value and the milliseconds until its window ends.
pub type Count = rsc_store::WindowCount;

/// Counts one hit in the window of `key` (`window_ms` long, starting at the first hit).
pub async fn hit(store: &Store, key: &str, window_ms: i64) -> Result<Count, CoordError> {
    store
        .window_hit(key, window_ms)
        .await
        .map_err(super::tokens::store_error)
}

/// Reads a counter without counting.
pub async fn peek(store: &Store, key: &str) -> Result<Count, CoordError> {
    store
        .window_peek(key)
        .await
        .map_err(super::tokens::store_error)
}

pub async fn clear(store: &Store, key: &str) -> Result<(), CoordError> {
    store
        .window_clear(key)
        .await
        .map_err(super::tokens::store_error)
}

/// A Redis-key-safe form of untrusted text (usernames from login bodies, addresses): kept when short and
/// plain, otherwise its SHA-256.
pub fn key_part(text: &str) -> String {
    let plain = text.len() <= 64
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@' | ':'));
    if plain && !text.is_empty() {
        text.to_owned()
    } else {
        format!(
            "sha256-{}",
            super::tokens::hex(&super::tokens::digest(text))
        )
    }
}
