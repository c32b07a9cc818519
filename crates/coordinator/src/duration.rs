//! `Dur`: a configuration duration (`3s`, `500ms`, `10m`, `7d`, or integer milliseconds). A leaf module, so
//! that the configuration of every part (`config`, `security::config`, `metrics::config`) can use it
//! without the parts importing the top-level configuration.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::time::Duration;

/// A duration written as `3s`, `500ms`, `10m`, `7d`, or as integer milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dur(pub Duration);

impl Dur {
    pub fn ms(self) -> i64 {
        i64::try_from(self.0.as_millis()).unwrap_or(i64::MAX)
    }
    pub const fn from_secs(s: u64) -> Dur {
        Dur(Duration::from_secs(s))
    }
}

impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(self.0).to_string())
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Millis(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Millis(ms) => Ok(Dur(Duration::from_millis(ms))),
            Raw::Text(t) => {
                let t = t.trim();
                if let Ok(ms) = t.parse::<u64>() {
                    return Ok(Dur(Duration::from_millis(ms)));
                }
                humantime::parse_duration(t).map(Dur).map_err(|e| {
                    serde::de::Error::custom(format!(
                        "invalid duration {t:?} ({e}); use e.g. 500ms, 3s, 10m, 7d or integer milliseconds"
                    ))
                })
            }
        }
    }
}
