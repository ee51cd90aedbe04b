// fullpipe's pair history: one chart per figure, every pair overlaid on
// the same axes (x: the chosen range, fixed; y: from 0), drawn with
// uPlot on canvas from the results the page fetches as JSON. Drag to
// zoom all charts in; double-click to zoom back out to the range;
// click a point to open its run.
"use strict";
(function () {
  var el = document.getElementById("pair-data");
  if (!el || typeof uPlot === "undefined") return;
  var mark = function (n) { if (window.performance && performance.mark) performance.mark("fullpipe-" + n); };
  var points = document.getElementById("points");
  if (!el.dataset.src) { // no result of any kind for this pair
    points.textContent = "no results";
    document.body.dataset.drawn = "0";
    return;
  }
  // The overlay field's suggestions, asked for when it is first used.
  var add = document.getElementById("add");
  if (add) add.addEventListener("focus", function () {
    if (add.dataset.asked) return;
    add.dataset.asked = "1";
    fetch(add.dataset.src, { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (ps) {
      var dl = document.getElementById("others");
      ps.forEach(function (p) { var o = document.createElement("option"); o.value = p; dl.appendChild(o); });
    });
  });
  mark("fetch");
  fetch(el.dataset.src, { credentials: "same-origin" })
    .then(function (r) { if (!r.ok) return r.text().then(function (t) { throw new Error(t); }); return r.json(); })
    .then(function (data) { mark("fetched"); draw(data, el.dataset.kind); })
    .catch(function (e) { points.textContent = "the results could not be read: " + e.message; });

  function draw(data, kind) {
    var pairs = data.pairs;
    var colors = ["#005ea2", "#d83933", "#2e8540", "#8a5300", "#6f3cc4", "#0f7b8a", "#c2185b", "#5c5c5c", "#e5a000", "#1a4480"];
    var total = 0, cut = [];
    pairs.forEach(function (p) { total += p.t.length; if (p.truncated) cut.push(p.label); });
    points.textContent = total + " results";
    if (cut.length) {
      var tr = document.getElementById("truncated");
      tr.textContent = "More than 10,000 results in this range for " + cut.join(", ") + ": the newest 10,000 are shown; pick a shorter range.";
      tr.hidden = false;
    }
    // One x axis for all: every pair's times, sorted and unique; each
    // pair's figures placed on it (null where it has none).
    var at = new Map();
    pairs.forEach(function (p) { p.t.forEach(function (t) { at.set(t, 0); }); });
    var xs = Array.from(at.keys()).sort(function (a, b) { return a - b; });
    xs.forEach(function (t, i) { at.set(t, i); });
    function column(p, key) {
      var out = new Array(xs.length).fill(null), src = p[key];
      for (var i = 0; i < p.t.length; i++) out[at.get(p.t[i])] = src[i];
      return out;
    }
    mark("joined");
    var charts = [];
    function zoomAll(min, max) { charts.forEach(function (c) { c.setScale("x", { min: min, max: max }); }); }

    // make draws one chart: keys are the pair's columns to draw (the
    // second of two fainter: loaded RTT), unit the y axis's. Lines are
    // 1 px and solid: dashes and wider lines cost canvas a lot at
    // 87,600 points.
    function make(id, keys, unit) {
      var box = document.getElementById(id);
      var series = [{}], cols = [xs], owner = [null];
      pairs.forEach(function (p, pi) {
        keys.forEach(function (k, ki) {
          var c = colors[pi % colors.length];
          series.push({ label: p.label + (keys.length > 1 ? (ki ? " loaded" : " idle") : ""), stroke: ki ? c + "80" : c, width: 1,
            spanGaps: true, value: function (u, v) { return v == null ? "–" : v + " " + unit; } });
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
      u.over.addEventListener("click", function () { open(u, owner); });
      charts.push(u);
    }
    // open goes to the run of the point nearest the cursor (within 30 px).
    function open(u, owner) {
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
      window.location.href = "/ui/pair/run?pair=" + encodeURIComponent(pairs[owner[best]].pair) + "&kind=" + encodeURIComponent(kind) + "&t=" + xs[i];
    }
    make("chart-tput", ["tput"], "Mbit/s");
    make("chart-down", ["down"], "Mbit/s");
    make("chart-rtt", ["rtt", "rttl"], "ms");
    make("chart-loss", ["loss"], "%");
    make("chart-delay", ["delay"], "%");
    zoomAll(data.from, data.to);
    mark("charts-drawn");
    requestAnimationFrame(function () { document.body.dataset.drawn = String(xs.length); });
  }
})();
