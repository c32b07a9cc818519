//! The simulated members of `rsc bench heartbeat`: the SDK's member protocol model with drains that finish at
//! once (or after one heartbeat, `--drain heartbeat`), one heartbeat and the ones the SDK sends right after it,
//! a round over many members, convergence and the steady phase. Each member talks to one
//! coordinator replica (as behind a load balancer that keeps a connection), so several replicas share the
//! load of every group.

use super::*;
use rsc_group::timing::MAX_ACKNOWLEDGE_INTERVAL_MS;

/// HTTP access to the coordinator replicas.
pub(super) struct Api {
    pub(super) http: reqwest::Client,
    /// One base URL per replica (no trailing `/`); admin calls go to the first.
    pub(super) bases: Vec<String>,
    pub(super) auth: Option<(String, String)>,
}

impl Api {
    /// A request to the first replica (creating and deleting the bench groups).
    pub(super) fn req(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.req_at(0, method, path)
    }

    /// A request to replica `replica` (an index into `bases`).
    pub(super) fn req_at(
        &self,
        replica: usize,
        method: reqwest::Method,
        path: &str,
    ) -> reqwest::RequestBuilder {
        let r = self
            .http
            .request(method, format!("{}{path}", self.bases[replica]));
        match &self.auth {
            Some((u, p)) => r.basic_auth(u, Some(p)),
            None => r,
        }
    }
}

/// How a simulated member finishes the local work of a shard it gives up (`--drain`).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DrainModel {
    /// As the SDK does with a shard that has nothing in flight: drained as soon as the answer takes it away,
    /// and reported `REVOKED` in a heartbeat sent at once (the SDK heartbeats as soon as a shard has drained,
    /// `rsc_client` consumer/member.rs), not a round later.
    #[default]
    Instant,
    /// Reported `DRAINING` in the member's next heartbeat and `REVOKED` in the one after: a member whose
    /// work in flight takes one heartbeat interval to finish (the bench's only model before 2026-12-05).
    Heartbeat,
}

/// Most heartbeats a member sends at once after its heartbeat of a round (each reporting shards that just
/// drained): the SDK sends them without a bound; this one only keeps a coordinator that keeps revoking from
/// holding a round forever.
const MAX_AT_ONCE: u32 = 8;

/// One simulated member: the SDK's model of the member protocol ([`Membership`]) with work that finishes
/// as [`DrainModel`] says, and the last answer, by which convergence is judged.
pub(super) struct Member {
    /// The member's index among all the bench's members (its id is `m<index>`).
    pub(super) index: usize,
    pub(super) group: usize,
    /// The replica this member sends its heartbeats to.
    pub(super) replica: usize,
    pub(super) membership: Membership,
    pub(super) last: Option<(HeartbeatStatus, AssignmentView)>,
    drain: DrainModel,
    /// Shards drained by the last answer applied, not yet reported (the SDK then heartbeats at once).
    drained_now: bool,
    /// The last answer asked for the next heartbeat within `MAX_ACKNOWLEDGE_INTERVAL_MS` (an acknowledgement
    /// of a revocation, or a lapse about to end): the SDK sends it that soon, so well within a round.
    asked_back_now: bool,
    /// The last answer asked for the next heartbeat this many ms from now, sooner than the interval but not at
    /// once (a release forecast, or a lapse further off): the member heartbeats again at the end of the round
    /// when that still falls within it ([`Member::asked_back_within_round`], [`round_of`]).
    asked_back_in_ms: Option<i64>,
    /// The coordinator's configured heartbeat interval (its compatibility view's): an answer asking for the
    /// next heartbeat sooner asks the member back. Not learnt from the answers: even a join's answer may be
    /// shortened (a release forecast).
    interval_ms: i64,
    /// This process dies once its next request is answered (`--restart-mode crash`).
    dies: bool,
    /// This process is gone: it applies and sends nothing more.
    gone: bool,
}

/// The bench reads nothing, so its members hold no client lease.
const NO_LEASE: Duration = Duration::ZERO;

impl Member {
    /// Member `index` (id `m<index>`), which joins with its first heartbeat; with `instance`, a static member
    /// (`groupInstanceId`). `interval_ms`: the coordinator's configured heartbeat interval.
    pub(super) fn new(
        index: usize,
        group: usize,
        replica: usize,
        drain: DrainModel,
        instance: Option<&str>,
        interval_ms: i64,
    ) -> Self {
        let membership = Membership::new(&format!("m{index}"), NO_LEASE);
        Member {
            index,
            group,
            replica,
            membership: match instance {
                Some(i) => membership.with_group_instance_id(i),
                None => membership,
            },
            last: None,
            drain,
            drained_now: false,
            asked_back_now: false,
            asked_back_in_ms: None,
            interval_ms,
            dies: false,
            gone: false,
        }
    }

    pub(super) fn id(&self) -> &str {
        self.membership.member_id()
    }

    /// The process that replaces this one after a restart: the same member id (and instance id, if static),
    /// joining afresh.
    pub(super) fn next_incarnation(&self) -> Member {
        Member::new(
            self.index,
            self.group,
            self.replica,
            self.drain,
            self.membership.group_instance_id(),
            self.interval_ms,
        )
    }

    /// Begins this process's shutdown as `mode` has it. `Crash`: one leave heartbeat with every shard
    /// `DRAINING`, and the process is gone before anything is released. `Graceful` and `Static`: the SDK's
    /// shutdown (`begin_temporary_leave`: epoch -1, or -2 for a static member, whose target the coordinator
    /// then reserves), heartbeated until the release is confirmed ([`Member::shut_down`]); with the instant
    /// drain the first leave heartbeat already reports every shard `REVOKED`.
    pub(super) fn begin_shutdown(&mut self, mode: RestartMode) {
        match mode {
            RestartMode::Crash => {
                self.membership.begin_leave();
                self.dies = true;
            }
            RestartMode::Graceful | RestartMode::Static => {
                self.membership.begin_temporary_leave();
                if self.drain == DrainModel::Instant {
                    self.membership.drained_all();
                }
            }
        }
    }

    pub(super) fn request(&mut self) -> HeartbeatRequest {
        self.membership.request(
            Outgoing {
                capacity: RuntimeConsumerCapacity {
                    runtime_max_concurrency: 1,
                    available_concurrency: 1,
                },
                request_id_suffix: "",
                acked_at: None,
            },
            |_| LocalShard::default(),
        )
    }

    /// Applies the answer to the last request, sent at `sent_at`.
    pub(super) fn apply(&mut self, sent_at: Instant, resp: HeartbeatResponse) {
        self.drained_now = false;
        self.asked_back_now = resp.heartbeat_interval_ms <= MAX_ACKNOWLEDGE_INTERVAL_MS;
        self.asked_back_in_ms = (!self.asked_back_now
            && resp.heartbeat_interval_ms < self.interval_ms)
            .then_some(resp.heartbeat_interval_ms);
        if self.dies {
            self.gone = true;
            self.last = Some((resp.status, resp.assignment));
            return;
        }
        match self.drain {
            DrainModel::Instant => {
                self.membership.on_response(sent_at, &resp);
                self.drained_now = !self.membership.draining().is_empty();
                self.membership.drained_all();
            }
            DrainModel::Heartbeat => {
                // The shards that request reported DRAINING have finished: REVOKED from the next one on.
                self.membership.drained_all();
                self.membership.on_response(sent_at, &resp);
            }
        }
        self.last = Some((resp.status, resp.assignment));
    }

    /// Whether the SDK would send its next heartbeat at once rather than at its interval: a shard drained
    /// when the last answer was applied, and its `REVOKED` is yet to be reported, or the answer asked to hear
    /// from the member again within a moment.
    pub(super) fn heartbeat_now(&self) -> bool {
        !self.gone && (self.drained_now || self.asked_back_now)
    }

    /// Whether the last answer asked this member back sooner than the interval but not at once, so soon that
    /// the moment falls within the round: a round stands for one interval, and the member is `position`
    /// (0..1) of the way through its worker's share of it. A moment past the round's end falls before the
    /// member's own turn in the next round, which the round model cannot place: the member is then left to
    /// that turn, later than the SDK would come back (never sooner).
    pub(super) fn asked_back_within_round(&self, position: f64) -> bool {
        match self.asked_back_in_ms {
            Some(back_in) if !self.gone && self.interval_ms > 0 => {
                position + back_in as f64 / self.interval_ms as f64 <= 1.0
            }
            _ => false,
        }
    }

    /// The leave this process began is over: released and confirmed, or the process was killed.
    pub(super) fn shut_down(&self) -> bool {
        self.gone || self.membership.left()
    }

    /// OK, owns exactly what is assigned, nothing pending, nothing being given up.
    pub(super) fn settled(&self) -> bool {
        let m = &self.membership;
        match &self.last {
            Some((HeartbeatStatus::Ok, a)) => {
                a.pending_shards.is_empty()
                    && m.draining().is_empty()
                    && m.released().is_empty()
                    && a.assigned_shards.len() == m.owned().len()
            }
            _ => false,
        }
    }
}

/// Outcome of one worker's share of a phase.
#[derive(Default)]
pub(super) struct Tally {
    /// Latency of each successful heartbeat, by replica index.
    pub(super) latencies_us: BTreeMap<usize, Vec<u32>>,
    pub(super) statuses: BTreeMap<&'static str, u64>,
    pub(super) errors: u64,
    /// Failed requests by replica index.
    pub(super) errors_by_replica: BTreeMap<usize, u64>,
    pub(super) first_error: Option<String>,
    /// Heartbeats sent at once after a member's heartbeat of the round ([`Member::heartbeat_now`]).
    pub(super) at_once: u64,
    /// Heartbeats sent at the end of the round, as an answer asked ([`Member::asked_back_within_round`]).
    pub(super) asked_back: u64,
}

impl Tally {
    /// Successful heartbeats, all replicas together.
    pub(super) fn successes(&self) -> u64 {
        self.latencies_us.values().map(|v| v.len() as u64).sum()
    }
}

pub(super) async fn heartbeat_once(
    api: &Api,
    streams: &[String],
    m: &mut Member,
    tally: &mut Tally,
) -> Option<Duration> {
    let body = m.request();
    let stream = &streams[m.group];
    let path = format!(
        "/coord/v1/streams/{stream}/groups/{stream}/members/{}/heartbeat",
        m.id()
    );
    let start = Instant::now();
    let result = async {
        let r = api
            .req_at(m.replica, reqwest::Method::POST, &path)
            .json(&body)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = r.status();
        let bytes = r.bytes().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            return Err(format!(
                "HTTP {status}: {}",
                String::from_utf8_lossy(&bytes)
            ));
        }
        serde_json::from_slice::<HeartbeatResponse>(&bytes).map_err(|e| e.to_string())
    }
    .await;
    let elapsed = start.elapsed();
    match result {
        Ok(resp) => {
            *tally.statuses.entry(resp.status.as_str()).or_default() += 1;
            m.apply(start, resp);
            Some(elapsed)
        }
        Err(e) => {
            tally.errors += 1;
            *tally.errors_by_replica.entry(m.replica).or_default() += 1;
            tally.first_error.get_or_insert(e);
            None
        }
    }
}

/// One heartbeat and, as the SDK would, the ones sent at once after it ([`Member::heartbeat_now`]; counted in
/// `at_once`). The first one's latency, if it succeeded.
pub(super) async fn heartbeat_as_sdk(
    api: &Api,
    streams: &[String],
    m: &mut Member,
    tally: &mut Tally,
) -> Option<Duration> {
    let first = heartbeat_once(api, streams, m, tally).await;
    let mut sent = 0;
    while first.is_some() && m.heartbeat_now() && sent < MAX_AT_ONCE {
        sent += 1;
        tally.at_once += 1;
        if heartbeat_once(api, streams, m, tally).await.is_none() {
            break;
        }
    }
    first
}

/// One convergence round: every worker heartbeats each of its members once (and again at once where the SDK
/// would).
pub(super) async fn round(
    api: &Arc<Api>,
    streams: &Arc<Vec<String>>,
    shares: Vec<Vec<Member>>,
) -> (Vec<Vec<Member>>, Tally) {
    round_of(api, streams, shares, |_| true).await
}

/// A round of the members `chosen`. A round stands for one heartbeat interval, but takes less: the bench sends
/// as fast as the coordinator answers. A member asked back sooner than the interval but not at once, so soon
/// that the moment falls within the round ([`Member::asked_back_within_round`]: its place in its worker's
/// share plus the answer's interval as a part of the configured one), heartbeats again once its worker has
/// sent the rest of the round. The coordinator's forecast is in real time and cannot be scaled to the bench's
/// without knowing whom it waits for, so the bench takes one moment for all: the end of the round. That never
/// makes a member converge sooner than the SDK would: what it waits for is a release, which happens when its
/// holder heartbeats in the bench's own time; coming back too early costs a heartbeat (counted), too late
/// shows a grant later than the SDK would see it.
pub(super) async fn round_of(
    api: &Arc<Api>,
    streams: &Arc<Vec<String>>,
    shares: Vec<Vec<Member>>,
    chosen: impl Fn(&Member) -> bool + Copy + Send + 'static,
) -> (Vec<Vec<Member>>, Tally) {
    let mut handles = Vec::with_capacity(shares.len());
    for mut share in shares {
        let api = api.clone();
        let streams = streams.clone();
        handles.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            for m in share.iter_mut() {
                if chosen(m) {
                    heartbeat_as_sdk(&api, &streams, m, &mut tally).await;
                }
            }
            let len = share.len().max(1) as f64;
            for (i, m) in share.iter_mut().enumerate() {
                if chosen(m) && m.asked_back_within_round(i as f64 / len) {
                    tally.asked_back += 1;
                    heartbeat_as_sdk(&api, &streams, m, &mut tally).await;
                }
            }
            (share, tally)
        }));
    }
    let mut out = Vec::with_capacity(handles.len());
    let mut total = Tally::default();
    for h in handles {
        let (share, tally) = joined(h.await);
        out.push(share);
        merge(&mut total, tally);
    }
    (out, total)
}

/// A bench worker's result. A worker that panicked (a bug in the bench, not a measurement) ends the bench with
/// its own panic; the workers are never aborted, so a join error is always a panic.
fn joined<T>(result: Result<T, tokio::task::JoinError>) -> T {
    match result {
        Ok(value) => value,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

pub(super) fn merge(into: &mut Tally, from: Tally) {
    for (replica, lat) in from.latencies_us {
        into.latencies_us.entry(replica).or_default().extend(lat);
    }
    for (replica, n) in from.errors_by_replica {
        *into.errors_by_replica.entry(replica).or_default() += n;
    }
    for (k, v) in from.statuses {
        *into.statuses.entry(k).or_default() += v;
    }
    into.errors += from.errors;
    into.at_once += from.at_once;
    into.asked_back += from.asked_back;
    if into.first_error.is_none() {
        into.first_error = from.first_error;
    }
}

/// Members not [`Member::settled`] (a round's line reports it).
pub(super) fn unsettled(shares: &[Vec<Member>]) -> usize {
    shares.iter().flatten().filter(|m| !m.settled()).count()
}

pub(super) fn converged(shares: &[Vec<Member>], groups: usize, shards: u32) -> bool {
    let mut assigned = vec![0usize; groups];
    for m in shares.iter().flatten() {
        if !m.settled() {
            return false;
        }
        assigned[m.group] += m.membership.owned().len();
    }
    assigned.iter().all(|&n| n == shards as usize)
}

/// The steady phase: each worker cycles over its members until the deadline.
pub(super) async fn steady(
    api: &Arc<Api>,
    streams: &Arc<Vec<String>>,
    shares: Vec<Vec<Member>>,
    duration: Duration,
    rate: Option<f64>,
) -> (Tally, Duration, Vec<Vec<Member>>) {
    let workers = shares.len();
    // Each worker sends at rate/workers per second, on a fixed schedule (no catch-up bursts beyond it).
    let interval = rate.map(|r| Duration::from_secs_f64(workers as f64 / r));
    let start = Instant::now();
    let deadline = start + duration;
    let mut handles = Vec::with_capacity(workers);
    for (w, mut share) in shares.into_iter().enumerate() {
        let api = api.clone();
        let streams = streams.clone();
        handles.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            if share.is_empty() {
                return (tally, share);
            }
            // Stagger workers over one interval so a rate-limited run does not send in waves.
            let mut next = interval.map(|i| start + i.mul_f64(w as f64 / workers as f64));
            let mut i = 0usize;
            loop {
                if let (Some(n), Some(iv)) = (next.as_mut(), interval) {
                    if *n >= deadline {
                        break;
                    }
                    tokio::time::sleep_until((*n).into()).await;
                    *n += iv;
                }
                if Instant::now() >= deadline {
                    break;
                }
                let n = share.len();
                let m = &mut share[i % n];
                i += 1;
                let replica = m.replica;
                if let Some(d) = heartbeat_as_sdk(&api, &streams, m, &mut tally).await {
                    tally
                        .latencies_us
                        .entry(replica)
                        .or_default()
                        .push(d.as_micros().min(u32::MAX as u128) as u32);
                }
            }
            (tally, share)
        }));
    }
    let mut total = Tally::default();
    let mut shares = Vec::with_capacity(handles.len());
    for h in handles {
        let (tally, share) = joined(h.await);
        merge(&mut total, tally);
        shares.push(share);
    }
    (total, start.elapsed(), shares)
}
