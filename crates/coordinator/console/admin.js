// Admin actions (WRITE principals only; the coordinator refuses them for anyone else anyway). Each one
// opens a confirmation dialog that names its target and requires a reason; the requester recorded in the
// audit log is the signed-in user.

import { h, say, table } from "/console/dom.js";
import { groupPath, post, del } from "/console/api.js";

let session = { username: "", roles: [], streamPrefixes: [] };

export function setSession(s) {
  session = s || { username: "", roles: [], streamPrefixes: [] };
}

export function username() {
  return session.username;
}

/** Whether the principal may change `prefix` (any stream when no prefix is given). */
export function canWrite(prefix) {
  const roles = session.roles || [];
  if (!roles.includes("WRITE") && !roles.includes("ADMIN")) return false;
  const scopes = session.streamPrefixes || [];
  if (scopes.length === 0 || prefix === undefined) return true;
  return scopes.some((p) => (p.endsWith("*") ? prefix.startsWith(p.slice(0, -1)) : prefix === p));
}

/**
 * Opens the confirmation dialog. `fields` are extra inputs ({id, label, type, value, min, required});
 * `title`, `text` and `okLabel` are strings, or functions of the fields' current values (re-evaluated as
 * the user types, so a dialog whose target is typed in names it before it is confirmed);
 * `run(values, reason)` performs the action and returns a message; the dialog stays open on failure,
 * showing the coordinator's error. `extra(values, reason)`, when given, returns nodes shown under the fields
 * (e.g. a plan with its own button).
 */
export function confirmAction({ title, text, fields, okLabel, run, done, extra }) {
  const dlg = document.getElementById("confirm");
  const form = document.getElementById("confirm-form");
  const reason = document.getElementById("confirm-reason");
  const error = document.getElementById("confirm-error");
  const ok = document.getElementById("confirm-ok");
  const holder = document.getElementById("confirm-fields");
  holder.replaceChildren();
  const inputs = {};
  for (const f of fields || []) {
    const id = "confirm-field-" + f.id;
    let input;
    if (f.type === "checkbox") {
      input = h("input", { id, type: "checkbox", checked: f.value });
      holder.append(h("label.check", { for: id }, input, " " + f.label));
    } else if (f.type === "select") {
      input = h("select", { id }, f.options.map((o) => h("option", { value: o }, o)));
      input.value = f.value;
      holder.append(h("label", { for: id }, f.label), input);
    } else {
      input = h("input", { id, type: f.type || "text", value: f.value, min: f.min, required: f.required, autocomplete: "off" });
      holder.append(h("label", { for: id }, f.label), input);
    }
    inputs[f.id] = input;
  }
  const current = () => {
    const values = {};
    for (const f of fields || []) values[f.id] = f.type === "checkbox" ? inputs[f.id].checked : inputs[f.id].value.trim();
    return values;
  };
  const label = (x) => (typeof x === "function" ? x(current()) : x);
  const name = () => {
    document.getElementById("confirm-title").textContent = label(title);
    document.getElementById("confirm-text").textContent = label(text);
    ok.textContent = label(okLabel);
  };
  holder.oninput = name;
  name();
  if (extra) holder.append(...[].concat(extra(current, () => reason.value.trim(), error)));
  reason.value = "";
  error.textContent = "";
  ok.disabled = false;
  const previous = document.activeElement;

  const close = () => {
    form.onsubmit = null;
    holder.oninput = null;
    document.getElementById("confirm-cancel").onclick = null;
    dlg.close();
    if (previous && previous.isConnected) previous.focus();
  };
  document.getElementById("confirm-cancel").onclick = close;
  form.onsubmit = async (ev) => {
    ev.preventDefault();
    const values = current();
    for (const f of fields || []) {
      if (f.required && values[f.id] === "") {
        error.textContent = f.label + " is required.";
        inputs[f.id].focus();
        return;
      }
    }
    if (reason.value.trim() === "") {
      error.textContent = "A reason is required: it is recorded in the audit log with your name.";
      reason.focus();
      return;
    }
    ok.disabled = true;
    error.textContent = "";
    try {
      const message = await run(values, reason.value.trim());
      close();
      say(message, "ok");
      if (done) done();
    } catch (e) {
      error.textContent = e.message;
      ok.disabled = false;
    }
  };
  dlg.showModal();
  const first = holder.querySelector("input, select") || reason;
  first.focus();
}

function body(reason, extra) {
  return Object.assign({ requestedBy: session.username, reason }, extra || {});
}

/** "“name”", or `fallback` while the name is still empty. */
function quoted(name, fallback) {
  return name ? "\u201c" + name + "\u201d" : fallback;
}

export function createStream(done) {
  confirmAction({
    title: (v) => "Create stream " + quoted(v.prefix, "(type its prefix)"),
    text: (v) =>
      "Creates stream " + quoted(v.prefix, "(no prefix yet)") + " with " + (v.shards || "?") + " shards and its first consumer group (named like the stream), and provisions its shard streams in Redis.",
    fields: [
      { id: "prefix", label: "Stream prefix", required: true },
      { id: "shards", label: "Initial shard count", type: "number", value: "4", min: "1", required: true },
    ],
    okLabel: (v) => (v.prefix ? "Create stream " + v.prefix : "Create stream"),
    run: async (v, reason) => {
      await post("/coord/v1/streams/" + encodeURIComponent(v.prefix), body(reason, { initialShardCount: Number(v.shards) }));
      return "Created stream " + v.prefix + ".";
    },
    done,
  });
}

export function createGroup(done, prefix) {
  confirmAction({
    title: (v) => "Create group " + quoted(v.group, "(type its name)") + " on stream " + quoted(v.prefix, "(type its prefix)"),
    text: (v) =>
      "Adds consumer group " + quoted(v.group, "(no name yet)") + " to stream " + quoted(v.prefix, "(no prefix yet)") + " (the stream is created too when it does not exist).",
    fields: [
      { id: "prefix", label: "Stream prefix", value: prefix || "", required: true },
      { id: "group", label: "Consumer group", required: true },
    ],
    okLabel: (v) => (v.prefix && v.group ? "Create group " + v.prefix + "/" + v.group : "Create group"),
    run: async (v, reason) => {
      await post(groupPath(v.prefix, v.group), body(reason));
      return "Created group " + v.group + " on stream " + v.prefix + ".";
    },
    done,
  });
}

export function scale(p, g, current, done) {
  confirmAction({
    title: "Scale stream " + p,
    text: "Scales stream \u201c" + p + "\u201d from " + current + " shards: every consumer group of the stream moves together, online. Producer routing switches at once; removed shards are drained before they are retired.",
    fields: [{ id: "target", label: "Target shard count for " + p, type: "number", value: String(current), min: "0", required: true }],
    okLabel: "Scale " + p,
    run: async (v, reason) => {
      const m = await post(groupPath(p, g) + "/scale", body(reason, { targetShardCount: Number(v.target) }));
      return "Scale of " + p + " to " + v.target + " shards started (" + m.reshardingId + ", " + m.state + ").";
    },
    done,
  });
}

export function migrationAction(kind, p, g, id, done) {
  const rollback = kind === "rollback";
  confirmAction({
    title: (rollback ? "Roll back migration " : "Force-complete migration ") + id,
    text: rollback
      ? "Rolls back migration " + id + " of stream \u201c" + p + "\u201d: the shard count returns to where it was."
      : "Ends migration " + id + " of stream \u201c" + p + "\u201d without waiting for its drain: unread records on removed shards may be left behind.",
    okLabel: rollback ? "Roll back " + id : "Force-complete " + id,
    run: async (_v, reason) => {
      const m = await post(groupPath(p, g) + "/migrations/" + encodeURIComponent(id) + "/" + kind, body(reason));
      return "Migration " + id + " is now " + m.state + ".";
    },
    done,
  });
}

export function deleteGroup(p, g, done) {
  confirmAction({
    title: "Delete group " + g + " of stream " + p,
    text: "Deletes the coordinator metadata of group \u201c" + g + "\u201d on stream \u201c" + p + "\u201d. Its Redis streams and their records are kept. Members that are still active must be stopped first, or tick \u201cforce\u201d.",
    fields: [{ id: "force", label: "Force (delete although members are active)", type: "checkbox", value: false }],
    okLabel: "Delete " + p + "/" + g,
    run: async (v, reason) => {
      await del(groupPath(p, g), body(reason, { force: v.force }));
      return "Deleted group " + g + " of stream " + p + ".";
    },
    done,
  });
}

/** One row per shard of an offset-reset answer (a plan or what was done). */
export function resetPlanTable(answer) {
  const rows = (answer.shards || []).map((r) => {
    const n = r.direction === "SKIP" ? r.recordsSkipped : r.direction === "REREAD" ? r.recordsReread : 0;
    const what = r.direction === "SKIP" ? " skipped" : r.direction === "REREAD" ? " re-read" : "";
    return [String(r.shardIndex), r.currentId, r.newId, r.direction, n + (r.countCapped ? "+" : "") + what + (r.clamped ? " (clamped at the stream's end)" : ""), r.pendingBefore + " \u2192 " + r.pendingAfter];
  });
  const by = answer.value ? " " + answer.value : answer.shift !== undefined ? " by " + answer.shift : "";
  return table(
    (answer.applied ? "Done: " : "Plan (dry run): ") + "to " + answer.to + by,
    ["Shard", "Current id", "New id", "Move", "Records", "Pending"],
    rows,
    { id: "reset-plan-table", rowHeader: true },
  );
}

export function resetOffsets(p, g, done) {
  const request = (v, reason, dryRun) => {
    const extra = { to: v.to, dryRun, force: v.force };
    if (v.to === "DATETIME" || v.to === "ID") extra.value = v.value;
    if (v.to === "SHIFT") extra.shift = v.shift === "" ? undefined : Number(v.shift);
    if (v.shards) extra.shards = v.shards.split(",").map((s) => Number(s.trim()));
    return body(reason || "plan (dry run) from the console", extra);
  };
  const path = groupPath(p, g) + "/offsets/reset";
  confirmAction({
    title: "Reset the position of group " + g + " of stream " + p,
    text:
      "Moves where group \u201c" + g + "\u201d reads next on each shard stream. Its consumers must be stopped (the coordinator refuses while a member may read, or during a migration). Moving forward skips records and acknowledges the pending ones up to the new position; moving back reads records again and keeps what is pending. SHIFT moves each shard by a number of records (\u2212100 reads the last 100 again, 50 skips the next 50). Show the plan first.",
    fields: [
      { id: "to", label: "Move to", type: "select", options: ["EARLIEST", "LATEST", "DATETIME", "ID", "SHIFT"], value: "LATEST" },
      { id: "value", label: "Time (RFC 3339, for DATETIME) or stream id (for ID)" },
      { id: "shift", label: "Records to move by (for SHIFT: negative reads again, positive skips; at most 10,000)", type: "number" },
      { id: "shards", label: "Shards (comma-separated; empty: every shard)" },
      { id: "force", label: "Force (members whose lease has lapsed only)", type: "checkbox", value: false },
    ],
    extra: (values, reason, error) => {
      const out = h("div#reset-plan");
      const show = async () => {
        error.textContent = "";
        try {
          out.replaceChildren(resetPlanTable(await post(path, request(values(), reason(), true))));
        } catch (e) {
          out.replaceChildren();
          error.textContent = e.message;
        }
      };
      return [h("button#reset-plan-button", { type: "button", onclick: show }, "Show plan (dry run)"), out];
    },
    okLabel: "Reset " + p + "/" + g,
    run: async (v, reason) => {
      const a = await post(path, request(v, reason, false));
      const moved = (a.shards || []).map((r) => r.shardIndex + ": " + r.currentId + " \u2192 " + r.newId).join(", ");
      return "Reset " + p + "/" + g + " to " + a.to + " (" + moved + ")." + (a.notes && a.notes.length ? " " + a.notes.join(" ") : "");
    },
    done,
  });
}
