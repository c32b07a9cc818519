//! Producer quiesce: a scale that waits, before it switches routing, until every producer seen in the last
//! refresh window has stopped publishing and said so (or until its deadline).
//!
//! The stream record carries the quiesce ([`ProducerQuiesce`]) while the scale is PREPARING; the routing
//! answer shows it to producers, which finish what they have in flight (retries included) and report
//! `quiesced`. [`decide`] is the switch rule, pure: switch when every producer seen within the window has
//! reported quiesced for this resharding, or once the deadline has passed — then forced, naming the
//! producers that had not. The outcome is kept on the record for the migration view and the audit.

use serde::{Deserialize, Serialize};

/// The longest quiesce a scale may ask for (10 minutes).
pub const MAX_TIMEOUT_MS: i64 = rsc_protocol::bounds::MAX_QUIESCE_TIMEOUT_MS;

/// A scale's producer quiesce, on the stream record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProducerQuiesce {
    /// The migration that waits for producers.
    pub resharding_id: String,
    /// How long the scale waits for producers at most, in milliseconds (1 to [`MAX_TIMEOUT_MS`]).
    pub timeout_ms: i64,
    /// When routing switches even if producers have not quiesced (Redis time, epoch ms).
    pub deadline_ms: i64,
    /// How routing switched; None while still waiting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<QuiesceOutcome>,
}

/// How a quiesced scale switched routing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuiesceOutcome {
    /// When routing switched (Redis time, epoch ms).
    pub decided_at_ms: i64,
    /// True when the deadline passed before every producer seen had quiesced.
    pub forced_by_timeout: bool,
    /// Producers seen in the window that reported quiesced, sorted.
    pub quiesced: Vec<String>,
    /// Producers seen in the window that had not, sorted (empty unless forced).
    pub not_quiesced: Vec<String>,
}

impl ProducerQuiesce {
    /// A quiesce for `resharding_id` that started at `now_ms`.
    pub fn new(resharding_id: &str, timeout_ms: i64, now_ms: i64) -> Self {
        ProducerQuiesce {
            resharding_id: resharding_id.to_owned(),
            timeout_ms,
            deadline_ms: now_ms.saturating_add(timeout_ms),
            outcome: None,
        }
    }

    /// Whether producers should hold still now: not decided yet, and the deadline not passed.
    pub fn is_waiting(&self, now_ms: i64) -> bool {
        self.outcome.is_none() && now_ms < self.deadline_ms
    }
}

/// What the coordinator knows about one producer of a stream.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProducerSighting {
    /// The producer's stable id.
    pub producer_id: String,
    /// When it last fetched routing (epoch ms).
    pub last_seen_ms: i64,
    /// The resharding it last reported quiesced for, with the routing version it had then.
    pub quiesced_for: Option<String>,
    /// The routing version it held when it reported quiesced.
    pub observed_routing_version: Option<i64>,
}

/// The switch rule's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Keep waiting for these producers (sorted).
    Wait {
        /// The producers that have not quiesced yet.
        pending: Vec<String>,
    },
    /// Switch routing now.
    Switch(QuiesceOutcome),
}

/// Which producers of `sightings` count for `q` at `now_ms` (seen within `window_ms`), split into quiesced
/// and not quiesced, each sorted.
pub fn split(
    q: &ProducerQuiesce,
    sightings: &[ProducerSighting],
    now_ms: i64,
    window_ms: i64,
) -> (Vec<String>, Vec<String>) {
    let mut quiesced = Vec::new();
    let mut pending = Vec::new();
    for s in sightings {
        if s.last_seen_ms < now_ms.saturating_sub(window_ms) {
            continue;
        }
        if s.quiesced_for.as_deref() == Some(q.resharding_id.as_str()) {
            quiesced.push(s.producer_id.clone());
        } else {
            pending.push(s.producer_id.clone());
        }
    }
    quiesced.sort();
    pending.sort();
    (quiesced, pending)
}

/// Switch when every producer seen within `window_ms` has quiesced for this resharding, or at the deadline
/// (forced, naming those that had not).
pub fn decide(
    q: &ProducerQuiesce,
    sightings: &[ProducerSighting],
    now_ms: i64,
    window_ms: i64,
) -> Decision {
    let (quiesced, pending) = split(q, sightings, now_ms, window_ms);
    if pending.is_empty() || now_ms >= q.deadline_ms {
        let forced = !pending.is_empty();
        Decision::Switch(QuiesceOutcome {
            decided_at_ms: now_ms,
            forced_by_timeout: forced,
            quiesced,
            not_quiesced: pending,
        })
    } else {
        Decision::Wait { pending }
    }
}

#[cfg(test)]
mod tests {
    use super::{Decision, ProducerQuiesce, ProducerSighting, decide};

    fn seen(id: &str, at: i64, quiesced_for: Option<&str>) -> ProducerSighting {
        ProducerSighting {
            producer_id: id.into(),
            last_seen_ms: at,
            quiesced_for: quiesced_for.map(Into::into),
            observed_routing_version: quiesced_for.map(|_| 3),
        }
    }

    #[test]
    fn waits_for_every_producer_seen_in_the_window() {
        let q = ProducerQuiesce::new("r1", 10_000, 1_000);
        let s = [seen("a", 900, Some("r1")), seen("b", 950, None)];
        assert_eq!(
            decide(&q, &s, 2_000, 5_000),
            Decision::Wait {
                pending: vec!["b".into()]
            }
        );
        let s = [seen("a", 900, Some("r1")), seen("b", 1_500, Some("r1"))];
        let Decision::Switch(o) = decide(&q, &s, 2_000, 5_000) else {
            panic!("should switch")
        };
        assert!(!o.forced_by_timeout);
        assert_eq!(o.quiesced, vec!["a".to_string(), "b".to_string()]);
    }

    #[test]
    fn producers_outside_the_window_and_old_reports_do_not_count_as_quiesced() {
        let q = ProducerQuiesce::new("r2", 10_000, 1_000);
        // "gone" was last seen long ago: ignored. "old" quiesced for an earlier resharding: pending.
        let s = [seen("gone", 0, None), seen("old", 7_900, Some("r1"))];
        assert_eq!(
            decide(&q, &s, 8_000, 5_000),
            Decision::Wait {
                pending: vec!["old".into()]
            }
        );
        // Nobody seen at all: nothing to wait for.
        assert!(
            matches!(decide(&q, &[], 1_000, 5_000), Decision::Switch(o) if !o.forced_by_timeout)
        );
    }

    #[test]
    fn the_deadline_forces_the_switch_and_names_who_did_not_quiesce() {
        let q = ProducerQuiesce::new("r1", 3_000, 1_000);
        assert!(q.is_waiting(3_999));
        assert!(!q.is_waiting(4_000));
        let s = [seen("a", 3_500, Some("r1")), seen("plain", 3_900, None)];
        let Decision::Switch(o) = decide(&q, &s, 4_000, 5_000) else {
            panic!("deadline passed")
        };
        assert!(o.forced_by_timeout);
        assert_eq!(o.not_quiesced, vec!["plain".to_string()]);
        assert_eq!(o.quiesced, vec!["a".to_string()]);
    }
}
