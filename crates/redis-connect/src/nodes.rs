//! Cluster seed nodes and the node map: `host:port` seeds become URLs (`rediss://` when TLS is on), and
//! `announced → reachable` address pairs (clusters behind NAT) are parsed for the cluster client.

use std::collections::{BTreeMap, HashMap};

use redis::cluster::NodeAddress;

/// `host:port` → `redis://host:port` (`rediss://` with `tls`); URLs are kept as given.
pub fn seed_url(node: &str, tls: bool) -> String {
    if node.contains("://") {
        node.to_owned()
    } else if tls {
        format!("rediss://{node}")
    } else {
        format!("redis://{node}")
    }
}

/// The node map as the cluster client takes it; the first entry that is not `host:port` is named.
pub fn parse_node_map(
    pairs: &BTreeMap<String, String>,
) -> Result<HashMap<NodeAddress, NodeAddress>, String> {
    let address = |text: &str| -> Result<NodeAddress, String> {
        let parsed: Option<NodeAddress> = text.trim().parse().ok();
        parsed
            .filter(|a| !a.host().is_empty() && a.port() != 0)
            .ok_or_else(|| format!("cluster node map entry {text:?} is not host:port"))
    };
    pairs
        .iter()
        .map(|(announced, reachable)| Ok((address(announced)?, address(reachable)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_accept_host_port_and_urls() {
        assert_eq!(seed_url("127.0.0.1:7000", false), "redis://127.0.0.1:7000");
        assert_eq!(seed_url("127.0.0.1:7000", true), "rediss://127.0.0.1:7000");
        assert_eq!(seed_url("redis://h:1", true), "redis://h:1");
    }

    #[test]
    fn node_map_pairs_and_bad_entries() {
        let map = parse_node_map(&BTreeMap::from([(
            "10.0.0.1:7000".to_owned(),
            "127.0.0.1:17000".to_owned(),
        )]))
        .expect("valid");
        assert_eq!(
            map.get(&NodeAddress::new("10.0.0.1", 7000)),
            Some(&NodeAddress::new("127.0.0.1", 17000))
        );
        let err = parse_node_map(&BTreeMap::from([("10.0.0.1".to_owned(), "x:1".to_owned())]))
            .unwrap_err();
        assert!(err.contains("\"10.0.0.1\""), "{err}");
    }
}
