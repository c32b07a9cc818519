//! Per-key order over the logs. The producer publishes the records of key `seq % keys` with increasing `seq`
//! (one publish at a time, so in `seq` order), and on an ordered stream (`ordering: KEY`) no record of a key
//! may reach a handler for the first time before every earlier record of that key has: across a scale, a
//! moved key's new shard is read only once its old one was consumed up to the switch point.
//!
//! First deliveries are compared by the time the handler logged them (`Got`, logged before the ack is
//! sent). Across processes that is sound: a later record of a key can reach a handler only after the gate of
//! its shard opened, which needs the earlier record acknowledged, which comes after its `Got` line was
//! written. Redeliveries (a consumer killed or paused before its ack) are later deliveries, not first ones.

use crate::check::Incarnation;
use crate::log::Line;
use std::collections::BTreeMap;

/// A record of a key handled for the first time before an earlier record of the same key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderViolation {
    pub key: u64,
    /// The earlier record (by `seq`) and when it first reached a handler.
    pub earlier: u64,
    pub earlier_at_ns: u64,
    /// The later record, which reached a handler first.
    pub later: u64,
    pub later_at_ns: u64,
}

/// `seq` → when a handler first got it, over every incarnation of every consumer.
pub fn first_deliveries(incarnations: &[Incarnation]) -> BTreeMap<u64, u64> {
    let mut first: BTreeMap<u64, u64> = BTreeMap::new();
    for inc in incarnations {
        for l in &inc.lines {
            if let Line::Got { seq, at_ns, .. } = l {
                let at = first.entry(*seq).or_insert(*at_ns);
                *at = (*at).min(*at_ns);
            }
        }
    }
    first
}

/// The published records (`seq`s, any order) whose first delivery came before that of an earlier record
/// of their key; records never delivered are the accounting's business, not this check's.
pub fn violations(
    published: impl IntoIterator<Item = u64>,
    first: &BTreeMap<u64, u64>,
    keys: u64,
) -> Vec<OrderViolation> {
    let mut by_key: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for seq in published {
        by_key.entry(seq % keys.max(1)).or_default().push(seq);
    }
    let mut out = Vec::new();
    for (key, mut seqs) in by_key {
        seqs.sort_unstable();
        // The earlier record delivered last so far.
        let mut latest: Option<(u64, u64)> = None;
        for seq in seqs {
            let Some(&at) = first.get(&seq) else {
                continue;
            };
            match latest {
                Some((earlier, earlier_at)) if at < earlier_at => out.push(OrderViolation {
                    key,
                    earlier,
                    earlier_at_ns: earlier_at,
                    later: seq,
                    later_at_ns: at,
                }),
                Some((_, earlier_at)) if at <= earlier_at => {}
                _ => latest = Some((seq, at)),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn got(seq: u64, at_ns: u64) -> Line {
        Line::Got {
            seq,
            shard: 0,
            id: String::new(),
            reclaimed: false,
            at_ns,
        }
    }

    fn inc(name: &str, lines: Vec<Line>) -> Incarnation {
        Incarnation {
            name: name.into(),
            lines,
            killed_at_ns: None,
            pauses: Vec::new(),
        }
    }

    #[test]
    fn a_later_record_of_a_key_handled_first_is_a_violation_and_redeliveries_are_not() {
        // Two keys (seq % 2). Key 0: 0, 2, 4; key 1: 1, 3.
        let a = inc("a#1", vec![got(0, 10), got(2, 30), got(1, 40), got(0, 90)]);
        let b = inc("b#1", vec![got(4, 20), got(3, 50)]);
        let first = first_deliveries(&[a, b]);
        assert_eq!(
            first[&0], 10,
            "the first delivery counts, not the redelivery at 90"
        );
        let v = violations(0..5, &first, 2);
        assert_eq!(
            v,
            vec![OrderViolation {
                key: 0,
                earlier: 2,
                earlier_at_ns: 30,
                later: 4,
                later_at_ns: 20,
            }]
        );
    }

    #[test]
    fn records_in_order_or_never_delivered_are_no_violation() {
        let a = inc("a#1", vec![got(0, 10), got(3, 15), got(6, 30)]);
        let first = first_deliveries(&[a]);
        // 9 was published but never delivered (the accounting reports it); 3 and 6 follow 0.
        assert!(violations([0, 3, 6, 9], &first, 3).is_empty());
        assert!(violations([0, 3, 6], &first, 1).is_empty());
    }
}
