// A group: its stats, members (state, epoch, heartbeat age, a lease bar that drains), the shard × member
// grid (owned / revoking / pending) with per-shard lag and pending, the active migration with its drain
// progress, and the runbook's triage facts beside the data they refer to; charts of its lag and of the
// stream's produce rate against its consume rate over the last 15 minutes. Admin actions for WRITE only.

import { get, groupPath, monitoringPath, serverNow } from "/console/api.js";
import { h, replace, table, badge, num, age, fact, duration } from "/console/dom.js";
import { canWrite, scale, deleteGroup, migrationAction, resetOffsets } from "/console/admin.js";
import { rebalance, migration, idx, LIVE } from "/console/triage.js";
import { readHistory, groupSeries, series, chartOrReason, sampling } from "/console/history.js";
import { streamLink } from "/console/stream.js";

const STATES = {
  EMPTY: "no live member",
  ASSIGNING: "computing a new target assignment",
  RECONCILING: "members are moving towards their targets",
  STABLE: "every live member owns its target",
};

export function mount(el, args) {
  const [p, g] = args;
  const name = p + "/" + g;
  const top = h("div#group-stats");
  const members = h("section#members.panel", { "aria-labelledby": "members-title" });
  const grid = h("section#shards.panel", { "aria-labelledby": "shards-title" });
  const charts = h("section#group-history.panel", { "aria-labelledby": "group-history-title" });
  const migr = h("section#migration.panel", { "aria-labelledby": "migration-title" });
  const extra = h("div#group-extra");
  const reload = () => view.refresh();
  // Offered only once the group is known to exist: an unknown group has nothing to scale or delete.
  const admin = canWrite(p)
    ? h(
        "div.actions",
        { "aria-label": "Admin actions for " + name, hidden: true },
        h("button#scale", { type: "button", onclick: () => scale(p, g, view.shardCount, reload) }, "Scale stream…"),
        h("button#reset-offsets", { type: "button", onclick: () => resetOffsets(p, g, reload) }, "Reset position…"),
        h("button#delete-group.danger", { type: "button", onclick: () => deleteGroup(p, g, () => (location.hash = "#/overview")) }, "Delete group…"),
      )
    : null;
  el.append(
    h("p.crumbs", {}, h("a", { href: "#/overview" }, "Overview"), " / ", streamLink(p, "stream " + p), " / group " + g),
    h("div.bar", {}, h("h1", {}, "Group " + name), admin),
    top,
    charts,
    members,
    grid,
    migr,
    extra,
  );
  // The lease bars drain between refreshes.
  const tick = setInterval(() => {
    if (!el.isConnected) return clearInterval(tick);
    drainLeases(el);
  }, 250);
  const view = {
    title: "Group " + name,
    shardCount: 0,
    refresh: async () => {
      const base = monitoringPath(p, g);
      let grp;
      try {
        grp = await get(base);
      } catch (e) {
        if (admin) admin.hidden = true;
        if (e.status === 404) {
          replace(
            top,
            h("p.notice#group-missing", { role: "status" }, e.message + " — nothing to scale or delete here. ", h("a", { href: "#/overview" }, "Back to the overview")),
          );
        }
        throw e;
      }
      if (admin) admin.hidden = false;
      const [mem, asg, off, migs, hist] = await Promise.all([
        get(base + "/members"),
        get(base + "/assignments"),
        get(base + "/offsets").catch(() => null),
        get(base + "/migrations"),
        readHistory(p),
      ]);
      // The group summary's activeMigration is not filled by every coordinator; the migrations list is.
      const active = (migs.migrations || []).find((m) => m.reshardingId === migs.activeReshardingId) || grp.activeMigration || null;
      const detail = active ? await get(groupPath(p, g) + "/migrations/" + encodeURIComponent(active.reshardingId)).catch(() => null) : null;
      view.shardCount = grp.shardCount;
      const now = serverNow();
      const list = mem.members || [];
      drawStats(top, grp, list, off);
      drawCharts(charts, g, hist);
      replace(
        members,
        h("h2#members-title", {}, "Members"),
        h("div.split", {}, membersTable(list, asg, now), rebalance(list, asg, now)),
      );
      drawGrid(grid, p, g, grp, list, asg, off, detail);
      drawMigration(migr, p, g, active, detail, migs, reload);
      drawExtra(extra, grp, asg);
    },
  };
  return view;
}

// A hold's cell: until when the shard is held, or, while the hold's end is still to be counted by the next
// reconciler pass, the earliest it can end.
function holdText(hold) {
  return hold.endPending
    ? "held, not before " + hold.until + " (end still to be counted)"
    : "held until " + hold.until;
}

function drawStats(el, grp, list, off) {
  const live = list.filter((m) => LIVE.includes(m.state)).length;
  const dur = grp.metadataDurability || {};
  replace(
    el,
    h(
      "dl.stats",
      {},
      fact("State", [badge(grp.state), h("span.legend", {}, " " + (STATES[grp.state] || ""))]),
      fact("Members live / total", live + " / " + list.length),
      fact("Shards", String(grp.shardCount)),
      fact("Total lag", off ? num(off.totalLag) : "–"),
      fact("Total pending", off ? String(off.totalPendingCount) : "–"),
      fact("Group epoch", String(grp.groupEpoch)),
      fact("Assignment epoch", String(grp.assignmentEpoch)),
      fact("Metadata version", String(grp.metadataVersion)),
      fact("Durability", badge(dur.status || "–")),
    ),
  );
}

function drawCharts(el, g, hist) {
  replace(
    el,
    h("h2#group-history-title", {}, "Last 15 minutes"),
    h(
      "div.charts",
      {},
      chartOrReason(hist, { id: "chart-group-lag", title: "Lag of " + g, unit: "records", lines: [{ name: g, points: groupSeries(hist, g, "lag") }] }),
      chartOrReason(hist, {
        id: "chart-group-rates",
        title: "Produce and consume rates",
        unit: "records/s",
        rates: true,
        lines: [
          { name: "produce (stream)", points: hist.error ? [] : series(hist, (pt) => pt.produceRate) },
          { name: "consume (" + g + ")", points: groupSeries(hist, g, "consumeRate") },
        ],
      }),
    ),
    sampling(hist),
  );
}

function membersTable(list, asg, now) {
  const rows = list.map((m) => {
    const exp = Date.parse(m.memberLeaseExpiresAt || "");
    const hb = Date.parse(m.lastHeartbeatAt || "");
    const ttl = !Number.isNaN(exp) && !Number.isNaN(hb) ? Math.max(1, exp - hb) : 0;
    const live = LIVE.includes(m.state);
    const lease =
      live && ttl
        ? h(
            "span.lease",
            {},
            h("meter", { min: "0", max: String(ttl), low: String(ttl * 0.3), high: String(ttl * 0.6), optimum: String(ttl), value: String(Math.max(0, exp - now)), "data-expires": String(exp), "aria-label": "lease remaining for " + m.memberId }),
            h("span.lease-text", { "data-expires": String(exp) }, leaseText(exp, now)),
          )
        : "–";
    return {
      attrs: { "data-member": m.memberId },
      cells: [
        m.memberId,
        badge(m.state),
        String(m.memberEpoch),
        age(m.lastHeartbeatAt, now),
        lease,
        String((asg.currentAssignments[m.memberId] || []).length) + " / " + String((asg.targetAssignment[m.memberId] || []).length),
        (m.revoking || []).map(idx).join(", ") || "–",
        m.clientName ? m.clientName + (m.clientVersion ? " " + m.clientVersion : "") : "–",
      ],
    };
  });
  return table("Members (" + list.length + ")", ["Member", "State", "Epoch", "Last heartbeat", "Lease remaining", "Owned / target", "Revoking", "Client"], rows, {
    id: "members-table",
    rowHeader: true,
    empty: "No member has joined this group.",
  });
}

function leaseText(exp, now) {
  return exp > now ? duration(exp - now) : "lapsed";
}

function drainLeases(el) {
  const now = serverNow();
  for (const m of el.querySelectorAll("meter[data-expires]")) m.value = Math.max(0, Number(m.getAttribute("data-expires")) - now);
  for (const t of el.querySelectorAll(".lease-text[data-expires]")) t.textContent = leaseText(Number(t.getAttribute("data-expires")), now);
}

function drawGrid(el, p, g, grp, list, asg, off, detail) {
  const cols = list.filter((m) => LIVE.includes(m.state) || (asg.revokeProgress[m.memberId] || []).length > 0).map((m) => m.memberId);
  const sets = (map) => Object.fromEntries(cols.map((id) => [id, new Set((map[id] || []).map(idx))]));
  const target = sets(asg.targetAssignment);
  const current = sets(asg.currentAssignments);
  const revoking = Object.fromEntries(cols.map((id) => [id, new Set((asg.revokeProgress[id] || []).map((r) => idx(r.shard)))]));
  const byShard = new Map(((off && off.shards) || []).map((s) => [s.shard !== undefined ? idx(s.shard) : s.shardIndex, s]));
  let count = grp.shardCount;
  for (const r of (detail && detail.removedShards) || []) count = Math.max(count, r.shardIndex + 1);
  for (const id of cols) for (const s of [...current[id], ...revoking[id]]) count = Math.max(count, s + 1);
  const held = new Map();
  for (const hold of asg.holds || []) for (const s of hold.shards) held.set(idx(s), hold);
  const rows = [];
  for (let s = 0; s < count; s++) {
    const o = byShard.get(s);
    const removed = s >= grp.shardCount;
    rows.push({
      attrs: { "data-shard": String(s) },
      cells: [
        removed ? s + " (removed)" : String(s),
        ...cols.map((id) => {
          const c = revoking[id].has(s) ? "revoking" : current[id].has(s) ? "owned" : target[id].has(s) ? "pending" : "";
          return c ? h("span.cell.c-" + c, {}, c) : "";
        }),
        held.has(s) ? holdText(held.get(s)) : "",
        o ? num(o.lag) : "–",
        o && o.pendingCount > 0 && !removed
          ? h(
              "a",
              {
                href: "#/pending/" + encodeURIComponent(p) + "/" + encodeURIComponent(g) + "/" + s,
                "data-key": "pending:" + s,
                "aria-label": o.pendingCount + " pending on shard " + s + ": list the entries, each opening its record",
              },
              String(o.pendingCount),
            )
          : o
            ? String(o.pendingCount)
            : "–",
        removed ? "–" : h("a", { href: "#/messages/" + encodeURIComponent(p) + "/" + encodeURIComponent(g) + "/" + s, "data-key": "msg:" + s, "aria-label": "messages of shard " + s }, "messages"),
      ],
    });
  }
  replace(
    el,
    h("h2#shards-title", {}, "Shards"),
    h("p.legend", {}, "owned: the member reported it and may read it · revoking: it must give it up · pending: assigned to it, not yet taken"),
    h("p", {}, h("a#merged-messages", { href: "#/messages/" + encodeURIComponent(p) + "/" + encodeURIComponent(g) + "/all", "data-key": "msg:all" }, "Messages of every shard, by time")),
    h("div.scroll", {}, table("Shard × member", ["Shard", ...cols, "Hold", "Lag", "Pending", "Records"], rows, { id: "shard-grid", cls: "grid", rowHeader: true, empty: "This stream has no shard." })),
  );
}

function drawMigration(el, p, g, active, detail, migs, reload) {
  const history = (migs.migrations || []).slice().reverse();
  const parts = [h("h2#migration-title", {}, "Migration")];
  if (!active) parts.push(h("p#no-migration", {}, "No active migration."));
  else if (!detail) parts.push(h("p", {}, "Migration " + active.reshardingId + " (" + active.state + "): its detail could not be read."));
  else {
    const m = detail.migration || detail;
    const removed = detail.removedShards || [];
    const drained = removed.filter((r) => r.pending === 0 && r.lag === 0 && !r.inCurrentAssignments && !r.inRevokeProgress).length;
    const write = canWrite(p);
    parts.push(
      h(
        "div.split",
        {},
        h(
          "div",
          {},
          h(
            "dl.facts#active-migration",
            {},
            fact("Migration", m.reshardingId),
            fact("Shards", m.fromShardCount + " → " + m.toShardCount),
            fact("State", badge(m.state)),
            fact("Age", duration(detail.ageSeconds * 1000)),
            fact("Requested by", m.requestedBy + (m.reason ? ": " + m.reason : "")),
            fact("Drain evidence", detail.drainEvidenceFrom),
            removed.length
              ? fact("Drain progress", [h("progress", { max: String(removed.length), value: String(drained), "aria-label": "removed shards drained" }), " " + drained + " of " + removed.length + " removed shards drained"])
              : fact("Drain progress", "nothing to drain (scale-out)"),
          ),
          removed.length
            ? table(
                "Removed shards",
                ["Shard", "Stream key", "Length", "Pending", "Lag", "Owners"],
                removed.map((r) => [String(r.shardIndex), r.streamKey, num(r.streamLength), num(r.pending), num(r.lag), r.owners.join(", ") || "–"]),
                { rowHeader: true },
              )
            : null,
          write
            ? h(
                "div.actions",
                { "aria-label": "Migration actions" },
                detail.rollbackAllowed ? h("button#rollback", { type: "button", onclick: () => migrationAction("rollback", p, g, m.reshardingId, reload) }, "Roll back…") : null,
                h("button#force-complete.danger", { type: "button", onclick: () => migrationAction("force-complete", p, g, m.reshardingId, reload) }, "Force-complete…"),
              )
            : null,
        ),
        migration(detail),
      ),
    );
  }
  parts.push(
    table(
      "Migration history",
      ["Migration", "Shards", "State", "Created", "Requested by", "Reason"],
      history.map((m) => [m.reshardingId, m.fromShardCount + " → " + m.toShardCount, badge(m.state), m.createdAt, m.requestedBy || "–", m.reason || "–"]),
      { id: "migration-history", rowHeader: true, empty: "No migration yet." },
    ),
  );
  replace(el, ...parts);
}

function drawExtra(el, grp, asg) {
  const dur = grp.metadataDurability || {};
  const s = dur.rollbackSuspicion;
  const v = asg.invariantViolations || [];
  replace(
    el,
    s
      ? h(
          "section.panel.alert",
          { "aria-labelledby": "suspicion-title" },
          h("h2#suspicion-title", {}, "Metadata rollback suspected"),
          h("p", {}, "Signals: " + s.signals.join(", ") + " since " + s.detectedAt + ". Stored metadata version " + s.storedMetadataVersion + ", highest observed " + s.highestObservedMetadataVersion + ". Admin changes are refused until the group is restored, recreated or the suspicion is dismissed."),
        )
      : null,
    v.length ? h("section.panel.alert", { "aria-labelledby": "violations-title" }, h("h2#violations-title", {}, "Invariant violations"), h("ul", {}, v.map((x) => h("li", {}, x)))) : null,
  );
}
