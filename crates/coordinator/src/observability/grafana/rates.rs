//! Produced and consumed rates of a group from two observations: produced = stream-length growth per second,
//! consumed = produced − lag growth per second, rounded to 2 decimals; `None` on a group's first
//! observation in this process (or when lag is unknown). Observations are kept per process, one per group.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

struct Observation {
    at: Instant,
    length: i64,
    lag: Option<i64>,
}

fn observations() -> &'static Mutex<HashMap<(String, String), Observation>> {
    static OBS: OnceLock<Mutex<HashMap<(String, String), Observation>>> = OnceLock::new();
    OBS.get_or_init(Default::default)
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// Records this observation of a stream-key set (`key`) and answers (produced/s, consumed/s).
pub fn observe(key: (String, String), length: i64, lag: Option<i64>) -> (Option<f64>, Option<f64>) {
    let now = Instant::now();
    let Ok(mut map) = observations().lock() else {
        return (None, None);
    };
    let previous = map.insert(
        key,
        Observation {
            at: now,
            length,
            lag,
        },
    );
    let Some(p) = previous else {
        return (None, None);
    };
    let secs = now.duration_since(p.at).as_secs_f64();
    if secs < 0.001 {
        return (None, None);
    }
    let produced = (length - p.length).max(0) as f64 / secs;
    let consumed = match (lag, p.lag) {
        (Some(a), Some(b)) => Some(round2((produced - (a - b) as f64 / secs).max(0.0))),
        _ => None,
    };
    (Some(round2(produced)), consumed)
}
