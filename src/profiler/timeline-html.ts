/**
 * @file `jaxts trace view`: one self-contained HTML page (no network) drawing a trace as a zoomable timeline, one row
 * group per track (each device, the host's main thread, transfers, steps) on a canvas; wheel zooms, drag pans.
 */
import { DEVICES_PID, type TraceEvent, type TraceFile } from "./trace-file.js";

/** What the page embeds: the tracks in display order and each span as [track, lane, ts, dur, name, cat, args]. */
export interface TimelineData {
  tracks: { label: string; lanes: number }[];
  spans: [number, number, number, number, string, string, Record<string, string | number>][];
}

/** Tracks and spans laid out for drawing: nested spans of a track go one lane down. */
export function timelineData(t: TraceFile): TimelineData {
  const names = new Map<string, string>(),
    procs = new Map<number, string>(),
    sort = new Map<string, number>();
  for (const e of t.traceEvents) {
    if (e.ph !== "M") continue;
    if (e.name === "thread_name") names.set(`${e.pid}/${e.tid}`, String(e.args?.name));
    if (e.name === "process_name") procs.set(e.pid, String(e.args?.name));
    if (e.name === "thread_sort_index") sort.set(`${e.pid}/${e.tid}`, Number(e.args?.sort_index));
  }
  const xs = t.traceEvents.filter((e): e is TraceEvent & { dur: number } => e.ph === "X" && typeof e.dur === "number");
  const keys = [...new Set(xs.map((e) => `${e.pid}/${e.tid}`))];
  // devices first, then the host tracks
  const order = (k: string) => {
    const [pid, tid] = k.split("/").map(Number);
    return [pid === DEVICES_PID ? 0 : 1, sort.get(k) ?? tid] as const;
  };
  keys.sort((a, b) => order(a)[0] - order(b)[0] || order(a)[1] - order(b)[1]);
  const index = new Map(keys.map((k, i) => [k, i]));
  const tracks = keys.map((k) => ({
    label: names.get(k) ?? `${procs.get(Number(k.split("/")[0])) ?? "pid " + k.split("/")[0]} / ${k.split("/")[1]}`,
    lanes: 1,
  }));
  const spans: TimelineData["spans"] = [];
  const byTrack = new Map<number, (TraceEvent & { dur: number })[]>();
  for (const e of xs) {
    const i = index.get(`${e.pid}/${e.tid}`)!;
    let l = byTrack.get(i);
    if (!l) byTrack.set(i, (l = []));
    l.push(e);
  }
  for (const [i, evs] of byTrack) {
    evs.sort((a, b) => a.ts - b.ts || b.dur - a.dur);
    const open: number[] = []; // end times of the enclosing spans
    for (const e of evs) {
      while (open.length && open[open.length - 1] <= e.ts) open.pop();
      const lane = open.length;
      open.push(e.ts + e.dur);
      tracks[i].lanes = Math.max(tracks[i].lanes, lane + 1);
      spans.push([i, lane, e.ts, e.dur, e.name, e.cat ?? "", e.args ?? {}]);
    }
  }
  return { tracks, spans };
}

/** The page: inline data, inline script, a canvas; nothing is fetched. */
export function renderTimelineHtml(t: TraceFile, title = "jaxts trace"): string {
  const data = JSON.stringify(timelineData(t)).replace(/</g, "\\u003c");
  const esc = (s: string) =>
    s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>
body{margin:0;font:12px system-ui,sans-serif;background:#fafafa}
#bar{padding:6px 10px;border-bottom:1px solid #ccc;background:#fff}
#tip{position:fixed;pointer-events:none;background:#222;color:#fff;padding:4px 6px;border-radius:3px;white-space:pre;display:none;max-width:60ch}
canvas{display:block}
</style></head><body>
<div id="bar"><b>${esc(title)}</b> &mdash; wheel: zoom, drag: pan, double-click: reset. <span id="range"></span></div>
<canvas id="tl"></canvas><div id="tip"></div>
<script type="application/json" id="trace-data">${data}</script>
<script>
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("trace-data").textContent);
  var cv = document.getElementById("tl"), ctx = cv.getContext("2d"), tip = document.getElementById("tip");
  var LABEL = 160, LANE = 18, GAP = 8, COLORS = { device: "#4e79a7", collective: "#e15759", op: "#76b7b2", jit: "#59a14f", tracing: "#edc948", compile: "#b07aa1", transfer: "#ff9da7", annotation: "#9c755f", step: "#bab0ac", debug: "#f28e2b" };
  var t0 = Infinity, t1 = -Infinity;
  D.spans.forEach(function (s) { t0 = Math.min(t0, s[2]); t1 = Math.max(t1, s[2] + s[3]); });
  if (!isFinite(t0)) { t0 = 0; t1 = 1; }
  var v0 = t0, v1 = t1, tops = [], y = 4;
  D.tracks.forEach(function (tr) { tops.push(y); y += tr.lanes * LANE + GAP; });
  function size() { cv.width = window.innerWidth; cv.height = Math.max(y + 20, 100); draw(); }
  function x(ts) { return LABEL + (ts - v0) / (v1 - v0) * (cv.width - LABEL - 10); }
  function fmt(us) { return us >= 1000 ? (us / 1000).toFixed(3) + " ms" : us.toFixed(1) + " us"; }
  function draw() {
    ctx.clearRect(0, 0, cv.width, cv.height);
    D.tracks.forEach(function (tr, i) {
      ctx.fillStyle = i % 2 ? "#f0f0f0" : "#fff";
      ctx.fillRect(0, tops[i] - 2, cv.width, tr.lanes * LANE + 4);
      ctx.fillStyle = "#000"; ctx.fillText(tr.label, 4, tops[i] + 13);
    });
    D.spans.forEach(function (s) {
      var a = x(s[2]), b = x(s[2] + s[3]);
      if (b < LABEL || a > cv.width) return;
      a = Math.max(a, LABEL); var w = Math.max(1, b - a), top = tops[s[0]] + s[1] * LANE;
      ctx.fillStyle = COLORS[s[5]] || "#888"; ctx.fillRect(a, top, w, LANE - 3);
      if (w > 30) { ctx.save(); ctx.beginPath(); ctx.rect(a, top, w, LANE); ctx.clip(); ctx.fillStyle = "#fff"; ctx.fillText(s[4], a + 2, top + 11); ctx.restore(); }
    });
    document.getElementById("range").textContent = "view " + fmt(v0 - t0) + " .. " + fmt(v1 - t0) + " (" + fmt(v1 - v0) + ")";
  }
  function hit(mx, my) {
    for (var k = D.spans.length - 1; k >= 0; k--) {
      var s = D.spans[k], top = tops[s[0]] + s[1] * LANE, a = x(s[2]), b = Math.max(x(s[2] + s[3]), a + 1);
      if (my >= top && my < top + LANE - 3 && mx >= a && mx <= b) return s;
    }
    return null;
  }
  cv.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    var at = v0 + (ev.offsetX - LABEL) / (cv.width - LABEL - 10) * (v1 - v0), f = ev.deltaY > 0 ? 1.25 : 0.8;
    v0 = at - (at - v0) * f; v1 = at + (v1 - at) * f; draw();
  }, { passive: false });
  var drag = null;
  cv.addEventListener("mousedown", function (ev) { drag = { x: ev.clientX, v0: v0, v1: v1 }; });
  window.addEventListener("mouseup", function () { drag = null; });
  cv.addEventListener("mousemove", function (ev) {
    if (drag) { var d = (ev.clientX - drag.x) / (cv.width - LABEL - 10) * (drag.v1 - drag.v0); v0 = drag.v0 - d; v1 = drag.v1 - d; draw(); return; }
    var s = hit(ev.offsetX, ev.offsetY);
    if (!s) { tip.style.display = "none"; return; }
    var lines = [s[4] + "  (" + s[5] + ")", "start " + fmt(s[2] - t0) + ", duration " + fmt(s[3])];
    for (var k in s[6]) lines.push(k + ": " + s[6][k]);
    tip.textContent = lines.join("\\n"); tip.style.display = "block"; tip.style.left = (ev.clientX + 12) + "px"; tip.style.top = (ev.clientY + 12) + "px";
  });
  cv.addEventListener("dblclick", function () { v0 = t0; v1 = t1; draw(); });
  window.addEventListener("resize", size);
  size();
})();
</script></body></html>
`;
}
