// fullpipe's mesh: a grid (one Tab stop; arrows, Home and End move in
// it), a cell's numbers in a tooltip on hover or focus (the words come
// from the server, fetched on first use as JSON by row and column, so
// the grid itself stays small), and a cell's pair opened on click or
// Enter.
"use strict";
(function () {
  var table = document.querySelector("table.mesh"), tip = document.getElementById("tip");
  var src = document.getElementById("mesh-tips");
  if (!table || !tip || !src) return;
  var body = table.tBodies[0], heads = table.tHead.rows[0].cells;
  var tips = null, asked = null;
  function load() {
    if (!asked) asked = fetch(src.dataset.src, { credentials: "same-origin" }).then(function (r) { return r.json(); })
      .then(function (t) { tips = t; });
    return asked;
  }
  function show(td) {
    if (!tips) { load().then(function () { if (document.activeElement === td || td.matches(":hover")) show(td); }); return; }
    var text = (tips[td.parentNode.sectionRowIndex] || [])[td.cellIndex - 1];
    if (!text) return;
    tip.textContent = text;
    tip.hidden = false;
    var r = td.getBoundingClientRect();
    tip.style.left = Math.max(8, Math.min(r.right + 8, window.innerWidth - tip.offsetWidth - 8)) + "px";
    tip.style.top = Math.max(8, Math.min(r.bottom + 8, window.innerHeight - tip.offsetHeight - 8)) + "px";
    td.setAttribute("aria-describedby", "tip");
  }
  function hide(td) { tip.hidden = true; if (td && td.removeAttribute) td.removeAttribute("aria-describedby"); }
  function cellOf(e) { var td = e.target.closest && e.target.closest("td"); return td && table.contains(td) ? td : null; }
  // open goes to the cell's pair: its row's source, its column's
  // destination.
  function open(td) {
    if (!td.classList.contains("c")) return;
    var from = td.parentNode.cells[0].textContent, to = heads[td.cellIndex].textContent;
    window.location.href = "/ui/pair?pair=" + encodeURIComponent(from + ":" + to) + "&kind=" + encodeURIComponent(table.dataset.kind);
  }
  // move makes the cell at row r, column c (clamped) the grid's Tab
  // stop and focuses it.
  function move(from, r, c) {
    var rows = body.rows;
    r = Math.max(0, Math.min(rows.length - 1, r));
    c = Math.max(1, Math.min(rows[r].cells.length - 1, c));
    var to = rows[r].cells[c];
    from.setAttribute("tabindex", "-1");
    to.setAttribute("tabindex", "0");
    to.focus();
  }
  table.addEventListener("keydown", function (e) {
    var td = cellOf(e);
    if (!td || td.tagName !== "TD") return;
    var r = td.parentNode.sectionRowIndex, c = td.cellIndex;
    var step = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] }[e.key];
    if (step) move(td, r + step[0], c + step[1]);
    else if (e.key === "Home") move(td, e.ctrlKey ? 0 : r, 1);
    else if (e.key === "End") move(td, e.ctrlKey ? body.rows.length - 1 : r, 1e9);
    else if (e.key === "Enter" || e.key === " ") open(td);
    else if (e.key === "Escape") hide(td);
    else return;
    e.preventDefault();
  });
  table.addEventListener("click", function (e) { var td = cellOf(e); if (td && td.tagName === "TD") open(td); });
  table.addEventListener("mouseover", function (e) { var td = cellOf(e); if (td && td.classList.contains("c")) show(td); });
  table.addEventListener("mouseout", function (e) { var td = cellOf(e); if (td) hide(td); });
  table.addEventListener("focusin", function (e) { var td = cellOf(e); if (td && td.classList.contains("c")) show(td); });
  table.addEventListener("focusout", function (e) { var td = cellOf(e); if (td) hide(td); });
})();
