//! `--restart-percent`: a rolling restart of that share of the members after the steady phase, in the
//! `--restart-mode` a deployment restarts its consumers with (a crash, the SDK's graceful shutdown, static
//! members), and how long after the last rejoin every group had converged again.
//!
//! Exactly ⌊members × percent / 100⌋ members restart, spread over the groups, replicas and workers
//! ([`restarts`]). They shut down in one leave round (repeated for those whose leave is not yet confirmed),
//! the assignments view then says what the leavers still hold and what is reserved for them, and the new
//! processes join in the next round, which every member takes part in; then rounds until convergence.

use super::*;

/// How the restarting members stop and start (`--restart-mode`).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RestartMode {
    /// The old process sends one leave heartbeat (its shards `DRAINING`) and dies before it reports them
    /// `REVOKED`; the new process joins under the same member id, so the old incarnation's shards are held
    /// until its lease has certainly run out (member lease TTL + hold margin).
    Crash,
    /// The SDK's graceful shutdown (a dynamic member): the old process heartbeats its leave (epoch -1) until
    /// the coordinator confirms its shards released, then the new process joins under the same member id.
    #[default]
    Graceful,
    /// Static members (every member has a `groupInstanceId`): the SDK's shutdown of a static member leaves
    /// temporarily (epoch -2, its target reserved for the instance id) until released, and the new process
    /// joins with the same instance id and is given its reserved shards back.
    Static,
}

/// How many leave rounds the leavers get to have their release confirmed before the new processes start.
const MAX_LEAVE_ROUNDS: u32 = 10;

/// Runs the restart and prints what it took.
pub(super) async fn rolling_restart(
    api: &Arc<Api>,
    streams: &Arc<Vec<String>>,
    mut shares: Vec<Vec<Member>>,
    args: &HeartbeatArgs,
) -> Result<(), String> {
    let percent = args.restart_percent;
    let mode = args.restart_mode;
    let members = args.members;
    let mut restarting = 0;
    for m in shares.iter_mut().flatten() {
        if restarts(m.index, members, percent) {
            m.begin_shutdown(mode);
            restarting += 1;
        }
    }
    let start = Instant::now();
    let mut errors = 0;
    let mut leave_rounds = 0;
    loop {
        let (next, left) = round_of(api, streams, shares, move |m| {
            restarts(m.index, members, percent) && !m.shut_down()
        })
        .await;
        shares = next;
        leave_rounds += 1;
        errors += left.errors;
        let all_left = shares
            .iter()
            .flatten()
            .all(|m| !m.membership.leaving() || m.shut_down());
        if all_left || leave_rounds >= MAX_LEAVE_ROUNDS {
            break;
        }
    }
    let left_in = start.elapsed();
    let after_leave = match after_the_leave(api, streams).await {
        Ok(v) => format!(
            "{} shards still held by the leavers, {} reserved for their instance ids",
            v.held, v.reserved
        ),
        Err(e) => format!("assignments view unread: {e}"),
    };
    for m in shares.iter_mut().flatten() {
        if restarts(m.index, members, percent) {
            *m = m.next_incarnation();
        }
    }
    let rejoin_start = Instant::now();
    let (next, rejoined) = round(api, streams, shares).await;
    shares = next;
    let last_rejoin = Instant::now();
    let rejoin_line = round_line(last_rejoin - rejoin_start, &rejoined, unsettled(&shares));
    let mut rounds = 1;
    errors += rejoined.errors;
    let mut each_round = Vec::new();
    while !converged(&shares, args.groups, args.shards) {
        if last_rejoin.elapsed() > CONVERGE_TIMEOUT {
            return Err(format!(
                "the rolling restart did not converge within {}s of the last rejoin ({rounds} rounds; the \
                 rejoin round: {rejoin_line}; each round after it: {})",
                CONVERGE_TIMEOUT.as_secs(),
                rounds_list(&each_round)
            ));
        }
        let round_start = Instant::now();
        let (next, tally) = round(api, streams, shares).await;
        shares = next;
        each_round.push(round_line(
            round_start.elapsed(),
            &tally,
            unsettled(&shares),
        ));
        rounds += 1;
        errors += tally.errors;
    }
    let mode_name = match mode {
        RestartMode::Crash => "crash",
        RestartMode::Graceful => "graceful",
        RestartMode::Static => "static",
    };
    println!(
        "rolling restart of {restarting} members ({percent}%, {mode_name}): left in {:.2}s ({leave_rounds} leave \
         round(s); then {after_leave}), rejoined in {:.2}s, converged {:.2}s after the last rejoin ({rounds} \
         heartbeat rounds, {errors} failed requests retried)",
        left_in.as_secs_f64(),
        (last_rejoin - rejoin_start).as_secs_f64(),
        last_rejoin.elapsed().as_secs_f64()
    );
    println!("  the rejoin round: {rejoin_line}");
    println!(
        "  each round after the rejoin: {}",
        rounds_list(&each_round)
    );
    Ok(())
}

/// What the leavers left behind, over all groups, from the assignments view.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct AfterLeave {
    /// Shards still being revoked from live members (the leavers: nobody else gives anything up then).
    pub(super) held: usize,
    /// Shards reserved for static members' instance ids.
    pub(super) reserved: usize,
}

impl AfterLeave {
    /// Adds one group's assignments view (`GET …/assignments`).
    pub(super) fn add(&mut self, view: &serde_json::Value) {
        let len = |v: &serde_json::Value| v.as_array().map_or(0, Vec::len);
        if let Some(progress) = view["revokeProgress"].as_object() {
            self.held += progress.values().map(len).sum::<usize>();
        }
        if let Some(reserved) = view["staticReservations"].as_array() {
            self.reserved += reserved.iter().map(|r| len(&r["shards"])).sum::<usize>();
        }
    }
}

/// Reads every group's assignments view once, between the leave and the rejoin (not part of any time
/// reported).
async fn after_the_leave(api: &Api, streams: &[String]) -> Result<AfterLeave, String> {
    let mut after = AfterLeave::default();
    for s in streams {
        let r = api
            .req(
                reqwest::Method::GET,
                &format!("/coord/v1/monitoring/streams/{s}/groups/{s}/assignments"),
            )
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = r.status();
        if !status.is_success() {
            return Err(format!("HTTP {status}"));
        }
        let view: serde_json::Value = r.json().await.map_err(|e| e.to_string())?;
        after.add(&view);
    }
    Ok(after)
}

/// How many of `members` members a rolling restart of `percent` % takes: exactly ⌊members × percent / 100⌋
/// (rounded down: 10 % of 10,000 is 1,000; 1 % of 8 is none).
pub(super) fn restart_count(members: usize, percent: u8) -> usize {
    members.saturating_mul(usize::from(percent)) / 100
}

/// Whether member `index` (its index among all `members`, id `m<index>`) is one of the `percent` % that
/// restart: the [`restart_count`] lowest indexes. The bench deals members round-robin to groups, replicas and
/// workers by that index, so the restarting members are spread evenly over all of them (each group and each
/// worker gets the same number, give or take one).
pub(super) fn restarts(index: usize, members: usize, percent: u8) -> bool {
    index < restart_count(members, percent)
}
