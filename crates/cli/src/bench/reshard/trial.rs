//! One trial of `rsc bench reshard`: a fresh stream and its groups, one SDK consumer per group, convergence,
//! the producer load, the scale, the waits for every (group, shard) to be read after the switch and for the
//! migration to end in every group, then teardown (load, consumers, groups, shard streams) whatever happened.

use super::load::{Load, Workload};
use super::measure::{self, FirstReads, ReadingTimes, TrialResult};
use super::{Context, ReshardArgs};
use rsc_client::{
    AdminClient, Consumer, ConsumerConfig, CreateStream, Delivery, MemberSnapshot, Producer,
    ProducerConfig,
};
use rsc_protocol::ordering::Ordering as StreamOrdering;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The producer's routing refresh interval (it also decides how soon a quiesce notice is seen).
pub const PRODUCER_REFRESH: Duration = Duration::from_millis(500);
/// How long the consumers may take to read every shard before the scale.
const CONVERGE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long after the scale call every (group, shard) must have been read.
const READ_TIMEOUT: Duration = Duration::from_secs(120);
/// How long after the scale call the migration must have ended in every group (an unordered scale ends
/// after `coordinator.streams.drain-grace`, 60 s by default).
const MIGRATION_TIMEOUT: Duration = Duration::from_secs(300);
/// How long after the scale call a quiesced scale may take to switch, beyond its quiesce timeout.
const SWITCH_SLACK: Duration = Duration::from_secs(30);
const MIGRATION_POLL: Duration = Duration::from_millis(100);
const SWITCH_POLL: Duration = Duration::from_millis(10);
const WAIT_POLL: Duration = Duration::from_millis(20);
/// How often a long wait says what it waits for.
const SAY_EVERY: Duration = Duration::from_secs(5);
const REASON: &str = "rsc bench reshard";

/// The groups of stream `prefix`: the default group (named like the prefix), then `<prefix>-g2`, ….
pub fn group_names(prefix: &str, groups: usize) -> Vec<String> {
    (0..groups)
        .map(|i| match i {
            0 => prefix.to_owned(),
            _ => format!("{prefix}-g{}", i + 1),
        })
        .collect()
}

/// Why the members of one group have not converged on `shards` shards (each read by exactly one member,
/// nothing draining, every lease valid, within one shard of each other), or None when they have.
pub fn convergence_gap(members: &[MemberSnapshot], shards: u32) -> Option<String> {
    let mut readers: BTreeMap<u32, usize> = BTreeMap::new();
    for m in members {
        for &s in &m.reading {
            *readers.entry(s).or_default() += 1;
        }
    }
    let unread: Vec<u32> = (0..shards).filter(|s| !readers.contains_key(s)).collect();
    if !unread.is_empty() {
        return Some(format!("shards {unread:?} not read"));
    }
    let doubled: Vec<u32> = readers
        .iter()
        .filter(|&(_, &n)| n > 1)
        .map(|(&s, _)| s)
        .collect();
    if !doubled.is_empty() {
        return Some(format!("shards {doubled:?} read by two members"));
    }
    if let Some(m) = members
        .iter()
        .find(|m| !m.lease_valid || !m.draining.is_empty() || m.owned.len() != m.reading.len())
    {
        return Some(format!("member {} is still settling", m.member_id));
    }
    let counts = members.iter().map(|m| m.reading.len());
    let spread = counts.clone().max().unwrap_or(0) - counts.min().unwrap_or(0);
    (spread > 1).then(|| format!("members read {spread} shards more than others"))
}

/// Runs one trial on a fresh stream and removes the stream whatever happened.
pub(super) async fn run_trial(
    args: &ReshardArgs,
    ctx: &Context,
    trial: usize,
    ordering: StreamOrdering,
) -> Result<TrialResult, String> {
    let id = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
    let prefix = format!("bench-rs-{id}");
    let t = Trial {
        groups: group_names(&prefix, args.groups),
        admin: AdminClient::new(ctx.coord.clone(), "rsc bench reshard"),
        reads: Arc::new(FirstReads::new(args.groups, args.to)),
        run_id: Arc::from(format!("{prefix}-t{trial}")),
        prefix,
        args,
        ctx,
        trial,
        ordering,
    };
    let result = t.run().await;
    let failures = args
        .target
        .cleanup_groups(&t.prefix, &t.groups, args.from.max(args.to))
        .await;
    for f in &failures {
        eprintln!("rsc bench reshard: cleanup of {}: {f}", t.prefix);
    }
    result
}

struct Trial<'a> {
    args: &'a ReshardArgs,
    ctx: &'a Context,
    admin: AdminClient,
    prefix: String,
    groups: Vec<String>,
    reads: Arc<FirstReads>,
    run_id: Arc<str>,
    trial: usize,
    ordering: StreamOrdering,
}

/// What the scale phase measured (before the load's latencies are known).
struct Scaled {
    t0_ns: u64,
    switch_ns: u64,
    reading: ReadingTimes,
    done_ns: u64,
    ends: Vec<String>,
}

impl Trial<'_> {
    fn say(&self, what: &str) {
        eprintln!(
            "rsc bench reshard: trial {} {} ({}): {what}",
            self.trial,
            self.ordering.as_str(),
            self.prefix
        );
    }

    async fn run(&self) -> Result<TrialResult, String> {
        let (args, prefix) = (self.args, &self.prefix);
        self.say(&format!(
            "creating the stream with {} shards and {} groups",
            args.from, args.groups
        ));
        match self
            .ctx
            .coord
            .create_stream(prefix, args.from, "bench")
            .await
        {
            Ok(CreateStream::Created(_)) => {}
            Ok(CreateStream::AlreadyExists) => {
                return Err(format!("stream {prefix} already exists"));
            }
            Err(e) => return Err(format!("creating {prefix}: {e}")),
        }
        if self.ordering == StreamOrdering::Key {
            self.admin
                .set_stream_ordering(prefix, StreamOrdering::Key, REASON)
                .await
                .map_err(|e| format!("making {prefix} ordered: {e}"))?;
        }
        for g in &self.groups[1..] {
            self.admin
                .create_group(prefix, g, None, REASON)
                .await
                .map_err(|e| format!("creating group {g}: {e}"))?;
        }
        let mut consumers = Vec::new();
        let result = match self.start_consumers(&mut consumers).await {
            Ok(()) => self.under_load(&consumers).await,
            Err(e) => Err(e),
        };
        let mut leaving = tokio::task::JoinSet::new();
        for c in consumers {
            leaving.spawn(c.shutdown());
        }
        while let Some(report) = leaving.join_next().await {
            if let Ok(r) = report
                && !r.timed_out.is_empty()
            {
                eprintln!(
                    "rsc bench reshard: members did not leave in time: {:?}",
                    r.timed_out
                );
            }
        }
        result
    }

    /// One SDK consumer per group; its handler notes every record of this trial for [`FirstReads`].
    async fn start_consumers(&self, consumers: &mut Vec<Consumer>) -> Result<(), String> {
        let args = self.args;
        let handle = Duration::from_millis(args.handle_ms);
        for (gi, group) in self.groups.iter().enumerate() {
            let (reads, run) = (self.reads.clone(), self.run_id.clone());
            let handler = move |d: Delivery| {
                let (reads, run) = (reads.clone(), run.clone());
                async move {
                    if d.field_str("run") == Some(&*run)
                        && let Some(pub_ns) = d.field_str("pub_ns").and_then(|v| v.parse().ok())
                    {
                        reads.note(gi, d.shard(), pub_ns);
                    }
                    if !handle.is_zero() {
                        tokio::time::sleep(handle).await;
                    }
                    let _ = d.ack().await;
                }
            };
            let mut config = ConsumerConfig::new(&self.prefix, &args.target.redis_url)
                .redis(args.target.redis()?)
                .consumer_group(group.clone())
                .member_id(group.clone())
                .concurrency(args.members)
                .workers(args.from.max(args.to) as usize)
                .assignment_lease(self.ctx.assignment_lease);
            config.redis_tls = args.target.cluster.tls()?;
            // Dynamic members: RSC_GROUP_INSTANCE_ID would give every group's members the same identity.
            config.group_instance_id = None;
            let consumer = Consumer::start(self.ctx.coord.clone(), config, handler)
                .await
                .map_err(|e| format!("starting the consumer of group {group}: {e}"))?;
            consumers.push(consumer);
        }
        Ok(())
    }

    /// Waits for convergence, runs the load, scales and measures; the load is stopped whatever happened.
    async fn under_load(&self, consumers: &[Consumer]) -> Result<TrialResult, String> {
        let args = self.args;
        self.say(&format!(
            "waiting for every group to read all {} shards",
            args.from
        ));
        let started = Instant::now();
        self.wait_converged(consumers).await?;
        self.say(&format!(
            "converged in {:.1} s; publishing {} records/s, warming up {} s",
            started.elapsed().as_secs_f64(),
            args.rate,
            args.warmup_secs
        ));
        let publish_timeout = args.quiesce().map_or(Duration::from_secs(30), |q| {
            (q + Duration::from_secs(10)).max(Duration::from_secs(30))
        });
        let mut config = ProducerConfig::new(&self.prefix, &args.target.redis_url)
            .redis(args.target.redis()?)
            .refresh_interval(PRODUCER_REFRESH)
            .publish_timeout(publish_timeout)
            .max_len(None);
        config.redis_tls = args.target.cluster.tls()?;
        let producer = Producer::connect(self.ctx.coord.clone(), config)
            .await
            .map_err(|e| format!("starting the producer: {e}"))?;
        let load = Load::start(
            Arc::new(producer),
            Workload {
                run_id: self.run_id.to_string(),
                rate: args.rate,
                keys: self.ctx.keys,
            },
        );
        let warmup_ns = measure::wall_ns();
        tokio::time::sleep(Duration::from_secs(args.warmup_secs)).await;
        let scaled = self.scale_and_measure().await;
        let published = load.stop(publish_timeout + Duration::from_secs(10)).await;
        let s = scaled?;
        if let Some(e) = &published.first_error {
            self.say(&format!(
                "{} publish_batch calls failed, the first with: {e}",
                published.errors
            ));
        }
        Ok(TrialResult {
            trial: self.trial,
            ordering: self.ordering,
            stream: self.prefix.clone(),
            switch_ms: measure::ms_between(s.t0_ns, s.switch_ns),
            reading: s.reading,
            migration_done_ms: measure::ms_between(s.t0_ns, s.done_ns),
            migration_end: s.ends,
            steady: measure::window(&published.samples, warmup_ns, s.t0_ns),
            during: measure::window(&published.samples, s.t0_ns, s.done_ns),
            publish_errors: published.errors,
        })
    }

    async fn wait_converged(&self, consumers: &[Consumer]) -> Result<(), String> {
        let deadline = Instant::now() + CONVERGE_TIMEOUT;
        loop {
            let gaps: Vec<String> = consumers
                .iter()
                .zip(&self.groups)
                .filter_map(|(c, g)| {
                    convergence_gap(&c.snapshot(), self.args.from).map(|why| format!("{g}: {why}"))
                })
                .collect();
            if gaps.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "the consumers did not converge within {} s: {}",
                    CONVERGE_TIMEOUT.as_secs(),
                    gaps.join("; ")
                ));
            }
            tokio::time::sleep(WAIT_POLL).await;
        }
    }

    /// The scale (t0 just before the call), the switch, then every (group, shard) read after it and the
    /// migration's end in every group, waited for together.
    async fn scale_and_measure(&self) -> Result<Scaled, String> {
        let (args, prefix) = (self.args, &self.prefix);
        let quiesce = args.quiesce();
        self.say(&format!(
            "scaling to {} shards{}",
            args.to,
            if quiesce.is_some() {
                " with producer quiesce"
            } else {
                ""
            }
        ));
        let t0 = Instant::now();
        let t0_ns = measure::wall_ns();
        let answer = self
            .admin
            .scale_stream_quiesced(prefix, args.to, REASON, quiesce)
            .await
            .map_err(|e| format!("scaling {prefix} to {} shards: {e}", args.to))?
            .answer;
        let mut migrations = Vec::new();
        for group in &self.groups {
            let m = answer
                .migrations
                .iter()
                .find(|m| m.consumer_group.as_deref().unwrap_or(prefix) == group)
                .ok_or_else(|| format!("the scale answer has no migration for group {group}"))?;
            migrations.push(m.clone());
        }
        let switch_ns = if migrations.iter().all(|m| m.accepted()) {
            self.reads.mark_switch()
        } else {
            self.say("waiting for the producer to quiesce and routing to switch");
            let bound = quiesce.unwrap_or_default() + SWITCH_SLACK;
            self.wait_switched(&migrations[0].resharding_id, t0 + bound)
                .await?
        };
        self.say(&format!(
            "routing switched {:.1} ms after the scale call; waiting for every group to read all {} shards and for the migration to end",
            measure::ms_between(t0_ns, switch_ns),
            args.to
        ));
        let ids: Vec<String> = migrations.into_iter().map(|m| m.resharding_id).collect();
        let (reading, (done_ns, ends)) = tokio::try_join!(
            self.wait_all_read(t0_ns, t0 + READ_TIMEOUT),
            self.wait_migrations(&ids, t0_ns, t0 + MIGRATION_TIMEOUT),
        )?;
        Ok(Scaled {
            t0_ns,
            switch_ns,
            reading,
            done_ns,
            ends,
        })
    }

    /// Polls the (first group's) migration until routing switched, then marks the switch.
    async fn wait_switched(&self, id: &str, deadline: Instant) -> Result<u64, String> {
        loop {
            let last = match self
                .admin
                .migration(&self.prefix, &self.groups[0], id)
                .await
            {
                Ok(m) if m.accepted() => return Ok(self.reads.mark_switch()),
                Ok(m) => m.state,
                Err(e) => e.to_string(),
            };
            if Instant::now() >= deadline {
                return Err(format!(
                    "routing did not switch within the quiesce timeout plus {} s (migration {id}: {last})",
                    SWITCH_SLACK.as_secs()
                ));
            }
            tokio::time::sleep(SWITCH_POLL).await;
        }
    }

    async fn wait_all_read(&self, t0_ns: u64, deadline: Instant) -> Result<ReadingTimes, String> {
        let mut said = Instant::now();
        loop {
            if let Some(times) = self.reads.times(t0_ns) {
                let (g, s) = times.slowest;
                self.say(&format!(
                    "every group reads all {} shards {:.1} ms after the scale call (slowest {}:{s})",
                    self.args.to,
                    times.all_ms,
                    measure::group_label(g)
                ));
                return Ok(times);
            }
            let late = Instant::now() >= deadline;
            if late || said.elapsed() >= SAY_EVERY {
                let missing = self.describe_missing();
                if late {
                    return Err(format!(
                        "not every shard was read within {} s after the scale: no record published after the switch was handled from {missing}",
                        READ_TIMEOUT.as_secs()
                    ));
                }
                self.say(&format!("still waiting for reads of {missing}"));
                said = Instant::now();
            }
            tokio::time::sleep(WAIT_POLL).await;
        }
    }

    /// `group <name> shards [..]; …` of the (group, shard) pairs not read after the switch yet.
    fn describe_missing(&self) -> String {
        let mut by_group: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
        for (g, s) in self.reads.missing() {
            by_group.entry(g).or_default().push(s);
        }
        by_group
            .iter()
            .map(|(g, shards)| {
                format!(
                    "group {} ({}) shards {shards:?}",
                    self.groups[*g],
                    measure::group_label(*g)
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// Polls every group's migration until all are terminal; returns when (wall-clock ns) and their states.
    async fn wait_migrations(
        &self,
        ids: &[String],
        t0_ns: u64,
        deadline: Instant,
    ) -> Result<(u64, Vec<String>), String> {
        let mut ends: Vec<Option<String>> = vec![None; ids.len()];
        let mut states: Vec<String> = vec!["unknown".into(); ids.len()];
        let mut said = Instant::now();
        loop {
            for (g, id) in ids.iter().enumerate() {
                if ends[g].is_some() {
                    continue;
                }
                match self
                    .admin
                    .migration(&self.prefix, &self.groups[g], id)
                    .await
                {
                    Ok(m) if is_terminal(&m.state) => ends[g] = Some(m.state),
                    Ok(m) => states[g] = m.state,
                    Err(e) => states[g] = format!("unreadable ({e})"),
                }
            }
            if ends.iter().all(Option::is_some) {
                let done_ns = measure::wall_ns();
                self.say(&format!(
                    "the migration ended in every group {:.1} ms after the scale call",
                    measure::ms_between(t0_ns, done_ns)
                ));
                return Ok((done_ns, ends.into_iter().flatten().collect()));
            }
            let late = Instant::now() >= deadline;
            if late || said.elapsed() >= SAY_EVERY {
                let open: Vec<String> = ends
                    .iter()
                    .zip(&states)
                    .enumerate()
                    .filter(|(_, (end, _))| end.is_none())
                    .map(|(g, (_, state))| format!("{} {state}", self.groups[g]))
                    .collect();
                if late {
                    return Err(format!(
                        "the migration did not end within {} s after the scale (still open: {})",
                        MIGRATION_TIMEOUT.as_secs(),
                        open.join(", ")
                    ));
                }
                self.say(&format!(
                    "waiting for the migration to end: {}",
                    open.join(", ")
                ));
                said = Instant::now();
            }
            tokio::time::sleep(MIGRATION_POLL).await;
        }
    }
}

/// A migration state after which nothing changes.
pub fn is_terminal(state: &str) -> bool {
    matches!(
        state,
        "DEPRECATED" | "ROLLED_BACK" | "FORCE_COMPLETED" | "ABORTED"
    )
}
