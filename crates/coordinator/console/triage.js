// The runbook's triage checklists (operations runbook: "Rebalance Triage", "Migration Triage"), each step
// answered from the data on the group page and shown beside that data.

import { h, duration } from "/console/dom.js";

export const LIVE = ["STARTING", "ACTIVE", "LEAVING"];

export function idx(s) {
  return typeof s === "number" ? s : s.shardIndex;
}

function step(n, ok, title, detail) {
  const word = ok === null ? "info" : ok ? "ok" : "check";
  return h(
    "li.triage-step.t-" + word,
    { "data-step": String(n) },
    h("span.verdict", {}, ok === null ? "Note" : ok ? "OK" : "Check"),
    " ",
    h("strong", {}, title),
    h("div.detail", {}, detail),
  );
}

/** Rebalance triage: liveness, assignments and revokeProgress, stuck revocations, timeouts, fenced members. */
export function rebalance(members, asg, now) {
  const live = members.filter((m) => LIVE.includes(m.state));
  const lapsing = live.filter((m) => {
    const exp = Date.parse(m.memberLeaseExpiresAt || "");
    const hb = Date.parse(m.lastHeartbeatAt || "");
    return !Number.isNaN(exp) && !Number.isNaN(hb) && exp - now < (exp - hb) * 0.3;
  });
  const gone = members.filter((m) => !LIVE.includes(m.state));
  const moving = [];
  for (const m of live) {
    const target = new Set((asg.targetAssignment[m.memberId] || []).map(idx));
    const current = new Set((asg.currentAssignments[m.memberId] || []).map(idx));
    const missing = [...target].filter((s) => !current.has(s));
    const extra = [...current].filter((s) => !target.has(s));
    if (missing.length || extra.length) moving.push(m.memberId + " (to take " + (missing.join(", ") || "none") + "; to give up " + (extra.join(", ") || "none") + ")");
  }
  const revoking = Object.entries(asg.revokeProgress || {}).filter(([, v]) => v.length > 0);
  const stuck = live.filter((m) => (m.revoking || []).length > 0 && m.rebalanceDeadlineAt);
  const fenced = members.filter((m) => m.state === "FENCED").map((m) => m.memberId);
  for (const [id, d] of Object.entries(asg.departedMembers || {})) if (d.state === "FENCED" && !fenced.includes(id)) fenced.push(id);
  const timeout = live.length ? Math.max(...live.map((m) => m.rebalanceTimeoutMs || 0)) : 0;
  return h(
    "aside.triage#rebalance-triage",
    { "aria-labelledby": "rebalance-triage-title" },
    h("h3#rebalance-triage-title", {}, "Rebalance triage"),
    h(
      "ol",
      {},
      step(
        1,
        live.length > 0 && lapsing.length === 0,
        "Member liveness",
        live.length + " of " + members.length + " members live" +
          (lapsing.length ? "; lease nearly lapsed: " + lapsing.map((m) => m.memberId).join(", ") : "") +
          (gone.length ? "; not live: " + gone.map((m) => m.memberId + " " + m.state).join(", ") : "") +
          (live.length === 0 ? " — no member is consuming" : "") + ".",
      ),
      step(
        2,
        moving.length === 0 && revoking.length === 0,
        "Assignments and revokeProgress",
        moving.length === 0 && revoking.length === 0
          ? "Every live member owns exactly its target shards; nothing is being revoked."
          : [moving.length ? "Not yet at target: " + moving.join("; ") + ". " : "", revoking.length ? "revokeProgress: " + revoking.map(([id, v]) => id + " → " + v.map((r) => idx(r.shard) + (r.state ? " " + r.state : "") + (r.inFlight ? " (" + r.inFlight + " in flight)" : "")).join(", ")).join("; ") + "." : ""].join(""),
      ),
      step(
        3,
        stuck.length === 0,
        "Members stuck revoking",
        stuck.length === 0
          ? "No member is holding shards it was asked to give up."
          : stuck.map((m) => m.memberId + " is revoking " + m.revoking.map(idx).join(", ") + " (deadline " + deadline(m.rebalanceDeadlineAt, now) + ")").join("; ") + ": inspect that application instance for slow handlers or a blocked shutdown.",
      ),
      step(
        4,
        null,
        "Rebalance timeout",
        "After " + (timeout ? duration(timeout) : "the rebalance timeout") + " the coordinator fences a member that has not released its revoked shards, and the reassignment continues without it.",
      ),
      step(
        5,
        fenced.length === 0,
        "Fenced members",
        fenced.length === 0
          ? "No member is fenced."
          : fenced.join(", ") + " received FENCED_MEMBER_EPOCH: each must stop reading its shards and rejoin with memberEpoch=0.",
      ),
    ),
  );
}

function deadline(iso, now) {
  const t = Date.parse(iso || "");
  if (Number.isNaN(t)) return "unknown";
  return t > now ? "in " + duration(t - now) : duration(now - t) + " ago";
}

/** Migration triage: routing, convergence, removed shards still held, whether rollback is still allowed. */
export function migration(detail) {
  const m = detail.migration || detail;
  const removed = detail.removedShards || [];
  const held = removed.filter((r) => r.inCurrentAssignments || r.inRevokeProgress);
  return h(
    "aside.triage#migration-triage",
    { "aria-labelledby": "migration-triage-title" },
    h("h3#migration-triage-title", {}, "Migration triage"),
    h(
      "ol",
      {},
      step(
        1,
        detail.routingShardCount === m.toShardCount,
        "Producer routing",
        "Producer routing serves " + detail.routingShardCount + " shards; the migration's target is " + m.toShardCount + ".",
      ),
      step(
        2,
        detail.consumersConverged,
        "Consumers converged",
        detail.consumersConverged ? "Every live consumer owns its target assignment." : "Live consumers have not yet converged to their target assignments (see the shard grid).",
      ),
      step(
        3,
        held.length === 0,
        "Removed shards still held",
        removed.length === 0
          ? "This migration removes no shard."
          : held.length === 0
            ? "No removed shard is in currentAssignments or revokeProgress."
            : held.map((r) => "shard " + r.shardIndex + (r.inCurrentAssignments ? " in currentAssignments" : "") + (r.inRevokeProgress ? " in revokeProgress" : "") + (r.owners.length ? " (" + r.owners.join(", ") + ")" : "")).join("; ") + ".",
      ),
      step(
        4,
        !detail.heldBy || !["NO_LIVE_CONSUMER"].includes(detail.heldBy.reason),
        "What the migration waits for",
        detail.heldBy
          ? h(
              "div#migration-held",
              {},
              h("p", {}, detail.heldBy.reason + ": " + detail.heldBy.detail + "."),
              h(
                "ul",
                {},
                (detail.heldBy.waysOut || []).map((w) => h("li", {}, h("strong", {}, w.action), " ", h("code", {}, w.how), " — " + w.effect)),
              ),
            )
          : "Nothing: the migration has ended in this group.",
      ),
      step(
        5,
        null,
        "Rollback",
        detail.rollbackAllowed
          ? "Rollback is still allowed: if this migration is unsafe, roll it back."
          : "Rollback is no longer allowed in state " + m.state + "; a migration that cannot finish can be force-completed.",
      ),
    ),
  );
}
