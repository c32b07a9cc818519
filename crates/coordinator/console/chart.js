// Small charts drawn by the page itself: inline SVG built with DOM calls (no library, no markup strings, no
// style attribute: the look comes from classes in style.css, which the CSP allows). A line chart plots a
// few series over a time window; a sparkline is one series, small, for a table cell. Each chart is an image
// to assistive technology (role="img") whose name says what it shows, the latest value and the min/max, and
// the same text is the chart's <title> (a tooltip on hover).

import { h } from "/console/dom.js";

/** The SVG namespace: an identifier the DOM needs to make SVG elements, not an address that is loaded. */
const SVG = "http://www.w3.org/2000/svg";

/** How many series a chart can tell apart (classes s0 … s5 in style.css); more are drawn in the last one. */
const STYLES = 6;

function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  for (const c of children) if (c) el.append(c);
  return el;
}

/** A number for people: integers as they are, rates with at most two decimals. */
export function fmt(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  if (Number.isInteger(v)) return String(v);
  return String(Math.round(v * 100) / 100);
}

/** The latest, lowest and highest of the non-null values, or null when there is none. */
export function extremes(values) {
  const known = values.filter((v) => v !== null && v !== undefined && !Number.isNaN(v));
  if (known.length === 0) return null;
  return { latest: known[known.length - 1], min: Math.min(...known), max: Math.max(...known) };
}

/** "latest 12 records, min 0, max 30" (or "no value yet"). */
export function summary(values, unit) {
  const e = extremes(values);
  if (!e) return "no value yet";
  const u = unit ? " " + unit : "";
  return "latest " + fmt(e.latest) + u + ", min " + fmt(e.min) + ", max " + fmt(e.max);
}

/** The SVG path of one series: a run of known values is a line; a missing value breaks it. */
function path(points, x, y) {
  let d = "";
  let open = false;
  for (const [t, v] of points) {
    if (v === null || v === undefined || Number.isNaN(v)) {
      open = false;
      continue;
    }
    d += (open ? "L" : "M") + x(t).toFixed(1) + " " + y(v).toFixed(1);
    open = true;
  }
  return d;
}

/** A lone point (a run of one value) is drawn as a dot, which a path of one point is not. */
function dots(points, x, y, cls) {
  const out = [];
  points.forEach(([t, v], i) => {
    const known = (p) => p && p[1] !== null && p[1] !== undefined;
    if (!known(points[i]) || known(points[i - 1]) || known(points[i + 1])) return;
    out.push(s("circle", { cx: x(t).toFixed(1), cy: y(v).toFixed(1), r: 1.5, class: cls }));
  });
  return out;
}

/**
 * A line chart: `series` is [{name, points: [[timeMs, value|null], …]}], drawn over [from, to] (ms) from 0
 * to the highest value. Returns a figure: the heading, the SVG (role="img", named by its text alternative),
 * the value scale and the time range as text, and a legend when there is more than one series.
 */
export function lineChart({ id, title, unit, series, from, to, window: label }) {
  const W = 300;
  const H = 80;
  const all = series.flatMap((one) => one.points.map((p) => p[1]));
  const e = extremes(all);
  const top = e && e.max > 0 ? e.max : 1;
  const span = Math.max(1, to - from);
  const x = (t) => ((t - from) / span) * W;
  const y = (v) => H - (v / top) * (H - 4) - 2;
  const alt =
    title +
    " over the " +
    label +
    ": " +
    series.map((one) => (series.length > 1 ? one.name + " " : "") + summary(one.points.map((p) => p[1]), unit)).join("; ");
  const svg = s(
    "svg",
    { viewBox: "0 0 " + W + " " + H, preserveAspectRatio: "none", role: "img", "aria-label": alt, class: "chart-plot", focusable: "false" },
    s("title", {}, alt),
    s("line", { x1: 0, y1: H - 1, x2: W, y2: H - 1, class: "axis" }),
    s("line", { x1: 0, y1: 1, x2: W, y2: 1, class: "gridline" }),
    ...series.flatMap((one, i) => {
      const cls = "s" + Math.min(i, STYLES - 1);
      return [s("path", { d: path(one.points, x, y), class: "line " + cls }), ...dots(one.points, x, y, "dot " + cls)];
    }),
  );
  return h(
    "figure.chart",
    { id },
    h("figcaption", {}, h("span.chart-title", {}, title), " ", h("span.chart-scale", {}, "0 – " + fmt(top) + (unit ? " " + unit : ""))),
    svg,
    h("div.chart-axis", { "aria-hidden": "true" }, h("span", {}, "−" + label), h("span", {}, "now")),
    series.length > 1
      ? h(
          "ul.chart-legend",
          {},
          series.map((one, i) => h("li", {}, h("span.swatch.s" + Math.min(i, STYLES - 1), { "aria-hidden": "true" }), " " + one.name)),
        )
      : null,
  );
}

/** A sparkline of one series for a table cell, with its text alternative (`what`: "lag of orders/orders"). */
export function sparkline(points, { what, unit, window: label }) {
  const W = 100;
  const H = 20;
  const values = points.map((p) => p[1]);
  const e = extremes(values);
  const alt = what + " over the " + label + ": " + summary(values, unit);
  if (!e) return h("span.spark-empty", { title: alt }, "collecting");
  const from = points[0][0];
  const to = points[points.length - 1][0];
  const top = e.max > 0 ? e.max : 1;
  const x = (t) => (to > from ? ((t - from) / (to - from)) * W : W);
  const y = (v) => H - (v / top) * (H - 2) - 1;
  return s(
    "svg",
    { viewBox: "0 0 " + W + " " + H, preserveAspectRatio: "none", role: "img", "aria-label": alt, class: "sparkline", focusable: "false" },
    s("title", {}, alt),
    s("path", { d: path(points, x, y), class: "line s0" }),
    ...dots(points, x, y, "dot s0"),
  );
}
