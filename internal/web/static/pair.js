// fullpipe's pair history: one chart per figure, every pair overlaid on
// the same axes (x: the chosen range, fixed; y: from 0), drawn with
// uPlot on canvas. Drag to zoom all charts in; double-click to zoom
// back out to the range; click a point to open its run.
"use strict";
(function () {
  var el = document.getElementById("pair-data");
  if (!el || typeof uPlot === "undefined") return;
  var data = JSON.parse(el.textContent);
  var pairs = data.pairs;
  var colors = ["#005ea2", "#d83933", "#2e8540", "#8a5300", "#6f3cc4", "#0f7b8a", "#c2185b", "#5c5c5c", "#e5a000", "#1a4480"];

  // One x axis for all: every pair's times, sorted and unique; each
  // pair's figures placed on it (null where it has none).
  var seen = new Map();
  pairs.forEach(function (p) { p.t.forEach(function (t) { seen.set(t, 0); }); });
  var xs = Array.from(seen.keys()).sort(function (a, b) { return a - b; });
  xs.forEach(function (t, i) { seen.set(t, i); });
  function column(p, key) {
    var out = new Array(xs.length).fill(null);
    var src = p[key];
    for (var i = 0; i < p.t.length; i++) out[seen.get(p.t[i])] = src[i];
    return out;
  }
  var runAt = pairs.map(function (p) {
    var m = new Map();
    p.t.forEach(function (t, i) { m.set(t, p.run[i]); });
    return m;
  });

  var charts = [];
  function zoomAll(min, max) { charts.forEach(function (c) { c.setScale("x", { min: min, max: max }); }); }

  // make draws one chart: keys are the pair's columns to draw (the
  // second of two dashed), unit the y axis's.
  function make(id, keys, unit) {
    var box = document.getElementById(id);
    var series = [{}], cols = [xs], owner = [null];
    pairs.forEach(function (p, pi) {
      keys.forEach(function (k, ki) {
        series.push({ label: p.label + (keys.length > 1 ? (ki ? " loaded" : " idle") : ""), stroke: colors[pi % colors.length],
          dash: ki ? [6, 4] : undefined, width: 1.5, spanGaps: true, value: function (u, v) { return v == null ? "–" : v + " " + unit; } });
        cols.push(column(p, k));
        owner.push(pi);
      });
    });
    var u = new uPlot({
      width: Math.max(400, box.clientWidth), height: 240,
      scales: { x: { time: true }, y: { range: function (u, min, max) { return [0, max > 0 ? max * 1.1 : 1]; } } },
      axes: [{}, { label: unit, size: 60 }],
      series: series,
      cursor: { sync: { key: "pair" }, drag: { x: true, y: false, setScale: false } },
      hooks: {
        setSelect: [function (u) {
          if (u.select.width > 2) zoomAll(u.posToVal(u.select.left, "x"), u.posToVal(u.select.left + u.select.width, "x"));
          u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
        }],
      },
    }, cols, box);
    u.over.addEventListener("dblclick", function () { setTimeout(function () { zoomAll(data.from, data.to); }, 0); });
    u.over.addEventListener("click", function () {
      var i = u.cursor.idx;
      if (i == null) return;
      var best = -1, dist = 1e9;
      for (var s = 1; s < u.series.length; s++) {
        var v = u.data[s][i];
        if (v == null || !u.series[s].show) continue;
        var d = Math.abs(u.valToPos(v, "y") - u.cursor.top);
        if (d < dist) { dist = d; best = s; }
      }
      if (best < 0 || dist > 30) return;
      var run = runAt[owner[best]].get(xs[i]);
      if (run) window.location.href = "/ui/runs/" + encodeURIComponent(run);
    });
    charts.push(u);
  }
  make("chart-tput", ["tput"], "Mbit/s");
  make("chart-down", ["down"], "Mbit/s");
  make("chart-rtt", ["rtt", "rttl"], "ms");
  make("chart-loss", ["loss"], "%");
  make("chart-delay", ["delay"], "%");
  zoomAll(data.from, data.to);
  document.body.dataset.drawn = String(xs.length);
  if (window.performance && performance.mark) performance.mark("fullpipe-charts-drawn");
})();
