// The page of `vxreplay view` (docs/view.md): one file, its styles and script inside, no network.
// The data (view_command.cpp) sits in a JSON script element; the script draws the warps on a
// canvas (one row per warp slot, launches side by side), the marks as elements above it, and the
// chosen stop's source, registers and C variables below.
#include "cli/view_command.hpp"

#include <fstream>

namespace vx::cli {

namespace {

// clang-format off
const char* const kHead = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>)HTML";

const char* const kStyle = R"HTML(</title>
<style>
body { font: 13px/1.4 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f7f8fa; }
header { padding: 8px 14px; background: #1d2330; color: #e8ecf3; display: flex; gap: 18px; align-items: baseline; flex-wrap: wrap; }
header h1 { font-size: 15px; margin: 0; }
header .meta { color: #aab3c5; }
#controls { padding: 6px 14px; display: flex; gap: 8px; align-items: center; flex-wrap: wrap; border-bottom: 1px solid #d9dde5; background: #fff; }
#controls button { font: inherit; padding: 2px 9px; }
.legend { display: inline-flex; align-items: center; gap: 4px; margin-right: 8px; }
.swatch { width: 12px; height: 12px; display: inline-block; border-radius: 2px; }
#timeline { position: relative; overflow: hidden; background: #fff; border-bottom: 1px solid #d9dde5; cursor: grab; user-select: none; }
#timeline.dragging { cursor: grabbing; }
#canvas { position: absolute; left: 0; top: 0; }
#labels { position: absolute; left: 0; top: 0; width: 118px; pointer-events: none; }
.row-label { position: absolute; left: 6px; font: 11px ui-monospace, monospace; color: #3b4558; white-space: nowrap; }
.row-label.core-start { font-weight: 600; }
#marks { position: absolute; left: 0; top: 0; right: 0; height: 30px; }
#mark-list { margin: 0; padding: 4px 14px; list-style: none; max-height: 120px; overflow-y: auto; border-bottom: 1px solid #d9dde5; background: #fff; font: 12px ui-monospace, monospace; }
#mark-list li { cursor: pointer; padding: 0 4px; }
#mark-list li:hover, #mark-list li.selected { background: #fdebd0; }
.mark { position: absolute; top: 4px; width: 0; height: 0; border-left: 6px solid transparent; border-right: 6px solid transparent; border-top: 11px solid #c0392b; margin-left: -6px; cursor: pointer; }
.mark.step { border-top-color: #2e86c1; }
.mark.watchpoint { border-top-color: #8e44ad; }
.mark.exception, .mark.watchdog { border-top-color: #000; }
.mark.selected { border-top-color: #f39c12; }
.console-mark { position: absolute; width: 9px; height: 9px; margin-left: -4px; background: #5d6d7e; border-radius: 2px; cursor: default; }
#tooltip { position: fixed; pointer-events: none; background: #1d2330; color: #f2f4f8; padding: 6px 8px; border-radius: 4px; font-size: 12px; max-width: 520px; display: none; z-index: 10; white-space: pre-wrap; }
#source { padding: 10px 14px 30px; }
#source h2 { font-size: 14px; margin: 4px 0 8px; }
#source pre { background: #fff; border: 1px solid #d9dde5; padding: 6px 0; font: 12px ui-monospace, monospace; overflow-x: auto; }
#source pre div { padding: 0 10px; white-space: pre; }
#source pre div.current { background: #fdebd0; font-weight: 600; }
#source table { border-collapse: collapse; font: 12px ui-monospace, monospace; margin: 4px 16px 10px 0; vertical-align: top; display: inline-table; }
#source td, #source th { border: 1px solid #d9dde5; padding: 1px 7px; text-align: left; }
#lanes button.current { font-weight: 700; background: #fdebd0; }
#source code#reopen { display: inline-block; background: #eef1f6; padding: 3px 7px; border-radius: 3px; }
.note { color: #6b7487; }
.point { position: absolute; width: 9px; height: 9px; margin: -5px 0 0 -5px; border-radius: 50%; border: 1.5px solid #fff; cursor: pointer; z-index: 4; }
.point.read { background: #e67e22; }
.point.write { background: #2e86c1; }
.point.access { background: #c0392b; }
.point.selected { box-shadow: 0 0 0 3px #f39c12; }
.origin-able { cursor: pointer; text-decoration: underline dotted #2e86c1; }
.origin-able:hover { background: #d6eaf8; }
.origin-mark { position: absolute; width: 9px; height: 9px; margin: -6px 0 0 -6px; background: #16a085; border: 1.5px solid #fff; transform: rotate(45deg); cursor: pointer; z-index: 4; }
.origin-mark.selected { box-shadow: 0 0 0 3px #f39c12; }
#origin { padding: 0 14px 30px; }
#origin h2 { font-size: 14px; margin: 4px 0 8px; }
#origin pre { background: #fff; border: 1px solid #d9dde5; padding: 6px 10px; font: 12px ui-monospace, monospace; margin: 4px 0; white-space: pre-wrap; }
#origin button { font: inherit; padding: 1px 7px; }
#summary { padding: 6px 14px; background: #fff; border-bottom: 1px solid #d9dde5; }
#summary pre { font: 12px ui-monospace, monospace; margin: 4px 0; white-space: pre-wrap; }
#summary table { border-collapse: collapse; font: 12px ui-monospace, monospace; margin: 4px 0; }
#summary td, #summary th { border: 1px solid #d9dde5; padding: 1px 7px; text-align: left; }
</style></head><body>
<header><h1 id="title"></h1><span class="meta" id="meta"></span></header>
<div id="controls">
<button id="fit" type="button">Fit</button><button id="zoom-in" type="button">+</button><button id="zoom-out" type="button">&minus;</button>
<span id="legend"></span><span class="note" id="status"></span>
</div>
<div id="timeline"><canvas id="canvas"></canvas><div id="labels"></div><div id="marks"></div></div>
<ul id="mark-list"></ul>
<section id="summary" hidden></section>
<div id="tooltip"></div>
<section id="source"><p class="note" id="hint">Click a mark (a triangle above the rows) to see its source line, registers and C variables.</p></section>
<section id="origin" hidden></section>
<script id="data" type="application/json">)HTML";

const char* const kScript = R"HTML(</script>
<script>
"use strict";
(function () {
const data = JSON.parse(document.getElementById("data").textContent);
const COLORS = { running: "#27ae60", diverged: "#e67e22", barrier: "#c0392b", spawn: "#8e44ad", ready: "#b7bfcc" };
const LABEL_W = 118, TOP = 34, ROW_H = 14, AXIS_H = 32;
const timeline = document.getElementById("timeline"), canvas = document.getElementById("canvas");
const ctx = canvas.getContext("2d"), tooltip = document.getElementById("tooltip");
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
const hex = (v) => "0x" + (v >>> 0).toString(16).padStart(8, "0");
const base = (p) => String(p).split("/").pop();

document.getElementById("title").textContent = data.kernel;
document.getElementById("meta").textContent = data.recording + "  \u00b7  " + data.config;
document.getElementById("legend").innerHTML = data.activities.map((a) =>
  '<span class="legend"><span class="swatch" style="background:' + COLORS[a] + '"></span>' + esc(a) + "</span>").join("");

// The runs (a recording has one; a diff two, one below the other on a shared axis). In a run,
// launches side by side: each at its offset on one axis of warp instructions.
const runs = data.runs || [{ label: "", short: "", launches: data.launches }];
const offsets = runs.map(() => ({}));
let total = 0;
runs.forEach((run, ri) => {
  let t = 0;
  for (const l of run.launches) {
    offsets[ri][l.launch] = t;
    t += Math.max(l.end, 1) + Math.max(Math.floor(l.end / 20), 1);
  }
  total = Math.max(total, t);
});
total = Math.max(total, 1);
const off = (run, launch) => offsets[run || 0][launch] || 0;
const rowKey = (run, core, slot) => (run || 0) + ":" + core + ":" + slot;
const rowIndex = new Map(), rows = [];
runs.forEach((run, ri) => {
  for (const l of run.launches)
    for (const r of l.rows) {
      const k = rowKey(ri, r.core, r.slot);
      if (!rowIndex.has(k)) { rowIndex.set(k, rows.length); rows.push({ run: ri, core: r.core, slot: r.slot }); }
    }
});
rows.sort((a, b) => a.run - b.run || a.core - b.core || a.slot - b.slot);
rows.forEach((r, i) => rowIndex.set(rowKey(r.run, r.core, r.slot), i));
// Each run's rows: the first and how many.
const runRows = runs.map((_, ri) => {
  const mine = rows.map((r, i) => r.run === ri ? i : -1).filter((i) => i >= 0);
  return { first: mine.length ? mine[0] : 0, count: mine.length };
});
const height = TOP + rows.length * ROW_H + AXIS_H + (runs.length - 1) * 10;
timeline.style.height = height + "px";

const labels = document.getElementById("labels");
rows.forEach((r, i) => {
  const d = document.createElement("div");
  d.className = "row-label" + (i === 0 || rows[i - 1].core !== r.core || rows[i - 1].run !== r.run ? " core-start" : "");
  d.style.top = (TOP + i * ROW_H) + "px";
  d.textContent = (runs[r.run].short ? runs[r.run].short + " " : "") + "core " + r.core + " warp " + r.slot;
  d.dataset.run = r.run;
  d.dataset.core = r.core; d.dataset.slot = r.slot;
  labels.appendChild(d);
});

let x0 = 0, scale = 1;
const width = () => timeline.clientWidth;
const toX = (g) => LABEL_W + (g - x0) * scale;
const toG = (x) => x0 + (x - LABEL_W) / scale;
// Where a point is drawn (x from the timeline's left, y of a row's middle); tests use them too.
const xOf = (launch, instret, run) => toX(off(run, launch) + instret);
const yOf = (core, slot, run) => TOP + rowIndex.get(rowKey(run, core, slot)) * ROW_H + ROW_H / 2;
function fit() { x0 = 0; scale = Math.max((width() - LABEL_W - 10) / total, 1e-9); draw(); }

const markEls = [];
const marksLayer = document.getElementById("marks");
const kindClass = (stop) => stop.includes("watchdog") ? "watchdog" : stop.includes("step") ? "step" : stop.includes("watch") ? "watchpoint" :
  stop.includes("exception") || stop.includes("assert") ? "exception" : stop.includes("watchdog") ? "watchdog" : "breakpoint";
for (const m of data.marks) {
  const d = document.createElement("div");
  d.className = "mark " + kindClass(m.stop);
  d.dataset.number = m.number;
  d.addEventListener("click", (e) => { e.stopPropagation(); select(m, d); });
  d.addEventListener("mouseenter", (e) => showTip(e, markTip(m)));
  d.addEventListener("mousemove", (e) => showTip(e, markTip(m)));
  d.addEventListener("mouseleave", hideTip);
  marksLayer.appendChild(d);
  const li = document.createElement("li");
  li.className = "mark-item";
  li.dataset.number = m.number;
  li.textContent = "#" + m.number + "  " + m.stop + "  launch " + m.launch + " @" + m.instret +
    (m.header && m.header.file ? "  " + (m.header.function || "") + " " + base(m.header.file) + ":" + m.header.line : "");
  li.addEventListener("click", () => { centerOn(m); select(m, d); });
  document.getElementById("mark-list").appendChild(li);
  markEls.push({ m, d, li });
}
// Console output: one marker per point where new lines are known to be out, its lines on hover.
const consoleEls = [];
for (const [ri, run] of runs.entries()) for (const l of run.launches) {
  const byPoint = new Map();
  for (const [by, text] of l.console || []) {
    if (!byPoint.has(by)) byPoint.set(by, []);
    byPoint.get(by).push(text);
  }
  for (const [by, lines] of byPoint) {
    const d = document.createElement("div");
    d.className = "console-mark";
    d.dataset.launch = l.launch; d.dataset.by = by; d.dataset.lines = lines.length;
    const tip = (runs[ri].label ? runs[ri].label + ": " : "") + "console, printed by instruction " + by + " of " + l.name + ":\n" + lines.slice(0, 20).join("\n") +
      (lines.length > 20 ? "\n(" + (lines.length - 20) + " more lines)" : "");
    d.addEventListener("mouseenter", (e) => showTip(e, tip));
    d.addEventListener("mousemove", (e) => showTip(e, tip));
    d.addEventListener("mouseleave", hideTip);
    timeline.appendChild(d);
    consoleEls.push({ ri, l, by, d });
  }
}
const at = (m) => off(m.run, m.launch) + m.instret;
markEls.sort((a, b) => at(a.m) - at(b.m));
// Centers the timeline on a mark, zoomed in far enough that its neighbours stand apart from it.
function centerOn(m) {
  const g = at(m);
  let gap = Infinity;
  for (const { m: o } of markEls) {
    const d = Math.abs(at(o) - g);
    if (o !== m && d > 0) gap = Math.min(gap, d);
  }
  if (gap !== Infinity && gap * scale < 16) scale = Math.min(16 / gap, 64);
  x0 = g - (width() - LABEL_W) / 2 / scale;
}

// Points on warp rows (a diff's reads and the writes behind them, a race's accesses), and arcs
// between them: each point a dot on its row, hover for its text, click for its source.
const pointEls = [];
for (const p of data.points || []) {
  const d = document.createElement("div");
  d.className = "point " + p.kind;
  d.dataset.id = p.id; d.dataset.run = p.run || 0; d.dataset.launch = p.launch; d.dataset.instret = p.instret;
  d.dataset.core = p.core; d.dataset.warp = p.warp; d.dataset.lane = p.lane;
  d.addEventListener("mouseenter", (e) => showTip(e, p.title + "\n" + p.text));
  d.addEventListener("mousemove", (e) => showTip(e, p.title + "\n" + p.text));
  d.addEventListener("mouseleave", hideTip);
  d.addEventListener("mousedown", (e) => e.stopPropagation());
  d.addEventListener("click", (e) => {
    e.stopPropagation();
    for (const q of pointEls) q.d.classList.remove("selected");
    d.classList.add("selected");
    select({ stop: p.title, run: p.run, launch: p.launch, instret: p.instret, header: p.header, text: p.text, command: p.command }, null);
  });
  timeline.appendChild(d);
  pointEls.push({ p, d });
}
const pointById = new Map((data.points || []).map((p) => [p.id, p]));
const LINK_COLORS = { race: "#c0392b", wrote: "#2e86c1" };
// A point at the same place as another (two lanes of one instruction) is drawn a little lower.
function pointXY(p) { return [toX(off(p.run, p.launch) + p.instret), yOf(p.core, p.warp, p.run) + (p.nudge ? 5 : 0)]; }
function drawPoints(w) {
  for (const k of data.links || []) {
    const a = pointById.get(k.from), b = pointById.get(k.to);
    if (!a || !b) continue;
    const [xa, ya] = pointXY(a), [xb, yb] = pointXY(b);
    if (Math.max(xa, xb) < LABEL_W || Math.min(xa, xb) > w) continue;
    ctx.strokeStyle = LINK_COLORS[k.kind] || "#555"; ctx.lineWidth = 1.5;
    const cx = (xa + xb) / 2, cy = Math.min(ya, yb) - 12 - Math.min(Math.abs(xb - xa) * 0.15, 60);
    ctx.beginPath(); ctx.moveTo(xa, ya);
    ctx.quadraticCurveTo(cx, cy, xb, yb);
    ctx.stroke();
    if (k.kind === "wrote") {  // an arrowhead at the read: the value went from the write to it
      const ang = Math.atan2(yb - cy, xb - cx);
      ctx.fillStyle = ctx.strokeStyle; ctx.beginPath(); ctx.moveTo(xb, yb);
      ctx.lineTo(xb - 9 * Math.cos(ang - 0.4), yb - 9 * Math.sin(ang - 0.4));
      ctx.lineTo(xb - 9 * Math.cos(ang + 0.4), yb - 9 * Math.sin(ang + 0.4));
      ctx.fill();
    }
  }
  ctx.lineWidth = 1;
  for (const { p, d } of pointEls) {
    const [x, y] = pointXY(p);
    const visible = x >= LABEL_W && x <= w;
    d.style.display = visible ? "" : "none";
    d.style.left = x + "px"; d.style.top = y + "px";
  }
}

function niceStep(span) {
  const raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))));
  for (const f of [1, 2, 5, 10]) if (f * p >= raw) return f * p;
  return 10 * p;
}

function draw() {
  const w = width();
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.floor(w * dpr); canvas.height = Math.floor(height * dpr);
  canvas.style.width = w + "px"; canvas.style.height = height + "px";
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, height);
  const g0 = toG(LABEL_W), g1 = toG(w);
  for (const [ri, run] of runs.entries()) for (const l of run.launches) {
    const o = off(ri, l.launch), band = runRows[ri];
    if (o > g1 || o + l.end < g0) continue;
    // The launch's band and name (once: the runs are of one workload).
    const lx0 = Math.max(toX(o), LABEL_W), lx1 = Math.min(toX(o + l.end), w);
    ctx.fillStyle = "#f3f5f9"; ctx.fillRect(lx0, TOP + band.first * ROW_H - 2, Math.max(lx1 - lx0, 1), band.count * ROW_H + 4);
    ctx.fillStyle = "#3b4558"; ctx.font = "11px system-ui, sans-serif";
    if (ri === 0) ctx.fillText(l.name, lx0 + 3, 10);
    if (ri === 0 && !l.ended && toX(o + l.end) <= w) {
      const note = "the recording ends here \u25b8";
      ctx.fillText(note, toX(o + l.end) - ctx.measureText(note).width - 3, 10);
    }
    for (const r of l.rows) {
      const y = TOP + rowIndex.get(rowKey(ri, r.core, r.slot)) * ROW_H;
      for (const iv of r.iv) {
        const a = o + iv[0], b = o + iv[1];
        if (b < g0 || a > g1) continue;
        const xa = Math.max(toX(a), LABEL_W), xb = Math.min(toX(b), w);
        const act = data.activities[iv[2]];
        ctx.globalAlpha = act === "running" ? 0.35 + 0.65 * Math.min(iv[3] / data.threads, 1) : 1;
        ctx.fillStyle = COLORS[act] || "#999";
        ctx.fillRect(xa, y + 2, Math.max(xb - xa, 1), ROW_H - 4);
      }
    }
    ctx.globalAlpha = 1;
    ctx.fillStyle = "#7f8796";
    for (const c of l.checkpoints) {
      const x = toX(o + c);
      if (x >= LABEL_W && x <= w) ctx.fillRect(x, TOP + rows.length * ROW_H + 2, 1, 5);
    }
  }
  // Stops: a line through the rows under each mark; marks closer than their width stack.
  const lastAt = [];
  for (const { m, d } of markEls) {
    const x = toX(at(m));
    const visible = x >= LABEL_W && x <= w;
    d.style.display = visible ? "" : "none";
    d.style.left = x + "px";
    if (!visible) continue;
    let level = 0;
    while (level < 3 && lastAt[level] !== undefined && x - lastAt[level] < 13) ++level;
    lastAt[level] = x;
    d.style.top = (3 + level * 7) + "px";
    d.style.zIndex = String(5 - level);
    ctx.fillStyle = d.classList.contains("selected") ? "rgba(243,156,18,0.9)" : "rgba(192,57,43,0.45)";
    const band = runs.length > 1 ? runRows[m.run || 0] : { first: 0, count: rows.length };
    ctx.fillRect(x, TOP + band.first * ROW_H, 1, band.count * ROW_H);
  }
  drawPoints(w);
  drawOrigin(w);
  if (picked) {
    const x = toX(off(0, picked.launch) + picked.instret);
    if (x >= LABEL_W && x <= w) { ctx.fillStyle = "rgba(46,134,193,0.9)"; ctx.fillRect(x, TOP - 4, 2, rows.length * ROW_H + 8); }
  }
  for (const { ri, l, by, d } of consoleEls) {
    const x = toX(off(ri, l.launch) + by);
    d.style.display = x >= LABEL_W && x <= w ? "" : "none";
    d.style.left = x + "px";
    d.style.top = (TOP + rows.length * ROW_H + 9 + ri * 10) + "px";  // each run's own line
  }
  // Axis: the launch's own instruction count.
  ctx.fillStyle = "#3b4558"; ctx.font = "10px system-ui, sans-serif";
  const step = niceStep(Math.max(g1 - g0, 1));
  const yAxis = TOP + rows.length * ROW_H + 29 + (runs.length - 1) * 10;
  for (const l of runs[0].launches) {
    const o = off(0, l.launch);
    for (let v = Math.ceil(Math.max(g0 - o, 0) / step) * step; v <= Math.min(l.end, g1 - o); v += step) {
      const x = toX(o + v);
      if (x >= LABEL_W + 20 && x <= w - 20) ctx.fillText(String(v), x - 8, yAxis);
    }
  }
  ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, LABEL_W - 2, height);
  document.getElementById("status").textContent = rows.length + " warp rows, " + data.marks.length + " marks" +
    (data.detailed_marks < data.marks.length ? " (values for the first " + data.detailed_marks + ")" : "");
}

function showTip(e, text) {
  tooltip.textContent = text;
  tooltip.style.display = "block";
  tooltip.style.left = Math.min(e.clientX + 14, window.innerWidth - 540) + "px";
  tooltip.style.top = (e.clientY + 14) + "px";
}
function hideTip() { tooltip.style.display = "none"; }

// Registers in the prompt's order (x0..x31 by their ABI names, then the pc), not as text sorts them.
const REG_ORDER = ["zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4", "a5", "a6",
  "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6", "pc"];
const regOrder = (r) => { const i = REG_ORDER.indexOf(r); return i < 0 ? REG_ORDER.length : i; };
function where(h) { return h && h.file ? base(h.file) + ":" + h.line : ""; }
function markTip(m) {
  const h = m.header;
  let t = "#" + m.number + " " + m.stop + " \u00b7 launch " + m.launch + ", instruction " + m.instret;
  if (h) {
    t += "\n" + (h.function || "?") + (h.inlined ? ", inlined " + h.inlined : "") + (h.file ? " at " + where(h) : "") + "  (core " + h.core + ", warp " + h.warp + ", lane " + h.lane + ")";
    if (h.source) t += "\n" + h.line + "\t" + h.source.trim();
  }
  const vals = (m.args || []).concat(m.locals || []);
  if (vals.length) t += "\n" + vals.slice(0, 8).map((v) => v.name + " = " + v.text).join("\n");
  return t;
}

function intervalAt(x, y) {
  const i = Math.floor((y - TOP) / ROW_H);
  if (i < 0 || i >= rows.length || x < LABEL_W) return null;
  const g = toG(x), r = rows[i];
  for (const l of runs[r.run].launches) {
    const o = off(r.run, l.launch);
    if (g < o || g > o + l.end) continue;
    const row = l.rows.find((q) => q.core === r.core && q.slot === r.slot);
    if (!row) return null;
    const iv = row.iv.find((q) => g >= o + q[0] && g < o + q[1]);
    if (iv) return { l, r, iv };
  }
  return null;
}

function select(m, el) {
  if (m.number !== undefined) picked = null;
  for (const { d, li } of markEls) { d.classList.remove("selected"); li.classList.remove("selected"); }
  if (el) el.classList.add("selected");
  const item = markEls.find((e) => e.m === m);
  if (item) item.li.classList.add("selected");
  const h = m.header, src = document.getElementById("source");
  let html = m.number !== undefined
    ? "<h2 id=\"stop-title\">#" + m.number + " " + esc(m.stop) + " \u00b7 launch " + m.launch + ", instruction " + m.instret + "</h2>"
    : '<h2 id="stop-title" data-launch="' + m.launch + '" data-instret="' + m.instret + '">' + esc(m.stop) + " \u00b7 launch " + m.launch + ", instruction " + m.instret + "</h2>";
  if (h) {
    html += '<p id="stop-where">' + esc((h.function || "?") + (h.inlined ? ", inlined " + h.inlined : "") + (h.file ? " at " + h.file + ":" + h.line : "")) +
      " \u00b7 core " + h.core + ", warp " + h.warp + ", lane " + h.lane +
      (h.cta ? " \u00b7 CTA (" + h.cta.join(",") + ")" : "") + (h.thread ? " thread (" + h.thread.join(",") + ")" : "") +
      " \u00b7 pc " + hex(h.pc) + "</p>";
    const lines = h.file && data.sources[h.file];
    if (lines) {
      html += "<pre id=\"stop-source\">" + Object.keys(lines).map(Number).sort((a, b) => a - b).map((n) =>
        '<div class="' + (n === h.line ? "current" : "") + '" data-line="' + n + '">' + String(n).padStart(5) + "  " + esc(lines[n]) + "</div>").join("") + "</pre>";
    } else if (h.source) {
      html += '<pre id="stop-source"><div class="current" data-line="' + h.line + '">' + String(h.line).padStart(5) + "  " + esc(h.source) + "</div></pre>";
    }
  }
  // Served, each value is a click away from who wrote it (origin at this point, this lane in focus).
  originAt = data.serve ? { launch: m.launch, instret: m.instret } : null;
  if (originAt && h && h.core !== undefined) Object.assign(originAt, { core: h.core, warp: h.warp, lane: h.lane });
  const cell = (expr, shown) => originAt ? '<td class="origin-able" data-expr="' + esc(expr) + '" title="who wrote it: origin ' + esc(expr) + '">' + shown + "</td>" : "<td>" + shown + "</td>";
  const vars = (id, head, list) => '<table id="' + id + '"><tr><th>' + head + "</th><th>value</th><th>type</th></tr>" +
    list.map((v) => "<tr><td>" + esc(v.name) + "</td>" + cell(v.name, esc(v.text)) + "<td>" + esc(v.type || "") + "</td></tr>").join("") + "</table>";
  if (m.args && m.args.length) html += vars("args", "argument", m.args);
  if (m.locals && m.locals.length) html += vars("locals", "variable", m.locals);
  else if (m.locals) html += '<p class="note" id="no-locals">No locals.</p>';
  if (m.registers) html += '<table id="registers"><tr><th>register</th><th>value</th></tr>' +
    Object.keys(m.registers).sort((a, b) => regOrder(a) - regOrder(b)).map((k) => "<tr><td>" + esc(k) + "</td>" +
      (k === "pc" ? "<td>" + hex(m.registers[k]) + "</td>" : cell("$" + k, hex(m.registers[k]))) + "</tr>").join("") + "</table>";
  if (m.note) html += '<p id="point-note" class="note">' + esc(m.note) + "</p>";
  if (m.text) html += '<pre id="point-text">' + esc(m.text) + "</pre>";
  if (m.command) html += '<p>Reopen this point: <code id="reopen">' + esc(m.command) + "</code></p>";
  // Served, at a point: the warp's other active lanes, each a click away (their C variables differ).
  if (data.serve && m.number === undefined && h && h.lanes && h.lanes.length > 1)
    html += '<p id="lanes">Lane: ' + h.lanes.map((l) => '<button type="button" class="lane' + (l === h.lane ? " current" : "") +
      '" data-lane="' + l + '">' + l + "</button>").join(" ") + "</p>";
  if (data.serve)
    html += '<form id="memory-form">Memory at this point: address <input id="memory-addr" size="12" placeholder="0x...">' +
      ' bytes <input id="memory-len" size="5" value="64"> <button type="submit">Read</button></form><pre id="memory"></pre>' +
      '<form id="origin-form">Who wrote it: origin of <input id="origin-expr" size="24" placeholder="table[4], *(int *)0x..., $a0">' +
      ' <button type="submit">Ask</button> <span class="note">(or click a value above)</span></form>';
  src.innerHTML = html;
  for (const b of document.querySelectorAll("#lanes button"))
    b.addEventListener("click", () => openPoint({ launch: m.launch, instret: m.instret, core: h.core, warp: h.warp, lane: Number(b.dataset.lane) }));
  if (data.serve) {
    document.getElementById("memory-form").addEventListener("submit", (e) => {
      e.preventDefault();
      const q = "launch=" + m.launch + "&instret=" + m.instret + "&addr=" + encodeURIComponent(document.getElementById("memory-addr").value.trim()) +
        "&len=" + encodeURIComponent(document.getElementById("memory-len").value.trim());
      ask("memory?" + q, (r) => { document.getElementById("memory").innerHTML = memoryHtml(r.text, r.address); },
        (msg) => { document.getElementById("memory").textContent = msg; });
    });
    document.getElementById("origin-form").addEventListener("submit", (e) => {
      e.preventDefault();
      askOrigin(document.getElementById("origin-expr").value.trim());
    });
  }
  draw();
}

// --- Served (vxreplay view --serve): any point of the timeline, read from the recording. ---
let picked = null;  // the point last asked for: { launch, instret }
let originAt = null;  // the point and focus lane the stop panel shows: where a value's origin is asked
// The prompt's `x` text with each byte a click away from who wrote it (its address from the first).
function memoryHtml(text, address) {
  let i = 0;
  return text.split("\n").map((line) => {
    const f = line.split("\t");
    return esc(f[0]) + f.slice(1).map((b) => "\t" + (originAt
      ? '<span class="origin-able" data-expr="*(unsigned char *)' + hex(address + i++) + '">' + esc(b) + "</span>" : esc(b))).join("");
  }).join("\n");
}
function ask(what, done, failed) {
  fetch(what).then((r) => r.json().then((j) => ({ ok: r.ok, j }))).then(({ ok, j }) => {
    if (ok) done(j); else failed(j.error || "the server answered an error");
  }).catch((e) => failed("the server cannot be reached: " + e));
}
function pointAt(x, y) {
  const i = Math.floor((y - TOP) / ROW_H), g = toG(x);
  if (x < LABEL_W) return null;
  for (const l of runs[0].launches) {
    const o = off(0, l.launch);
    if (g < o || g > o + l.end) continue;
    const p = { launch: l.launch, instret: Math.max(0, Math.min(l.end, Math.round(g - o))) };
    if (i >= 0 && i < rows.length) { p.core = rows[i].core; p.warp = rows[i].slot; }
    return p;
  }
  return null;
}
function openPoint(p) {
  picked = p;
  for (const { d, li } of markEls) { d.classList.remove("selected"); li.classList.remove("selected"); }
  draw();
  const src = document.getElementById("source");
  src.innerHTML = '<p class="note" id="point-wait">Going to launch ' + p.launch + ", instruction " + p.instret + "\u2026</p>";
  let q = "state?launch=" + p.launch + "&instret=" + p.instret;
  if (p.core !== undefined) q += "&core=" + p.core + "&warp=" + p.warp + (p.lane !== undefined ? "&lane=" + p.lane : "");
  ask(q, (r) => {
    Object.assign(data.sources, r.sources || {});
    picked = { launch: r.launch, instret: r.instret };
    select({ stop: "point", launch: r.launch, instret: r.instret, header: r.header, args: r.args, locals: r.locals,
      registers: r.registers, command: r.command, note: r.note }, null);
  }, (msg) => { src.innerHTML = '<p id="point-error">' + esc(msg) + "</p>"; });
}

// Who wrote a value: `origin EXPR` at the point and lane the stop panel shows. The answer goes
// under the panel as text, and each instruction that wrote a part of it is a diamond on its warp's
// row at its point; clicking one (or its button) opens that point with the writing lane in focus.
let originEls = [], originAsked = 0;  // originAsked: the last question's number (a later one wins)
function clearOrigin() {
  ++originAsked;
  for (const { d } of originEls) d.remove();
  originEls = [];
  const box = document.getElementById("origin");
  box.innerHTML = ""; box.hidden = true;
  draw();
}
function askOrigin(expr) {
  if (!originAt || !expr) return;
  const at = originAt, box = document.getElementById("origin"), asked = ++originAsked;
  for (const { d } of originEls) d.remove();
  originEls = [];
  box.hidden = false;
  box.innerHTML = '<p class="note" id="origin-wait">Asking who wrote ' + esc(expr) + " at launch " + at.launch + ", instruction " + at.instret + "\u2026</p>";
  let q = "origin?launch=" + at.launch + "&instret=" + at.instret;
  if (at.core !== undefined) q += "&core=" + at.core + "&warp=" + at.warp + "&lane=" + at.lane;
  ask(q + "&expr=" + encodeURIComponent(expr), (r) => { if (asked === originAsked) showOrigin(r, at); }, (msg) => {
    if (asked === originAsked) box.innerHTML = "<h2>Origin of " + esc(expr) + '</h2><p id="origin-error">' + esc(msg) + "</p>";
  });
}
// Bytes [from, from + n) of a stored 32-bit value (little-endian), in hex as the prompt writes them.
function partHex(v, from, n) {
  const part = n >= 4 ? v >>> 0 : ((v >>> (8 * from)) & ((1 << (8 * n)) - 1)) >>> 0;
  return "0x" + part.toString(16).padStart(2 * n, "0");
}
function showOrigin(r, at) {
  const box = document.getElementById("origin");
  const lane = r.focus || at;
  const place = r.register !== undefined
    ? "register " + r.register + " of core " + lane.core + " warp " + lane.warp + " lane " + lane.lane
    : r.length + (r.length === 1 ? " byte" : " bytes") + " at " + (r.local ? "local " : "") + hex(r.addr);
  let html = '<h2 id="origin-title">Origin of ' + esc(r.expression) + " (" + esc(place) + ") at launch " + r.launch + ", instruction " + r.instret +
    ' <button type="button" id="origin-clear">Clear</button></h2>';
  if (r.note) html += '<p class="note" id="origin-note">' + esc(r.note) + "</p>";
  const writers = [];  // distinct writes, each one marker
  const writerOf = (w) => {
    let i = writers.findIndex((o) => o.launch === w.launch && o.instret === w.instret && o.pc === w.pc &&
      o.core === w.core && o.warp === w.warp && o.lane === w.lane);
    if (i < 0) { i = writers.length; writers.push(w); }
    return i;
  };
  const at_ = (w) => "launch " + w.launch + ", instruction " + w.instret + ", pc " + hex(w.pc) + (w.file ? " at " + w.file + ":" + w.line : "");
  const open = (i) => ' <button type="button" class="origin-open" data-writer="' + i + '">open the writer\u2019s point</button>';
  const parts = [];
  if (r.register !== undefined) {
    // A register: its last write by the lane's own thread, in this launch.
    if (r.write) {
      const w = Object.assign({ core: lane.core, warp: lane.warp, lane: lane.lane, thread: "the lane's own thread" }, r.write);
      const i = writerOf(w);
      parts.push({ text: "written by the lane's own thread, " + at_(w) + (w.source ? "\n    " + w.line + "\t" + w.source : ""), writer: i });
    } else {
      parts.push({ text: "not written in this launch by the thread: it holds what the launch started it with" });
    }
  } else {
    for (const p of r.origin || []) {
      const bytes = r.origin.length === 1 && p.offset === 0 && p.length === r.length ? ""
        : "bytes " + p.offset + (p.length > 1 ? ".." + (p.offset + p.length - 1) : "") + ": ";
      if (p.write) {
        const w = p.write, i = writerOf(w), from = r.addr + p.offset - w.addr;
        parts.push({ writer: i, text: bytes + "written by " + w.thread + " (core " + w.core + " warp " + w.warp + " lane " + w.lane + "), " + at_(w) +
          (w.source ? "\n    " + w.line + "\t" + w.source : "") + "\n  it wrote " + partHex(w.after, from, p.length) + " over " +
          partHex(w.before, from, p.length) + (w.atomic ? " (an atomic)" : "") });
      } else if (p.host_copy) {
        const c = p.host_copy;
        parts.push({ text: bytes + "copied by the host before launch " + c.before_launch + " (" + c.size + " bytes to " + hex(c.addr) +
          "); no kernel instruction wrote them after it" });
      } else {
        parts.push({ text: bytes + "not written by any kernel instruction or host copy in this history: it holds what device memory held before the first launch" });
      }
    }
  }
  html += '<div id="origin-parts">' + parts.map((p) => '<div class="origin-part"' + (p.writer !== undefined ? ' data-writer="' + p.writer + '"' : "") + "><pre>" +
    esc(p.text) + "</pre>" + (p.writer !== undefined ? open(p.writer) : "") + "</div>").join("") + "</div>";
  box.innerHTML = html;
  box.hidden = false;
  document.getElementById("origin-clear").addEventListener("click", clearOrigin);
  for (const [i, w] of writers.entries()) {
    const d = document.createElement("div");
    d.className = "origin-mark";
    for (const k of ["launch", "instret", "core", "warp", "lane"]) d.dataset[k] = w[k];
    d.dataset.writer = i;
    const tip = "wrote " + r.expression + ": " + w.thread + " (core " + w.core + " warp " + w.warp + " lane " + w.lane + ")\n" + at_(w) +
      (w.source ? "\n" + w.line + "\t" + w.source : "") + "\nclick: open this point";
    d.addEventListener("mouseenter", (e) => showTip(e, tip));
    d.addEventListener("mousemove", (e) => showTip(e, tip));
    d.addEventListener("mouseleave", hideTip);
    d.addEventListener("mousedown", (e) => e.stopPropagation());
    d.addEventListener("click", (e) => { e.stopPropagation(); openWriter(i); });
    timeline.appendChild(d);
    originEls.push({ w, d });
  }
  for (const b of box.querySelectorAll(".origin-open")) b.addEventListener("click", () => openWriter(Number(b.dataset.writer)));
  // The writers in view, zoomed in far enough that each stands apart (two lanes of one instruction
  // stand one below the other, drawOrigin nudges them).
  if (originEls.length) {
    const gs = originEls.map(({ w }) => off(0, w.launch) + w.instret).sort((a, b) => a - b);
    let gap = Infinity;
    for (let i = 1; i < gs.length; ++i) if (gs[i] > gs[i - 1]) gap = Math.min(gap, gs[i] - gs[i - 1]);
    if (gap !== Infinity && gap * scale < 16) scale = Math.min(16 / gap, 64);
    const lo = toX(gs[0]), hi = toX(gs[gs.length - 1]);
    if (lo < LABEL_W || hi > width()) x0 = (gs[0] + gs[gs.length - 1]) / 2 - (width() - LABEL_W) / 2 / scale;
  }
  draw();
}
function openWriter(i) {
  const e = originEls[i];
  if (!e) return;
  for (const { d } of originEls) d.classList.remove("selected");
  e.d.classList.add("selected");
  openPoint({ launch: e.w.launch, instret: e.w.instret, core: e.w.core, warp: e.w.warp, lane: e.w.lane });
}
function drawOrigin(w) {
  const seen = new Map();  // writers at one place (lanes of one instruction): each a little lower
  for (const { w: o, d } of originEls) {
    const x = toX(off(0, o.launch) + o.instret);
    const row = rowIndex.get(rowKey(0, o.core, o.warp));
    const k = o.launch + ":" + o.instret + ":" + o.core + ":" + o.warp, n = seen.get(k) || 0;
    seen.set(k, n + 1);
    d.style.display = x >= LABEL_W && x <= w ? "" : "none";
    d.style.left = x + "px";
    // No row for the warp (no sample of it): above the rows.
    d.style.top = (row === undefined ? TOP - 6 : TOP + row * ROW_H + ROW_H / 2 + (n % 3) * 4) + "px";
  }
}
document.getElementById("source").addEventListener("click", (e) => {
  const v = e.target.closest && e.target.closest(".origin-able");
  if (v) askOrigin(v.dataset.expr);
});

// Zoom around the pointer, pan by dragging.
timeline.addEventListener("wheel", (e) => {
  e.preventDefault();
  const rect = timeline.getBoundingClientRect(), x = e.clientX - rect.left, g = toG(x);
  scale = Math.min(Math.max(scale * (e.deltaY < 0 ? 1.25 : 0.8), 1e-9), 64);
  x0 = g - (x - LABEL_W) / scale;
  draw();
}, { passive: false });
let drag = null;
timeline.addEventListener("mousedown", (e) => { drag = { x: e.clientX, y: e.clientY, x0 }; timeline.classList.add("dragging"); });
window.addEventListener("mouseup", (e) => {
  const was = drag;
  drag = null; timeline.classList.remove("dragging");
  // A click (no drag) on the rows, served: the state at that point.
  if (!data.serve || !was || Math.abs(e.clientX - was.x) > 3 || Math.abs(e.clientY - was.y) > 3) return;
  if (e.target.classList && ["mark", "console-mark", "point", "origin-mark"].some((c) => e.target.classList.contains(c))) return;
  const rect = timeline.getBoundingClientRect();
  const p = pointAt(e.clientX - rect.left, e.clientY - rect.top);
  if (p) openPoint(p);
});
window.addEventListener("mousemove", (e) => {
  if (drag) { x0 = drag.x0 - (e.clientX - drag.x) / scale; draw(); return; }
  const rect = timeline.getBoundingClientRect();
  if (e.clientY < rect.top || e.clientY > rect.bottom || e.clientX < rect.left || e.clientX > rect.right) return;
  if (e.target.classList && ["mark", "console-mark", "point", "origin-mark"].some((c) => e.target.classList.contains(c))) return;
  const hit = intervalAt(e.clientX - rect.left, e.clientY - rect.top);
  if (!hit) return hideTip();
  const [from, to, act, lanes, cta] = hit.iv;
  showTip(e, (runs[hit.r.run].label ? runs[hit.r.run].label + "\n" : "") + "core " + hit.r.core + " warp " + hit.r.slot + " \u00b7 " + hit.l.name + "\n" + data.activities[act] +
    ", " + lanes + " of " + data.threads + " lanes, CTA " + cta + "\ninstructions " + from + " to " + to);
});
timeline.addEventListener("mouseleave", hideTip);
const zoomBy = (f) => { const mid = toG(LABEL_W + (width() - LABEL_W) / 2); scale *= f; x0 = mid - (width() - LABEL_W) / 2 / scale; draw(); };
document.getElementById("fit").addEventListener("click", fit);
document.getElementById("zoom-in").addEventListener("click", () => zoomBy(1.5));
document.getElementById("zoom-out").addEventListener("click", () => zoomBy(1 / 1.5));
window.addEventListener("resize", draw);
// A report beside the picture (a diff's text, the races, a sweep's outcome classes).
if (data.report || data.classes) {
  const sum = document.getElementById("summary");
  let html = "";
  if (data.classes)
    html += '<table id="classes"><tr><th>class</th><th>runs</th><th>outcome</th><th>seeds</th><th>memory</th><th>console</th></tr>' + data.classes.map((c, i) =>
      "<tr><td>" + (i + 1) + "</td><td>" + c.seeds.length + "</td><td>" + esc(c.outcome) + "</td><td>" +
      esc(c.seeds.slice(0, 40).join(", ") + (c.seeds.length > 40 ? ", \u2026" : "")) + "</td><td>" + esc(c.memory_hash || "") +
      "</td><td>" + esc((c.console_hash || "") + (c.console_lines && c.console_lines.length ? " \u00b7 " + c.console_lines[0] : "")) +
      "</td></tr>").join("") + "</table>";
  if (data.report) html += '<pre id="report">' + esc(data.report) + "</pre>";
  sum.innerHTML = html;
  sum.hidden = false;
}
fit();
if (data.serve) document.getElementById("hint").textContent += " Served: click any point of a warp's row for the state there, and a value for who wrote it.";
if (!data.marks.length && !pointEls.length && !data.serve) document.getElementById("hint").textContent = "Hover a warp's row for its state; this page has no marks.";
if (pointEls.length) document.getElementById("hint").textContent = "Click a dot on a warp's row (a read, the write behind it, a race's access) to see its source line and what happened there.";
// drawn: milliseconds from the navigation's start to the first picture; redraw(): one redraw's milliseconds
// (what a zoom or pan step costs). scripts/bench-timeline.sh reads both.
const redraw = () => { const t = performance.now(); draw(); return performance.now() - t; };
window.vxreplayView = { data, rows, marks: markEls.length, points: pointEls.length, ready: true, xOf, yOf,
  drawn: performance.now(), redraw };
})();
</script></body></html>
)HTML";
// clang-format on

}  // namespace

std::string view_page(const std::string& title, const nlohmann::json& data) {
  std::string t;
  for (char c : title) t += c == '<' ? std::string("&lt;") : c == '&' ? std::string("&amp;") : std::string(1, c);
  std::string json_text = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // Inside a script element, "</" would end it.
  for (size_t at = 0; (at = json_text.find("</", at)) != std::string::npos; at += 3) json_text.replace(at, 2, "<\\/");
  return std::string(kHead) + t + kStyle + json_text + kScript;
}

bool write_view_page(const std::string& path, const std::string& title, const nlohmann::json& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << view_page(title, data);
  f.close();
  return bool(f);
}

nlohmann::json view_data(const std::string& kernel, const std::string& from, const DeviceConfig& config) {
  nlohmann::json data;
  data["recording"] = from;
  data["kernel"] = kernel;
  data["config"] = config.to_string();
  data["threads"] = config.threads;
  data["activities"] = nlohmann::json::array();
  for (auto act : {replay::WarpActivity::Running, replay::WarpActivity::Diverged, replay::WarpActivity::Barrier,
                   replay::WarpActivity::Spawn, replay::WarpActivity::Ready})
    data["activities"].push_back(replay::activity_name(act));
  data["marks"] = nlohmann::json::array();
  data["sources"] = nlohmann::json::object();
  data["detailed_marks"] = 0;
  return data;
}

nlohmann::json launches_json(const std::vector<replay::LaunchTimeline>& timeline,
                             const std::function<std::string(uint32_t launch)>& name) {
  nlohmann::json launches = nlohmann::json::array();
  for (const replay::LaunchTimeline& t : timeline) {
    nlohmann::json rows = nlohmann::json::array();
    for (const replay::WarpRow& r : t.rows) {
      nlohmann::json iv = nlohmann::json::array();
      for (const replay::WarpInterval& i : r.intervals)
        iv.push_back({i.from, i.to, uint8_t(i.activity), i.lanes, i.cta});
      rows.push_back({{"core", r.core}, {"slot", r.slot}, {"iv", std::move(iv)}});
    }
    nlohmann::json console = nlohmann::json::array();
    for (const replay::ConsoleLine& c : t.console) console.push_back({c.by, c.text});
    launches.push_back({{"launch", t.launch},
                        {"name", name(t.launch)},
                        {"end", t.end},
                        {"ended", t.ended},
                        {"samples", t.samples},
                        {"checkpoints", t.checkpoints},
                        {"rows", std::move(rows)},
                        {"console", std::move(console)}});
  }
  return launches;
}

nlohmann::json header_at(const engine::Symbols* sym, uint32_t pc, uint32_t core, uint32_t warp, uint32_t lane) {
  nlohmann::json h = {{"pc", pc}, {"core", core}, {"warp", warp}, {"lane", lane}};
  if (!sym) return h;
  if (auto f = sym->function_at(pc)) h["function"] = f->name;
  if (auto loc = sym->locate(pc); loc && loc->line) {
    h["file"] = loc->file;
    h["line"] = loc->line;
    if (!h.contains("function")) h["function"] = loc->function;
    if (auto src = sym->source_line(loc->file, loc->line)) h["source"] = *src;
  }
  return h;
}

}  // namespace vx::cli
