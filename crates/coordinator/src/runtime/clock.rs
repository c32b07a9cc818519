//! The coordinator's estimate of Redis server time.
//!
//! Leases are judged by Redis time so that every replica agrees (ARCHITECTURE.md, invariant 4). Decisions that
//! need a time before talking to Redis use `now_ms()`: the local clock plus the offset learned from the last
//! Redis reply that carried a timestamp. Anything safety-relevant is re-checked by Redis itself inside the
//! write script (`not_before_ms`, lease conditions), so an estimate that is slightly off costs a retry, never
//! correctness.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug, Default)]
pub struct RedisClock {
    offset_ms: AtomicI64,
}

impl RedisClock {
    pub fn new() -> Self {
        RedisClock::default()
    }

    /// Records a Redis timestamp observed now.
    pub fn observe(&self, redis_now_ms: i64) {
        self.offset_ms
            .store(redis_now_ms - local_ms(), Ordering::Relaxed);
    }

    /// Estimated Redis time in milliseconds.
    pub fn now_ms(&self) -> i64 {
        local_ms() + self.offset_ms.load(Ordering::Relaxed)
    }
}

fn local_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Formats epoch milliseconds as an ISO-8601 UTC instant with milliseconds (`2026-01-01T00:00:00.123Z`).
pub fn iso_ms(ms: i64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    let Ok(t) = time::OffsetDateTime::from_unix_timestamp_nanos(nanos) else {
        return String::from("1970-01-01T00:00:00.000Z");
    };
    let f = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    t.format(&f)
        .unwrap_or_else(|_| String::from("1970-01-01T00:00:00.000Z"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_instants_like_the_contract() {
        assert_eq!(iso_ms(1_767_225_600_123), "2026-01-01T00:00:00.123Z");
    }

    #[test]
    fn adopts_the_observed_offset() {
        let c = RedisClock::new();
        c.observe(local_ms() + 60_000);
        let d = c.now_ms() - local_ms();
        assert!((59_000..=61_000).contains(&d), "{d}");
    }
}
