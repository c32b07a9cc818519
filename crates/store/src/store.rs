//! The metadata store: the source of truth for every group, in Redis.
//!
//! Layout per group (all its keys share the group's hash tag, so one script can touch them all,
//! also in a cluster): a `metadata` hash with the cold aggregate and its revision, a `leases` sorted
//! set (member → deadline in Redis-server milliseconds) and a `progress` hash (member → JSON); a large
//! aggregate lives out of line in the hash's aggregate key (`aggregate_codec.rs`). Every change is one Lua
//! script guarded by the revision (compare-and-set), so a write never lands on a state its author did
//! not see; a large aggregate is staged by a plain SET in the same MULTI/EXEC as the script, which
//! renames it into place only if the write goes ahead. The hot path, [`Store::heartbeat`], is one EVALSHA that renews a
//! lease and stores progress without touching the aggregate. The group index lives in another
//! slot and is written with separate commands; it is rebuildable and never part of a script.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::Value;

use crate::aggregate_codec::{self, AggregateCompression, LAYOUT_LZ4_OUT_OF_LINE};
use crate::connection::{RedisConn, RedisTopology};
use crate::error::{StoreError, on_group_key};
use crate::group_name::GroupName;
use crate::keys::{GroupKeys, aggregate_key, aggregate_staging_key};
use crate::keyspace::Keyspace;
use crate::metadata;
use crate::outcome::{
    CasOutcome, CasWrite, CreateOutcome, DeleteOutcome, HeartbeatOutcome, PeerLease, StoredGroup,
    Watch,
};
use crate::reply::ScriptReply;
use crate::scripts::Scripts;
use crate::split_layout::{LAYOUT_SPLIT, SplitAggregate, entry_field};

/// A handle to the metadata store. Cheap to clone; all clones share one multiplexed connection
/// and one set of compiled scripts.
#[derive(Clone, Debug)]
pub struct Store {
    conn: RedisConn,
    scripts: Arc<Scripts>,
    /// How large aggregates are written (`aggregate_codec.rs`); reads understand every layout.
    compression: AggregateCompression,
    /// Every key name under the deployment's key prefix ([`Store::with_key_prefix`]).
    keyspace: Keyspace,
}

impl Store {
    /// Connects, PINGs once and preloads the scripts (on every master in a cluster), all within
    /// `timeout`; the same bound then applies to every command's reply. Fails with
    /// [`StoreError::Unreachable`] if Redis does not answer in time.
    pub async fn connect(topology: &RedisTopology, timeout: Duration) -> Result<Store, StoreError> {
        Store::connect_with_tls(topology, None, timeout).await
    }

    /// [`Store::connect`] with TLS options (a CA file, a client certificate and key) for `rediss://`
    /// addresses. A file that cannot be used is [`StoreError::Connect`]; a failed handshake (the
    /// certificate does not verify or names another host, the port is plain text) [`StoreError::Tls`].
    pub async fn connect_with_tls(
        topology: &RedisTopology,
        tls: Option<&rsc_redis_connect::RedisTls>,
        timeout: Duration,
    ) -> Result<Store, StoreError> {
        let conn = RedisConn::open(topology, tls, timeout).await?;
        let store = Store {
            conn,
            scripts: Arc::new(Scripts::new()),
            compression: AggregateCompression::default(),
            keyspace: Keyspace::default(),
        };
        let url = topology.describe();
        let over_tls = tls.is_some() || url.contains("rediss://");
        let unreachable =
            |source: redis::RedisError| crate::connection::connect_failure(&url, source, over_tls);
        let mut conn = store.conn.clone();
        let () = redis::cmd("PING")
            .query_async::<String>(&mut conn)
            .await
            .map(drop)
            .map_err(unreachable)?;
        for script in store.scripts.all() {
            script.load_async(&mut conn).await?;
        }
        Ok(store)
    }

    /// The same store, writing large aggregates as `compression` says (default: LZ4).
    pub fn with_aggregate_compression(mut self, compression: AggregateCompression) -> Store {
        self.compression = compression;
        self
    }

    /// The same store, naming its keys under `key_prefix` (default: [`crate::DEFAULT_KEY_PREFIX`]).
    pub fn with_key_prefix(mut self, key_prefix: &str) -> Store {
        self.keyspace = Keyspace::new(key_prefix);
        self
    }

    /// Every key name under this store's key prefix. The store's methods take ids and name their keys with it;
    /// callers use it only to show a key in a message (and `rsc doctor` to tell keys apart).
    pub fn keyspace(&self) -> &Keyspace {
        &self.keyspace
    }

    /// A clonable connection handle in either topology, for the store's own modules and for tests that
    /// inspect Redis directly. The coordinator goes through the typed APIs only.
    pub fn connection(&self) -> RedisConn {
        self.conn.clone()
    }

    /// Redis server time (`TIME`) in milliseconds since the Unix epoch: the clock leases use.
    pub async fn server_time_ms(&self) -> Result<i64, StoreError> {
        let (secs, micros): (i64, i64) = redis::cmd("TIME")
            .query_async(&mut self.connection())
            .await?;
        Ok(secs.saturating_mul(1000).saturating_add(micros / 1000))
    }

    /// One PING; returns the round-trip time (in a cluster, PING goes to every master).
    pub async fn ping(&self) -> Result<Duration, StoreError> {
        let started = Instant::now();
        let reply: String = redis::cmd("PING")
            .query_async(&mut self.connection())
            .await?;
        if reply != "PONG" {
            return Err(StoreError::unexpected(format!("PING answered {reply:?}")));
        }
        Ok(started.elapsed())
    }

    /// Reads and validates a group's metadata. `Ok(None)` if the group does not exist; an error
    /// (never a guess) if it exists but cannot be trusted or was written by a newer schema/layout.
    pub async fn load(&self, group: &GroupName) -> Result<Option<StoredGroup>, StoreError> {
        self.load_hash(&self.keyspace.group_metadata(group)).await
    }

    /// Reads and validates a metadata-shaped hash (a group's metadata or a stream record) and its
    /// out-of-line aggregate, if it has one, in one transaction (so the two always belong together).
    pub(crate) async fn load_hash(&self, key: &str) -> Result<Option<StoredGroup>, StoreError> {
        let (fields, out_of_line): (HashFields, Option<Vec<u8>>) = redis::pipe()
            .atomic()
            .cmd("HGETALL")
            .arg(key)
            .cmd("GET")
            .arg(aggregate_key(key))
            .query_async(&mut self.connection())
            .await
            .map_err(|e| on_group_key(key, e))?;
        metadata::parse(key, fields, out_of_line)
    }

    /// The revision a group's metadata is at (`Ok(None)` if the group does not exist): one HGET, to
    /// confirm that a cached aggregate is current without reading it again.
    pub async fn revision(&self, group: &GroupName) -> Result<Option<u64>, StoreError> {
        let metadata_key = self.keyspace.group_metadata(group);
        let field: Option<String> = redis::cmd("HGET")
            .arg(&metadata_key)
            .arg("revision")
            .query_async(&mut self.connection())
            .await
            .map_err(|e| on_group_key(&metadata_key, e))?;
        metadata::parse_revision_field(&metadata_key, field)
    }

    /// [`Store::revision`] of many groups, in order, in pipelines of [`REVISIONS_PAGE`] (standalone); on a
    /// Redis Cluster, whose groups lie in many slots, one HGET each, sent concurrently a page at a time.
    pub async fn revisions(&self, groups: &[&GroupName]) -> Result<Vec<Option<u64>>, StoreError> {
        let keys: Vec<String> = groups
            .iter()
            .map(|g| self.keyspace.group_metadata(g))
            .collect();
        let conn = self.connection();
        let mut out = Vec::with_capacity(keys.len());
        for page in keys.chunks(REVISIONS_PAGE) {
            let fields: Vec<Option<String>> = if conn.is_cluster() {
                let mut asks = tokio::task::JoinSet::new();
                for (i, k) in page.iter().enumerate() {
                    let (mut c, key) = (conn.clone(), k.clone());
                    asks.spawn(async move {
                        let f: redis::RedisResult<Option<String>> = redis::cmd("HGET")
                            .arg(&key)
                            .arg("revision")
                            .query_async(&mut c)
                            .await;
                        (i, f)
                    });
                }
                let mut fields = vec![None; page.len()];
                while let Some(joined) = asks.join_next().await {
                    let (i, f) = joined.map_err(|e| {
                        StoreError::from(redis::RedisError::from(std::io::Error::other(
                            e.to_string(),
                        )))
                    })?;
                    fields[i] = f.map_err(|e| on_group_key(&page[i], e))?;
                }
                fields
            } else {
                let mut pipe = redis::pipe();
                for k in page {
                    pipe.cmd("HGET").arg(k).arg("revision");
                }
                pipe.query_async(&mut conn.clone()).await?
            };
            for (k, field) in page.iter().zip(fields) {
                out.push(metadata::parse_revision_field(k, field)?);
            }
        }
        Ok(out)
    }

    /// Creates the group at revision 1 unless its metadata already exists. Clears leftover
    /// leases/progress under the same keys and gives each of `initial_leases` a lease of
    /// `lease_ttl_ms` from Redis time.
    pub async fn create(
        &self,
        group: &GroupName,
        aggregate_json: &str,
        updated_at: &str,
        initial_leases: &[String],
        lease_ttl_ms: i64,
    ) -> Result<CreateOutcome, StoreError> {
        let keys = &self.keyspace.group_of(group);
        positive_ttl(lease_ttl_ms)?;
        let mut call = self.scripts.create.prepare_invoke();
        group_keys_with_aggregate(&mut call, keys);
        call.arg(aggregate_json)
            .arg(updated_at)
            .arg(lease_ttl_ms)
            .arg(initial_leases);
        let reply = self.run(&call, keys).await?;
        match reply.status.as_str() {
            "CREATED" => Ok(CreateOutcome::Created {
                revision: 1,
                now_ms: reply.now_ms,
            }),
            "EXISTS" => Ok(CreateOutcome::AlreadyExists),
            _ => Err(reply.unknown_status()),
        }
    }

    /// Compare-and-set: writes `write.aggregate_json` as revision `expected_revision + 1` and
    /// applies the lease changes, only if the revision matches and every condition holds. One
    /// atomic script; on any refusal nothing at all is written.
    pub async fn cas(&self, group: &GroupName, write: &CasWrite) -> Result<CasOutcome, StoreError> {
        let keys = &self.keyspace.group_of(group);
        positive_ttl(write.lease_ttl_ms)?;
        if let Some(split) = &write.split {
            split.check()?;
        }
        let (aggregate, layout) = match &write.split {
            Some(split) => (
                std::borrow::Cow::Borrowed(split.header.as_bytes()),
                LAYOUT_SPLIT,
            ),
            None => aggregate_codec::encode(&write.aggregate_json, self.compression),
        };
        let out_of_line = layout == LAYOUT_LZ4_OUT_OF_LINE;
        let mut call = self.scripts.cas.prepare_invoke();
        group_keys_with_aggregate(&mut call, keys);
        call.arg(write.expected_revision)
            .arg(if out_of_line { &[][..] } else { &*aggregate })
            .arg(&write.updated_at)
            .arg(write.lease_ttl_ms)
            .arg(write.not_before_ms)
            .arg(write.must_be_lapsed.len())
            .arg(write.must_be_live.len())
            .arg(write.renew.len())
            .arg(write.remove.len())
            .arg(write.drop_lease.len())
            .arg(write.progress.len())
            .arg(&write.must_be_lapsed)
            .arg(&write.must_be_live)
            .arg(&write.renew);
        for (member, doc) in &write.progress {
            call.arg(member).arg(doc);
        }
        call.arg(&write.remove).arg(&write.drop_lease);
        if let Some(split) = &write.split {
            split_args(&mut call, split);
        }
        call.arg(layout);
        let reply = if out_of_line {
            self.run_staged(&call, keys, &aggregate).await?
        } else {
            self.run(&call, keys).await?
        };
        if let Some(outcome) = reply.written_or_conflict()? {
            return Ok(outcome);
        }
        let now_ms = reply.now_ms;
        match reply.status.as_str() {
            "TOO_EARLY" => Ok(CasOutcome::TooEarly { now_ms }),
            "LEASE_ACTIVE" => Ok(CasOutcome::LeaseActive {
                member: reply.text(0)?,
                now_ms,
            }),
            "LEASE_LAPSED" => Ok(CasOutcome::LeaseLapsed {
                member: reply.text(0)?,
                now_ms,
            }),
            "NOT_STAGED" => Err(StoreError::unexpected(format!(
                "the aggregate staged in {} was not there for the compare-and-set",
                aggregate_staging_key(&keys.metadata)
            ))),
            _ => Err(reply.unknown_status()),
        }
    }

    /// Runs the compare-and-set `call` of a large aggregate: `SET` of `staged` into the staging key (with an
    /// expiry, in case the script does not run) and the script, in one MULTI/EXEC, so the aggregate never
    /// passes through Lua. A script missing from Redis's cache (a restarted server) is loaded and the
    /// transaction sent again; the script's checks make a repeat harmless.
    async fn run_staged(
        &self,
        call: &redis::ScriptInvocation<'_>,
        keys: &GroupKeys,
        staged: &[u8],
    ) -> Result<ScriptReply, StoreError> {
        let metadata_key = &keys.metadata;
        let mut pipe = redis::pipe();
        pipe.atomic()
            .ignore_errors()
            .cmd("SET")
            .arg(aggregate_staging_key(metadata_key))
            .arg(staged)
            .arg("PX")
            .arg(STAGED_AGGREGATE_TTL_MS)
            .invoke_script(call);
        let mut conn = self.connection();
        for attempt in 0..2 {
            let replies: Vec<Value> = pipe
                .query_async(&mut conn)
                .await
                .map_err(|e| on_group_key(metadata_key, e))?;
            let [set, script]: [Value; 2] = replies.try_into().map_err(|r: Vec<Value>| {
                StoreError::unexpected(format!("a staged write answered {} replies", r.len()))
            })?;
            if let Value::ServerError(e) = set {
                return Err(on_group_key(metadata_key, e.into()));
            }
            match script {
                Value::ServerError(e)
                    if e.kind() == Some(redis::ServerErrorKind::NoScript) && attempt == 0 =>
                {
                    self.scripts
                        .cas
                        .load_async(&mut conn)
                        .await
                        .map_err(|e| on_group_key(metadata_key, e))?;
                }
                Value::ServerError(e) => return Err(on_group_key(metadata_key, e.into())),
                value => return checked_reply(value, metadata_key),
            }
        }
        Err(StoreError::unexpected(
            "the compare-and-set script stayed missing from Redis's script cache after loading it",
        ))
    }

    /// The hot path, exactly one round trip: if the group is still at `expected_revision` and
    /// `member`'s lease is live, extend it to Redis time + `lease_ttl_ms` and store
    /// `progress_json` if given. Never reads or writes the aggregate.
    pub async fn heartbeat(
        &self,
        group: &GroupName,
        expected_revision: u64,
        member: &str,
        lease_ttl_ms: i64,
        progress_json: Option<&str>,
    ) -> Result<HeartbeatOutcome, StoreError> {
        self.heartbeat_watching(
            group,
            expected_revision,
            member,
            lease_ttl_ms,
            Watch::default(),
            progress_json,
        )
        .await
    }

    /// [`Store::heartbeat`], also looking at other members' leases as `watch` asks, in the same round trip:
    /// the other member whose lease ends first when it ends before Redis time + `watch.window_ms`
    /// (`HeartbeatOutcome::Renewed::next_lapse`), and the deadline of `watch.awaited`'s lease
    /// (`HeartbeatOutcome::Renewed::awaited_deadline_ms`).
    pub async fn heartbeat_watching(
        &self,
        group: &GroupName,
        expected_revision: u64,
        member: &str,
        lease_ttl_ms: i64,
        watch: Watch<'_>,
        progress_json: Option<&str>,
    ) -> Result<HeartbeatOutcome, StoreError> {
        let keys = &self.keyspace.group_of(group);
        positive_ttl(lease_ttl_ms)?;
        let mut call = self.scripts.heartbeat.prepare_invoke();
        group_keys(&mut call, keys);
        call.arg(expected_revision).arg(member).arg(lease_ttl_ms);
        match progress_json {
            Some(json) => call.arg("1").arg(json),
            None => call.arg("0").arg(""),
        };
        call.arg(watch.window_ms.max(0));
        if let Some(awaited) = watch.awaited {
            call.arg(awaited);
        }
        let reply = self.run(&call, keys).await?;
        let now_ms = reply.now_ms;
        match reply.status.as_str() {
            "RENEWED" => {
                let named = match reply.len() {
                    1 => String::new(),
                    _ => reply.text(1)?,
                };
                Ok(HeartbeatOutcome::Renewed {
                    now_ms,
                    others_lapsed: reply.int(0)? != 0,
                    next_lapse: match named.is_empty() {
                        true => None,
                        false => Some(PeerLease {
                            member: named,
                            deadline_ms: reply.int(2)?,
                        }),
                    },
                    awaited_deadline_ms: match reply.len() {
                        4 => Some(reply.int(3)?).filter(|&d| d >= 0),
                        _ => None,
                    },
                })
            }
            "CONFLICT" => Ok(HeartbeatOutcome::Conflict {
                current: reply.conflict_revision()?,
                now_ms,
            }),
            "LEASE_LAPSED" => Ok(HeartbeatOutcome::LeaseLapsed { now_ms }),
            _ => Err(reply.unknown_status()),
        }
    }

    /// Deletes the group's metadata, leases and progress if it is at `expected_revision`.
    /// The group index entry is separate: remove it with [`Store::group_index_remove`].
    pub async fn delete(
        &self,
        group: &GroupName,
        expected_revision: u64,
    ) -> Result<DeleteOutcome, StoreError> {
        let keys = &self.keyspace.group_of(group);
        let mut call = self.scripts.delete.prepare_invoke();
        group_keys_with_aggregate(&mut call, keys);
        call.arg(expected_revision);
        let reply = self.run(&call, keys).await?;
        match reply.status.as_str() {
            "DELETED" => Ok(DeleteOutcome::Deleted),
            "CONFLICT" => Ok(DeleteOutcome::Conflict {
                current: reply.conflict_revision()?,
            }),
            _ => Err(reply.unknown_status()),
        }
    }

    /// One member's lease deadline (Redis ms), None when it has no lease: one ZSCORE.
    pub async fn lease_of(
        &self,
        group: &GroupName,
        member: &str,
    ) -> Result<Option<i64>, StoreError> {
        let key = self.keyspace.group_of(group).leases;
        let score: Option<f64> = redis::cmd("ZSCORE")
            .arg(&key)
            .arg(member)
            .query_async(&mut self.connection())
            .await
            .map_err(|e| on_group_key(&key, e))?;
        Ok(score.map(|d| d as i64))
    }

    /// Every lease as (member, deadline in Redis ms), earliest deadline first (then by member).
    pub async fn leases(&self, group: &GroupName) -> Result<Vec<(String, i64)>, StoreError> {
        let keys = &self.keyspace.group_of(group);
        let pairs = self.scan_pairs("ZSCAN", &keys.leases).await?;
        let mut leases = Vec::with_capacity(pairs.len());
        for (member, score) in pairs {
            let deadline: f64 = score.parse().map_err(|_| StoreError::Corrupt {
                key: keys.leases.clone(),
                detail: format!(
                    "the lease of {member:?} has a score that is not a number: {score:?}"
                ),
            })?;
            leases.push((member, deadline as i64));
        }
        leases.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
        Ok(leases)
    }

    /// Every field of a hash (`HSCAN`) or member of a sorted set (`ZSCAN`, with its score), read in pages of
    /// [`SCAN_PAGE`]: Redis runs one command at a time, and one HGETALL or ZRANGE over a group of 10,000
    /// members held it for about 10 ms, delaying every heartbeat queued behind it. SCAN may return an entry
    /// twice; the map keeps one. Entries written during the scan may or may not be seen, as with any read.
    async fn scan_pairs(
        &self,
        command: &str,
        key: &str,
    ) -> Result<HashMap<String, String>, StoreError> {
        let mut out = HashMap::new();
        let mut cursor = "0".to_owned();
        loop {
            let (next, flat): (String, Vec<String>) = redis::cmd(command)
                .arg(key)
                .arg(&cursor)
                .arg("COUNT")
                .arg(SCAN_PAGE)
                .query_async(&mut self.connection())
                .await
                .map_err(|e| on_group_key(key, e))?;
            let mut items = flat.into_iter();
            while let (Some(k), Some(v)) = (items.next(), items.next()) {
                out.insert(k, v);
            }
            if next == "0" {
                return Ok(out);
            }
            cursor = next;
        }
    }

    /// Members whose lease has lapsed at `now_ms` (deadline <= now_ms), earliest first.
    pub async fn lapsed_members(
        &self,
        group: &GroupName,
        now_ms: i64,
    ) -> Result<Vec<String>, StoreError> {
        let keys = &self.keyspace.group_of(group);
        redis::cmd("ZRANGEBYSCORE")
            .arg(&keys.leases)
            .arg("-inf")
            .arg(now_ms)
            .query_async(&mut self.connection())
            .await
            .map_err(|e| on_group_key(&keys.leases, e))
    }

    /// How many lease entries the group has (ZCARD). The coordinator removes a member's lease whenever the
    /// member stops being live, so fewer entries than live members means some live member has none.
    pub async fn lease_count(&self, group: &GroupName) -> Result<usize, StoreError> {
        let keys = &self.keyspace.group_of(group);
        redis::cmd("ZCARD")
            .arg(&keys.leases)
            .query_async(&mut self.connection())
            .await
            .map_err(|e| on_group_key(&keys.leases, e))
    }

    /// The group's earliest lease end (Redis ms; None when the lease set is empty) and its number of lease
    /// entries, in one round trip (ZRANGE 0 0 WITHSCORES and ZCARD pipelined): what the reconciler's owner
    /// needs to know when the group is next due (`rsc_group::deadline`).
    pub async fn lease_summary(
        &self,
        group: &GroupName,
    ) -> Result<(Option<i64>, usize), StoreError> {
        let keys = &self.keyspace.group_of(group);
        let (first, count): (Vec<(String, f64)>, usize) = redis::pipe()
            .cmd("ZRANGE")
            .arg(&keys.leases)
            .arg(0)
            .arg(0)
            .arg("WITHSCORES")
            .cmd("ZCARD")
            .arg(&keys.leases)
            .query_async(&mut self.connection())
            .await
            .map_err(|e| on_group_key(&keys.leases, e))?;
        Ok((first.first().map(|(_, end)| *end as i64), count))
    }

    /// Which of `members` have no lease entry at all (ZMSCORE) — a lease set lost or evicted. Such a member
    /// is as good as lapsed: nobody can renew what is not there, and the compare-and-set's lapsed condition
    /// holds for it.
    pub async fn members_without_lease(
        &self,
        group: &GroupName,
        members: &[&str],
    ) -> Result<Vec<String>, StoreError> {
        let keys = &self.keyspace.group_of(group);
        if members.is_empty() {
            return Ok(Vec::new());
        }
        let scores: Vec<Option<f64>> = redis::cmd("ZMSCORE")
            .arg(&keys.leases)
            .arg(members)
            .query_async(&mut self.connection())
            .await
            .map_err(|e| on_group_key(&keys.leases, e))?;
        Ok(members
            .iter()
            .zip(scores)
            .filter(|(_, score)| score.is_none())
            .map(|(m, _)| (*m).to_owned())
            .collect())
    }

    /// Every member's progress JSON, sorted by member id.
    pub async fn progress_all(
        &self,
        group: &GroupName,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let keys = &self.keyspace.group_of(group);
        Ok(sorted(self.scan_pairs("HSCAN", &keys.progress).await?))
    }

    /// One group's index entry as JSON (`HGET`), None when the index has none.
    pub(crate) async fn index_get(
        &self,
        index_key: &str,
        metadata_key: &str,
    ) -> Result<Option<String>, StoreError> {
        Ok(redis::cmd("HGET")
            .arg(index_key)
            .arg(metadata_key)
            .query_async(&mut self.connection())
            .await?)
    }

    /// Records a group in the index: `metadata_key` → `value_json` in the hash `index_key`.
    pub(crate) async fn index_put(
        &self,
        index_key: &str,
        metadata_key: &str,
        value_json: &str,
    ) -> Result<(), StoreError> {
        let _added: i64 = redis::cmd("HSET")
            .arg(index_key)
            .arg(metadata_key)
            .arg(value_json)
            .query_async(&mut self.connection())
            .await?;
        Ok(())
    }

    /// Removes a group from the index (no error if it was not there).
    pub(crate) async fn index_remove(
        &self,
        index_key: &str,
        metadata_key: &str,
    ) -> Result<(), StoreError> {
        let _removed: i64 = redis::cmd("HDEL")
            .arg(index_key)
            .arg(metadata_key)
            .query_async(&mut self.connection())
            .await?;
        Ok(())
    }

    /// Every index entry as (metadata key, value JSON), sorted by metadata key.
    pub(crate) async fn index_list(
        &self,
        index_key: &str,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let entries: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(index_key)
            .query_async(&mut self.connection())
            .await?;
        Ok(sorted(entries))
    }

    /// Runs one script invocation (EVALSHA, loading the script on NOSCRIPT) and decodes the reply.
    async fn run(
        &self,
        call: &redis::ScriptInvocation<'_>,
        keys: &GroupKeys,
    ) -> Result<ScriptReply, StoreError> {
        self.run_on(call, &keys.metadata).await
    }

    /// [`Store::run`] for a script whose KEYS[1] is the hash `metadata_key` (a group's metadata or a
    /// stream record): a CORRUPT reply or a WRONGTYPE error is reported against that key.
    pub(crate) async fn run_on(
        &self,
        call: &redis::ScriptInvocation<'_>,
        metadata_key: &str,
    ) -> Result<ScriptReply, StoreError> {
        let value: Value = call
            .invoke_async(&mut self.connection())
            .await
            .map_err(|e| on_group_key(metadata_key, e))?;
        checked_reply(value, metadata_key)
    }
}

/// Passes the group's keys as KEYS[1..3] in the order every script expects.
fn group_keys(call: &mut redis::ScriptInvocation<'_>, keys: &GroupKeys) {
    call.key(&keys.metadata)
        .key(&keys.leases)
        .key(&keys.progress);
}

/// A script's reply decoded; a CORRUPT reply is the error it reports against `metadata_key`.
fn checked_reply(value: Value, metadata_key: &str) -> Result<ScriptReply, StoreError> {
    let reply = ScriptReply::parse(value)?;
    if reply.status == "CORRUPT" {
        return Err(StoreError::Corrupt {
            key: metadata_key.to_string(),
            detail: reply.text(0)?,
        });
    }
    Ok(reply)
}

/// [`group_keys`], then the out-of-line aggregate's key and its staging key as KEYS[4..5] (the scripts that
/// write or delete the aggregate: create, cas, delete, and a group's restore).
pub(crate) fn group_keys_with_aggregate(call: &mut redis::ScriptInvocation<'_>, keys: &GroupKeys) {
    group_keys(call, keys);
    call.key(aggregate_key(&keys.metadata))
        .key(aggregate_staging_key(&keys.metadata));
}

/// A hash as `HGETALL` returns it.
type HashFields = HashMap<Vec<u8>, Vec<u8>>;

/// How long a staged aggregate may outlive a transaction whose script did not run (it is renamed or deleted
/// by the script otherwise).
const STAGED_AGGREGATE_TTL_MS: u64 = 60_000;

/// The split layout's arguments of `cas.lua`: full, the parts field, the entries to set (field, JSON) and the
/// fields to delete.
fn split_args(call: &mut redis::ScriptInvocation<'_>, split: &SplitAggregate) {
    call.arg(if split.full { "1" } else { "0" })
        .arg(split.parts_field());
    let (set, delete): (Vec<_>, Vec<_>) = split.entries.iter().partition(|e| e.json.is_some());
    call.arg(set.len());
    for e in set {
        call.arg(entry_field(&e.part, &e.key))
            .arg(e.json.as_deref().unwrap_or_default());
    }
    call.arg(delete.len());
    for e in delete {
        call.arg(entry_field(&e.part, &e.key));
    }
}

fn positive_ttl(lease_ttl_ms: i64) -> Result<(), StoreError> {
    if lease_ttl_ms > 0 {
        Ok(())
    } else {
        Err(StoreError::InvalidArgument {
            detail: format!("lease_ttl_ms must be positive, got {lease_ttl_ms}"),
        })
    }
}

/// Entries per HSCAN / ZSCAN page (a hint to Redis; a small hash or set comes back whole).
const SCAN_PAGE: usize = 500;

/// Revisions read per pipeline by [`Store::revisions`].
pub const REVISIONS_PAGE: usize = 500;

fn sorted(map: HashMap<String, String>) -> Vec<(String, String)> {
    let mut entries: Vec<(String, String)> = map.into_iter().collect();
    entries.sort();
    entries
}
