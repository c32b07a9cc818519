// A stream as a whole (#/stream/p): its routing version, length, memory and produce rate; its groups side
// by side (state, members, lag, consume rate, active migration, a lag sparkline); every shard's length,
// memory and produce rate with the hottest ones marked; and charts of the last 15 minutes — produce and
// consume rates, and each group's lag — from the coordinator's samples. Refreshed live like every page.

import { get, seg } from "/console/api.js";
import { h, replace, table, badge, num, fact } from "/console/dom.js";
import { canWrite, createGroup } from "/console/admin.js";
import { fmt, sparkline } from "/console/chart.js";
import { readHistory, groupSeries, series, chartOrReason, sampling, WINDOW } from "/console/history.js";

/** 1536 → "1.5 KiB". */
export function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return (i === 0 ? String(v) : v.toFixed(1)) + " " + units[i];
}

/** A rate in records per second, or "–" while there are too few samples. */
export function rate(v) {
  return v === null || v === undefined ? "–" : fmt(v) + " /s";
}

export function streamLink(p, text) {
  return h("a", { href: "#/stream/" + encodeURIComponent(p), "data-key": "s:" + p, "aria-label": "stream " + p }, text || p);
}

export function mount(el, args) {
  const [p] = args;
  const stats = h("div#stream-stats");
  const charts = h("section#stream-history.panel", { "aria-labelledby": "stream-history-title" });
  const groups = h("section#stream-groups.panel", { "aria-labelledby": "stream-groups-title" });
  const shards = h("section#stream-shards.panel", { "aria-labelledby": "stream-shards-title" });
  const reload = () => view.refresh();
  const admin = canWrite(p)
    ? h("div.actions", { "aria-label": "Admin actions for stream " + p, hidden: true }, h("button#add-group", { type: "button", onclick: () => createGroup(reload, p) }, "Add group…"))
    : null;
  el.append(h("p.crumbs", {}, h("a", { href: "#/overview" }, "Overview"), " / stream " + p), h("div.bar", {}, h("h1", {}, "Stream " + p), admin), stats, groups, charts, shards);
  const view = {
    title: "Stream " + p,
    refresh: async () => {
      const history = readHistory(p);
      let d;
      try {
        d = await get("/coord/v1/streams/" + seg(p) + "/describe");
      } catch (e) {
        if (admin) admin.hidden = true;
        await history;
        if (e.status === 401 || e.status === 0) throw e;
        drawRefusal(stats, p, e);
        for (const s of [groups, charts, shards]) s.hidden = true;
        // A refusal is this page's answer, not a failed refresh: shown in the page, polled again.
        if (e.status === 403 || e.status === 404) return;
        throw e;
      }
      if (admin) admin.hidden = false;
      const hist = await history;
      for (const s of [groups, charts, shards]) s.hidden = false;
      drawStats(stats, d);
      drawGroups(groups, p, d, hist);
      drawCharts(charts, d, hist);
      drawShards(shards, d);
    },
  };
  return view;
}

function drawRefusal(el, p, e) {
  let text;
  if (e.status === 403) text = [badge("FORBIDDEN", "forbidden"), " You may not read stream " + p + ": the coordinator answered 403 " + e.message + ". Ask for a role whose stream scopes include it. "];
  else if (e.status === 404 && e.code === "STREAM_NOT_FOUND") text = ["No stream " + p + " here (" + e.message + "). "];
  else if (e.status === 404) text = ["No data: this coordinator does not describe streams (" + e.message + "); it may be an older version. "];
  else text = ["Could not describe stream " + p + ": " + e.message + ". "];
  replace(el, h("p.notice#stream-refused", { role: "status", "data-status": String(e.status) }, ...text, h("a", { href: "#/overview" }, "Back to the overview")));
}

function drawStats(el, d) {
  const hot = d.hottestShards || [];
  replace(
    el,
    h(
      "dl.stats",
      {},
      fact("Shards", String(d.shardCount)),
      fact("Routing version", num(d.routingVersion)),
      fact("Ordering", d.ordering || "–"),
      fact("Records", num(d.totalLength)),
      fact("Memory", bytes(d.totalMemoryBytes)),
      fact("Produce rate", rate(d.produceRate)),
      fact("Hottest shards", hot.length ? hot.join(", ") : "none"),
      fact("Groups", String((d.groups || []).length)),
    ),
    h(
      "p.hint#rate-window",
      {},
      d.rateWindowSeconds
        ? "Rates are records per second over the last " + Math.round(d.rateWindowSeconds) + " s; lengths, memory and lag were read from Redis just now."
        : "Rates need two samples; the next sample is in " + Math.max(1, Math.ceil(d.nextSampleInSeconds || 0)) + " s. Lengths, memory and lag were read from Redis just now.",
    ),
  );
}

function drawGroups(el, p, d, hist) {
  const rows = (d.groups || []).map((g) => {
    const name = p + "/" + g.consumerGroup;
    const m = g.activeMigration;
    const lag = hist.error ? [] : groupSeries(hist, g.consumerGroup, "lag");
    return {
      attrs: { "data-stream-group": g.consumerGroup },
      cells: [
        h("a", { href: "#/group/" + encodeURIComponent(p) + "/" + encodeURIComponent(g.consumerGroup), "data-key": "g:" + name }, g.consumerGroup),
        badge(g.state),
        h("span.members", {}, num(g.activeMembers) + " / " + num(g.memberCount)),
        h("span.lag", {}, num(g.lag)),
        h("span.consume-rate", {}, g.sampled === false ? "– (sampled by another replica)" : rate(g.consumeRate)),
        num(g.pendingCount),
        m ? h("span", {}, badge(m.state), " " + m.fromShardCount + " → " + m.toShardCount) : "none",
        lag.length ? sparkline(lag, { what: "lag of " + name, unit: "records", window: WINDOW }) : h("span.spark-empty", {}, "–"),
      ],
    };
  });
  replace(
    el,
    h("h2#stream-groups-title", {}, "Groups"),
    h(
      "div.scroll",
      {},
      table("Groups of " + p + " (" + rows.length + ")", ["Group", "State", "Members live / total", "Lag", "Consume rate", "Pending", "Active migration", "Lag, " + WINDOW], rows, {
        id: "stream-groups-table",
        rowHeader: true,
        empty: "This stream has no consumer group.",
      }),
    ),
  );
}

function drawCharts(el, d, hist) {
  const names = hist.groups || (d.groups || []).map((g) => g.consumerGroup);
  const rates = [{ name: "produce", points: hist.error ? [] : series(hist, (pt) => pt.produceRate) }].concat(
    names.map((g) => ({ name: "consume " + g, points: groupSeries(hist, g, "consumeRate") })),
  );
  const lags = names.map((g) => ({ name: g, points: groupSeries(hist, g, "lag") }));
  replace(
    el,
    h("h2#stream-history-title", {}, "Last 15 minutes"),
    h(
      "div.charts",
      {},
      chartOrReason(hist, { id: "chart-rates", title: "Produce and consume rates", unit: "records/s", lines: rates, rates: true }),
      chartOrReason(hist, { id: "chart-lag", title: "Lag per group", unit: "records", lines: lags }),
    ),
    sampling(hist),
  );
}

function drawShards(el, d) {
  const rows = (d.shards || []).map((s) => ({
    attrs: { "data-shard": String(s.shard), class: s.hot ? "hot" : null },
    cells: [
      s.shard >= d.shardCount ? s.shard + " (draining)" : String(s.shard),
      s.exists === false ? "not created" : num(s.length),
      bytes(s.memoryBytes),
      rate(s.produceRate),
      s.lastRecordId || "–",
      s.hot ? badge("HOT", "hot") : "",
    ],
  }));
  replace(
    el,
    h("h2#stream-shards-title", {}, "Shards"),
    h("p.legend", {}, "HOT: among the three busiest shards (by produce rate, then length)."),
    h(
      "div.scroll",
      {},
      table("Shards of " + d.streamPrefix + " (routing version " + num(d.routingVersion) + ")", ["Shard", "Length", "Memory", "Produce rate", "Last record", "Hottest"], rows, {
        id: "stream-shards-table",
        rowHeader: true,
        empty: "This stream has no shard.",
      }),
    ),
  );
}
