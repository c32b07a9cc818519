//! A model of one group consuming an ordered stream across one scale, to check the parent/fence rule of
//! `rsc_protocol::ordering` for any pair of counts: producers append per-key sequence numbers with the
//! routing in force (`shard_for_key`), the switch records every old shard's switch point, a withheld child
//! is read by nobody and a surviving (fenced) child only up to its switch point until its gate opens, and a
//! gate loses a parent once that parent is consumed up to its own switch point (bounded drain evidence).
//! Checked: every key's records are consumed in publish order, and once producers stop every record is
//! consumed (nothing lost, no gate waits forever). The same model with the fence removed must be able to
//! fail, or the check would prove nothing.

use proptest::prelude::*;
use rsc_protocol::ordering::{fenced_children, gates};
use rsc_protocol::routing::shard_for_key;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Copy, PartialEq)]
enum Rule {
    /// Surviving children are read up to their switch point until their gate opens (the rule).
    Fenced,
    /// Surviving children are read freely (what rsc would do without fences).
    Unfenced,
}

#[derive(Debug, Clone)]
enum Op {
    Publish(usize),
    Consume(usize),
    Switch,
}

struct World {
    rule: Rule,
    keys: Vec<Vec<u8>>,
    from: u32,
    to: u32,
    switched: bool,
    /// Per shard (old and new): the records (key index, sequence number) in append order.
    streams: Vec<Vec<(usize, u64)>>,
    /// Per shard: how many records the group consumed.
    cursor: Vec<usize>,
    /// Per shard: its length at the switch (0 for a shard that did not exist before it).
    switch_point: Vec<usize>,
    gates: BTreeMap<u32, BTreeSet<u32>>,
    fenced: BTreeSet<u32>,
    published: Vec<u64>,
    consumed: Vec<u64>,
}

impl World {
    fn new(rule: Rule, keys: Vec<Vec<u8>>, from: u32, to: u32) -> Self {
        let shards = from.max(to) as usize;
        let n = keys.len();
        World {
            rule,
            keys,
            from,
            to,
            switched: false,
            streams: vec![Vec::new(); shards],
            cursor: vec![0; shards],
            switch_point: vec![0; shards],
            gates: BTreeMap::new(),
            fenced: BTreeSet::new(),
            published: vec![0; n],
            consumed: vec![0; n],
        }
    }

    fn publish(&mut self, k: usize) {
        let count = if self.switched { self.to } else { self.from };
        let s = shard_for_key(&self.keys[k], count).expect("count > 0") as usize;
        self.streams[s].push((k, self.published[k]));
        self.published[k] += 1;
    }

    fn switch(&mut self) {
        if self.switched {
            return;
        }
        self.switched = true;
        for (s, stream) in self.streams.iter().enumerate() {
            self.switch_point[s] = stream.len();
        }
        self.gates = gates(self.from, self.to);
        self.fenced = fenced_children(self.from, self.to);
    }

    /// How far shard `s` may be read now.
    fn readable(&self, s: usize) -> usize {
        let len = self.streams[s].len();
        if !self.gates.contains_key(&(s as u32)) {
            return len;
        }
        if self.fenced.contains(&(s as u32)) {
            return match self.rule {
                Rule::Fenced => len.min(self.switch_point[s]),
                Rule::Unfenced => len,
            };
        }
        0
    }

    /// Bounded drain evidence: a parent consumed up to its switch point leaves every gate.
    fn open_gates(&mut self) {
        let (cursor, points) = (&self.cursor, &self.switch_point);
        for parents in self.gates.values_mut() {
            parents.retain(|p| cursor[*p as usize] < points[*p as usize]);
        }
        self.gates.retain(|_, parents| !parents.is_empty());
    }

    /// Consumes the next record of shard `s` if it may be read; Err on a record out of order.
    fn consume(&mut self, s: usize) -> Result<bool, String> {
        self.open_gates();
        if self.cursor[s] >= self.readable(s) {
            return Ok(false);
        }
        let (k, seq) = self.streams[s][self.cursor[s]];
        self.cursor[s] += 1;
        if seq != self.consumed[k] {
            return Err(format!(
                "{} -> {}: key {:?} consumed #{seq} from shard {s} while #{} was next",
                self.from, self.to, self.keys[k], self.consumed[k]
            ));
        }
        self.consumed[k] += 1;
        Ok(true)
    }

    fn run(&mut self, ops: &[Op]) -> Result<(), String> {
        for op in ops {
            match *op {
                Op::Publish(k) => self.publish(k % self.keys.len()),
                Op::Switch => self.switch(),
                Op::Consume(s) => {
                    let live = if self.switched {
                        self.streams.len()
                    } else {
                        self.from as usize
                    };
                    self.consume(s % live)?;
                }
            }
        }
        // Producers stop; evidence keeps arriving and the group keeps reading: everything is consumed.
        self.switch();
        loop {
            let mut progressed = false;
            for s in 0..self.streams.len() {
                progressed |= self.consume(s)?;
            }
            if !progressed {
                break;
            }
        }
        if self.consumed != self.published || !self.gates.is_empty() {
            return Err(format!(
                "{} -> {}: stuck with gates {:?}, consumed {:?} of {:?}",
                self.from, self.to, self.gates, self.consumed, self.published
            ));
        }
        Ok(())
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..64).prop_map(Op::Publish),
        4 => (0usize..64).prop_map(Op::Consume),
        1 => Just(Op::Switch),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Every scale, any keys, any interleaving of publishes, reads and the switch: per-key order holds,
    /// nothing is lost and every gate opens.
    #[test]
    fn fences_keep_per_key_order_without_deadlock(
        keys in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..12), 1..10),
        from in 1u32..12,
        to in 1u32..12,
        ops in proptest::collection::vec(op(), 0..120),
    ) {
        let mut w = World::new(Rule::Fenced, keys, from, to);
        let result = w.run(&ops);
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }
}

/// Without the fence, a surviving child read freely hands a moved key's new record over before its old one:
/// the model's check can fail, and the fence is what prevents it.
#[test]
fn without_the_fence_a_scale_in_breaks_order() {
    for (from, to) in [(8, 3), (4, 6), (8, 4), (6, 4)] {
        // A key that moves from old shard i to a surviving shard j != i.
        let key = (0..10_000)
            .map(|n| format!("key-{n}").into_bytes())
            .find(|k| {
                let (i, j) = (
                    shard_for_key(k, from).unwrap(),
                    shard_for_key(k, to).unwrap(),
                );
                i != j && j < from
            })
            .expect("some key moves to a surviving shard");
        let j = shard_for_key(&key, to).unwrap() as usize;
        let ops = [Op::Publish(0), Op::Switch, Op::Publish(0), Op::Consume(j)];
        let unfenced = World::new(Rule::Unfenced, vec![key.clone()], from, to).run(&ops);
        assert!(
            unfenced
                .as_ref()
                .is_err_and(|e| e.contains("while #0 was next")),
            "{from} -> {to}: {unfenced:?}"
        );
        assert_eq!(
            World::new(Rule::Fenced, vec![key], from, to).run(&ops),
            Ok(())
        );
    }
}
