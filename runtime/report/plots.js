// dynamica report: the time plots, drawn as SVG by this file (no library, no network; a few KB
// where a general plotting bundle is megabytes). Data (runtime/report/page.py, the JSON of
// #plot-data): the times (float64) and every curve (float32) as little-endian base64, panels of curve
// names with their axis titles, stage boundaries. One panel per unit sharing the time axis, a
// legend beside each panel (click an entry to hide or show its curve), hover shows the values
// at the nearest row, drag zooms the time axis, double-click resets it; the animation's time
// is marked by a line (window.dynamicaReport.markTime).
"use strict";
window.dynamicaPlots = (function () {
  const P = JSON.parse(document.getElementById("plot-data").textContent);
  const root = document.getElementById("plots");
  const NS = "http://www.w3.org/2000/svg";
  const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                  "#bcbd22", "#17becf"];
  const W = 900, H = 230, M = {l: 78, r: 12, t: 14, b: 34};

  function f64(b64) {
    const bin = atob(b64), buf = new ArrayBuffer(bin.length), u8 = new Uint8Array(buf);
    for (let i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i);
    return new Float64Array(buf);
  }
  function f32(b64) {
    const bin = atob(b64), buf = new ArrayBuffer(bin.length), u8 = new Uint8Array(buf);
    for (let i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i);
    return new Float32Array(buf);
  }
  const t = f64(P.t), N = t.length, Y = {};
  for (const [name, b64] of Object.entries(P.series)) Y[name] = f32(b64);
  const full = [t[0], t[N - 1] > t[0] ? t[N - 1] : t[0] + 1];
  let range = full.slice(), now = null;

  function el(tag, attrs, parent) {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (parent) parent.appendChild(e);
    return e;
  }
  function fmt(x) { return Number.isFinite(x) ? (+x.toPrecision(6)).toString() : String(x); }
  function ticks(lo, hi, n) {              // "nice" ticks: 1, 2, 5 times a power of ten
    const span = hi - lo || Math.abs(lo) || 1, raw = span / n, p = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((k) => k * p).find((s) => s >= raw);
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9 * span; v += step) out.push(Math.abs(v) < 1e-12 * span ? 0 : v);
    return out;
  }
  function lowerBound(x) { let a = 0, b = N; while (a < b) { const m = (a + b) >> 1; if (t[m] < x) a = m + 1; else b = m; } return a; }

  const panels = P.panels.map((panel, k) => {
    const box = document.createElement("div");
    box.className = "panel";
    root.appendChild(box);
    const svg = el("svg", {viewBox: `0 0 ${W} ${H}`, width: "100%", preserveAspectRatio: "none",
                           role: "img", "aria-label": panel.title}, box);
    const legend = document.createElement("div");
    legend.className = "legend";
    box.appendChild(legend);
    const curves = panel.names.map((name, j) => {
      const color = COLORS[j % COLORS.length];
      const item = document.createElement("div");
      item.className = "item";
      item.innerHTML = `<span class="swatch" style="background:${color}"></span>`;
      item.appendChild(document.createTextNode(name));
      legend.appendChild(item);
      const c = {name, color, y: Y[name], visible: true, item};
      item.addEventListener("click", () => { c.visible = !c.visible; item.classList.toggle("off", !c.visible); draw(); });
      return c;
    });
    return {title: panel.title, bottom: k === P.panels.length - 1, svg, curves, hover: null};
  });

  function draw() {
    const [t0, t1] = range, i0 = Math.max(lowerBound(t0) - 1, 0), i1 = Math.min(lowerBound(t1) + 1, N);
    const pw = W - M.l - M.r, ph = H - M.t - M.b, X = (x) => M.l + (x - t0) / (t1 - t0) * pw;
    for (const p of panels) {
      const svg = p.svg;
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      let lo = Infinity, hi = -Infinity;
      for (const c of p.curves) if (c.visible) for (let i = i0; i < i1; i++) { const v = c.y[i]; if (v < lo) lo = v; if (v > hi) hi = v; }
      if (!(hi >= lo)) { lo = -1; hi = 1; }
      if (hi - lo < 1e-12 * Math.max(Math.abs(lo), Math.abs(hi), 1e-300)) { const d = Math.abs(lo) * 0.1 || 1; lo -= d; hi += d; }
      const pad = 0.05 * (hi - lo); lo -= pad; hi += pad;
      const Yp = (v) => M.t + (hi - v) / (hi - lo) * ph;
      p.scale = {X, Yp, lo, hi};
      el("rect", {x: M.l, y: M.t, width: pw, height: ph, fill: "#fff", stroke: "#ccc"}, svg);
      for (const v of ticks(lo, hi, 5)) {
        el("line", {x1: M.l, x2: M.l + pw, y1: Yp(v), y2: Yp(v), stroke: "#eee"}, svg);
        el("text", {x: M.l - 6, y: Yp(v) + 4, "text-anchor": "end", class: "tick"}, svg).textContent = fmt(v);
      }
      for (const v of ticks(t0, t1, 8)) {
        el("line", {x1: X(v), x2: X(v), y1: M.t, y2: M.t + ph, stroke: "#eee"}, svg);
        el("text", {x: X(v), y: M.t + ph + 14, "text-anchor": "middle", class: "tick"}, svg).textContent = fmt(v);
      }
      const yt = el("text", {x: 14, y: M.t + ph / 2, "text-anchor": "middle", class: "axis",
                             transform: `rotate(-90 14 ${M.t + ph / 2})`}, svg);
      yt.textContent = p.title;
      if (p.bottom) el("text", {x: M.l + pw / 2, y: H - 3, "text-anchor": "middle", class: "axis"}, svg).textContent = P.xtitle;
      const clip = "clip" + panels.indexOf(p);
      el("rect", {x: M.l, y: M.t, width: pw, height: ph}, el("clipPath", {id: clip}, el("defs", {}, svg)));
      const g = el("g", {"clip-path": `url(#${clip})`}, svg);
      for (const b of P.boundaries) {
        if (b.t < t0 || b.t > t1) continue;
        el("line", {x1: X(b.t), x2: X(b.t), y1: M.t, y2: M.t + ph, stroke: "#888", "stroke-dasharray": "5,4",
                    class: "boundary"}, g);
        el("text", {x: X(b.t) + 3, y: M.t + 11, class: "tick"}, g).textContent = b.label;
      }
      for (const c of p.curves) {
        if (!c.visible) continue;
        // per pixel column the first, lowest, highest and last point: the drawn line is the same
        // as with every point, however many rows there are
        const parts = [];
        let col = null, mn = 0, mx = 0, last = 0;
        const flush = () => { if (col !== null) parts.push(col, Yp(mn), col, Yp(mx), col, Yp(last)); };
        for (let i = i0; i < i1; i++) {
          const v = c.y[i];
          if (!Number.isFinite(v)) { flush(); col = null; parts.push(NaN); continue; }
          const x = Math.round(X(t[i]) * 2) / 2;
          if (x !== col) { flush(); col = x; mn = mx = v; parts.push(x, Yp(v)); }
          if (v < mn) mn = v; if (v > mx) mx = v; last = v;
        }
        flush();
        let d = "", pen = "M";
        for (let i = 0; i < parts.length; i++) {
          if (Number.isNaN(parts[i])) { pen = "M"; continue; }
          d += pen + parts[i].toFixed(1) + "," + parts[i + 1].toFixed(1); pen = "L"; i++;
        }
        el("path", {d, fill: "none", stroke: c.color, "stroke-width": 1.6, "vector-effect": "non-scaling-stroke",
                    class: "curve"}, g);
      }
      p.now = el("line", {y1: M.t, y2: M.t + ph, stroke: "rgba(200,40,40,0.6)", class: "now"}, g);
      p.hover = el("g", {}, svg);
    }
    placeNow();
  }
  function placeNow() {                     // the animation's time: moves one line, redraws nothing
    for (const p of panels) {
      const on = now !== null && now >= range[0] && now <= range[1];
      p.now.setAttribute("visibility", on ? "visible" : "hidden");
      if (on) { p.now.setAttribute("x1", p.scale.X(now)); p.now.setAttribute("x2", p.scale.X(now)); }
    }
  }

  // -- hover, zoom
  const tip = document.createElement("div");
  tip.className = "plot-tip";
  document.body.appendChild(tip);
  function timeAt(p, ev) {
    const r = p.svg.getBoundingClientRect(), x = (ev.clientX - r.left) / r.width * W;
    return range[0] + (x - M.l) / (W - M.l - M.r) * (range[1] - range[0]);
  }
  let drag = null;
  for (const p of panels) {
    p.svg.addEventListener("mousemove", (ev) => {
      const x = timeAt(p, ev);
      let i = Math.min(Math.max(lowerBound(x), 0), N - 1);
      if (i > 0 && Math.abs(t[i - 1] - x) < Math.abs(t[i] - x)) i--;
      while (p.hover.firstChild) p.hover.removeChild(p.hover.firstChild);
      const X = p.scale.X(t[i]);
      el("line", {x1: X, x2: X, y1: M.t, y2: H - M.b, stroke: "#999"}, p.hover);
      if (drag && drag.panel === p) {
        const a = p.scale.X(Math.min(drag.t, x)), b = p.scale.X(Math.max(drag.t, x));
        el("rect", {x: a, y: M.t, width: Math.max(b - a, 0), height: H - M.t - M.b, fill: "rgba(60,120,200,0.15)"}, p.hover);
      }
      const rows = p.curves.filter((c) => c.visible).map((c) =>
        `<div><span class="swatch" style="background:${c.color}"></span>${c.name}: ${fmt(c.y[i])}</div>`);
      tip.innerHTML = `<b>t = ${fmt(t[i])} s</b>` + rows.join("");
      tip.style.display = "block";
      tip.style.left = (ev.pageX + 14) + "px";
      tip.style.top = (ev.pageY + 10) + "px";
    });
    p.svg.addEventListener("mouseleave", () => {
      tip.style.display = "none";
      while (p.hover.firstChild) p.hover.removeChild(p.hover.firstChild);
    });
    p.svg.addEventListener("mousedown", (ev) => { drag = {panel: p, t: timeAt(p, ev)}; ev.preventDefault(); });
    p.svg.addEventListener("mouseup", (ev) => {
      if (!drag) return;
      const a = Math.min(drag.t, timeAt(p, ev)), b = Math.max(drag.t, timeAt(p, ev));
      drag = null;
      if (b - a > 1e-6 * (full[1] - full[0])) { range = [Math.max(a, full[0]), Math.min(b, full[1])]; draw(); }
    });
    p.svg.addEventListener("dblclick", () => { range = full.slice(); draw(); });
  }
  window.addEventListener("mouseup", () => { drag = null; });
  draw();
  return {
    markTime: function (x) { now = x; placeNow(); },
    range: function () { return range.slice(); },
    setRange: function (a, b) { range = [a, b]; draw(); },
  };
})();
