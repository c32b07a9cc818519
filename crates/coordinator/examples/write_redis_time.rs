//! Redis's time for one transition write of a group of 100, 1,000 and 10,000 members (issue #36), as Redis
//! itself counts it: `INFO commandstats`' `usec` of `evalsha` (the compare-and-set script, `cas.lua`) read
//! before and after each write.
//!
//! `cargo build --workspace --locked --example write_redis_time && target/debug/examples/write_redis_time
//! [WRITES [SIZE…]]` starts, for each size (default 100, 1,000 and 10,000 members), a redis-server of its own (`rsc_testkit`), creates a converged group (one
//! shard per member, every member with a lease), writes it once in full in the split layout (layoutVersion
//! "4", as the coordinator's first write of a group does) and then makes 2 × WRITES (default 400) writes of one
//! transition each, as the coordinator stores them (`Group::write_form` against the base held split, with the
//! members the write changed): in turn a member joins (decided by `Batch` as a batch of one: its record and
//! target entries, new epochs, its lease renewed and its progress stored) and that member is pruned again (its
//! two entries deleted, its lease and progress removed), so the group keeps its size. The first WRITES are not
//! counted: the full write leaves Redis work behind it (its hash table grows by incremental rehashing, a step
//! per later command on it, and the Lua heap it filled is collected over the following calls). It prints, per
//! size and kind of write, the calls counted and Redis's mean time per call; the client's round-trip time is
//! printed beside it for reference. Redis's own time does not depend on the client's build.

use rsc_group::assign::assign;
use rsc_group::batch::Batch;
use rsc_group::model::{Group, Member, SPLIT_PARTS, ShardSet, SplitWrite, WriteForm};
use rsc_group::rebalance::derive_state;
use rsc_group::timing::Timing;
use rsc_protocol::wire::{HeartbeatRequest, RuntimeConsumerCapacity};
use rsc_store::{
    CasOutcome, CasWrite, CreateOutcome, GroupName, RedisTopology, SplitAggregate, SplitEntry,
    Store,
};
use rsc_testkit::RedisServer;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

const NOW_MS: i64 = 1_700_000_000_000;
const LEASE_TTL_MS: i64 = 60_000;

/// A STABLE group of `members` members, one shard each, every member holding exactly its target.
fn converged_group(members: usize) -> Group {
    let shards = members as u32;
    let mut g = Group::new(
        "bench",
        &format!("g{members}"),
        shards,
        NOW_MS,
        "lifecycle-1",
    );
    let ids: BTreeSet<String> = (0..members).map(|i| format!("member-{i:05}")).collect();
    let all: ShardSet = (0..shards).collect();
    let targets = assign(&all, &ids, &BTreeMap::new());
    g.group_epoch = members as i64 + 1;
    g.assignment_epoch = g.group_epoch;
    g.metadata_version = g.group_epoch;
    for id in &ids {
        let mut m = Member::new(id, id, NOW_MS);
        m.member_epoch = g.assignment_epoch;
        m.incarnation_epoch = g.assignment_epoch;
        m.join_confirmed = true;
        m.assigned = targets.get(id).cloned().unwrap_or_default();
        m.reported_owned = m.assigned.clone();
        g.members.insert(id.clone(), m);
    }
    g.target_assignments = targets;
    g.state = derive_state(&g);
    g
}

fn join_request(id: &str) -> HeartbeatRequest {
    HeartbeatRequest {
        protocol_version: 1,
        request_id: format!("r-{id}"),
        member_id: id.into(),
        member_name: Some(id.into()),
        client_name: None,
        client_version: None,
        group_instance_id: None,
        member_epoch: 0,
        metadata_version: 0,
        runtime_consumer_capacity: RuntimeConsumerCapacity {
            runtime_max_concurrency: 1,
            available_concurrency: 1,
        },
        owned_shards: vec![],
        revoking_shards: vec![],
        shard_progress: vec![],
    }
}

/// The coordinator's `for_store`: the group crate's split as the store takes it.
fn for_store(parts: SplitWrite) -> SplitAggregate {
    SplitAggregate {
        header: parts.header,
        parts: SPLIT_PARTS.iter().map(|p| (*p).to_owned()).collect(),
        entries: parts
            .entries
            .into_iter()
            .map(|e| SplitEntry {
                part: e.part.to_owned(),
                key: e.key,
                json: e.json,
            })
            .collect(),
        full: parts.full,
    }
}

fn write(expected_revision: u64, split: SplitAggregate) -> CasWrite {
    CasWrite {
        expected_revision,
        aggregate_json: String::new(),
        split: Some(split),
        updated_at: "2023-11-14T22:13:20.000Z".into(),
        lease_ttl_ms: LEASE_TTL_MS,
        not_before_ms: 0,
        must_be_lapsed: vec![],
        must_be_live: vec![],
        renew: vec![],
        progress: vec![],
        remove: vec![],
        drop_lease: vec![],
    }
}

/// `evalsha`'s (calls, usec) in `INFO commandstats`.
async fn evalsha_stats(conn: &mut redis::aio::MultiplexedConnection) -> (u64, u64) {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .expect("INFO commandstats");
    let Some(line) = info.lines().find(|l| l.starts_with("cmdstat_evalsha:")) else {
        return (0, 0);
    };
    let field = |name: &str| {
        line.split([':', ','])
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("calls"), field("usec"))
}

/// Calls, Redis µs and client round-trip time summed over one kind of write.
#[derive(Default)]
struct Tally {
    calls: u64,
    usec: u64,
    round_trip: Duration,
}

impl Tally {
    fn line(&self, kind: &str) -> String {
        let n = self.calls.max(1) as f64;
        format!(
            "{kind}: {} calls, Redis {:.1} µs/call, round trip {:.1} µs/call",
            self.calls,
            self.usec as f64 / n,
            self.round_trip.as_secs_f64() * 1e6 / n
        )
    }
}

/// One compare-and-set, with what Redis counted for it added to `tally`.
async fn cas(
    store: &Store,
    conn: &mut redis::aio::MultiplexedConnection,
    name: &GroupName,
    w: &CasWrite,
    tally: &mut Tally,
) {
    let (calls, usec) = evalsha_stats(conn).await;
    let start = Instant::now();
    let outcome = store.cas(name, w).await.expect("cas");
    tally.round_trip += start.elapsed();
    assert!(matches!(outcome, CasOutcome::Written { .. }), "{outcome:?}");
    let (calls_after, usec_after) = evalsha_stats(conn).await;
    tally.calls += calls_after - calls;
    tally.usec += usec_after - usec;
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a number"));
    let writes: usize = args.next().unwrap_or(400);
    let mut sizes: Vec<usize> = args.collect();
    if sizes.is_empty() {
        sizes = vec![100, 1_000, 10_000];
    }
    let timing = Timing::default();
    println!(
        "{writes} writes counted per size (after {writes} not counted), half joins and half prunes"
    );
    for members in sizes {
        let server = RedisServer::start();
        let store = Store::connect(
            &RedisTopology::Standalone(server.url()),
            Duration::from_secs(30),
        )
        .await
        .expect("connect");
        let mut conn = redis::Client::open(server.url())
            .expect("redis url")
            .get_multiplexed_async_connection()
            .await
            .expect("connect for INFO");
        let mut base = converged_group(members);
        let name = GroupName::new(&base.stream_prefix, &base.consumer_group);
        let ids: Vec<String> = base.members.keys().cloned().collect();
        let created = store
            .create(
                &name,
                &base.to_json(),
                "2023-11-14T22:13:20.000Z",
                &ids,
                LEASE_TTL_MS,
            )
            .await
            .expect("create");
        assert!(
            matches!(created, CreateOutcome::Created { .. }),
            "{created:?}"
        );
        let mut revision = 1;
        // The first write in the split layout carries every entry.
        let mut first = Tally::default();
        base.store_revision = revision + 1;
        let w = write(revision, for_store(base.clone().split_full()));
        cas(&store, &mut conn, &name, &w, &mut first).await;
        revision += 1;
        // The writes are computed first and then sent back to back, so that Redis's time per call is not
        // inflated by long idle gaps between calls (cold caches) while a large group's next write is computed.
        let mut header = 0;
        let mut planned = Vec::with_capacity(2 * writes);
        for k in 0..2 * writes {
            let joiner = "joiner";
            let (mut next, changed, w) = if k % 2 == 0 {
                let mut batch = Batch::on(&base, NOW_MS + 1_000, &timing);
                batch.decide(joiner, &join_request(joiner)).expect("a join");
                let t = batch.finish().expect("decided").transition;
                let mut w = write(revision, SplitAggregate::default());
                w.renew = t.renew.clone();
                w.progress = vec![(joiner.to_owned(), r#"{"shards":[]}"#.to_owned())];
                let changed = t.changed_members.expect("a batch notes its changes");
                (t.group.expect("aggregate"), changed, w)
            } else {
                let mut next = base.clone();
                next.members.remove(joiner);
                next.target_assignments.remove(joiner);
                next.updated_at_ms += 1;
                let mut w = write(revision, SplitAggregate::default());
                w.remove = vec![joiner.to_owned()];
                (next, BTreeSet::from([joiner.to_owned()]), w)
            };
            next.store_revision = revision + 1;
            let WriteForm::Split(parts) = next.write_form(&base, true, Some(&changed)) else {
                unreachable!("one member's write is stored as its changes")
            };
            header = parts.header.len();
            planned.push(CasWrite {
                split: Some(for_store(parts)),
                ..w
            });
            revision += 1;
            base = next;
        }
        let (mut joins, mut prunes, mut uncounted) =
            (Tally::default(), Tally::default(), Tally::default());
        for (k, w) in planned.iter().enumerate() {
            let tally = if k < writes {
                &mut uncounted
            } else if k % 2 == 0 {
                &mut joins
            } else {
                &mut prunes
            };
            cas(&store, &mut conn, &name, w, tally).await;
        }
        println!(
            "{members} members: {}",
            first.line("first write, every entry")
        );
        println!(
            "{members} members: {} (header {header} bytes)",
            uncounted.line("not counted")
        );
        println!(
            "{members} members: {}",
            joins.line("join (2 entries set, lease renewed, progress stored)")
        );
        println!(
            "{members} members: {}",
            prunes.line("prune (2 entries deleted, lease and progress removed)")
        );
    }
}
