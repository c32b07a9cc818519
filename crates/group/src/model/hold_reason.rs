//! Why a [`super::Hold`] holds shards back: the four causes the core records, stored as the words it has
//! always stored (so aggregates written before this type load unchanged, and any other text round-trips).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why shards are held back from the member that had them. Stored and shown to operators as its text
/// ([`HoldReason::as_str`]); text the core does not write itself is kept as [`HoldReason::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HoldReason {
    /// A new incarnation of the member joined while the old one's shards may still be read
    /// (`previous incarnation rejoined`).
    PreviousIncarnationRejoined,
    /// The member did not release revoked shards within the rebalance timeout and was fenced
    /// (`rebalance timeout`).
    RebalanceTimeout,
    /// The member reported reading shards it had not been granted and was fenced
    /// (`ownership report outside its grants`).
    OwnershipReportOutsideGrants,
    /// An operator's offset reset is moving the group's position on these shards (`offset reset`;
    /// `reset_hold`): no member reads them until it is done.
    OffsetReset,
    /// Any other text (written by another version, or by a test), kept as it was.
    Other(String),
}

impl HoldReason {
    /// The reason in words, as stored and shown (`rebalance timeout`, …).
    pub fn as_str(&self) -> &str {
        match self {
            HoldReason::PreviousIncarnationRejoined => "previous incarnation rejoined",
            HoldReason::RebalanceTimeout => "rebalance timeout",
            HoldReason::OwnershipReportOutsideGrants => "ownership report outside its grants",
            HoldReason::OffsetReset => "offset reset",
            HoldReason::Other(text) => text,
        }
    }

    /// The reason stored as `text`: one of the core's own, else [`HoldReason::Other`].
    pub fn parse(text: &str) -> HoldReason {
        [
            HoldReason::PreviousIncarnationRejoined,
            HoldReason::RebalanceTimeout,
            HoldReason::OwnershipReportOutsideGrants,
            HoldReason::OffsetReset,
        ]
        .into_iter()
        .find(|r| r.as_str() == text)
        .unwrap_or_else(|| HoldReason::Other(text.to_owned()))
    }
}

impl From<&str> for HoldReason {
    fn from(text: &str) -> Self {
        HoldReason::parse(text)
    }
}

impl std::fmt::Display for HoldReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for HoldReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for HoldReason {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Ok(HoldReason::parse(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_strings_round_trip_unchanged() {
        for (text, reason) in [
            (
                "previous incarnation rejoined",
                HoldReason::PreviousIncarnationRejoined,
            ),
            ("rebalance timeout", HoldReason::RebalanceTimeout),
            (
                "ownership report outside its grants",
                HoldReason::OwnershipReportOutsideGrants,
            ),
            ("offset reset", HoldReason::OffsetReset),
            (
                "written by a later version",
                HoldReason::Other("written by a later version".into()),
            ),
        ] {
            let json = serde_json::to_string(text).unwrap();
            let read: HoldReason = serde_json::from_str(&json).unwrap();
            assert_eq!(read, reason);
            assert_eq!(serde_json::to_string(&read).unwrap(), json);
            assert_eq!(read.as_str(), text);
        }
    }

    #[test]
    fn a_stored_hold_reads_and_writes_the_same_json() {
        let stored = r#"{"memberId":"m-1","shards":[0,3],"untilMs":1700000000000,"reason":"rebalance timeout"}"#;
        let hold: super::super::Hold = serde_json::from_str(stored).unwrap();
        assert_eq!(hold.reason, HoldReason::RebalanceTimeout);
        assert_eq!(serde_json::to_string(&hold).unwrap(), stored);
    }
}
