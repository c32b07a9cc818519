// Overview: the coordinator's health with each component, and every group with its stream (a link to the
// stream page), members (live/total), lag with a sparkline of the last 15 minutes, active migration and
// rollback suspicion; filtered, sorted and paged in the page, refreshed live.

import { get, monitoringPath } from "/console/api.js";
import { h, replace, table, badge, num, age, fact } from "/console/dom.js";
import { canWrite, createStream, createGroup } from "/console/admin.js";
import { serverNow } from "/console/api.js";
import { sparkline } from "/console/chart.js";
import { readHistory, groupSeries, WINDOW } from "/console/history.js";
import { streamLink } from "/console/stream.js";

const PAGE = 50;
const LIVE = ["STARTING", "ACTIVE", "LEAVING"];

export function mount(el, _args, params) {
  const state = {
    filter: params.get("q") || "",
    lagOnly: params.get("lag") === "1",
    sort: params.get("sort") || "name",
    page: 0,
  };
  const health = h("section#health.panel", { "aria-labelledby": "health-title" });
  const groups = h("div#groups");
  const keep = () => {
    const q = new URLSearchParams();
    if (state.filter) q.set("q", state.filter);
    if (state.lagOnly) q.set("lag", "1");
    if (state.sort !== "name") q.set("sort", state.sort);
    const s = q.toString();
    history.replaceState(null, "", "#/overview" + (s ? "?" + s : ""));
  };
  let last = null;
  const redraw = () => {
    if (last) drawGroups(groups, last, state);
  };
  const filter = h("input#group-filter", {
    type: "search",
    value: state.filter,
    placeholder: "stream or group name",
    oninput: (e) => {
      state.filter = e.target.value;
      state.page = 0;
      keep();
      view.refresh();
    },
  });
  const lagOnly = h("input#lag-only", {
    type: "checkbox",
    checked: state.lagOnly,
    onchange: (e) => {
      state.lagOnly = e.target.checked;
      state.page = 0;
      keep();
      redraw();
    },
  });
  const sort = h(
    "select#group-sort",
    {
      onchange: (e) => {
        state.sort = e.target.value;
        keep();
        redraw();
      },
    },
    [
      ["name", "name"],
      ["lag", "lag (highest first)"],
      ["members", "live members (fewest first)"],
      ["state", "state"],
    ].map(([v, t]) => h("option", { value: v, selected: state.sort === v }, t)),
  );
  const refreshAll = () => view.refresh();
  const actions = canWrite()
    ? h(
        "div.actions",
        { "aria-label": "Admin actions" },
        h("button#create-stream", { type: "button", onclick: () => createStream(refreshAll) }, "Create stream…"),
        h("button#create-group", { type: "button", onclick: () => createGroup(refreshAll) }, "Create group…"),
      )
    : null;
  el.append(
    h("h1", {}, "Overview"),
    health,
    h(
      "section.panel",
      { "aria-labelledby": "groups-title" },
      h("div.bar", {}, h("h2#groups-title", {}, "Consumer groups"), actions),
      h(
        "div.filters",
        {},
        h("label", { for: "group-filter" }, "Filter"),
        filter,
        h("label.check", { for: "lag-only" }, lagOnly, " only groups with lag"),
        h("label", { for: "group-sort" }, "Sort by"),
        sort,
      ),
      groups,
    ),
  );
  const view = {
    title: "Overview",
    refresh: async () => {
      // Health first and on its own: it answers while Redis is down (DOWN), when the group list cannot.
      const listing = get("/coord/v1/monitoring/groups");
      listing.catch(() => {}); // awaited below, after the health panel is drawn
      let hl;
      try {
        hl = await get("/coord/v1/monitoring/health");
      } catch (e) {
        drawNoHealth(health, e);
        throw e;
      }
      drawHealth(health, hl);
      const list = await listing;
      const suspected = new Map();
      for (const s of (hl.components && hl.components.metadataDurability && hl.components.metadataDurability.suspectedGroups) || []) {
        suspected.set(s.streamPrefix + "/" + s.consumerGroup, s);
      }
      const f = state.filter.trim().toLowerCase();
      const shown = (list.groups || []).filter((g) => !f || (g.streamPrefix + "/" + g.consumerGroup).toLowerCase().includes(f));
      shown.sort((a, b) => (a.streamPrefix + "/" + a.consumerGroup).localeCompare(b.streamPrefix + "/" + b.consumerGroup));
      // Details (members, offsets) for at most a few pages' worth of groups, read in parallel.
      const detailed = shown.slice(0, PAGE * (state.page + 1));
      const details = await Promise.all(
        detailed.map(async (g) => {
          const base = monitoringPath(g.streamPrefix, g.consumerGroup);
          const [m, o, mg] = await Promise.all([
            get(base + "/members").catch(() => null),
            get(base + "/offsets").catch(() => null),
            get(base + "/migrations").catch(() => null),
          ]);
          const active = (mg && (mg.migrations || []).find((x) => x.reshardingId === mg.activeReshardingId)) || g.activeMigration || null;
          return { g, active, members: m && m.members, offsets: o, suspicion: suspected.get(g.streamPrefix + "/" + g.consumerGroup) };
        }),
      );
      // One history read per stream shown (the coordinator answers it from memory), for the sparklines.
      const streams = [...new Set(detailed.map((g) => g.streamPrefix))];
      const histories = new Map(await Promise.all(streams.map(async (p) => [p, await readHistory(p)])));
      for (const d of details) {
        const hist = histories.get(d.g.streamPrefix);
        d.history = hist && !hist.error ? groupSeries(hist, d.g.consumerGroup, "lag") : null;
      }
      last = { rows: details, total: (list.groups || []).length, matching: shown.length };
      drawGroups(groups, last, state, () => {
        state.page += 1;
        view.refresh();
      });
    },
  };
  return view;
}

function drawHealth(el, hl) {
  const c = hl.components || {};
  const redis = c.redis || {};
  const rec = c.reconciler || {};
  const dur = c.metadataDurability || {};
  const suspects = dur.suspectedGroups || [];
  replace(
    el,
    h("h2#health-title", {}, "Health ", badge(hl.status)),
    h(
      "dl.facts",
      {},
      fact("Coordinator", hl.coordinatorId),
      fact("Redis", [badge(redis.status || hl.redis), " ", redis.detail || ""]),
      fact("Reconciler", [badge(rec.status || hl.loop), " ", rec.lastRunAt ? "last pass " + age(rec.lastRunAt, serverNow()) : ""]),
      fact("Metadata durability", [
        badge(dur.status || "–"),
        " ",
        suspects.length === 0 ? "no rollback suspicion" : suspects.length + " group(s) suspected of a metadata rollback: " + suspects.map((s) => s.streamPrefix + "/" + s.consumerGroup).join(", "),
      ]),
      hl.terminating ? fact("Shutdown", "this replica is terminating") : null,
    ),
  );
}

/** The health panel when health itself could not be read: never the last (green) answer. */
function drawNoHealth(el, e) {
  const unreachable = e.code === "COORDINATOR_UNREACHABLE";
  replace(
    el,
    h("h2#health-title", {}, "Health ", badge(unreachable ? "UNREACHABLE" : "UNKNOWN", "bad")),
    h(
      "p#health-problem",
      {},
      unreachable
        ? "The coordinator does not answer at " + location.origin + ": it is stopped, or unreachable from this browser. Nothing below is current."
        : "The coordinator answered " + e.message + ": its health is unknown.",
    ),
  );
}

function lagOf(o) {
  return o ? o.totalLag : null;
}

function drawGroups(el, data, state, more) {
  let rows = data.rows.map((d) => {
    const live = (d.members || []).filter((m) => LIVE.includes(m.state)).length;
    return Object.assign({ live, lag: lagOf(d.offsets) }, d);
  });
  if (state.lagOnly) rows = rows.filter((r) => r.lag === null || r.lag > 0);
  const by = {
    lag: (a, b) => (b.lag ?? -1) - (a.lag ?? -1),
    members: (a, b) => a.live - b.live,
    state: (a, b) => a.g.state.localeCompare(b.g.state),
  }[state.sort];
  if (by) rows.sort(by);
  const body = rows.map((r) => {
    const g = r.g;
    const name = g.streamPrefix + "/" + g.consumerGroup;
    const m = r.active;
    return {
      attrs: { "data-group": name },
      cells: [
        h("a", { href: "#/group/" + encodeURIComponent(g.streamPrefix) + "/" + encodeURIComponent(g.consumerGroup), "data-key": "g:" + name }, name),
        streamLink(g.streamPrefix),
        badge(g.state),
        String(g.shardCount),
        h("span.members", {}, r.members ? r.live + " / " + r.members.length : "–"),
        num(r.lag),
        h("span.lag-spark", {}, r.history && r.history.length ? sparkline(r.history, { what: "lag of " + name, unit: "records", window: WINDOW }) : "–"),
        r.offsets ? String(r.offsets.totalPendingCount) : "–",
        m ? h("span", {}, badge(m.state), " " + m.fromShardCount + " → " + m.toShardCount) : "none",
        r.suspicion ? h("span", {}, badge("SUSPECTED", "bad"), " " + (r.suspicion.signals || []).join(", ")) : "none",
      ],
    };
  });
  const shown = data.rows.length;
  replace(
    el,
    table("Groups (" + data.matching + " of " + data.total + ")", ["Group", "Stream", "State", "Shards", "Members live / total", "Lag", "Lag, " + WINDOW, "Pending", "Active migration", "Rollback suspicion"], body, {
      id: "groups-table",
      rowHeader: true,
      empty: data.total === 0 ? "No consumer groups yet." : "No group matches the filter.",
    }),
    shown < data.matching && more ? h("button#more-groups", { type: "button", onclick: more, "data-key": "more" }, "Show " + Math.min(50, data.matching - shown) + " more") : null,
  );
}
