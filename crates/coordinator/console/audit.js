// The audit log: newest first, filtered by stream, group, principal, action, outcome and time range; the
// filters live in the page's address so a filtered view can be shared.

import { get } from "/console/api.js";
import { h, replace, table, badge } from "/console/dom.js";

const FIELDS = [
  ["streamPrefix", "Stream"],
  ["consumerGroup", "Group"],
  ["principal", "Principal"],
  ["action", "Action"],
];

/** The audited actions (the route table's), offered as suggestions for the action filter. */
const ACTIONS = [
  "CREATE_STREAM",
  "CREATE_GROUP",
  "DELETE_GROUP",
  "SCALE_STREAM",
  "SCALE_GROUP",
  "ROLLBACK_MIGRATION",
  "FORCE_COMPLETE_MIGRATION",
  "RECREATE_GROUP",
  "DISMISS_ROLLBACK_SUSPICION",
  "LOGIN",
  "REVOKE_TOKEN",
];
const OUTCOMES = ["", "SUCCESS", "FAILED", "FORBIDDEN", "UNAUTHORIZED"];

export function mount(el, _args, params) {
  const inputs = {};
  const results = h("div#audit-results");
  const form = h(
    "form.filters#audit-filters",
    {
      onsubmit: (e) => {
        e.preventDefault();
        const q = new URLSearchParams();
        for (const [k, input] of Object.entries(inputs)) if (input.value.trim()) q.set(k, input.value.trim());
        const s = q.toString();
        history.replaceState(null, "", "#/audit" + (s ? "?" + s : ""));
        view.refresh();
      },
    },
    FIELDS.map(([k, label]) => {
      inputs[k] = h("input", { id: "audit-" + k, name: k, value: params.get(k) || "", autocomplete: "off", list: k === "action" ? "audit-actions" : undefined });
      return h("span.field", {}, h("label", { for: "audit-" + k }, label), inputs[k]);
    }),
    h("datalist#audit-actions", {}, ACTIONS.map((a) => h("option", { value: a }))),
    (() => {
      inputs.outcome = h(
        "select#audit-outcome",
        { name: "outcome" },
        OUTCOMES.map((o) => h("option", { value: o, selected: (params.get("outcome") || "") === o }, o || "any")),
      );
      return h("span.field", {}, h("label", { for: "audit-outcome" }, "Outcome"), inputs.outcome);
    })(),
    (() => {
      inputs.since = h("input#audit-since", { type: "datetime-local", value: params.get("since") || "" });
      inputs.until = h("input#audit-until", { type: "datetime-local", value: params.get("until") || "" });
      return [h("span.field", {}, h("label", { for: "audit-since" }, "From (local time)"), inputs.since), h("span.field", {}, h("label", { for: "audit-until" }, "To (local time)"), inputs.until)];
    })(),
    h("button#audit-apply", { type: "submit" }, "Apply filters"),
  );
  el.append(h("h1", {}, "Audit log"), form, results);
  const view = {
    title: "Audit log",
    refresh: async () => {
      const q = { limit: 200 };
      for (const [k] of FIELDS) if (inputs[k].value.trim()) q[k] = inputs[k].value.trim();
      if (inputs.outcome.value) q.outcome = inputs.outcome.value;
      for (const k of ["since", "until"]) if (inputs[k].value) q[k] = new Date(inputs[k].value).toISOString();
      const r = await get("/coord/v1/monitoring/audit", q);
      const rows = (r.records || []).map((a) => ({
        attrs: { "data-action": a.action || "" },
        cells: [
          a.timestamp || "–",
          a.principal || "–",
          a.requestedBy || "–",
          a.action || "–",
          badge(a.outcome || "–"),
          a.errorCode || "–",
          [a.streamPrefix, a.consumerGroup].filter(Boolean).join("/") || "–",
          a.reason || "–",
          a.requestId || "–",
          a.userAgent || "–",
        ],
      }));
      replace(
        results,
        table(
          "Audit records (newest first, " + rows.length + ")",
          ["Time", "Principal", "Requested by", "Action", "Outcome", "Error code", "Target", "Reason", "Request id", "User agent"],
          rows,
          { id: "audit-table", empty: "No audit record matches." },
        ),
      );
    },
  };
  return view;
}
