// Small DOM helpers: elements are built with text nodes only (never innerHTML), so nothing the coordinator
// returns can become markup, and nothing needs an inline style or script (the page's CSP forbids both).

/** h("tag.class#id", {attr: value, onclick: f}, ...children) */
export function h(spec, attrs, ...children) {
  const m = /^([a-z0-9]+)((?:[.#][\w-]+)*)$/i.exec(spec);
  const el = document.createElement(m ? m[1] : spec);
  if (m && m[2]) {
    for (const part of m[2].match(/[.#][\w-]+/g)) {
      if (part[0] === ".") el.classList.add(part.slice(1));
      else el.id = part.slice(1);
    }
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "value") el.value = v;
    else if (k === "checked") el.checked = !!v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/**
 * Replaces the children of `el`, keeping keyboard focus on the element with the same data-key (a refresh
 * must not throw the user's focus back to the top of the page).
 */
export function replace(el, ...children) {
  const active = document.activeElement;
  const key = active && el.contains(active) ? active.getAttribute("data-key") : null;
  el.replaceChildren();
  append(el, children);
  if (key) {
    const again = el.querySelector('[data-key="' + CSS.escape(key) + '"]');
    if (again) again.focus();
  }
}

/** A table with a caption, column headers and rows of cells (a cell may be a node or text). */
export function table(caption, columns, rows, opts) {
  const o = opts || {};
  return h(
    "table" + (o.cls ? "." + o.cls : ""),
    { id: o.id },
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col" }, c)))),
    h(
      "tbody",
      {},
      rows.length === 0
        ? h("tr", {}, h("td", { colspan: columns.length, class: "empty" }, o.empty || "nothing to show"))
        : rows.map((r) => h("tr", r.attrs || {}, (r.cells || r).map((c, i) => (i === 0 && o.rowHeader ? h("th", { scope: "row" }, c) : h("td", {}, c))))),
    ),
  );
}

/** "3.2 s ago", "4 min ago" for an ISO instant, measured against `now` (ms). */
export function age(iso, now) {
  if (!iso) return "–";
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return "–";
  return duration(Math.max(0, now - t)) + " ago";
}

export function duration(ms) {
  if (ms < 10000) return (ms / 1000).toFixed(1) + " s";
  if (ms < 120000) return Math.round(ms / 1000) + " s";
  if (ms < 7200000) return Math.round(ms / 60000) + " min";
  return Math.round(ms / 3600000) + " h";
}

export function num(v) {
  return v === null || v === undefined ? "–" : String(v);
}

/** A labelled badge; the text says the state, the colour only repeats it. */
export function badge(text, kind) {
  return h("span.badge.b-" + (kind || String(text).toLowerCase().replace(/[^a-z0-9]+/g, "-")), {}, text);
}

export function fact(label, value) {
  return h("div.fact", {}, h("dt", {}, label), h("dd", {}, value));
}

/** A short-lived message in the status line (also read out by screen readers). */
export function say(text, kind) {
  const s = document.getElementById("status");
  s.textContent = text || "";
  s.className = "status" + (kind ? " " + kind : "");
  if (kind === "ok") {
    // A confirmation stays long enough to be read, then goes (unless something else replaced it).
    setTimeout(() => {
      if (s.textContent === text) say("");
    }, 10000);
  }
}
