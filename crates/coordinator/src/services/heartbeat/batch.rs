//! Group commit of heartbeat transitions: all heartbeats of one group waiting to change the aggregate on this
//! replica are decided in sequence and written with one compare-and-set.
//!
//! Writing the aggregate costs time proportional to the group's size (serialise, send, store), and a replica
//! writes one group's transitions one at a time. Committed one per request, a thousand members joining a
//! group would take a thousand full writes in a row. Instead, a request that must write joins its group's
//! queue and waits for the group's lock; whoever gets the lock takes the whole queue, decides every request
//! again on the newest aggregate (each on the one the previous produced), combines what can be combined,
//! rebalances once, commits once and answers everybody with what was committed. Under load the batches grow
//! by themselves; alone, a request is a batch of one and costs what it did before.
//!
//! Deciding the queue and what each request is told after the commit are the replica core's
//! (`rsc_group::replica::commit`, which the simulation runs too); this file holds the queues, the lock and
//! the commit. Each answer is sent only once the aggregate it describes is in Redis.

use crate::observability::stats::Stats;
use crate::runtime::cache::GroupName;
use crate::runtime::coordinator::queues::Pending;
use crate::runtime::coordinator::{Commit, Heartbeats, commit_result};
use rsc_group::batch::MemberCaps;
use rsc_group::heartbeat::Caller;
use rsc_group::replica::CommitResult;
use rsc_group::replica::commit::{BatchReply, decide_queue_indexed, replies};
use rsc_protocol::wire::HeartbeatRequest;
use std::borrow::Cow;
use tokio::sync::oneshot;

impl Heartbeats<'_> {
    /// How many heartbeats of this group wait to write on this replica (a batch forms from them).
    pub fn queued(&self, name: &GroupName) -> usize {
        self.state().queues.queued(name)
    }

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
            reply_to: tx,
        };
        if !self.state().queues.push(name, pending) {
            return BatchReply::Unavailable;
        }
        let lock = self.cache().lock_for(name);
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
            let batch = self.state().queues.take(name);
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
        let now = self.clock().now_ms();
        // Deciding a big batch on a big group (one copy of the aggregate, then every request in sequence)
        // is real CPU time, kept off the async workers so that Redis replies and steady heartbeats are not
        // starved. A large group's copy kept from its previous batch saves the copy (`batch_copies.rs`).
        let group = base.group.clone();
        let own = self.state().copies.take(name, &base);
        // The live members the caps count, read from the facts kept with `base` (the aggregate the batch
        // decides on, or its copy): no walk of the group when a join meets a cap.
        let live = base
            .facts
            .as_ref()
            .and_then(|f| f.live_members(batch.iter().filter_map(|p| p.principal.as_deref())));
        let timing = *self.timing();
        // The member caps, kept exactly by the batch (issue #32: checked only on the aggregate in hand,
        // concurrent joins on several replicas passed them by a batch).
        let caps = MemberCaps {
            max_members: Some(self.config().group.max_members as usize),
            max_per_principal: self
                .config()
                .group
                .max_members_per_principal
                .map(|n| n as usize),
        };
        let decided = tokio::task::spawn_blocking(move || {
            let (base_group, index) = match own {
                Some((copy, index)) => (Cow::Owned(copy), index),
                None => (Cow::Borrowed(&*group), None),
            };
            let decided = decide_queue_indexed(base_group, index, batch, now, &timing, caps, live);
            // The progress documents of the heartbeats the transition accepts, stored with it.
            let progress: Vec<(String, String)> = decided
                .included
                .iter()
                .filter(|i| i.renewed)
                .filter_map(|i| {
                    Some((
                        i.member_id.clone(),
                        crate::services::heartbeat::progress_json(&i.req, now)?,
                    ))
                })
                .collect();
            (decided, progress)
        })
        .await;
        let Ok((decided, progress)) = decided else {
            // The deciding task panicked: its requests' reply senders are gone, so they decide again.
            return;
        };
        for reply_to in decided.declined {
            let _ = reply_to.send(BatchReply::DecideAgain);
        }
        let Some(t) = decided.transition else {
            return;
        };
        self.stats().observe_batch(decided.included.len());
        let changed = t.changed_members.clone();
        let committed = self.commit_with_progress(name, &base, t, progress).await;
        if let (Ok(Commit::Written(written)), Some(changed)) = (&committed, &changed) {
            self.state()
                .copies
                .keep(name, base, written, changed, decided.index);
        }
        let result = commit_result(committed);
        if result == CommitResult::Written {
            for _ in decided.included.iter().filter(|i| i.fenced) {
                Stats::bump(&self.stats().members_fenced);
            }
        }
        for (reply_to, reply) in replies(decided.included, &result) {
            let _ = reply_to.send(reply);
        }
    }
}

fn answer_all(batch: Vec<Pending>, reply: impl Fn() -> BatchReply) {
    for p in batch {
        let _ = p.reply_to.send(reply());
    }
}
