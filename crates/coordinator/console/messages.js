// Message explorer: one shard's records, newest first, a page at a time (the messages route's cursor), with
// the payload pretty-printed when it is JSON and the other fields listed beside it. "Find" jumps to a record
// id or an RFC 3339 time (fromId / fromTime, also from the link's ?fromId=) and searches by a field value or a
// payload substring within the route's scan bounds; the scan summary says how far it looked.

import { get, monitoringPath } from "/console/api.js";
import { h, replace, say } from "/console/dom.js";

const LIMITS = [10, 25, 50, 100];

export function mount(el, args, params) {
  const [p, g, shardText] = args;
  const shard = Number(shardText || 0);
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
  const shardInput = h("input#shard-index", { type: "number", min: "0", value: String(shard) });
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
    h("p.crumbs", {}, h("a", { href: "#/overview" }, "Overview"), " / ", h("a", { href: "#/group/" + encodeURIComponent(p) + "/" + encodeURIComponent(g) }, p + "/" + g), " / shard " + shard),
    h("h1", {}, "Messages of " + p + " shard " + shard),
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
    title: "Messages " + p + "/" + g + " shard " + shard,
    live: false,
    refresh: async () => {
      let page;
      try {
        const query = { direction: "BACKWARD", limit: state.limit, cursor: state.cursor };
        if (!state.cursor && state.jump) query[/[T:]/.test(state.jump) ? "fromTime" : "fromId"] = state.jump;
        if (state.search) query.search = state.search;
        if (state.field) query.field = state.field;
        page = await get(monitoringPath(p, g) + "/shards/" + shard + "/messages", query);
      } catch (e) {
        if (e.status === 401) throw e;
        replace(list, h("p.error", { role: "alert" }, "Could not read shard " + shard + ": " + e.message));
        replace(pager);
        replace(summary);
        return;
      }
      state.next = page.nextCursor || null;
      const s = page.search;
      replace(
        summary,
        s ? "Scanned " + s.scanned + " record(s), " + s.scannedBytes + " bytes" + (s.stoppedAtBound ? " — stopped at the scan bound; Older → continues" : "") + "; " + (page.records || []).length + " matched." : page.fromId ? "From " + page.fromId + "." : "",
      );
      drawPager(pager, state, view);
      drawRecords(list, page);
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

function drawRecords(el, page) {
  const records = page.records || [];
  if (records.length === 0) {
    replace(el, h("p#no-records", {}, "No records on this page (" + page.streamKey + ")."));
    return;
  }
  replace(
    el,
    h("p.hint", {}, page.streamKey + " · newest first · " + records.length + " record(s)"),
    h(
      "ol.records",
      {},
      records.map((r) => {
        const payload = pretty(r.payload);
        const others = Object.entries(r.fields || {}).filter(([k]) => k !== "payload");
        return h(
          "li.record",
          { "data-id": r.recordId },
          h("div.record-head", {}, h("strong", {}, r.recordId), " ", h("span.hint", {}, r.recordTime || "")),
          payload ? h("pre.payload" + (payload.json ? ".json" : ""), { tabindex: "0", "aria-label": "payload of " + r.recordId }, payload.text) : h("p.hint", {}, "no payload field"),
          others.length ? h("dl.fields", {}, others.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])) : null,
        );
      }),
    ),
  );
}
