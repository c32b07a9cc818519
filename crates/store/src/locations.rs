//! Where shard streams live in a Redis Cluster: for each hash slot, the master serving it (its announced
//! `host:port` and node id) and the slot range it belongs to, from one `CLUSTER SLOTS`.
//!
//! Shard streams carry no hash tag, so the streams of one stream spread over the masters; the offsets and
//! describe views show that spread. On a standalone Redis there is nothing to locate (every answer is None).

use redis::Value;

use crate::error::StoreError;
use crate::store::Store;

/// The master serving a slot, as the cluster announces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardLocation {
    /// `host:port` the master announces (before any node map is applied).
    pub node_endpoint: String,
    /// The master's node id, when the server reports it.
    pub node_id: Option<String>,
    /// First and last slot of the range the slot falls in.
    pub slot_range: (u16, u16),
}

impl Store {
    /// The master of each of `slots` (same order); all None on a standalone Redis. One `CLUSTER SLOTS`.
    pub async fn shard_locations(
        &self,
        slots: &[u16],
    ) -> Result<Vec<Option<ShardLocation>>, StoreError> {
        if !self.connection().is_cluster() {
            return Ok(vec![None; slots.len()]);
        }
        let reply: Vec<Value> = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query_async(&mut self.connection())
            .await?;
        let ranges: Vec<ShardLocation> = reply.iter().filter_map(parse_range).collect();
        Ok(slots
            .iter()
            .map(|&slot| {
                ranges
                    .iter()
                    .find(|r| (r.slot_range.0..=r.slot_range.1).contains(&slot))
                    .cloned()
            })
            .collect())
    }
}

/// One `CLUSTER SLOTS` entry: `[start, end, [host, port, id, …], replicas…]`.
fn parse_range(entry: &Value) -> Option<ShardLocation> {
    let Value::Array(parts) = entry else {
        return None;
    };
    let int = |v: &Value| match v {
        Value::Int(n) => u16::try_from(*n).ok(),
        _ => None,
    };
    let text = |v: &Value| match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    };
    let start = int(parts.first()?)?;
    let end = int(parts.get(1)?)?;
    let Value::Array(master) = parts.get(2)? else {
        return None;
    };
    let host = text(master.first()?)?;
    let port = match master.get(1)? {
        Value::Int(p) => *p,
        _ => return None,
    };
    Some(ShardLocation {
        node_endpoint: format!("{host}:{port}"),
        node_id: master.get(2).and_then(text),
        slot_range: (start, end),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_slots_entry_is_read() {
        let entry = Value::Array(vec![
            Value::Int(0),
            Value::Int(5460),
            Value::Array(vec![
                Value::BulkString(b"127.0.0.1".to_vec()),
                Value::Int(7000),
                Value::BulkString(b"abc".to_vec()),
            ]),
        ]);
        assert_eq!(
            parse_range(&entry),
            Some(ShardLocation {
                node_endpoint: "127.0.0.1:7000".into(),
                node_id: Some("abc".into()),
                slot_range: (0, 5460),
            })
        );
        assert_eq!(parse_range(&Value::Nil), None);
    }
}
