// fullpipe's mesh: a cell's numbers in a tooltip on hover or keyboard
// focus (the words come from the server, fetched on first use as JSON
// by row and column, so the grid itself stays small).
"use strict";
(function () {
  var table = document.querySelector("table.mesh"), tip = document.getElementById("tip");
  var src = document.getElementById("mesh-tips");
  if (!table || !tip || !src) return;
  var tips = null, asked = null;
  function load() {
    if (!asked) asked = fetch(src.dataset.src, { credentials: "same-origin" }).then(function (r) { return r.json(); })
      .then(function (t) { tips = t; });
    return asked;
  }
  function show(a) {
    if (!tips) { load().then(function () { if (document.activeElement === a || a.matches(":hover")) show(a); }); return; }
    var td = a.parentNode, tr = td.parentNode;
    var text = (tips[tr.rowIndex - 1] || [])[td.cellIndex - 1];
    if (!text) return;
    tip.textContent = text;
    tip.hidden = false;
    var r = a.getBoundingClientRect();
    tip.style.left = Math.min(r.right + 8, window.innerWidth - tip.offsetWidth - 8) + "px";
    tip.style.top = Math.min(r.bottom + 8, window.innerHeight - tip.offsetHeight - 8) + "px";
    a.setAttribute("aria-describedby", "tip");
  }
  function hide(a) { tip.hidden = true; if (a) a.removeAttribute("aria-describedby"); }
  function cellOf(e) { return e.target.closest && e.target.closest("a.c"); }
  table.addEventListener("mouseover", function (e) { var a = cellOf(e); if (a) show(a); });
  table.addEventListener("mouseout", function (e) { var a = cellOf(e); if (a) hide(a); });
  table.addEventListener("focusin", function (e) { var a = cellOf(e); if (a) show(a); });
  table.addEventListener("focusout", function (e) { var a = cellOf(e); if (a) hide(a); });
  document.addEventListener("keydown", function (e) { if (e.key === "Escape") hide(document.activeElement); });
})();
