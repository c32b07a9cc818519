// Message explorer: one shard's records (#/messages/p/g/i), or every shard's merged by time
// (#/messages/p/g/all, the merged route), newest first, a page at a time (the route's cursor; the merged one
// holds each shard's position), with the payload pretty-printed when it is JSON and the other fields listed
// beside it. "Find" jumps to a record id or an RFC 3339 time (fromId / fromTime, also from the link's
// ?fromId=) and searches by a field value or a payload substring within the route's scan bounds (shared by
// every shard in the merged view); the scan summary says how far it looked. In the merged view each record
// names its shard, linked to that shard's view at the record.

import { get, monitoringPath } from "/console/api.js";
import { h, replace, say } from "/console/dom.js";

const LIMITS = [10, 25, 50, 100];

export function mount(el, args, params) {
  const [p, g, shardText] = args;
  const merged = shardText === "all";
  const shard = merged ? 0 : Number(shardText || 0);
  const where = merged ? "all shards, by time" : "shard " + shard;
  const state = {
    cursors: [],
    cursor: params.get("cursor") || "",
    limit: Number(params.get("limit") || 25),
    next: null,
    jump: params.get("fromId") || params.get("fromTime") || "",
    search: params.get("search") || "",
    field: params.get("field") || "",
  };
  const list = h("div#records");
  const pager = h("div.pager");
  const base = "#/messages/" + encodeURIComponent(p) + "/" + encodeURIComponent(g) + "/";
  const shardInput = h("input#shard-index", { type: "number", min: "0", value: merged ? "" : String(shard) });
  const jumpInput = h("input#jump-to", { type: "text", placeholder: "1764756000000-0 or 2026-12-03T10:00:00Z", value: state.jump });
  const searchInput = h("input#search-text", { type: "text", value: state.search });
  const fieldInput = h("input#search-field", { type: "text", placeholder: "orderId=42", value: state.field });
  const summary = h("p#scan-summary.hint", { role: "status" });
  const limit = h(
    "select#page-size",
    { onchange: () => ((state.limit = Number(limit.value)), (state.cursor = ""), (state.cursors = []), view.refresh()) },
    LIMITS.map((n) => h("option", { value: String(n), selected: n === state.limit }, String(n))),
  );
  el.append(
    h("p.crumbs", {}, h("a", { href: "#/overview" }, "Overview"), " / ", h("a", { href: "#/group/" + encodeURIComponent(p) + "/" + encodeURIComponent(g) }, p + "/" + g), " / " + where),
    h("h1", {}, "Messages of " + p + ", " + where),
    h(
      "form.filters",
      {
        onsubmit: (e) => {
          e.preventDefault();
          location.hash = base + encodeURIComponent(shardInput.value || "0");
        },
      },
      h("label", { for: "shard-index" }, "Shard"),
      shardInput,
      h("button", { type: "submit" }, "Open shard"),
      h("a#merged-view", { href: base + "all", "aria-current": merged ? "page" : null }, "All shards, by time"),
      h("label", { for: "page-size" }, "Records per page"),
      limit,
      h("button#newest", { type: "button", onclick: () => ((state.cursor = ""), (state.cursors = []), view.refresh()) }, "Newest"),
    ),
    h(
      "form.filters#find",
      {
        onsubmit: (e) => {
          e.preventDefault();
          state.jump = jumpInput.value.trim();
          state.search = searchInput.value;
          state.field = fieldInput.value.trim();
          state.cursor = "";
          state.cursors = [];
          view.refresh();
        },
      },
      h("label", { for: "jump-to" }, "From id or time"),
      jumpInput,
      h("label", { for: "search-text" }, "Payload contains"),
      searchInput,
      h("label", { for: "search-field" }, "Field name=value"),
      fieldInput,
      h("button#find-button", { type: "submit" }, "Find"),
    ),
    summary,
    pager,
    list,
  );
  const view = {
    title: "Messages " + p + "/" + g + " " + where,
    live: false,
    refresh: async () => {
      let page;
      try {
        const query = { direction: "BACKWARD", limit: state.limit, cursor: state.cursor };
        if (!state.cursor && state.jump) query[/[T:]/.test(state.jump) ? "fromTime" : "fromId"] = state.jump;
        if (state.search) query.search = state.search;
        if (state.field) query.field = state.field;
        page = await get(monitoringPath(p, g) + (merged ? "/messages" : "/shards/" + shard + "/messages"), query);
      } catch (e) {
        if (e.status === 401) throw e;
        replace(list, h("p.error", { role: "alert" }, "Could not read " + (merged ? "the shards" : "shard " + shard) + ": " + e.message));
        replace(pager);
        replace(summary);
        return;
      }
      state.next = page.nextCursor || null;
      const s = page.search;
      replace(
        summary,
        s ? "Scanned " + s.scanned + " record(s), " + s.scannedBytes + " bytes" + (merged ? " over " + (page.shards || []).length + " shards" : "") + (s.stoppedAtBound ? " — stopped at the scan bound; Older → continues" : "") + "; " + (page.records || []).length + " matched." : page.fromId ? "From " + page.fromId + "." : "",
      );
      drawPager(pager, state, view);
      drawRecords(list, page, merged ? base : null);
      say("");
    },
  };
  return view;
}

function drawPager(el, state, view) {
  replace(
    el,
    h(
      "button#newer",
      {
        type: "button",
        disabled: state.cursors.length === 0,
        "data-key": "newer",
        onclick: () => {
          state.cursor = state.cursors.pop() || "";
          view.refresh();
        },
      },
      "← Newer",
    ),
    " ",
    h(
      "button#older",
      {
        type: "button",
        disabled: !state.next,
        "data-key": "older",
        onclick: () => {
          state.cursors.push(state.cursor);
          state.cursor = state.next;
          view.refresh();
        },
      },
      "Older →",
    ),
  );
}

function pretty(text) {
  if (text === null || text === undefined) return null;
  try {
    const v = JSON.parse(text);
    if (v !== null && typeof v === "object") return { json: true, text: JSON.stringify(v, null, 2) };
  } catch (_) {
    /* not JSON: shown as it is */
  }
  return { json: false, text: String(text) };
}

/** The records of a page; `shardBase` (the merged view) links each record to its shard's view at it. */
function drawRecords(el, page, shardBase) {
  const records = page.records || [];
  const source = shardBase ? (page.shards || []).length + " shards merged by time" : page.streamKey;
  if (records.length === 0) {
    replace(el, h("p#no-records", {}, "No records on this page (" + source + ")."));
    return;
  }
  replace(
    el,
    h("p.hint", {}, source + " · newest first · " + records.length + " record(s)"),
    h(
      "ol.records",
      {},
      records.map((r) => {
        const payload = pretty(r.payload);
        const others = Object.entries(r.fields || {}).filter(([k]) => k !== "payload");
        return h(
          "li.record",
          { "data-id": r.recordId, "data-shard": String(r.shard.shardIndex) },
          h(
            "div.record-head",
            {},
            h("strong", {}, r.recordId),
            " ",
            h("span.hint", {}, r.recordTime || ""),
            shardBase
              ? [
                  " ",
                  h(
                    "a.shard-link",
                    { href: shardBase + r.shard.shardIndex + "?fromId=" + encodeURIComponent(r.recordId), "aria-label": "shard " + r.shard.shardIndex + ": record " + r.recordId + " in its shard's view" },
                    "shard " + r.shard.shardIndex,
                  ),
                ]
              : null,
          ),
          payload ? h("pre.payload" + (payload.json ? ".json" : ""), { tabindex: "0", "aria-label": "payload of " + r.recordId }, payload.text) : h("p.hint", {}, "no payload field"),
          others.length ? h("dl.fields", {}, others.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])) : null,
        );
      }),
    ),
  );
}
