// Message explorer: one shard's records, newest first, a page at a time (the messages route's cursor), with
// the payload pretty-printed when it is JSON and the other fields listed beside it.

import { get, monitoringPath } from "/console/api.js";
import { h, replace, say } from "/console/dom.js";

const LIMITS = [10, 25, 50, 100];

export function mount(el, args, params) {
  const [p, g, shardText] = args;
  const shard = Number(shardText || 0);
  const state = { cursors: [], cursor: params.get("cursor") || "", limit: Number(params.get("limit") || 25), next: null };
  const list = h("div#records");
  const pager = h("div.pager");
  const base = "#/messages/" + encodeURIComponent(p) + "/" + encodeURIComponent(g) + "/";
  const shardInput = h("input#shard-index", { type: "number", min: "0", value: String(shard) });
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
    pager,
    list,
  );
  const view = {
    title: "Messages " + p + "/" + g + " shard " + shard,
    live: false,
    refresh: async () => {
      let page;
      try {
        page = await get(monitoringPath(p, g) + "/shards/" + shard + "/messages", { direction: "BACKWARD", limit: state.limit, cursor: state.cursor });
      } catch (e) {
        if (e.status === 401) throw e;
        replace(list, h("p.error", { role: "alert" }, "Could not read shard " + shard + ": " + e.message));
        replace(pager);
        return;
      }
      state.next = page.nextCursor || null;
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
