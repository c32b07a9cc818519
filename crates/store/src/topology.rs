//! Which Redis Cluster node serves which hash slots (`CLUSTER SLOTS`), for the offsets view's node
//! endpoint and slot range per shard. On standalone Redis there is no such map.

use redis::Value;

use crate::error::StoreError;
use crate::store::Store;

/// One contiguous slot range and the master node serving it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotOwner {
    pub start: u16,
    pub end: u16,
    /// `host:port` as the cluster announces it.
    pub endpoint: String,
    pub node_id: Option<String>,
}

impl Store {
    /// The cluster's slot map (masters only), or `None` on standalone Redis.
    pub async fn cluster_slot_owners(&self) -> Result<Option<Vec<SlotOwner>>, StoreError> {
        let conn = self.connection();
        if !conn.is_cluster() {
            return Ok(None);
        }
        let reply: Value = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query_async(&mut conn.clone())
            .await?;
        let unexpected = || StoreError::UnexpectedReply {
            detail: "CLUSTER SLOTS: not [start, end, [host, port, id], …] ranges".to_owned(),
        };
        let Value::Array(ranges) = reply else {
            return Err(unexpected());
        };
        let mut out = Vec::with_capacity(ranges.len());
        for range in &ranges {
            let Value::Array(parts) = range else {
                return Err(unexpected());
            };
            let (Some(start), Some(end), Some(Value::Array(master))) =
                (int(parts.first()), int(parts.get(1)), parts.get(2))
            else {
                return Err(unexpected());
            };
            let host = master.first().and_then(text).unwrap_or_default();
            let port = int(master.get(1)).ok_or_else(unexpected)?;
            out.push(SlotOwner {
                start: u16::try_from(start).map_err(|_| unexpected())?,
                end: u16::try_from(end).map_err(|_| unexpected())?,
                endpoint: format!("{host}:{port}"),
                node_id: master.get(2).and_then(text),
            });
        }
        out.sort_by_key(|o| o.start);
        Ok(Some(out))
    }
}

/// The owner of `slot` in a slot map.
pub fn owner_of(owners: &[SlotOwner], slot: u16) -> Option<&SlotOwner> {
    owners.iter().find(|o| o.start <= slot && slot <= o.end)
}

fn int(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Int(i) => Some(*i),
        Value::BulkString(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        _ => None,
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        _ => None,
    }
}
