// Docket dashboard: the throughput chart. Everything else is server-rendered
// HTML that htmx refreshes. No inline script: the Content-Security-Policy
// allows this file and the vendored libraries only.
(function () {
  "use strict";

  function chart(el) {
    var plot = null;
    function draw(points) {
      var t = [], completed = [], failed = [];
      points.forEach(function (p) {
        t.push(p.t);
        completed.push(p.completed);
        failed.push(p.failed);
      });
      var data = [t, completed, failed];
      if (plot) {
        plot.setData(data);
        return;
      }
      el.textContent = "";
      plot = new uPlot({
        width: Math.max(320, el.clientWidth),
        height: 220,
        series: [
          {},
          { label: "completed / min", stroke: "#2f7d32", fill: "rgba(47,125,50,0.12)" },
          { label: "failed / min", stroke: "#c62828", fill: "rgba(198,40,40,0.10)" },
        ],
        axes: [{}, { size: 60 }],
        scales: { y: { range: function (u, min, max) { return [0, Math.max(5, max)]; } } },
      }, data, el);
      el.dataset.ready = "1";
    }
    function load() {
      fetch(el.dataset.src, { credentials: "same-origin" })
        .then(function (r) {
          if (!r.ok) throw new Error(r.status);
          return r.json();
        })
        .then(draw)
        .catch(function () {
          el.dataset.error = "1";
        });
    }
    load();
    setInterval(load, Number(el.dataset.refresh) || 10000);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var el = document.getElementById("chart");
    if (el && window.uPlot) chart(el);
  });
})();
