//! What a producer publishes (a partition key and its fields) and where each record went.

/// One record to publish: a partition key and its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The partition key (bytes): it picks the shard, and records of one key keep their order on it.
    pub key: Vec<u8>,
    /// The stream entry's fields, in order, as `XADD` writes them (at least one; the key is not added as a
    /// field).
    pub fields: Vec<(String, Vec<u8>)>,
}

impl Record {
    /// A record with partition `key` and no fields yet.
    ///
    /// ```
    /// let r = rsc_client::Record::new("order-123").field("payload", "{\"total\":42}");
    /// assert_eq!(r.fields.len(), 1);
    /// ```
    pub fn new(key: impl AsRef<[u8]>) -> Self {
        Record {
            key: key.as_ref().to_vec(),
            fields: Vec::new(),
        }
    }

    /// Adds a field.
    pub fn field(mut self, name: impl Into<String>, value: impl AsRef<[u8]>) -> Self {
        self.fields.push((name.into(), value.as_ref().to_vec()));
        self
    }
}

/// Where a record went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// The shard index the key routed to.
    pub shard: u32,
    /// The shard's stream key (`<streamPrefix>:<shard>`).
    pub stream_key: String,
    /// The stream entry id Redis assigned.
    pub id: String,
}
