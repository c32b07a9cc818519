//! Group commit of heartbeat transitions: all heartbeats of one group waiting to change the aggregate on this
//! replica are decided in sequence and written with one compare-and-set.
//!
//! Writing the aggregate costs time proportional to the group's size (serialise, send, store), and a replica
//! writes one group's transitions one at a time. Committed one per request, a thousand members joining a
//! group would take a thousand full writes in a row. Instead, a request that must write joins its group's
//! queue and waits for the group's lock; whoever gets the lock takes the whole queue, decides every request
//! again on the newest aggregate (each on the one the previous produced), combines what can be combined
//! (`rsc_group::batch`), rebalances once, commits once and answers everybody with what was committed. Under load the batches grow by themselves; alone,
//! a request is a batch of one and costs what it did before.
//!
//! A request that is not combined (it no longer needs a write, or it names a member an earlier one of the
//! batch names) is told to decide again; so is everyone after a lost race. Each answer is sent only once the
//! aggregate it describes is in Redis.

use crate::cache::GroupName;
use crate::coordinator::{Commit, Coordinator};
use crate::stats::Stats;
use rsc_group::batch::Batch;
use rsc_group::heartbeat::{Caller, Outcome, Transition};
use rsc_group::model::Group;
use rsc_group::timing::Timing;
use rsc_protocol::wire::{HeartbeatRequest, HeartbeatResponse};
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::oneshot;

/// At most this many requests are decided into one write; the rest wait for the next.
const MAX_BATCH: usize = 1_000;

/// What a request that needed a write is told.
#[derive(Debug)]
pub enum BatchReply {
    /// Written: send this response.
    Answered(Box<HeartbeatResponse>),
    /// Not written by this batch: decide again on the current aggregate.
    DecideAgain,
    /// A lease or time condition of this request's transition failed: reconcile the group, then decide again.
    Reconcile,
    /// Redis failed: answer RETRY.
    Unavailable,
}

struct Pending {
    member_id: String,
    req: HeartbeatRequest,
    /// The authenticated principal (None: unauthenticated heartbeats) and whether it is an ADMIN.
    principal: Option<String>,
    acts_for_any_member: bool,
    reply: oneshot::Sender<BatchReply>,
}

impl Pending {
    fn caller(&self) -> Caller<'_> {
        Caller {
            principal: self.principal.as_deref(),
            acts_for_any_member: self.acts_for_any_member,
        }
    }
}

/// The per-group queues of requests waiting to write.
#[derive(Default)]
pub struct TransitionQueues {
    queues: Mutex<HashMap<GroupName, Vec<Pending>>>,
}

impl TransitionQueues {
    /// Queues a request; false if the queues are unusable (a panic poisoned them).
    fn push(&self, name: &GroupName, p: Pending) -> bool {
        match self.queues.lock() {
            Ok(mut q) => {
                q.entry(name.clone()).or_default().push(p);
                true
            }
            Err(_) => false,
        }
    }

    /// How many requests of this group are waiting to write.
    pub fn queued(&self, name: &GroupName) -> usize {
        self.queues
            .lock()
            .map_or(0, |q| q.get(name).map_or(0, Vec::len))
    }

    fn take(&self, name: &GroupName) -> Vec<Pending> {
        let Ok(mut q) = self.queues.lock() else {
            return Vec::new();
        };
        let Some(list) = q.get_mut(name) else {
            return Vec::new();
        };
        if list.len() <= MAX_BATCH {
            q.remove(name).unwrap_or_default()
        } else {
            list.drain(..MAX_BATCH).collect()
        }
    }
}

impl Coordinator {
    /// Writes the transition this request needs, together with whatever else of its group is waiting.
    pub(crate) async fn write_batched(
        &self,
        name: &GroupName,
        member_id: &str,
        req: &HeartbeatRequest,
        caller: Caller<'_>,
    ) -> BatchReply {
        let (tx, mut rx) = oneshot::channel();
        let pending = Pending {
            member_id: member_id.to_owned(),
            req: req.clone(),
            principal: caller.principal.map(str::to_owned),
            acts_for_any_member: caller.acts_for_any_member,
            reply: tx,
        };
        if !self.transitions.push(name, pending) {
            return BatchReply::Unavailable;
        }
        let lock = self.cache.lock_for(name);
        let _guard = tokio::select! {
            biased;
            answered = &mut rx => return answered.unwrap_or(BatchReply::DecideAgain),
            guard = lock.lock() => guard,
        };
        // A batch that held the lock before us may have answered us already.
        if let Ok(answered) = rx.try_recv() {
            return answered;
        }
        // Our request may be behind MAX_BATCH others: keep committing batches until it is answered (nobody
        // else can while we hold the lock).
        loop {
            let batch = self.transitions.take(name);
            if batch.is_empty() {
                break;
            }
            self.commit_batch(name, batch).await;
            if let Ok(answered) = rx.try_recv() {
                return answered;
            }
        }
        rx.await.unwrap_or(BatchReply::DecideAgain)
    }

    /// Decides every waiting request on the newest aggregate, commits the combinable ones at once, answers all.
    /// Called with the group's lock held.
    async fn commit_batch(&self, name: &GroupName, batch: Vec<Pending>) {
        if batch.is_empty() {
            return;
        }
        let base = match self.cached_or_load(name).await {
            Ok((Some(base), _)) => base,
            Ok((None, _)) => return answer_all(batch, || BatchReply::DecideAgain),
            Err(_) => return answer_all(batch, || BatchReply::Unavailable),
        };
        let now = self.clock.now_ms();
        // Deciding a big batch on a big group (one copy of the aggregate, then every request in sequence)
        // is real CPU time, kept off the async workers so that Redis replies and steady heartbeats are not
        // starved.
        let group = base.group.clone();
        let timing = self.timing;
        let decided =
            tokio::task::spawn_blocking(move || decide_in_sequence(&group, batch, now, &timing))
                .await;
        let Ok((combined, included, progress)) = decided else {
            // The deciding task panicked: its requests' reply senders are gone, so they decide again.
            return;
        };
        let size = included.len();
        let Some(t) = combined else {
            return;
        };
        self.stats.observe_batch(size);
        match self.commit_with_progress(name, &base, t, progress).await {
            Ok(Commit::Written(_)) => {
                for (reply, response, fenced, _) in included {
                    if fenced {
                        Stats::bump(&self.stats.members_fenced);
                    }
                    let _ = reply.send(BatchReply::Answered(Box::new(response)));
                }
            }
            Ok(Commit::Conflict) => {
                for (reply, ..) in included {
                    let _ = reply.send(BatchReply::DecideAgain);
                }
            }
            // Only the requests whose own conditions failed reconcile (once each); the rest decide again.
            Ok(Commit::ConditionFailed { member }) => {
                let mut first = true;
                for (reply, _, _, named) in included {
                    let culprit = match &member {
                        Some(m) => named.contains(m),
                        None => first,
                    };
                    first = false;
                    let _ = reply.send(if culprit {
                        BatchReply::Reconcile
                    } else {
                        BatchReply::DecideAgain
                    });
                }
            }
            Err(_) => {
                for (reply, ..) in included {
                    let _ = reply.send(BatchReply::Unavailable);
                }
            }
        }
    }
}

/// A request combined into a batch: where to answer, the answer, whether it fenced, the members it names.
type Included = (
    oneshot::Sender<BatchReply>,
    HeartbeatResponse,
    bool,
    Vec<String>,
);

/// Decides each request on the aggregate the previous one produced and combines what can be combined;
/// the others are told to decide again at once. Also returns the progress documents of the combined
/// requests whose member's lease the transition renews (accepted heartbeats), to be stored with it.
fn decide_in_sequence(
    base: &Group,
    batch: Vec<Pending>,
    now: i64,
    timing: &Timing,
) -> (Option<Transition>, Vec<Included>, Vec<(String, String)>) {
    let mut combined = Batch::on(base, now, timing);
    let mut replies = Vec::new();
    for p in batch {
        // Rollback evidence in a request was recorded on the request's own path before it got here; a member
        // that (on this newer aggregate) belongs to another principal is refused on the request's own path.
        match combined.decide_as(&p.member_id, &p.req, &p.caller()) {
            Ok(()) => {
                let progress = crate::heartbeat::progress_json(&p.req, now);
                replies.push((p.reply, p.member_id, progress));
            }
            Err(_) => {
                let _ = p.reply.send(BatchReply::DecideAgain);
            }
        }
    }
    let Some(done) = combined.finish() else {
        return (None, Vec::new(), Vec::new());
    };
    let mut progress = Vec::new();
    let renewed: std::collections::HashSet<&str> =
        done.transition.renew.iter().map(String::as_str).collect();
    let included = replies
        .into_iter()
        .zip(done.decisions)
        .map(|((reply, member_id, doc), d)| {
            if let Some(doc) = doc
                && renewed.contains(member_id.as_str())
            {
                progress.push((member_id, doc));
            }
            let named = match &d.outcome {
                Outcome::Write(t) => t.named_members().cloned().collect(),
                _ => Vec::new(),
            };
            (reply, d.response, d.signals.fenced, named)
        })
        .collect();
    (Some(done.transition), included, progress)
}

fn answer_all(batch: Vec<Pending>, reply: impl Fn() -> BatchReply) {
    for p in batch {
        let _ = p.reply.send(reply());
    }
}
