// Docket dashboard: live parts and the throughput chart. Everything else is
// server-rendered HTML. No inline script: the Content-Security-Policy
// allows this file and the vendored libraries only.
//
// A live part is an element with data-live="<url>": every data-refresh ms
// (on <body>) its URL is fetched and the answer replaces the element. A
// poll that fails (an error status or no answer) doubles the wait, up to
// maxBackoff; one that succeeds brings it back to data-refresh. While the
// tab is hidden nothing is polled; when it shows again every part is
// refreshed at once. The chart follows the same rules.
(function () {
  "use strict";

  var maxBackoff = 60000; // ms: the longest wait between two failed polls

  // pressed is true while a pointer is down: a part replaced between the
  // press and the release would lose the click.
  var pressed = false;
  document.addEventListener("pointerdown", function () { pressed = true; }, true);
  document.addEventListener("pointerup", function () { pressed = false; }, true);
  document.addEventListener("pointercancel", function () { pressed = false; }, true);

  // acting says whether the reader is acting on el: pressing a pointer, or
  // typing in one of its fields. Its refresh waits for the next poll.
  function acting(el) {
    var f = document.activeElement;
    return pressed || (f && el.contains(f) && /^(INPUT|SELECT|TEXTAREA)$/.test(f.tagName));
  }

  // every runs poll(done) every ms milliseconds while the page is visible,
  // never two at once; poll calls done(true) after a success, done(false)
  // after a failure, or done(null) to stop for good.
  function every(ms, poll) {
    var wait = ms, timer = null, busy = false, stopped = false;
    function schedule(d) {
      clearTimeout(timer);
      timer = setTimeout(tick, d);
    }
    function tick() {
      timer = null;
      if (stopped || busy || document.hidden) return;
      busy = true;
      poll(function (ok) {
        busy = false;
        if (ok === null) {
          stopped = true;
          return;
        }
        wait = ok ? ms : Math.min(wait * 2, Math.max(ms, maxBackoff));
        document.documentElement.dataset.pollWait = String(wait);
        if (!document.hidden) schedule(wait);
      });
    }
    document.addEventListener("visibilitychange", function () {
      if (document.hidden) {
        clearTimeout(timer);
        timer = null;
      } else if (!busy && !stopped) {
        tick();
      }
    });
    schedule(ms);
  }

  // live keeps the element that is data-live now (a swap replaces it) fresh.
  function live(first, ms) {
    var id = first.id;
    every(ms, function (done) {
      var el = id ? document.getElementById(id) : first;
      if (!el || !el.dataset.live) {
        done(null); // the part stopped being live (no task runs any more)
        return;
      }
      fetch(el.dataset.live, { credentials: "same-origin" })
        .then(function (r) {
          if (!r.ok) throw new Error(String(r.status));
          return r.text();
        })
        .then(function (html) {
          if (!acting(el)) swap(el, html);
          done(true);
        })
        .catch(function () {
          done(false);
        });
    });
  }

  // swap replaces el by the HTML of its new version, keeping what the
  // reader did to it: the horizontal scroll of its tables, and which of its
  // <details> (by id) are open.
  function swap(el, html) {
    var scrolls = Array.prototype.map.call(el.querySelectorAll(".scroll"), function (s) { return s.scrollLeft; });
    var open = Array.prototype.map.call(el.querySelectorAll("details[id][open]"), function (d) { return d.id; });
    var t = document.createElement("template");
    t.innerHTML = html;
    var next = t.content.firstElementChild;
    if (!next) return;
    el.replaceWith(t.content);
    Array.prototype.forEach.call(next.querySelectorAll(".scroll"), function (s, i) {
      if (scrolls[i]) s.scrollLeft = scrolls[i];
    });
    open.forEach(function (id) {
      var d = document.getElementById(id);
      if (d && d.tagName === "DETAILS") d.open = true;
    });
  }

  // utc prints Unix seconds as the tables do: 24-hour UTC.
  function utc(sec) {
    var d = new Date(sec * 1000);
    function two(n) { return (n < 10 ? "0" : "") + n; }
    return two(d.getUTCHours()) + ":" + two(d.getUTCMinutes());
  }

  function chart(el, ms) {
    var plot = null, n = 0, last = null;
    function css(name) { return getComputedStyle(document.body).getPropertyValue(name).trim(); }
    function size() { return { width: Math.max(280, el.clientWidth - 16), height: 220 }; }
    function draw(points) {
      var t = [], completed = [], failed = [];
      points.forEach(function (p) {
        t.push(p.t);
        completed.push(p.completed);
        failed.push(p.failed);
      });
      n = t.length;
      last = points;
      var data = [t, completed, failed];
      if (plot) {
        plot.setData(data);
        return;
      }
      el.textContent = "";
      var axis = { stroke: css("--muted"), grid: { stroke: css("--line") }, ticks: { stroke: css("--line") } };
      var opts = size();
      opts.series = [
        // Without a cursor on the chart the legend shows the latest minute.
        { label: "minute (UTC)", value: function (u, v) { return v == null ? "" : utc(v); } },
        { label: "completed / min", stroke: css("--ok"), fill: css("--ok-fill"), value: count },
        { label: "failed / min", stroke: css("--danger"), fill: css("--danger-fill"), value: count },
      ];
      opts.axes = [
        Object.assign({ values: function (u, splits) { return splits.map(utc); } }, axis),
        Object.assign({ size: 60 }, axis),
      ];
      opts.scales = { x: { time: true }, y: { range: function (u, min, max) { return [0, Math.max(5, max)]; } } };
      opts.hooks = {
        setLegend: [function (u) {
          if (u.legend.idx == null && n > 0) u.setLegend({ idx: n - 1 });
        }],
      };
      plot = new uPlot(opts, data, el);
      plot.setLegend({ idx: n - 1 });
      el.dataset.ready = "1";
    }
    window.addEventListener("resize", function () {
      if (plot) plot.setSize(size());
    });
    // The canvas takes its colours when drawn: draw it again when the
    // system switches between light and dark.
    if (window.matchMedia) {
      window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", function () {
        if (!plot || !last) return;
        plot.destroy();
        plot = null;
        draw(last);
      });
    }
    every(ms, function (done) {
      fetch(el.dataset.src, { credentials: "same-origin" })
        .then(function (r) {
          if (!r.ok) throw new Error(String(r.status));
          return r.json();
        })
        .then(function (points) {
          draw(points);
          delete el.dataset.error;
          done(true);
        })
        .catch(function () {
          el.dataset.error = "1";
          done(false);
        });
    });
  }

  // count prints a legend value with thousands separators.
  function count(u, v) { return v == null ? "" : Number(v).toLocaleString("en-US"); }

  document.addEventListener("DOMContentLoaded", function () {
    var ms = Number(document.body.dataset.refresh) || 2000;
    Array.prototype.forEach.call(document.querySelectorAll("[data-live]"), function (el) { live(el, ms); });
    var el = document.getElementById("chart");
    if (el && window.uPlot) chart(el, Number(el.dataset.refresh) || 10000);
  });
})();
