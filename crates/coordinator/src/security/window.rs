//! A fixed-window counter in Redis, shared by every replica: the building block of admin-mutation rate
//! limits and the rollback-suspicion budget. The counter itself is `rsc_store`'s (`Store::window_hit`);
//! this module maps its errors and makes untrusted text key-safe.

use crate::domain_error::CoordError;
use rsc_store::Store;

/// A counter's value and the milliseconds until its window ends.
pub type Count = rsc_store::WindowCount;

/// Which window: the key-safe part ([`key_part`]) of what it counts; the store names its key.
pub use rsc_store::LimitWindow as Window;

/// Counts one hit in window `window` (`window_ms` long, starting at the first hit).
pub async fn hit(store: &Store, window: Window<'_>, window_ms: i64) -> Result<Count, CoordError> {
    store
        .window_hit(window, window_ms)
        .await
        .map_err(super::tokens::store_error)
}

/// Reads a counter without counting.
pub async fn peek(store: &Store, window: Window<'_>) -> Result<Count, CoordError> {
    store
        .window_peek(window)
        .await
        .map_err(super::tokens::store_error)
}

pub async fn clear(store: &Store, window: Window<'_>) -> Result<(), CoordError> {
    store
        .window_clear(window)
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
