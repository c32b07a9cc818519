// A stream's recent history as the console draws it: the coordinator's samples (its ring buffer, read with
// GET …/streams/{p}/history) turned into chart series, and the panel that shows them — or says plainly
// why there is nothing to draw yet: no sample taken ("collecting — first point in N s"), the caller may
// not read the stream (403), or this coordinator keeps no history.

import { get, seg } from "/console/api.js";
import { h, badge } from "/console/dom.js";
import { lineChart } from "/console/chart.js";

/** The window the console asks for and draws (the most the coordinator keeps). */
export const MINUTES = 15;
export const WINDOW = "last " + MINUTES + " min";

/** The stream's history, or {error} when it could not be read (the page shows why, per chart panel). */
export async function readHistory(p) {
  try {
    return await get("/coord/v1/streams/" + seg(p) + "/history", { minutes: MINUTES });
  } catch (e) {
    if (e.status === 401 || e.status === 0) throw e;
    return { error: e };
  }
}

/** [[atMs, value], …] of one number of each point. */
export function series(hist, pick) {
  return (hist.points || []).map((pt) => [pt.atMs, pick(pt)]);
}

/** One group's value at each point (null where the group was not sampled). */
export function groupSeries(hist, group, field) {
  return series(hist, (pt) => {
    const g = (pt.groups || []).find((x) => x.consumerGroup === group);
    return g ? g[field] : null;
  });
}

function seconds(s) {
  return Math.max(1, Math.ceil(Number(s) || 0)) + " s";
}

/** Why there is no chart, in words; null when there is something to draw. */
export function missing(hist, needsRates) {
  if (hist.error) {
    const e = hist.error;
    if (e.status === 403) return h("p.notice.history-forbidden", {}, badge("FORBIDDEN", "forbidden"), " You may not read this stream's history (" + e.message + ").");
    return h("p.notice.history-unavailable", {}, "No history: the coordinator answered " + e.message + ".");
  }
  const points = hist.points || [];
  if (points.length === 0) return h("p.hint.collecting", {}, "Collecting — first point in " + seconds(hist.nextSampleInSeconds) + ".");
  if (needsRates && !points.some((pt) => pt.produceRate !== null && pt.produceRate !== undefined)) {
    return h("p.hint.collecting", {}, "Collecting — a rate needs two samples; the next one is in " + seconds(hist.nextSampleInSeconds) + ".");
  }
  return null;
}

/** The chart window: the last MINUTES minutes up to the newest point (Redis time, as the points). */
export function span(hist) {
  const points = hist.points || [];
  const to = points.length ? points[points.length - 1].atMs : Date.now();
  return { from: to - MINUTES * 60000, to };
}

/** A line chart of `lines`, or the reason it cannot be drawn yet, in a box with the chart's id. */
export function chartOrReason(hist, { id, title, unit, lines, rates }) {
  const why = missing(hist, rates);
  if (why) return h("div.chart.chart-missing", { id }, h("p.chart-title", {}, title), why);
  return lineChart(Object.assign({ id, title, unit, series: lines, window: WINDOW }, span(hist)));
}

/** The note under the charts: how often samples are taken and by which replica. */
export function sampling(hist) {
  if (hist.error || !hist.sampleIntervalSeconds) return null;
  return h(
    "p.hint",
    {},
    "One sample every " + hist.sampleIntervalSeconds + " s, kept " + Math.round((hist.retainedSeconds || 900) / 60) + " min by coordinator " + hist.coordinatorId + " (for the groups it owns).",
  );
}
