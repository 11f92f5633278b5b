// Hover, zoom and axes of the collectiveattr report. Everything the page
// shows is already in the DOM; this script adds the time axes, the hover
// panel and horizontal zoom (the viewBox of every plot).
(function () {
  "use strict";
  var root = document.getElementById("report");
  var W = Number(root.getAttribute("data-width"));
  var spanS = Number(root.getAttribute("data-span-s"));
  var startNs = root.getAttribute("data-start-ns");
  var data = null; // the results' fields, parsed at the first hover
  var plots = Array.prototype.slice.call(document.querySelectorAll("svg.zx"));
  var axes = Array.prototype.slice.call(document.querySelectorAll("svg.axis"));
  var tip = document.getElementById("tip");
  var sel = document.getElementById("sel");
  var lanes = document.querySelectorAll("#lanes .lane");
  var view = { a: 0, b: W };
  var SVG = "http://www.w3.org/2000/svg";

  function niceStep(raw) {
    var p = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }

  function drawAxes() {
    var t0 = view.a / W * spanS, t1 = view.b / W * spanS;
    var step = niceStep(Math.max((t1 - t0) / 12, 1e-6));
    var digits = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
    axes.forEach(function (ax) {
      while (ax.firstChild) ax.removeChild(ax.firstChild);
      // The axis is as wide as its column, which follows the window.
      var pw = ax.getBoundingClientRect().width || W;
      var every = Math.max(1, Math.ceil(12 / Math.max(pw / 90, 1)));
      var n = 0;
      for (var t = Math.ceil(t0 / step) * step; t <= t1 + 1e-9; t += step, n++) {
        var x = (t - t0) / (t1 - t0) * pw;
        var line = document.createElementNS(SVG, "line");
        line.setAttribute("x1", x); line.setAttribute("x2", x);
        line.setAttribute("y1", 14); line.setAttribute("y2", 20);
        ax.appendChild(line);
        if (n % every) continue;
        var text = document.createElementNS(SVG, "text");
        text.setAttribute("x", Math.min(Math.max(x, 12), pw - 20));
        text.setAttribute("y", 11);
        text.setAttribute("text-anchor", "middle");
        text.textContent = t.toFixed(digits) + " s";
        ax.appendChild(text);
      }
    });
  }

  function setView(a, b) {
    a = Math.max(0, a); b = Math.min(W, b);
    if (b - a < 2) { var m = (a + b) / 2; a = Math.max(0, m - 1); b = Math.min(W, a + 2); }
    view.a = a; view.b = b;
    plots.forEach(function (svg) {
      svg.setAttribute("viewBox", a + " 0 " + (b - a) + " " + svg.getAttribute("data-h"));
    });
    drawAxes();
  }

  function columnAt(svg, clientX) {
    var r = svg.getBoundingClientRect();
    return view.a + (clientX - r.left) / r.width * (view.b - view.a);
  }

  // Hover panel.
  function showTip(ev, build) {
    while (tip.firstChild) tip.removeChild(tip.firstChild);
    build(tip);
    tip.hidden = false;
    var x = ev.clientX + 14, y = ev.clientY + 14;
    var r = tip.getBoundingClientRect();
    if (x + r.width > window.innerWidth) x = Math.max(0, ev.clientX - r.width - 14);
    if (y + r.height > window.innerHeight) y = Math.max(0, ev.clientY - r.height - 14);
    tip.style.left = x + "px"; tip.style.top = y + "px";
  }

  // Human units for the hover: byte counts in binary units, interval times
  // in seconds from the job's first event (the raw value follows).
  function humanBytes(v) {
    var n = Number(v), a = Math.abs(n);
    if (!isFinite(n)) return v;
    if (a >= 1073741824) return (n / 1073741824).toFixed(2) + " GiB";
    if (a >= 1048576) return (n / 1048576).toFixed(1) + " MiB";
    if (a >= 1024) return (n / 1024).toFixed(1) + " KiB";
    return n + " B";
  }
  function sinceStart(v) {
    if (!/^[0-9]+$/.test(v) || typeof BigInt !== "function") return v;
    var d = Number(BigInt(v) - BigInt(startNs)) / 1e9;
    return (d >= 0 ? "+" : "") + d.toFixed(3) + " s";
  }
  function human(key, v) {
    if (/_bytes$/.test(key) && /^-?[0-9]+$/.test(v)) return humanBytes(v) + "  (" + v + ")";
    if (/^interval_(start|end)_ns$/.test(key)) return sinceStart(v) + "  (" + v + ")";
    return v;
  }

  function resultFields(i) {
    if (!data) data = JSON.parse(document.getElementById("results-data").textContent);
    var out = [];
    for (var k = 0; k < data.keys.length; k++) {
      var v = data.index[k][i];
      if (v >= 0) out.push([data.keys[k], data.values[k][v]]);
    }
    return out;
  }

  function resultTip(i) {
    return function (box) {
      var rows = resultFields(i), fields = {};
      rows.forEach(function (r) { fields[r[0]] = r[1]; });
      var head = document.createElement("div");
      head.className = "head";
      head.textContent = "rank " + fields.rank + " · " + fields.classification +
        (fields.confidence !== undefined ? " · confidence " + fields.confidence : "");
      box.appendChild(head);
      var table = document.createElement("table");
      rows.forEach(function (r) {
        var tr = document.createElement("tr");
        var kd = document.createElement("td"); kd.textContent = r[0];
        var vd = document.createElement("td"); vd.textContent = human(r[0], r[1]);
        tr.appendChild(kd); tr.appendChild(vd); table.appendChild(tr);
      });
      box.appendChild(table);
    };
  }

  document.addEventListener("mousemove", function (ev) {
    if (drag) return;
    var t = ev.target;
    if (!t || !t.getAttribute) { tip.hidden = true; return; }
    var i = t.getAttribute("data-i");
    if (i !== null) { showTip(ev, resultTip(Number(i))); return; }
    var text = t.getAttribute("data-tip");
    if (text !== null) { showTip(ev, function (box) { box.textContent = text; }); return; }
    tip.hidden = true;
  });

  // Zoom: drag across any plot; double-click resets.
  var drag = null;
  plots.forEach(function (svg) {
    if (svg.id === "heat" || svg.id === "episodes") return;
    svg.addEventListener("mousedown", function (ev) {
      if (ev.button !== 0) return;
      ev.preventDefault();
      drag = { svg: svg, x0: ev.clientX };
      tip.hidden = true;
    });
  });
  document.addEventListener("mousemove", function (ev) {
    if (!drag) return;
    var r = drag.svg.getBoundingClientRect();
    var x = Math.min(Math.max(ev.clientX, r.left), r.right);
    sel.hidden = false;
    sel.style.left = Math.min(x, drag.x0) + "px";
    sel.style.width = Math.abs(x - drag.x0) + "px";
  });
  document.addEventListener("mouseup", function (ev) {
    if (!drag) return;
    var d = drag; drag = null; sel.hidden = true;
    if (Math.abs(ev.clientX - d.x0) < 4) return;
    var a = columnAt(d.svg, Math.min(ev.clientX, d.x0)), b = columnAt(d.svg, Math.max(ev.clientX, d.x0));
    setView(a, b);
  });
  document.addEventListener("dblclick", function (ev) {
    if (ev.target.closest && ev.target.closest("svg.zx")) setView(0, W);
  });
  document.getElementById("zoomreset").addEventListener("click", function () { setView(0, W); });
  document.getElementById("zoomout").addEventListener("click", function () {
    var m = (view.a + view.b) / 2, h = view.b - view.a;
    setView(m - h, m + h);
  });

  function zoomTo(x0, x1) {
    var pad = Math.max((x1 - x0) * 2, 8);
    setView(x0 - pad, x1 + pad);
  }
  document.getElementById("episodes").addEventListener("click", function (ev) {
    var x0 = ev.target.getAttribute("data-x0");
    if (x0 !== null) zoomTo(Number(x0), Number(ev.target.getAttribute("data-x1")));
  });
  document.getElementById("eptable").addEventListener("click", function (ev) {
    var tr = ev.target.closest("tr[data-x0]");
    if (tr) zoomTo(Number(tr.getAttribute("data-x0")), Number(tr.getAttribute("data-x1")));
  });
  document.getElementById("heat").addEventListener("click", function (ev) {
    var r = ev.currentTarget.getBoundingClientRect();
    var row = Math.floor((ev.clientY - r.top) / r.height * lanes.length);
    var lane = lanes[Math.min(Math.max(row, 0), lanes.length - 1)];
    if (lane) lane.scrollIntoView({ block: "center" });
  });

  drawAxes();
  var resizeTimer = 0;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(drawAxes, 100);
  });
  // The time from navigation start to the first frame after this script:
  // what the browser test reports as the render time.
  requestAnimationFrame(function () {
    setTimeout(function () {
      document.body.setAttribute("data-render-ms", Math.round(performance.now()));
    }, 0);
  });
})();
