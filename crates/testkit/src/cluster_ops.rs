//! What happens to a running cluster, done by hand for tests: a slot migrated between masters in
//! visible steps (so a client can be caught between them, answered ASK and then MOVED), and a master
//! failover (`CLUSTER FAILOVER` run on its replica, which is promoted while the old master steps down).

use std::time::Instant;

use crate::cluster::{FORM_TIMEOUT, POLL_INTERVAL, RedisCluster, admin, cluster_nodes, must};

/// A slot on its way from one master to another. Steps: [`RedisCluster::begin_slot_migration`]
/// (IMPORTING/MIGRATING), [`SlotMigration::move_keys`] (MIGRATE every key: the source now answers ASK
/// for them), [`SlotMigration::finish`] (SETSLOT NODE everywhere: MOVED).
#[derive(Debug)]
pub struct SlotMigration<'a> {
    cluster: &'a RedisCluster,
    slot: String,
    source: usize,
    target: usize,
    target_id: String,
}

impl RedisCluster {
    /// The hash slot of `key` (`CLUSTER KEYSLOT`).
    pub fn key_slot(&self, key: &str) -> u16 {
        match must(&self.nodes[0], &["CLUSTER", "KEYSLOT", key]) {
            redis::Value::Int(n) => u16::try_from(n).expect("slot in range"),
            other => panic!("CLUSTER KEYSLOT {key}: {other:?}"),
        }
    }

    /// Starts moving the slot of `key` from its master to master `target` (a node index).
    pub fn begin_slot_migration(&self, key: &str, target: usize) -> SlotMigration<'_> {
        let source = self.node_index_for_key(key);
        assert_ne!(source, target, "{key} already lives on node {target}");
        let slot = self.key_slot(key).to_string();
        let source_id = self.node_id(source);
        let target_id = self.node_id(target);
        must(
            &self.nodes[target],
            &["CLUSTER", "SETSLOT", &slot, "IMPORTING", &source_id],
        );
        must(
            &self.nodes[source],
            &["CLUSTER", "SETSLOT", &slot, "MIGRATING", &target_id],
        );
        SlotMigration {
            cluster: self,
            slot,
            source,
            target,
            target_id,
        }
    }

    /// Promotes the replica of master `master` with `CLUSTER FAILOVER` run on the replica, waits until
    /// every node sees it as the master of those slots and the old master as its replica in sync, and
    /// returns the new master's index.
    pub fn failover(&self, master: usize) -> usize {
        let master_id = self.node_id(master);
        let replica = (0..self.nodes.len())
            .find(|&i| {
                cluster_nodes(&self.nodes[i]).lines().any(|l| {
                    let fields: Vec<&str> = l.split_whitespace().collect();
                    fields
                        .get(2)
                        .is_some_and(|f| f.contains("myself") && f.contains("slave"))
                        && fields.get(3) == Some(&master_id.as_str())
                })
            })
            .unwrap_or_else(|| panic!("master {master} has no replica"));
        must(&self.nodes[replica], &["CLUSTER", "FAILOVER"]);
        let replica_id = self.node_id(replica);
        let deadline = Instant::now() + FORM_TIMEOUT;
        for (index, node) in self.nodes.iter().enumerate() {
            loop {
                let listing = cluster_nodes(node);
                let promoted = listing
                    .lines()
                    .any(|l| l.starts_with(&replica_id) && l.contains("master"));
                let demoted = listing
                    .lines()
                    .any(|l| l.starts_with(&master_id) && l.contains(&replica_id));
                if promoted && demoted {
                    break;
                }
                if Instant::now() >= deadline {
                    panic!(
                        "failover of node {master} to node {replica} not seen by node {index} within {FORM_TIMEOUT:?}:\n{listing}\n{}",
                        node.log_tail(30)
                    );
                }
                std::thread::sleep(POLL_INTERVAL);
            }
        }
        self.wait_healthy();
        replica
    }
}

impl SlotMigration<'_> {
    /// The slot being moved.
    pub fn slot(&self) -> u16 {
        self.slot.parse().expect("slot")
    }

    /// MIGRATEs every key of the slot to the target; returns how many were moved.
    pub fn move_keys(&self) -> usize {
        let source = &self.cluster.nodes[self.source];
        let target_port = self.cluster.nodes[self.target].port().to_string();
        let mut moved = 0;
        loop {
            let keys: Vec<String> =
                match must(source, &["CLUSTER", "GETKEYSINSLOT", &self.slot, "100"]) {
                    redis::Value::Array(items) => items
                        .into_iter()
                        .filter_map(|v| match v {
                            redis::Value::BulkString(b) => Some(String::from_utf8_lossy(&b).into()),
                            _ => None,
                        })
                        .collect(),
                    other => panic!("CLUSTER GETKEYSINSLOT: {other:?}"),
                };
            if keys.is_empty() {
                return moved;
            }
            let mut args = vec![
                "MIGRATE",
                "127.0.0.1",
                &target_port,
                "",
                "0",
                "5000",
                "KEYS",
            ];
            args.extend(keys.iter().map(String::as_str));
            must(source, &args);
            moved += keys.len();
        }
    }

    /// Assigns the slot to the target on every master (target first, then the source), and waits
    /// until every node agrees.
    pub fn finish(self) {
        let order = std::iter::once(self.target)
            .chain(std::iter::once(self.source))
            .chain((0..self.cluster.nodes.len()).filter(|&i| i != self.target && i != self.source));
        for i in order {
            // A replica refuses SETSLOT; it learns the owner from its master.
            let _ = admin(
                &self.cluster.nodes[i],
                &["CLUSTER", "SETSLOT", &self.slot, "NODE", &self.target_id],
            );
        }
        let slot: u16 = self.slot();
        let deadline = Instant::now() + FORM_TIMEOUT;
        for (index, node) in self.cluster.nodes.iter().enumerate() {
            loop {
                let listing = cluster_nodes(node);
                let owned = listing
                    .lines()
                    .find(|l| l.starts_with(&self.target_id))
                    .is_some_and(|l| owns_slot(l, slot));
                if owned {
                    break;
                }
                if Instant::now() >= deadline {
                    panic!(
                        "node {index} does not see slot {slot} on node {} within {FORM_TIMEOUT:?}:\n{listing}",
                        self.target
                    );
                }
                std::thread::sleep(POLL_INTERVAL);
            }
        }
        self.cluster.wait_healthy();
    }
}

/// Whether a `CLUSTER NODES` line lists `slot` among its slots (`n` or `a-b`; `[…]` entries are
/// migrations in progress, not ownership).
fn owns_slot(line: &str, slot: u16) -> bool {
    line.split_whitespace().skip(8).any(|range| {
        if range.starts_with('[') {
            return false;
        }
        match range.split_once('-') {
            Some((a, b)) => match (a.parse::<u16>(), b.parse::<u16>()) {
                (Ok(a), Ok(b)) => (a..=b).contains(&slot),
                _ => false,
            },
            None => range.parse::<u16>() == Ok(slot),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::owns_slot;

    #[test]
    fn slot_ranges_of_a_nodes_line() {
        let line = "abc 127.0.0.1:1@2 master - 0 0 1 connected 0-10 12 [13->-def]";
        assert!(owns_slot(line, 0));
        assert!(owns_slot(line, 10));
        assert!(!owns_slot(line, 11));
        assert!(owns_slot(line, 12));
        assert!(!owns_slot(line, 13));
    }
}
