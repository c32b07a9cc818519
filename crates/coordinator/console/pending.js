// Pending entries: one shard's records that a consumer of the group was handed and has not acknowledged,
// oldest first, a page at a time (the pending route's cursor; READ: no payload). Each entry's id opens the
// message browser at that record (?fromId=), where reading the payload needs DATA_READ. A consumer filter
// lists one consumer's entries.

import { get, monitoringPath } from "/console/api.js";
import { h, replace, say, table } from "/console/dom.js";

export function mount(el, args, params) {
  const [p, g, shardText] = args;
  const shard = Number(shardText || 0);
  const state = { cursors: [], cursor: "", next: null, consumer: params.get("consumer") || "" };
  const list = h("div#pending-entries");
  const pager = h("div.pager");
  const consumerInput = h("input#pending-consumer", { type: "text", value: state.consumer, autocomplete: "off" });
  const browser = "#/messages/" + encodeURIComponent(p) + "/" + encodeURIComponent(g) + "/" + shard;
  el.append(
    h("p.crumbs", {}, h("a", { href: "#/overview" }, "Overview"), " / ", h("a", { href: "#/group/" + encodeURIComponent(p) + "/" + encodeURIComponent(g) }, p + "/" + g), " / shard " + shard + " pending"),
    h("h1", {}, "Pending entries of " + p + "/" + g + " shard " + shard),
    h(
      "form.filters",
      {
        onsubmit: (e) => {
          e.preventDefault();
          state.consumer = consumerInput.value.trim();
          state.cursor = "";
          state.cursors = [];
          view.refresh();
        },
      },
      h("label", { for: "pending-consumer" }, "Consumer"),
      consumerInput,
      h("button#pending-filter", { type: "submit" }, "Show"),
    ),
    pager,
    list,
  );
  const view = {
    title: "Pending " + p + "/" + g + " shard " + shard,
    live: false,
    refresh: async () => {
      let page;
      try {
        const query = { count: 100, cursor: state.cursor };
        if (state.consumer) query.consumer = state.consumer;
        page = await get(monitoringPath(p, g) + "/shards/" + shard + "/pending", query);
      } catch (e) {
        if (e.status === 401) throw e;
        replace(list, h("p.error", { role: "alert" }, "Could not read the pending entries of shard " + shard + ": " + e.message));
        replace(pager);
        return;
      }
      state.next = page.nextCursor || null;
      replace(
        pager,
        h("button#pending-first", { type: "button", disabled: state.cursors.length === 0, onclick: () => ((state.cursor = state.cursors.pop() || ""), view.refresh()) }, "← Earlier"),
        " ",
        h("button#pending-next", { type: "button", disabled: !state.next, onclick: () => (state.cursors.push(state.cursor), (state.cursor = state.next), view.refresh()) }, "Later →"),
      );
      const rows = (page.entries || []).map((e) => [
        h("a", { href: browser + "?fromId=" + encodeURIComponent(e.recordId), "data-key": "pending-record:" + e.recordId, "aria-label": "open record " + e.recordId + " in the message browser" }, e.recordId),
        e.recordTime,
        e.consumer,
        Math.round(e.idleMs / 1000) + " s",
        String(e.deliveries),
      ]);
      replace(
        list,
        table("Pending entries, oldest first" + (state.consumer ? " (consumer " + state.consumer + ")" : ""), ["Record", "Appended", "Consumer", "Idle", "Deliveries"], rows, {
          id: "pending-table",
          rowHeader: true,
          empty: "Nothing is pending on this shard" + (state.consumer ? " for " + state.consumer : "") + ".",
        }),
      );
      say("");
    },
  };
  return view;
}
