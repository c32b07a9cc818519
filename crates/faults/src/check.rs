//! The end checks over the ownership logs: read intervals per shard (with the SIGKILL and SIGSTOP rules
//! explained in the crate documentation) and their overlaps, and the accounting of published, delivered
//! and acknowledged sequence numbers.

use crate::log::Line;
use std::collections::{BTreeMap, BTreeSet};

/// One process lifetime of a consumer, as logged, plus what the orchestrator did to it.
#[derive(Debug, Clone, Default)]
pub struct Incarnation {
    /// `member#n`, for messages.
    pub name: String,
    pub lines: Vec<Line>,
    /// When it was SIGKILLed (taken after the process was reaped, so never too early).
    pub killed_at_ns: Option<u64>,
    /// (stopped, continued): taken once the process was seen stopped, and before SIGCONT was sent.
    pub pauses: Vec<(u64, u64)>,
}

/// Where a shard may have been read by one incarnation: disjoint `[start, end)` pieces of one logged interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadInterval {
    pub owner: String,
    pub shard: u32,
    pub start_ns: u64,
    /// `u64::MAX` while still open at the end of the observation.
    pub end_ns: u64,
    /// The pieces left after cutting out pauses the lease covered; `[(start, end)]` when nothing was cut.
    pub pieces: Vec<(u64, u64)>,
}

/// Two incarnations that may have read one shard at the same time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    pub shard: u32,
    pub first: (String, u64, u64),
    pub second: (String, u64, u64),
}

impl std::fmt::Display for Overlap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (a, a0, a1) = &self.first;
        let (b, b0, b1) = &self.second;
        write!(
            f,
            "shard {}: {a} read [{a0}, {a1}) and {b} read [{b0}, {b1}) (ns since epoch; overlap {} µs)",
            self.shard,
            (a1.min(b1) - a0.max(b0)) / 1000
        )
    }
}

/// Read intervals of one incarnation. `lease_ns` is the consumers' assignment lease.
pub fn intervals(inc: &Incarnation, lease_ns: u64) -> Vec<ReadInterval> {
    let accepted: Vec<u64> = inc
        .lines
        .iter()
        .filter_map(|l| match l {
            Line::Heartbeat {
                at_ns,
                accepted: true,
                ..
            } => Some(*at_ns),
            _ => None,
        })
        .collect();
    // Per pause, the span in which the stopped process could not be reading any more.
    let cuts: Vec<(u64, u64)> = inc
        .pauses
        .iter()
        .filter_map(|&(stopped, continued)| {
            let lease_bound = accepted
                .iter()
                .rev()
                .find(|&&t| t <= stopped)
                .map_or(stopped, |t| t.saturating_add(lease_ns));
            let from = lease_bound.max(stopped);
            (from < continued).then_some((from, continued))
        })
        .collect();
    // A shard is read by the process while at least one of its loops for it runs (normally one; see
    // `double_loops`), so stops are never paired with the wrong start.
    let mut open: BTreeMap<u32, (u64, usize)> = BTreeMap::new();
    // (shard, start, stop, whether the stop was for a lapsed lease)
    let mut raw = Vec::new();
    for line in &inc.lines {
        match line {
            Line::ReadStarted { shard, at_ns, .. } => {
                open.entry(*shard).or_insert((*at_ns, 0)).1 += 1;
            }
            Line::ReadStopped {
                shard,
                at_ns,
                lease_expired,
            } => {
                if let Some((start, n)) = open.get_mut(shard) {
                    *n -= 1;
                    if *n == 0 {
                        raw.push((*shard, *start, *at_ns, *lease_expired));
                        open.remove(shard);
                    }
                }
            }
            _ => {}
        }
    }
    raw.extend(
        open.into_iter()
            .map(|(s, (start, _))| (s, start, u64::MAX, false)),
    );
    let got_between = |shard: u32, from: u64, to: u64| {
        inc.lines.iter().any(|l| {
            matches!(l, Line::Got { shard: s, at_ns, .. } if *s == shard && from <= *at_ns && *at_ns <= to)
        })
    };
    raw.into_iter()
        .map(|(shard, start, stop, lease_expired)| {
            let end = inc.killed_at_ns.map_or(stop, |k| stop.min(k)).max(start);
            let mut pieces = vec![(start, end)];
            for &(c0, c1) in &cuts {
                pieces = pieces
                    .into_iter()
                    .flat_map(|(a, b)| {
                        if c1 <= a || c0 >= b {
                            vec![(a, b)]
                        } else {
                            [(a, c0), (c1, b)]
                                .into_iter()
                                .filter(|(x, y)| x < y)
                                .collect()
                        }
                    })
                    .collect();
            }
            // The loop stopped for its lapsed lease right after a pause that outlasted the lease: from the
            // SIGCONT to that stop it issued no read (it checks the lease first) and, unless a delivery says
            // otherwise, handed no entry over (it checks the lease before each one).
            if lease_expired
                && let Some(&(a, b)) = pieces.last()
                && cuts.iter().any(|&(_, continued)| continued == a)
                && !got_between(shard, a, b)
            {
                pieces.pop();
            }
            ReadInterval {
                owner: inc.name.clone(),
                shard,
                start_ns: start,
                end_ns: end,
                pieces,
            }
        })
        .collect()
}

/// Moments at which one process started a second read loop for a shard whose previous loop had not
/// logged its stop: (shard, at ns). The SDK must run at most one loop per shard.
pub fn double_loops(inc: &Incarnation) -> Vec<(u32, u64)> {
    let mut running: BTreeMap<u32, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for line in &inc.lines {
        match line {
            Line::ReadStarted { shard, at_ns, .. } => {
                let n = running.entry(*shard).or_default();
                *n += 1;
                if *n > 1 {
                    out.push((*shard, *at_ns));
                }
            }
            Line::ReadStopped { shard, .. } => {
                if let Some(n) = running.get_mut(shard) {
                    *n = n.saturating_sub(1);
                }
            }
            _ => {}
        }
    }
    out
}

/// Every pair of intervals of one shard (from different logged intervals) whose pieces intersect.
pub fn overlaps(all: &[ReadInterval]) -> Vec<Overlap> {
    let mut by_shard: BTreeMap<u32, Vec<&ReadInterval>> = BTreeMap::new();
    for i in all {
        by_shard.entry(i.shard).or_default().push(i);
    }
    let mut out = Vec::new();
    for (shard, mut list) in by_shard {
        list.sort_by_key(|i| (i.start_ns, i.end_ns));
        for (n, a) in list.iter().enumerate() {
            for b in &list[n + 1..] {
                for &(a0, a1) in &a.pieces {
                    for &(b0, b1) in &b.pieces {
                        if a0 < b1 && b0 < a1 {
                            out.push(Overlap {
                                shard,
                                first: (a.owner.clone(), a0, a1),
                                second: (b.owner.clone(), b0, b1),
                            });
                        }
                    }
                }
            }
        }
    }
    out
}

/// How often a shard changed hands (consecutive intervals by different incarnations).
pub fn handovers(all: &[ReadInterval]) -> usize {
    let mut by_shard: BTreeMap<u32, Vec<&ReadInterval>> = BTreeMap::new();
    for i in all {
        by_shard.entry(i.shard).or_default().push(i);
    }
    by_shard
        .values_mut()
        .map(|list| {
            list.sort_by_key(|i| i.start_ns);
            list.windows(2).filter(|w| w[0].owner != w[1].owner).count()
        })
        .sum()
}

/// A delivery as (seq, shard, handled at ns).
pub type DeliveryAt = (u64, u32, u64);

/// Deliveries a process handled outside any of its own read intervals of that shard (should be none).
pub fn deliveries_outside_intervals(inc: &Incarnation, lease_ns: u64) -> Vec<DeliveryAt> {
    let ivs = intervals(inc, lease_ns);
    inc.lines
        .iter()
        .filter_map(|l| match l {
            Line::Got {
                seq, shard, at_ns, ..
            } => Some((*seq, *shard, *at_ns)),
            _ => None,
        })
        .filter(|(_, shard, at)| {
            !ivs.iter()
                .any(|i| i.shard == *shard && i.start_ns <= *at && *at <= i.end_ns)
        })
        .collect()
}

/// Deliveries a process handled after its assignment lease had run out (should be none): later than the
/// last accepted heartbeat before them plus the lease, or before any accepted heartbeat. Heartbeats are
/// logged when answered, after they were sent, so the bound is lenient, never strict.
pub fn deliveries_after_lease(inc: &Incarnation, lease_ns: u64) -> Vec<DeliveryAt> {
    let mut renewed: Option<u64> = None;
    let mut out = Vec::new();
    for line in &inc.lines {
        match line {
            Line::Heartbeat {
                at_ns,
                accepted: true,
                ..
            } => renewed = Some(*at_ns),
            Line::Got {
                seq, shard, at_ns, ..
            } if renewed.is_none_or(|r| *at_ns > r.saturating_add(lease_ns)) => {
                out.push((*seq, *shard, *at_ns));
            }
            _ => {}
        }
    }
    out
}

/// Published versus delivered versus acknowledged.
#[derive(Debug, Clone, Default)]
pub struct Accounting {
    /// seq → (shard, entry id) of its successful publish.
    pub published: BTreeMap<u64, (u32, String)>,
    /// seq → how many times a handler got it.
    pub delivered: BTreeMap<u64, usize>,
    /// Sequences whose XACK answered.
    pub acked: BTreeSet<u64>,
    /// Sequences a SIGKILLed process got but had not logged an ack for when it died (it may have acked).
    pub in_flight_at_kill: BTreeSet<u64>,
    /// Sequences whose XACK kept failing.
    pub ack_failed: BTreeSet<u64>,
}

impl Accounting {
    pub fn add_producer(&mut self, lines: &[Line]) {
        for l in lines {
            if let Line::Published { seq, shard, id, .. } = l {
                self.published.insert(*seq, (*shard, id.clone()));
            }
        }
    }

    pub fn add_consumer(&mut self, inc: &Incarnation) {
        let mut unacked = BTreeSet::new();
        for l in &inc.lines {
            match l {
                Line::Got { seq, .. } => {
                    *self.delivered.entry(*seq).or_default() += 1;
                    unacked.insert(*seq);
                }
                Line::Acked { seq, .. } => {
                    self.acked.insert(*seq);
                    unacked.remove(seq);
                }
                Line::AckFailed { seq, .. } => {
                    self.ack_failed.insert(*seq);
                    unacked.remove(seq);
                }
                _ => {}
            }
        }
        if inc.killed_at_ns.is_some() {
            self.in_flight_at_kill.extend(unacked);
        }
    }

    /// Published sequences with no logged ack that a killed process was not handling either.
    pub fn missing(&self) -> Vec<u64> {
        self.published
            .keys()
            .filter(|s| !self.acked.contains(s) && !self.in_flight_at_kill.contains(s))
            .copied()
            .collect()
    }

    /// Published sequences whose only handler was killed before it logged the ack: acknowledged only if
    /// Redis shows nothing pending (the orchestrator checks XPENDING and lag on every shard).
    pub fn acked_unlogged(&self) -> Vec<u64> {
        self.published
            .keys()
            .filter(|s| !self.acked.contains(s) && self.in_flight_at_kill.contains(s))
            .copied()
            .collect()
    }

    /// Sequences delivered more than once.
    pub fn duplicates(&self) -> usize {
        self.delivered.values().filter(|n| **n > 1).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: u64 = 1_000;

    fn start(shard: u32, at_ns: u64) -> Line {
        Line::ReadStarted {
            shard,
            at_ns,
            reclaim: false,
        }
    }

    fn stop(shard: u32, at_ns: u64) -> Line {
        Line::ReadStopped {
            shard,
            at_ns,
            lease_expired: false,
        }
    }

    fn stop_lapsed(shard: u32, at_ns: u64) -> Line {
        Line::ReadStopped {
            shard,
            at_ns,
            lease_expired: true,
        }
    }

    fn got(shard: u32, at_ns: u64) -> Line {
        Line::Got {
            seq: at_ns,
            shard,
            id: String::new(),
            reclaimed: false,
            at_ns,
        }
    }

    #[test]
    fn a_delivery_later_than_the_lease_from_the_last_accepted_heartbeat_is_reported() {
        let a = inc(
            "a#1",
            vec![
                got(0, 5),
                hb(10),
                got(0, 1010),
                got(0, 1011),
                hb(2000),
                got(0, 2500),
            ],
        );
        let late: Vec<u64> = deliveries_after_lease(&a, L).iter().map(|d| d.2).collect();
        assert_eq!(
            late,
            vec![5, 1011],
            "before any renewal, and past 10 + lease"
        );
    }

    fn hb(at_ns: u64) -> Line {
        Line::Heartbeat {
            at_ns,
            status: "Ok".into(),
            accepted: true,
        }
    }

    fn inc(name: &str, lines: Vec<Line>) -> Incarnation {
        Incarnation {
            name: name.into(),
            lines,
            ..Incarnation::default()
        }
    }

    fn all(incs: &[Incarnation]) -> Vec<ReadInterval> {
        incs.iter().flat_map(|i| intervals(i, L)).collect()
    }

    #[test]
    fn disjoint_and_touching_intervals_pass_and_overlapping_ones_fail() {
        let a = inc("a#1", vec![hb(0), start(0, 10), stop(0, 100)]);
        let b = inc("b#1", vec![hb(90), start(0, 100), stop(0, 200)]);
        assert!(overlaps(&all(&[a.clone(), b])).is_empty());
        let b = inc("b#1", vec![hb(90), start(0, 99), stop(0, 200)]);
        let found = overlaps(&all(&[a.clone(), b]));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].first.0, "a#1");
        // Another shard never conflicts.
        let c = inc("c#1", vec![hb(0), start(1, 50), stop(1, 60)]);
        assert!(overlaps(&all(&[a, c])).is_empty());
    }

    #[test]
    fn an_open_interval_lasts_forever_unless_the_process_was_killed() {
        let mut a = inc("a#1", vec![hb(0), start(0, 10)]);
        let b = inc("a#2", vec![hb(400), start(0, 500), stop(0, 600)]);
        assert_eq!(overlaps(&all(&[a.clone(), b.clone()])).len(), 1);
        a.killed_at_ns = Some(450);
        assert!(overlaps(&all(&[a.clone(), b.clone()])).is_empty());
        a.killed_at_ns = Some(501);
        assert_eq!(overlaps(&all(&[a, b])).len(), 1);
    }

    #[test]
    fn a_pause_is_cut_out_only_after_the_lease_from_the_last_accepted_heartbeat() {
        // a last renewed at 100 (lease until 1100), stopped at 200, continued at 5000, logged its stop at 5001.
        let mut a = inc("a#1", vec![hb(100), start(0, 150), stop(0, 5001)]);
        a.pauses = vec![(200, 5000)];
        let took_over_at = |t| inc("b#1", vec![hb(t - 1), start(0, t), stop(0, t + 10)]);
        assert!(overlaps(&all(&[a.clone(), took_over_at(1100)])).is_empty());
        assert_eq!(overlaps(&all(&[a.clone(), took_over_at(1099)])).len(), 1);
        // Still reading after it resumed: an overlap there is real.
        assert_eq!(overlaps(&all(&[a.clone(), took_over_at(4995)])).len(), 1);
        // Unless the loop stopped for its lapsed lease without handing anything over after the SIGCONT.
        let mut lapsed = a.clone();
        lapsed.lines[2] = stop_lapsed(0, 5001);
        assert!(overlaps(&all(&[lapsed.clone(), took_over_at(4995)])).is_empty());
        assert_eq!(intervals(&lapsed, L)[0].pieces, vec![(150, 1100)]);
        lapsed.lines.insert(2, got(0, 5000));
        assert_eq!(
            overlaps(&all(&[lapsed, took_over_at(4995)])).len(),
            1,
            "a delivery after the SIGCONT is reading"
        );
        // A pause shorter than the lease cuts nothing.
        a.pauses = vec![(200, 900)];
        assert_eq!(intervals(&a, L)[0].pieces, vec![(150, 5001)]);
        // Without the pause record the late stop counts in full.
        a.pauses.clear();
        assert_eq!(overlaps(&all(&[a, took_over_at(2000)])).len(), 1);
    }

    #[test]
    fn two_loops_of_one_process_on_one_shard_are_reported_and_read_as_their_union() {
        let a = inc(
            "a#1",
            vec![hb(0), start(0, 10), start(0, 20), stop(0, 30), stop(0, 40)],
        );
        assert_eq!(double_loops(&a), vec![(0, 20)]);
        let ivs = intervals(&a, L);
        assert_eq!(ivs.len(), 1);
        assert_eq!((ivs[0].start_ns, ivs[0].end_ns), (10, 40));
        let b = inc("b#1", vec![hb(0), start(0, 35), stop(0, 50)]);
        assert_eq!(overlaps(&all(&[a.clone(), b])).len(), 1);
        assert!(double_loops(&inc("c#1", vec![start(0, 1), stop(0, 2), start(0, 3)])).is_empty());
    }

    #[test]
    fn accounting_counts_missing_duplicates_and_kills_in_flight() {
        let mut acc = Accounting::default();
        acc.add_producer(
            &(0..4)
                .map(|seq| Line::Published {
                    seq,
                    shard: 0,
                    id: format!("{seq}-0"),
                    at_ns: 0,
                })
                .collect::<Vec<_>>(),
        );
        let got = |seq| Line::Got {
            seq,
            shard: 0,
            id: String::new(),
            reclaimed: false,
            at_ns: 0,
        };
        let acked = |seq| Line::Acked {
            seq,
            shard: 0,
            id: String::new(),
            removed: true,
            at_ns: 0,
        };
        let mut killed = inc("a#1", vec![got(0), acked(0), got(1)]);
        killed.killed_at_ns = Some(1);
        acc.add_consumer(&killed);
        acc.add_consumer(&inc("b#1", vec![got(0), acked(0), got(2), acked(2)]));
        assert_eq!(acc.missing(), vec![3]);
        assert_eq!(acc.acked_unlogged(), vec![1]);
        assert_eq!(acc.duplicates(), 1);
    }
}
