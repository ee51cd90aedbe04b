// fullpipe's web page: what little needs script. No inline scripts
// (the content security policy forbids them), no external resources.
"use strict";

// Forms that ask first (data-confirm: the question).
document.addEventListener("submit", function (e) {
  var q = e.target.getAttribute("data-confirm");
  if (q && !window.confirm(q)) e.preventDefault();
});

// A running run's page follows its progress: poll the controller each
// second for new lines, and reload when the run ends (to show its
// report).
(function () {
  var ol = document.getElementById("progress");
  if (!ol || ol.dataset.live !== "true") return;
  var next = parseInt(ol.dataset.next, 10) || 0;
  var run = ol.dataset.run;
  var state = document.getElementById("run-state");
  function poll() {
    fetch("/ui/runs/" + encodeURIComponent(run) + "/progress?after=" + next, { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
      .then(function (d) {
        d.lines.forEach(function (l) { var li = document.createElement("li"); li.textContent = l; ol.appendChild(li); });
        next = d.next;
        if (state) state.textContent = d.state;
        if (d.state !== "scheduled" && d.state !== "running") { window.location.reload(); return; }
        setTimeout(poll, 1000);
      })
      .catch(function () { setTimeout(poll, 5000); });
  }
  setTimeout(poll, 1000);
})();
