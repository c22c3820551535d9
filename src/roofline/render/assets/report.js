/* roofline report page: roofline chart, op table, module tree, findings, memory, syncs, timing, ranks,
   environment. Reads the JSON payload written by roofline.render.html; formats and draws, computes nothing new. */
"use strict";
(function () {
  var el = R.el, svg = R.svg;
  var D = R.readData();
  var S = D.strings;
  var T = D.table;
  var NOPS = T.index ? T.index.length : 0;
  var TOTAL = D.summary.total_time_s || 0;

  function build() {
    var app = document.getElementById("app");
    R.clear(app);
    app.appendChild(header());
    var sections = [
      ["overview", overview()],
      ["roofline", rooflineSection()],
      ["findings", findingsSection()],
      ["ops", opTableSection()],
      ["modules", moduleSection()],
      ["timing", timingSection()],
      ["traffic", D.ncu ? trafficSection() : null],
      ["memory", memorySection()],
      ["syncs", syncSection()],
      ["ranks", D.ranks && D.ranks.length ? rankSection() : null],
      ["environment", environmentSection()]
    ].filter(function (s) { return s[1]; });
    app.appendChild(el("nav", { "class": "toc" }, sections.map(function (s) {
      return el("a", { href: "#" + s[0], text: s[1].querySelector("h2").textContent });
    })));
    sections.forEach(function (s) { app.appendChild(s[1]); });
    app.appendChild(el("footer", { text: "roofline · report schema " + D.meta.schema_version +
      " · self-contained page: no network requests, data inlined" }));
  }

  function header() {
    var env = D.environment, c = D.ceilings;
    return el("header", { "class": "top" },
      el("div", { "class": "brand", text: "roofline" }),
      el("h1", { text: (D.meta.workload || "report") }),
      el("div", { "class": "meta" },
        el("span", { "class": "pill", text: D.meta.kind }),
        el("span", { text: env.device_name || c.device_name || c.device || "device ?" }),
        env.torch_version ? el("span", { text: "torch " + env.torch_version }) : null,
        env.timestamp ? el("span", { text: env.timestamp }) : null,
        el("span", { text: NOPS.toLocaleString() + " ops · " + D.meta.n_kernels.toLocaleString() + " kernels" })));
  }

  /* ---------- overview ---------- */
  function overview() {
    var s = D.summary, sec = R.section("overview", "Overview", s.timing_method || null);
    var st = D.step_time || D.profiled_step_time;
    var achieved = TOTAL > 0 ? s.total_flops / TOTAL : null;
    var stats = el("div", { "class": "stats" },
      R.stat("Step time (median)", st ? R.time(st.median_s) : "—", st ? "± " + R.time(st.spread_s) + " IQR, n=" + st.n + (D.step_time ? "" : " (profiled)") : "not measured"),
      R.stat("Device time, sum of ops", R.time(TOTAL), s.idle_time_s !== null && s.idle_time_s !== undefined ? "idle " + R.time(s.idle_time_s) : null),
      R.stat("Predicted (roofline)", R.time(s.predicted_total_s), TOTAL > 0 ? R.pct(s.predicted_total_s / TOTAL, 0) + " of measured" : null),
      R.stat("Work", R.si(s.total_flops, "FLOP"), R.si(s.total_bytes, "B") + " moved"),
      R.stat("Achieved", achieved !== null ? R.si(achieved, "FLOP/s") : "—", TOTAL > 0 ? R.si(s.total_bytes / TOTAL, "B/s") : null),
      R.stat("Unmodeled time", R.pct(s.unmodeled_time_share), s.kernel_time_attributed_share !== null && s.kernel_time_attributed_share !== undefined ? R.pct(s.kernel_time_attributed_share) + " of kernel time attributed" : null,
        s.unmodeled_time_share > 0.1 ? "warn" : ""),
      R.stat("Ops above the roof", String(s.ops_above_roof || 0), "cache reuse or a counting error", s.ops_above_roof ? "warn" : ""));
    sec.appendChild(stats);
    var bar = boundBar(s.time_by_bound_s || {}, s.share_by_bound || {});
    if (bar) sec.appendChild(bar);
    if (s.stale_ceilings) sec.appendChild(el("p", { "class": "error stale-ceilings", text: s.stale_ceilings }));
    if (s.notes && s.notes.length) sec.appendChild(el("ul", { "class": "notes" }, s.notes.map(function (n) { return el("li", { text: n }); })));
    return sec;
  }

  function boundBar(byBound, share) {
    var keys = Object.keys(byBound).filter(function (k) { return byBound[k] > 0 && share[k] !== undefined; });
    if (!keys.length) return null;
    keys.sort(function (a, b) { return byBound[b] - byBound[a]; });
    return el("div", { "class": "boundbar-wrap" },
      el("div", { "class": "boundbar" }, keys.map(function (k) {
        return el("div", { "class": "seg", style: "width:" + (100 * share[k]).toFixed(2) + "%;background:" + R.boundColor(k),
          title: k + ": " + R.time(byBound[k]) + " (" + R.pct(share[k]) + ")" });
      })),
      el("div", { "class": "legend" }, keys.map(function (k) {
        return el("span", null, el("i", { style: "background:" + R.boundColor(k) }), k + " " + R.pct(share[k]) + " · " + R.time(byBound[k]));
      })));
  }

  /* ---------- roofline chart ---------- */
  /* Roof lines avoid the bound colours (red, blue, gray), so a roof is never read as a class of points. */
  var ROOF_COLORS = ["#1f2328", "#bc4c00", "#1a7f37", "#6f42c1", "#8a6d00", "#0e7c7b"];

  function rooflineSection() {
    var c = D.ceilings, ch = D.chart;
    var sec = R.section("roofline", "Roofline",
      "Each point is one op (calls with the same name, module, shapes and dtype grouped); size ∝ device time, colour = bound. " +
      "Wheel or buttons to zoom, drag to pan, hover for details.");
    var dtypes = Object.keys(c.peak_flops_per_s || {}).sort(function (a, b) { return c.peak_flops_per_s[b] - c.peak_flops_per_s[a]; });
    var pointDtypes = {};
    ch.points.forEach(function (p) { pointDtypes[p.dtype] = true; });
    var shown = {};
    dtypes.forEach(function (d) { shown[d] = true; });
    var chart = makeChart(c, ch, dtypes, shown);
    var toggles = el("div", { "class": "toggles" }, el("span", { "class": "muted", text: "Roofs:" }), dtypes.map(function (d, i) {
      var box = el("input", { type: "checkbox", checked: "checked", "data-dtype": d, onchange: function () { shown[d] = box.checked; chart.draw(); } });
      return el("label", { "class": "toggle" }, box, el("i", { style: "background:" + ROOF_COLORS[i % ROOF_COLORS.length] }), d + " " + R.si(c.peak_flops_per_s[d], "FLOP/s"));
    }));
    var buttons = el("div", { "class": "zoom" },
      el("button", { type: "button", id: "zoom-in", title: "zoom in", onclick: function () { chart.zoom(0.6); }, text: "+" }),
      el("button", { type: "button", id: "zoom-out", title: "zoom out", onclick: function () { chart.zoom(1 / 0.6); }, text: "−" }),
      el("button", { type: "button", id: "zoom-reset", title: "reset", onclick: function () { chart.reset(); }, text: "reset" }));
    sec.appendChild(el("div", { "class": "chart-controls" }, toggles, buttons));
    sec.appendChild(chart.node);
    var share = D.summary.share_by_bound || {};
    var legend = el("div", { "class": "legend" }, Object.keys(R.BOUND_COLORS).filter(function (k) { return share[k] > 0; }).map(function (k) {
      return el("span", null, el("i", { style: "background:" + R.BOUND_COLORS[k] }), k + "-bound (" + R.pct(share[k]) + " of op time)");
    }).concat(ch.points.some(function (p) { return p.above_roof; }) ? [el("span", null, el("i", { "class": "above-key" }), "above the roof (outlined)")] : []));
    sec.appendChild(legend);
    var notes = [ch.points.length.toLocaleString() + " op group(s) drawn as points" +
      (ch.bins.length ? ", " + ch.bins.length + " merged squares" : "") +
      (ch.not_plotted.n ? "; " + ch.not_plotted.n.toLocaleString() + " op call(s) not drawn" : "; every op drawn") + "."];
    if (ch.bins.length) notes.push(ch.n_groups.toLocaleString() + " op groups: the " + ch.points.length.toLocaleString() +
      " with most time are drawn as points, the rest merged into " + ch.bins.length + " squares by dtype, bound and position.");
    if (ch.not_plotted.n) notes.push(ch.not_plotted.n.toLocaleString() + " op calls with zero FLOPs or bytes (copies, views, unmodeled) are not on the chart: " +
      R.time(ch.not_plotted.time_s) + " of device time.");
    if (!c.memory_bandwidth_bytes_per_s) notes.push("No memory bandwidth ceiling in this report: roofs not drawn.");
    notes.forEach(function (n) { sec.appendChild(el("p", { "class": "note", text: n })); });
    setTimeout(chart.draw, 0);
    return sec;
  }

  function makeChart(c, ch, dtypes, shown) {
    var W = 960, H = 520, M = { l: 100, r: 24, t: 16, b: 52 };
    var pw = W - M.l - M.r, ph = H - M.t - M.b;
    var bw = c.memory_bandwidth_bytes_per_s || 0;
    var root = svg("svg", { viewBox: "0 0 " + W + " " + H, "class": "roof-svg", role: "img", "aria-label": "roofline chart" });
    var tip = el("div", { "class": "tooltip", id: "roof-tooltip", hidden: "hidden" });
    var wrap = el("div", { "class": "chart-wrap" }, root, tip);
    var maxTime = 0;
    ch.points.forEach(function (p) { if (p.time_s > maxTime) maxTime = p.time_s; });
    ch.bins.forEach(function (b) { if (b.time_s > maxTime) maxTime = b.time_s; });

    var xs = [], ys = [];
    ch.points.concat(ch.bins).forEach(function (p) { xs.push(p.intensity); ys.push(p.flops_per_s); });
    dtypes.forEach(function (d) { ys.push(c.peak_flops_per_s[d]); if (bw) xs.push(c.peak_flops_per_s[d] / bw); });
    var lx = logRange(xs, 0.05, 1e4), ly = logRange(ys, 1e6, 1e15);
    var home = { x0: lx[0] - 0.4, x1: lx[1] + 0.6, y0: ly[0] - 0.5, y1: ly[1] + 0.4 };
    var view = Object.assign({}, home);

    function logRange(vals, lo, hi) {
      var f = vals.filter(function (v) { return v > 0 && isFinite(v); }).map(Math.log10);
      if (!f.length) return [Math.log10(lo), Math.log10(hi)];
      return [Math.min.apply(null, f), Math.max.apply(null, f)];
    }
    function X(v) { return M.l + (Math.log10(v) - view.x0) / (view.x1 - view.x0) * pw; }
    function Y(v) { return M.t + ph - (Math.log10(v) - view.y0) / (view.y1 - view.y0) * ph; }

    function tickLabel(e, unit) {
      return R.si(Math.pow(10, e), unit, 1).replace(".0 ", " ");
    }

    function draw() {
      R.clear(root);
      root.appendChild(svg("defs", null, svg("clipPath", { id: "plot-clip" }, svg("rect", { x: M.l, y: M.t, width: pw, height: ph }))));
      var grid = svg("g", { "class": "grid" });
      for (var e = Math.ceil(view.x0); e <= Math.floor(view.x1); e++) {
        var x = X(Math.pow(10, e));
        grid.appendChild(svg("line", { x1: x, x2: x, y1: M.t, y2: M.t + ph }));
        grid.appendChild(svg("text", { x: x, y: M.t + ph + 18, "text-anchor": "middle", "class": "tick", text: tickLabel(e, "") }));
      }
      for (var f = Math.ceil(view.y0); f <= Math.floor(view.y1); f++) {
        var y = Y(Math.pow(10, f));
        grid.appendChild(svg("line", { x1: M.l, x2: M.l + pw, y1: y, y2: y }));
        grid.appendChild(svg("text", { x: M.l - 8, y: y + 4, "text-anchor": "end", "class": "tick", text: tickLabel(f, "FLOP/s") }));
      }
      root.appendChild(grid);
      root.appendChild(svg("rect", { x: M.l, y: M.t, width: pw, height: ph, "class": "frame" }));
      root.appendChild(svg("text", { x: M.l + pw / 2, y: H - 10, "text-anchor": "middle", "class": "axis-title", text: "arithmetic intensity (FLOP / byte)" }));
      root.appendChild(svg("text", { x: 14, y: M.t + ph / 2, "text-anchor": "middle", transform: "rotate(-90 14 " + (M.t + ph / 2) + ")", "class": "axis-title", text: "achieved FLOP/s" }));

      var plot = svg("g", { "clip-path": "url(#plot-clip)" });
      root.appendChild(plot);
      var xa = Math.pow(10, view.x0 - 1), xb = Math.pow(10, view.x1 + 1);
      if (bw) {
        var roofs = [], maxRidge = 0;
        dtypes.forEach(function (d, i) {
          if (!shown[d]) return;
          var peak = c.peak_flops_per_s[d], same = roofs.filter(function (r) { return Math.abs(r.peak - peak) <= 1e-6 * peak; })[0];
          if (same) { same.names.push(d); return; }
          roofs.push({ peak: peak, names: [d], color: ROOF_COLORS[i % ROOF_COLORS.length] });
          maxRidge = Math.max(maxRidge, peak / bw);
        });
        if (maxRidge) plot.appendChild(svg("polyline", { "class": "roof mem-roof", points: pts([[xa, xa * bw], [maxRidge, maxRidge * bw]]) }));
        var cbw = c.cache_bandwidth_bytes_per_s || 0;
        if (maxRidge && cbw > bw) {
          var cacheRidge = maxRidge * bw / cbw;
          plot.appendChild(svg("polyline", { "class": "roof cache-roof", points: pts([[xa, xa * cbw], [cacheRidge, cacheRidge * cbw]]) },
            svg("title", { text: "cache roof " + R.si(cbw, "B/s") + " (last-level cache, " + R.si(c.cache_bytes, "B") + "): ops that fit in it and beat the DRAM roof are judged against it" })));
        }
        var sbw = c.shared_memory_bandwidth_bytes_per_s || 0;
        if (maxRidge && sbw > Math.max(bw, cbw)) {
          var sharedRidge = maxRidge * bw / sbw;
          plot.appendChild(svg("polyline", { "class": "roof cache-roof", "stroke-dasharray": "2 3", points: pts([[xa, xa * sbw], [sharedRidge, sharedRidge * sbw]]) },
            svg("title", { text: "shared-memory roof " + R.si(sbw, "B/s") + " (all SMs, 16-byte loads): the ceiling of data staged in shared memory" })));
        }
        var lastLabelY = null;
        roofs.forEach(function (r) {
          var ridge = r.peak / bw, lx = X(ridge);
          /* roofs come highest first: a label too close to the one above moves down, never onto it */
          var ly = Y(r.peak) - 7;
          if (lastLabelY !== null && ly - lastLabelY < 14) ly = lastLabelY + 14;
          lastLabelY = ly;
          plot.appendChild(svg("polyline", { "class": "roof", stroke: r.color, "data-roof": r.names.join(" "), points: pts([[ridge, r.peak], [xb, r.peak]]) }));
          plot.appendChild(svg("circle", { "class": "ridge", cx: lx, cy: Y(r.peak), r: 4.5, stroke: r.color },
            svg("title", { text: r.names.join(", ") + " ridge point: " + R.plain(ridge) + " FLOP/B" })));
          var right = lx + 8 > M.l + pw - 320;
          plot.appendChild(svg("text", { "class": "roof-label", x: right ? Math.min(lx - 8, M.l + pw - 6) : Math.max(lx + 8, M.l + 8), y: ly, fill: r.color,
            "text-anchor": right ? "end" : "start",
            text: r.names.join(" / ") + " " + R.si(r.peak, "FLOP/s") + " · ridge " + R.plain(ridge) + " FLOP/B" }));
        });
        var labelX = Math.pow(10, view.x0 + 0.12 * (view.x1 - view.x0));
        var ly0 = Y(labelX * bw) - 8;
        plot.appendChild(svg("text", { "class": "roof-label", x: X(labelX), y: ly0, fill: "#57606a",
          transform: "rotate(" + (-Math.atan2(Y(labelX) - Y(labelX * 10), X(labelX * 10) - X(labelX)) * 180 / Math.PI) + " " + X(labelX) + " " + ly0 + ")",
          text: "memory " + R.si(bw, "B/s") }));
      }
      var dots = svg("g", { "class": "dots" });
      var maxBin = 0;
      ch.bins.forEach(function (b) { maxBin = Math.max(maxBin, b.time_s); });
      ch.bins.forEach(function (b, i) {
        if (shown[b.dtype] === false) return;
        var r = 2 + 5 * Math.sqrt(b.time_s / maxBin);
        dots.appendChild(svg("rect", { "class": "bin", x: X(b.intensity) - r, y: Y(b.flops_per_s) - r, width: 2 * r, height: 2 * r,
          fill: R.boundColor(b.bound), "data-bin": i }));
      });
      ch.points.slice().reverse().forEach(function (p, j) {
        var i = ch.points.length - 1 - j;
        if (shown[p.dtype] === false) return;
        dots.appendChild(svg("circle", { "class": "pt" + (p.above_roof ? " above" : ""), cx: X(p.intensity), cy: Y(p.flops_per_s), r: radius(p.time_s),
          fill: R.boundColor(p.bound), "data-point": i }));
      });
      plot.appendChild(dots);
    }
    function pts(list) { return list.map(function (p) { return X(p[0]).toFixed(1) + "," + Y(p[1]).toFixed(1); }).join(" "); }
    function radius(t) { return maxTime > 0 ? 2.5 + 11 * Math.sqrt(t / maxTime) : 3; }

    function showTip(evt) {
      var t = evt.target, rows, title;
      if (t.hasAttribute && t.hasAttribute("data-point")) {
        var p = ch.points[+t.getAttribute("data-point")];
        title = p.name;
        rows = [["module", p.module || "(top level)"], ["input shapes", p.shapes || "—"], ["dtype · phase", p.dtype + " · " + p.phase],
          ["calls", String(p.n)], ["device time", R.time(p.time_s) + (TOTAL ? " (" + R.pct(p.time_s / TOTAL) + ")" : "")],
          ["FLOPs", R.si(p.flops, "FLOP")], ["bytes", R.si(p.bytes, "B")], ["intensity", R.plain(p.intensity) + " FLOP/B"],
          ["achieved", R.si(p.flops_per_s, "FLOP/s") + " · " + R.si(p.bytes_per_s, "B/s")],
          ["efficiency", p.roof === "cache-unknown" ? "served from cache (no cache roof known)" : R.pct(p.efficiency) + " of " + (p.roof === "cache" ? "the cache roof" : "roof") + (p.above_roof ? " (above the roof!)" : "")], ["bound", p.bound],
          ["predicted", R.time(p.predicted_s)], ["source", p.source || "—"]];
      } else if (t.hasAttribute && t.hasAttribute("data-bin")) {
        var b = ch.bins[+t.getAttribute("data-bin")];
        title = b.groups + " smaller op groups (binned)";
        rows = [["largest", b.top], ["dtype · bound", b.dtype + " · " + b.bound], ["calls", String(b.n)], ["device time", R.time(b.time_s)],
          ["intensity", R.plain(b.intensity) + " FLOP/B"], ["achieved", R.si(b.flops_per_s, "FLOP/s")]];
      } else { tip.hidden = true; return; }
      R.clear(tip);
      tip.appendChild(el("div", { "class": "tip-title", text: title }));
      tip.appendChild(el("table", null, rows.map(function (r) { return el("tr", null, el("th", { text: r[0] }), el("td", { text: r[1] })); })));
      tip.hidden = false;
      var box = wrap.getBoundingClientRect();
      var x = evt.clientX - box.left + 16, y = evt.clientY - box.top + 16;
      if (x + 360 > box.width) x = Math.max(4, x - 380);
      if (y + tip.offsetHeight > box.height) y = Math.max(4, y - tip.offsetHeight - 24);
      tip.style.left = x + "px";
      tip.style.top = y + "px";
    }
    root.addEventListener("mouseover", showTip);
    root.addEventListener("mousemove", showTip);
    root.addEventListener("mouseleave", function () { tip.hidden = true; });

    function toData(evt) {
      var box = root.getBoundingClientRect();
      var sx = (evt.clientX - box.left) * W / box.width, sy = (evt.clientY - box.top) * H / box.height;
      return { fx: (sx - M.l) / pw, fy: 1 - (sy - M.t) / ph };
    }
    function zoom(factor, fx, fy) {
      fx = fx === undefined ? 0.5 : Math.min(1, Math.max(0, fx));
      fy = fy === undefined ? 0.5 : Math.min(1, Math.max(0, fy));
      var cx = view.x0 + fx * (view.x1 - view.x0), cy = view.y0 + fy * (view.y1 - view.y0);
      view.x0 = cx - (cx - view.x0) * factor; view.x1 = cx + (view.x1 - cx) * factor;
      view.y0 = cy - (cy - view.y0) * factor; view.y1 = cy + (view.y1 - cy) * factor;
      draw();
    }
    root.addEventListener("wheel", function (evt) {
      evt.preventDefault();
      var d = toData(evt);
      zoom(evt.deltaY < 0 ? 0.85 : 1 / 0.85, d.fx, d.fy);
    }, { passive: false });
    var drag = null;
    root.addEventListener("mousedown", function (evt) { drag = { x: evt.clientX, y: evt.clientY, v: Object.assign({}, view) }; root.classList.add("dragging"); });
    window.addEventListener("mouseup", function () { drag = null; root.classList.remove("dragging"); });
    window.addEventListener("mousemove", function (evt) {
      if (!drag) return;
      var box = root.getBoundingClientRect();
      var dx = (evt.clientX - drag.x) * W / box.width / pw * (drag.v.x1 - drag.v.x0);
      var dy = (evt.clientY - drag.y) * H / box.height / ph * (drag.v.y1 - drag.v.y0);
      view.x0 = drag.v.x0 - dx; view.x1 = drag.v.x1 - dx; view.y0 = drag.v.y0 + dy; view.y1 = drag.v.y1 + dy;
      draw();
    });
    return { node: wrap, draw: draw, zoom: zoom, reset: function () { view = Object.assign({}, home); draw(); } };
  }

  /* ---------- findings ---------- */
  function findingsSection() {
    var sec = R.section("findings", "Doctor's findings", "Ranked by estimated savings; each states how the saving was estimated.");
    if (!D.findings.length) { sec.appendChild(el("p", { "class": "muted", text: "No findings: the doctor found nothing to fix in this report." })); return sec; }
    D.findings.forEach(function (f, i) {
      var ev = Object.keys(f.evidence || {});
      sec.appendChild(el("article", { "class": "finding sev-" + String(f.severity || "").replace(/[^a-z]/g, "") },
        el("div", { "class": "f-head" },
          el("span", { "class": "rank", text: "#" + (i + 1) }),
          el("h3", { text: f.title }),
          el("span", { "class": "saving", text: "saves ≈ " + R.time(f.estimated_savings_s) + (f.share_of_time !== null && f.share_of_time !== undefined ? " (" + R.pct(f.share_of_time) + " of time)" : "") })),
        el("div", { "class": "f-meta" }, el("span", { "class": "pill", text: f.category }), el("span", { "class": "pill sev sev-" + String(f.severity || "").replace(/[^a-z]/g, ""), text: f.severity }),
          el("code", { text: f.rule })),
        f.fix ? el("div", { "class": "fix" }, el("strong", { text: "Fix: " }), f.fix) : null,
        f.locations && f.locations.length ? el("ul", { "class": "locs" }, f.locations.slice(0, 12).map(function (l) { return el("li", null, el("code", { text: l })); }),
          f.locations.length > 12 ? el("li", { "class": "muted", text: "… " + (f.locations.length - 12) + " more" }) : null) : null,
        ev.length ? el("details", null, el("summary", { text: "evidence" }), R.kv(ev.map(function (k) { return [k, f.evidence[k]]; }))) : null,
        f.savings_method ? el("p", { "class": "method", text: "Savings: " + f.savings_method }) : null));
    });
    return sec;
  }

  /* ---------- op table ---------- */
  var COLUMNS = [
    ["index", "#", "num"], ["name", "Op", "str"], ["module", "Module", "str"], ["phase", "Phase", "str"], ["dtype", "dtype", "str"],
    ["shapes", "Input shapes", "str"], ["time_s", "Time", "num"], ["flops", "FLOPs", "num"], ["bytes", "Bytes", "num"],
    ["intensity", "FLOP/B", "num"], ["flops_per_s", "Achieved", "num"], ["efficiency", "% of roof", "num"], ["roof", "Roof", "str"], ["bound", "Bound", "str"],
    ["predicted_s", "Predicted", "num"], ["source", "Source", "str"]
  ];
  if (T.dram_bytes) COLUMNS.splice(9, 0, ["dram_bytes", "DRAM (ncu)", "num"], ["excess", "DRAM / min", "num"]);

  var ROOF_TITLES = {
    dram: "judged against the DRAM roof",
    cache: "beat the DRAM roof with data that fits in the last-level cache: judged against the measured cache roof",
    "cache-unknown": "beat the DRAM roof with data that fits in the last-level cache; these ceilings have no cache roof, so no % of roof"
  };

  function opTableSection() {
    var sec = R.section("ops", "Ops", NOPS.toLocaleString() + " op calls of one step. Click a header to sort; the filter matches op, module, shapes and source.");
    var state = { key: "time_s", dir: -1, page: 0, size: 100, filter: "", bound: "", phase: "" };
    var order = null;
    var search = el("input", { type: "search", id: "op-filter", placeholder: "filter: op, module, shapes, source…", "aria-label": "filter ops" });
    var boundSel = select("bound-filter", "all bounds", uniq(T.bound));
    var phaseSel = select("phase-filter", "all phases", uniq(T.phase));
    var sizeSel = el("select", { id: "page-size", "aria-label": "rows per page" }, [50, 100, 500].map(function (n) {
      var o = el("option", { value: n, text: n + " / page" }); if (n === 100) o.selected = true; return o;
    }));
    var info = el("span", { "class": "muted", id: "op-count" });
    var prev = el("button", { type: "button", id: "page-prev", text: "‹ prev" }), next = el("button", { type: "button", id: "page-next", text: "next ›" });
    var headRow = el("tr", null, COLUMNS.map(function (c) {
      return el("th", { "data-key": c[0], "class": c[2] === "num" ? "n sortable" : "sortable", tabindex: "0", text: c[1] });
    }));
    var body = el("tbody");
    var table = el("table", { "class": "ops", id: "op-table" }, el("thead", null, headRow), body);
    sec.appendChild(el("div", { "class": "table-controls" }, search, boundSel, phaseSel, sizeSel, el("span", { "class": "spacer" }), info, prev, next));
    sec.appendChild(el("div", { "class": "table-scroll tall" }, table));

    function uniq(col) {
      var seen = {}, out = [];
      (col || []).forEach(function (i) { if (!seen[i]) { seen[i] = 1; out.push(S[i]); } });
      return out.sort();
    }
    function select(id, all, values) {
      return el("select", { id: id }, el("option", { value: "", text: all }), values.map(function (v) { return el("option", { value: v, text: v }); }));
    }
    var WORK_COLUMNS = { flops: 1, bytes: 1, intensity: 1, flops_per_s: 1, efficiency: 1 };
    function cell(key, i) {
      var v = T[key][i];
      if (WORK_COLUMNS[key] && S[T.bound[i]] === "unmodeled") return el("td", { "class": "n", title: "no formula for this op: its work is unknown", text: "?" });
      if (key === "bytes" && T.no_size && T.no_size[i]) return el("td", { "class": "n", title: "a collective whose message size the trace did not record: its bytes are unknown, not 0", text: "?" });
      if (WORK_COLUMNS[key] && key !== "bytes" && S[T.bound[i]] === "communication") return el("td", { "class": "n", title: "a collective: its time is the network's, not a roofline's; bytes are its message", text: "-" });
      switch (key) {
        case "name": return el("td", { "class": "opname", text: S[v] });
        case "module": return el("td", { "class": "mod", title: S[v], text: S[v] || "(top level)" });
        case "phase": case "dtype": case "shapes": return el("td", { "class": key, text: S[v] });
        case "roof": return el("td", { "class": "roof", title: ROOF_TITLES[S[v]] || "", text: S[v] === undefined ? "dram" : S[v] });
        case "source": return el("td", { "class": "src", title: S[v], text: S[v] });
        case "bound": return el("td", null, R.badge(S[v]));
        case "time_s": return el("td", { "class": "n" }, R.time(v), TOTAL ? el("span", { "class": "share", text: R.pct(v / TOTAL) }) : null);
        case "predicted_s": return el("td", { "class": "n", text: R.time(v) });
        case "flops": return el("td", { "class": "n", text: R.si(v, "") });
        case "bytes": return el("td", { "class": "n", text: R.si(v, "B") });
        case "dram_bytes": return el("td", { "class": "n", title: "DRAM bytes Nsight Compute measured for this op's kernels", text: v > 0 ? R.si(v, "B") : "-" });
        case "excess": return el("td", { "class": "n", title: "measured DRAM bytes / modelled minimum", text: v > 0 ? "x" + v.toFixed(2) : "-" });
        case "intensity": return el("td", { "class": "n", text: R.plain(v) });
        case "flops_per_s": return el("td", { "class": "n", title: R.si(T.bytes_per_s[i], "B/s"), text: R.si(v, "FLOP/s") });
        case "efficiency": if (T.roof && S[T.roof[i]] === "cache-unknown") return el("td", { "class": "n", title: ROOF_TITLES["cache-unknown"], text: "from cache" });
          return el("td", { "class": "n eff" }, el("span", { "class": "effbar" + (T.above_roof[i] ? " above" : ""), style: "width:" + Math.min(100, v * 100).toFixed(0) + "%" }),
          el("span", { "class": "efftext", text: R.pct(v, 0) }));
        default: return el("td", { "class": "n", text: String(v) });
      }
    }
    function matches(i, q, qb, qp) {
      if (qb && S[T.bound[i]] !== qb) return false;
      if (qp && S[T.phase[i]] !== qp) return false;
      if (!q) return true;
      return (S[T.name[i]] + " " + S[T.module[i]] + " " + S[T.shapes[i]] + " " + S[T.source[i]]).toLowerCase().indexOf(q) >= 0;
    }
    function recompute() {
      var q = state.filter.toLowerCase(), rows = [];
      for (var i = 0; i < NOPS; i++) if (matches(i, q, state.bound, state.phase)) rows.push(i);
      var col = T[state.key], dir = state.dir, isStr = COLUMNS.filter(function (c) { return c[0] === state.key; })[0][2] === "str";
      rows.sort(function (a, b) {
        var va = isStr ? S[col[a]] : col[a], vb = isStr ? S[col[b]] : col[b];
        if (va < vb) return -dir;
        if (va > vb) return dir;
        return a - b;
      });
      order = rows;
    }
    function render() {
      R.clear(body);
      var pages = Math.max(1, Math.ceil(order.length / state.size));
      state.page = Math.min(state.page, pages - 1);
      var start = state.page * state.size, end = Math.min(order.length, start + state.size);
      var frag = document.createDocumentFragment();
      for (var r = start; r < end; r++) {
        var i = order[r];
        frag.appendChild(el("tr", { "data-row": i }, COLUMNS.map(function (c) { return cell(c[0], i); })));
      }
      body.appendChild(frag);
      if (!order.length) body.appendChild(el("tr", null, el("td", { colspan: COLUMNS.length, "class": "muted", text: "no op matches the filter" })));
      info.textContent = (order.length ? (start + 1).toLocaleString() + "–" + end.toLocaleString() : "0") + " of " + order.length.toLocaleString() +
        (order.length !== NOPS ? " (filtered from " + NOPS.toLocaleString() + ")" : "") + " · page " + (state.page + 1) + "/" + pages;
      prev.disabled = state.page === 0;
      next.disabled = state.page >= pages - 1;
      Array.prototype.forEach.call(headRow.children, function (th) {
        var k = th.getAttribute("data-key");
        th.setAttribute("aria-sort", k === state.key ? (state.dir > 0 ? "ascending" : "descending") : "none");
      });
    }
    function sortBy(key) {
      if (state.key === key) state.dir = -state.dir;
      else { state.key = key; state.dir = COLUMNS.filter(function (c) { return c[0] === key; })[0][2] === "str" ? 1 : -1; }
      state.page = 0; recompute(); render();
    }
    headRow.addEventListener("click", function (e) { var k = e.target.getAttribute("data-key"); if (k) sortBy(k); });
    headRow.addEventListener("keydown", function (e) { var k = e.target.getAttribute("data-key"); if (k && (e.key === "Enter" || e.key === " ")) { e.preventDefault(); sortBy(k); } });
    var timer = null;
    search.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { state.filter = search.value.trim(); state.page = 0; recompute(); render(); }, NOPS > 20000 ? 200 : 60);
    });
    boundSel.addEventListener("change", function () { state.bound = boundSel.value; state.page = 0; recompute(); render(); });
    phaseSel.addEventListener("change", function () { state.phase = phaseSel.value; state.page = 0; recompute(); render(); });
    sizeSel.addEventListener("change", function () { state.size = +sizeSel.value; state.page = 0; render(); });
    prev.addEventListener("click", function () { state.page--; render(); });
    next.addEventListener("click", function () { state.page++; render(); });
    recompute(); render();
    return sec;
  }

  /* ---------- module tree ---------- */
  function moduleSection() {
    var tree = D.modules;
    var sec = R.section("modules", "Module tree", "Device time rolled up the module path; click a row to expand.");
    if (!tree || !tree.children.length) { sec.appendChild(el("p", { "class": "muted", text: "No module paths recorded." })); return sec; }
    var total = tree.time_s || 1;
    var list = el("div", { "class": "tree", role: "tree" });
    function row(node, depth, path) {
      var kids = null, open = false;
      var hasKids = node.children && node.children.length;
      var caret = el("span", { "class": "caret", text: hasKids ? "▸" : "" });
      var line = el("div", { "class": "trow", role: "treeitem", style: "padding-left:" + (depth * 16 + 6) + "px", title: path },
        caret, el("span", { "class": "tname", text: node.name }),
        el("span", { "class": "tbar" }, el("span", { style: "width:" + (100 * node.time_s / total).toFixed(1) + "%" })),
        el("span", { "class": "tnum", text: R.time(node.time_s) }), el("span", { "class": "tnum share", text: R.pct(node.time_s / total) }),
        el("span", { "class": "tnum muted", text: R.si(node.flops, "FLOP") }), el("span", { "class": "tnum muted", text: node.n + " calls" }));
      var wrapNode = el("div", null, line);
      function toggle() {
        if (!hasKids) return;
        open = !open;
        caret.textContent = open ? "▾" : "▸";
        if (open && !kids) {
          kids = el("div");
          node.children.slice(0, 200).forEach(function (c) { kids.appendChild(row(c, depth + 1, path ? path + "." + c.name : c.name)); });
          if (node.children.length > 200) kids.appendChild(el("div", { "class": "muted trow", text: "… " + (node.children.length - 200) + " more modules" }));
          wrapNode.appendChild(kids);
        }
        if (kids) kids.hidden = !open;
      }
      line.addEventListener("click", toggle);
      if (depth < 1) toggle();
      return wrapNode;
    }
    list.appendChild(row(tree, 0, ""));
    sec.appendChild(list);
    return sec;
  }

  /* ---------- predicted vs measured ---------- */
  function timingSection() {
    var s = D.summary;
    var sec = R.section("timing", "Predicted vs measured", "Predicted time per op = max(FLOPs / peak, bytes / bandwidth, launch overhead).");
    var rows = [
      ["device time, sum of ops", R.time(TOTAL)],
      ["predicted by the roofline", R.time(s.predicted_total_s) + (TOTAL ? " (" + R.pct(s.predicted_total_s / TOTAL) + " of measured)" : "")],
      D.step_time ? ["step time (no profiler)", timingText(D.step_time)] : null,
      D.profiled_step_time ? ["step time (profiled)", timingText(D.profiled_step_time)] : null,
      s.kernel_time_total_s !== null && s.kernel_time_total_s !== undefined ? ["kernel time, total", R.time(s.kernel_time_total_s)] : null,
      s.idle_time_s !== null && s.idle_time_s !== undefined ? ["device idle", R.time(s.idle_time_s)] : null,
      ["how timed", s.timing_method || "—"]
    ];
    sec.appendChild(R.kv(rows));
    var top = D.top_predicted;
    if (top.length) {
      var max = 0;
      top.forEach(function (o) { max = Math.max(max, o.time_s, o.predicted_s); });
      sec.appendChild(el("h3", { text: "Largest ops: measured (bar) vs predicted (mark)" }));
      sec.appendChild(el("div", { "class": "pvm" }, top.map(function (o) {
        return el("div", { "class": "pvm-row" },
          el("span", { "class": "pvm-name", title: o.module, text: o.name + (o.module ? "  " + o.module : "") }),
          el("span", { "class": "pvm-track" },
            el("span", { "class": "pvm-bar", style: "width:" + (100 * o.time_s / max).toFixed(1) + "%;background:" + R.boundColor(o.bound) }),
            el("span", { "class": "pvm-mark", style: "left:" + (100 * o.predicted_s / max).toFixed(1) + "%" })),
          el("span", { "class": "tnum", text: R.time(o.time_s) + " / " + R.time(o.predicted_s) }));
      })));
    }
    if (s.kernel_classes) sec.appendChild(kernelClassTable(s.kernel_classes));
    return sec;
  }
  function kernelClassTable(kc) {
    var span = kc.span_s || 1;
    function opt(v, f) { return v === null || v === undefined ? "-" : f(v); }
    var rows = kc.classes.map(function (c) {
      return [c.name, R.time(c.time_s), R.pct(c.time_s / span), c.kernels.toFixed(1).replace(/\.0$/, ""),
        opt(c.bytes, function (v) { return R.si(v, "B"); }), opt(c.achieved_bytes_per_s, function (v) { return R.si(v, "B/s"); }),
        opt(c.share_of_roof, function (v) { return R.pct(v); })];
    });
    rows.push(["between kernels", R.time(kc.gaps_s), R.pct(kc.gaps_s / span), "", "", "", ""]);
    if (kc.overlapped_s > 0) rows.push(["(ran under an earlier kernel)", R.time(kc.overlapped_s), "", "", "", "", ""]);
    rows.push(["span, first to last kernel", R.time(kc.span_s), "100%", kc.kernels.toFixed(1).replace(/\.0$/, ""), "", "", ""]);
    var box = el("div", null, el("h3", { text: "Device time by kernel class (per " + (kc.unit || "step") + ")" }),
      simpleTable(["class", "time", "share of span", "kernels", "bytes (model)", "achieved", "% of roof"], rows,
        [false, true, true, true, true, true, true]));
    box.appendChild(el("p", { "class": "muted", text: kc.method }));
    return box;
  }
  function timingText(t) {
    return R.time(t.median_s) + " median ± " + R.time(t.spread_s) + " IQR (n=" + t.n + ")" + (t.method ? " — " + t.method : "");
  }

  /* ---------- memory ---------- */
  function trafficSection() {
    var n = D.ncu;
    var sec = R.section("traffic", "Memory access (Nsight Compute)", n.source ? "Counters from " + n.source : null);
    sec.appendChild(el("div", { "class": "stats" },
      R.stat("Kernels joined", R.pct(n.joined_share), n.kernels_joined + " of " + n.kernels + " ncu kernels"),
      R.stat("DRAM bytes", R.si(n.dram_bytes, "B"), n.ops_measured + " ops measured"),
      n.l2_bytes !== null && n.l2_bytes !== undefined ? R.stat("L2 bytes", R.si(n.l2_bytes, "B")) : null,
      R.stat("Modelled minimum", R.si(n.modelled_bytes, "B"), "the same ops")));
    (n.notes || []).forEach(function (t) { sec.appendChild(el("p", { "class": "note", text: t })); });
    if (n.images) {
      sec.appendChild(el("h3", { text: "Hierarchical roofline: each op at its modelled, DRAM and L2 intensity" }));
      sec.appendChild(el("img", { src: n.images.roofline, alt: "hierarchical roofline", style: "max-width:100%" }));
      sec.appendChild(el("h3", { text: "Bytes per level against the modelled minimum" }));
      sec.appendChild(el("img", { src: n.images.memory, alt: "memory-access view", style: "max-width:100%" }));
    }
    var cols = ["name", "ops", "time", "modelled min", "DRAM", "L2", "DRAM / min", "L2 hit"];
    function rows(groups) {
      return groups.map(function (g) {
        return [g.name, String(g.ops), R.time(g.time_s), R.si(g.modelled_bytes, "B"), R.si(g.dram_bytes, "B"),
          g.l2_bytes === null || g.l2_bytes === undefined ? "-" : R.si(g.l2_bytes, "B"),
          g.excess_ratio === null || g.excess_ratio === undefined ? "-" : "x" + g.excess_ratio.toFixed(2),
          g.l2_hit_rate === null || g.l2_hit_rate === undefined ? "-" : R.pct(g.l2_hit_rate)];
      });
    }
    sec.appendChild(el("h3", { text: "By op" }));
    sec.appendChild(simpleTable(cols, rows(n.by_op || [])));
    sec.appendChild(el("h3", { text: "By module" }));
    sec.appendChild(simpleTable(cols, rows(n.by_module || [])));
    sec.appendChild(el("p", { "class": "muted", text: n.method }));
    return sec;
  }
  function memorySection() {
    var m = D.memory;
    var sec = R.section("memory", "Memory", m.counter ? "Counter: " + m.counter : null);
    var measured = m.peak_allocated_bytes > 0 || (m.timeline && m.timeline.length > 0);
    sec.appendChild(el("div", { "class": "stats" },
      R.stat("Peak allocated", measured ? R.si(m.peak_allocated_bytes, "B") : "not measured", measured ? null : (m.counter || "no memory counter in this report")),
      m.peak_reserved_bytes !== null && m.peak_reserved_bytes !== undefined ? R.stat("Peak reserved", R.si(m.peak_reserved_bytes, "B")) : null,
      m.reference_peak_bytes !== null && m.reference_peak_bytes !== undefined ? R.stat("Reference peak", R.si(m.reference_peak_bytes, "B"), m.reference_counter) : null));
    var tl = (m.timeline || []).filter(function (p) { return p && p.length >= 2 && isFinite(p[0]) && isFinite(p[1]); });
    if (tl.length > 1) sec.appendChild(memoryChart(tl, m.peak_allocated_bytes));
    else sec.appendChild(el("p", { "class": "muted", text: "No memory timeline recorded." }));
    if (m.peak_live_tensors && m.peak_live_tensors.length) {
      sec.appendChild(el("h3", { text: "Largest tensors alive at the peak" }));
      sec.appendChild(simpleTable(["bytes", "shape", "dtype", "op", "module", "source"], m.peak_live_tensors.slice(0, 25).map(function (t) {
        return [R.si(t.bytes, "B"), "[" + (t.shape || []).join(",") + "]", t.dtype, t.op, t.module, t.source || ""];
      })));
    }
    return sec;
  }
  function memoryChart(tl, peak) {
    var W = 960, H = 220, M = { l: 70, r: 16, t: 14, b: 34 };
    var t0 = tl[0][0], t1 = tl[tl.length - 1][0], maxB = 0, peakAt = tl[0];
    tl.forEach(function (p) { if (p[1] > maxB) { maxB = p[1]; peakAt = p; } });
    maxB = Math.max(maxB, peak || 0) * 1.08 || 1;
    var span = (t1 - t0) || 1;
    function X(t) { return M.l + (t - t0) / span * (W - M.l - M.r); }
    function Y(b) { return M.t + (1 - b / maxB) * (H - M.t - M.b); }
    var step = Math.max(1, Math.floor(tl.length / 4000));
    var d = [], prevY = null;
    for (var i = 0; i < tl.length; i += step) {
      var x = X(tl[i][0]).toFixed(1), y = Y(tl[i][1]).toFixed(1);
      d.push((i ? "L" : "M") + x + " " + (prevY === null ? y : prevY) + (i ? "L" + x + " " + y : ""));
      prevY = y;
    }
    var root = svg("svg", { viewBox: "0 0 " + W + " " + H, "class": "mem-svg", role: "img", "aria-label": "memory timeline" });
    [0, 0.25, 0.5, 0.75, 1].forEach(function (f) {
      var y = Y(maxB / 1.08 * f);
      root.appendChild(svg("line", { x1: M.l, x2: W - M.r, y1: y, y2: y, "class": "gridline" }));
      root.appendChild(svg("text", { x: M.l - 6, y: y + 4, "text-anchor": "end", "class": "tick", text: R.si(maxB / 1.08 * f, "B", 2) }));
    });
    var area = d.join("") + "L" + X(tl[tl.length - 1][0]).toFixed(1) + " " + Y(0) + "L" + X(t0) + " " + Y(0) + "Z";
    root.appendChild(svg("path", { d: area, "class": "mem-area" }));
    root.appendChild(svg("path", { d: d.join(""), "class": "mem-line" }));
    root.appendChild(svg("circle", { cx: X(peakAt[0]), cy: Y(peakAt[1]), r: 5, "class": "mem-peak" }));
    var nearRight = X(peakAt[0]) > W - 220;
    root.appendChild(svg("text", { x: X(peakAt[0]) + (nearRight ? -10 : 10), y: Y(peakAt[1]) + 20, "class": "mem-peak-label", "text-anchor": nearRight ? "end" : "start",
      text: "peak " + R.si(peakAt[1], "B") + " at " + R.time(peakAt[0] - t0) }));
    root.appendChild(svg("text", { x: M.l, y: H - 8, "class": "tick", text: "0" }));
    root.appendChild(svg("text", { x: W - M.r, y: H - 8, "text-anchor": "end", "class": "tick", text: R.time(span) }));
    root.appendChild(svg("text", { x: (W) / 2, y: H - 8, "text-anchor": "middle", "class": "axis-title", text: "time in the profiled window" }));
    return el("div", { "class": "chart-wrap" }, root);
  }

  /* ---------- syncs ---------- */
  function syncSection() {
    var sec = R.section("syncs", "Host–device syncs", "Each place the host waited for the device; a sync in the step loop serialises host and GPU.");
    if (!D.syncs.length) { sec.appendChild(el("p", { "class": "muted", text: "No sync sites recorded." })); return sec; }
    sec.appendChild(simpleTable(["kind", "location", "count", "per step", "stall"], D.syncs.map(function (s) {
      return [s.kind, el("code", { text: s.location }), String(s.count), s.per_step === null || s.per_step === undefined ? "—" : R.plain(s.per_step), R.time(s.stall_s)];
    }), [false, false, true, true, true]));
    return sec;
  }

  /* ---------- ranks ---------- */
  var RANK_KNOWN = ["rank", "hostname", "device_name", "step_time_s", "compute_time_s", "communication_time_s", "idle_time_s",
    "exposed_communication_s", "hidden_communication_share", "straggler", "slowest_op"];
  var RANK_PAGE = 64;  // a thousand-rank job: bars and rows a page at a time, stragglers named above them
  function rankSection() {
    var ranks = D.ranks;
    var sec = R.section("ranks", "Ranks", ranks.length === 1 ?
      "This rank's compute, communication and idle time per step (one rank's trace: its communication includes any wait for the other ranks)." :
      ranks.length + " ranks side by side: compute, communication and idle time per step.");
    var maxStep = 0;
    ranks.forEach(function (r) {
      var parts = (r.compute_time_s || 0) + (r.communication_time_s || 0) + (r.idle_time_s || 0);
      maxStep = Math.max(maxStep, r.step_time_s || 0, parts);
    });
    var slow = ranks.filter(function (r) { return r.straggler; }).map(function (r) { return "rank " + r.rank; });
    if (ranks.length > RANK_PAGE) {
      sec.appendChild(el("p", { "class": "rank-stragglers", text: slow.length ? "Stragglers: " + slow.slice(0, 20).join(", ") +
        (slow.length > 20 ? " and " + (slow.length - 20) + " more" : "") : "No straggler." }));
    }
    function bar(r, i) {
      var segs = [["compute", r.compute_time_s, "#8250df"], ["communication", r.communication_time_s, "#0969da"], ["idle", r.idle_time_s, "#d0d7de"]];
      return el("div", { "class": "rank-row" + (r.straggler ? " straggler" : "") },
        el("span", { "class": "rank-name", text: "rank " + (r.rank !== undefined ? r.rank : i) + (r.straggler ? " · straggler" : "") }),
        el("span", { "class": "rank-track" }, segs.filter(function (s) { return R.num(s[1]); }).map(function (s) {
          return el("span", { "class": "seg", title: s[0] + ": " + R.time(s[1]), style: "width:" + (maxStep ? 100 * s[1] / maxStep : 0).toFixed(2) + "%;background:" + s[2] });
        })),
        el("span", { "class": "tnum", text: R.time(r.step_time_s) }));
    }
    var keys = RANK_KNOWN.filter(function (k) { return ranks.some(function (r) { return k in r; }); });
    ranks.forEach(function (r) { Object.keys(r).forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); }); });
    function row(r) {
      return keys.map(function (k) {
        var v = r[k];
        if (v === undefined) return "";
        if (/_s$/.test(k)) return R.time(v);
        if (/share$/.test(k)) return R.pct(v);
        if (typeof v === "boolean") return v ? "yes" : "no";
        return R.value(v);
      });
    }
    var bars = el("div", { "class": "ranks" }), table = el("div");
    var page = 0, pages = Math.max(1, Math.ceil(ranks.length / RANK_PAGE));
    var prev = el("button", { type: "button", id: "rank-prev", text: "‹ prev" }), next = el("button", { type: "button", id: "rank-next", text: "next ›" });
    var label = el("span", { id: "rank-page", "class": "muted" });
    function render() {
      var start = page * RANK_PAGE, shown = ranks.slice(start, start + RANK_PAGE);
      R.clear(bars);
      shown.forEach(function (r, i) { bars.appendChild(bar(r, start + i)); });
      R.clear(table);
      table.appendChild(simpleTable(keys, shown.map(row)));
      label.textContent = "ranks " + (start + 1) + "–" + (start + shown.length) + " of " + ranks.length + " · page " + (page + 1) + "/" + pages;
      prev.disabled = page === 0;
      next.disabled = page >= pages - 1;
    }
    prev.addEventListener("click", function () { page--; render(); });
    next.addEventListener("click", function () { page++; render(); });
    if (pages > 1) sec.appendChild(el("div", { "class": "table-controls" }, el("span", { "class": "spacer" }), label, prev, next));
    sec.appendChild(bars);
    sec.appendChild(el("div", { "class": "legend" }, [["compute", "#8250df"], ["communication", "#0969da"], ["idle", "#d0d7de"]].map(function (s) {
      return el("span", null, el("i", { style: "background:" + s[1] }), s[0]);
    })));
    sec.appendChild(table);
    render();
    return sec;
  }

  /* ---------- environment and ceilings ---------- */
  function ceilingsBlock(c, title) {
    var ds = c.datasheet;
    var ceilRows = [["memory bandwidth", R.si(c.memory_bandwidth_bytes_per_s, "B/s"), ds ? R.si(ds.memory_bandwidth_bytes_per_s, "B/s") : "—",
      ds && ds.memory_bandwidth_bytes_per_s ? R.pct(c.memory_bandwidth_bytes_per_s / ds.memory_bandwidth_bytes_per_s, 0) : "—"]];
    var dts = Object.keys(c.peak_flops_per_s || {});
    if (ds) Object.keys(ds.peak_flops_per_s || {}).forEach(function (d) { if (dts.indexOf(d) < 0) dts.push(d); });
    dts.forEach(function (d) {
      var m = (c.peak_flops_per_s || {})[d], v = ds ? ds.peak_flops_per_s[d] : undefined;
      ceilRows.push(["peak " + d, m !== undefined ? R.si(m, "FLOP/s") : "—", v !== undefined ? R.si(v, "FLOP/s") : "—", m && v ? R.pct(m / v, 0) : "—"]);
    });
    if (c.cache_bandwidth_bytes_per_s) ceilRows.push(["cache bandwidth (last level, " + R.si(c.cache_bytes, "B") + ")", R.si(c.cache_bandwidth_bytes_per_s, "B/s"), "—", "—"]);
    if (c.shared_memory_bandwidth_bytes_per_s) ceilRows.push(["shared memory bandwidth (all SMs)", R.si(c.shared_memory_bandwidth_bytes_per_s, "B/s"), "—", "—"]);
    else if (c.shared_memory_method) ceilRows.push(["shared memory bandwidth", c.shared_memory_method, "—", "—"]);
    ceilRows.push(["launch overhead", R.time(c.launch_overhead_s), "—", "—"]);
    if (c.launch_overhead_graph_s !== null && c.launch_overhead_graph_s !== undefined) ceilRows.push(["launch overhead (CUDA graph)", R.time(c.launch_overhead_graph_s), "—", "—"]);
    Object.keys(c.bandwidth_by_kernel_bytes_per_s || {}).forEach(function (k) {
      ceilRows.push(["bandwidth: " + k, R.si(c.bandwidth_by_kernel_bytes_per_s[k], "B/s"), "—", "—"]);
    });
    return [el("h3", { text: title }),
      simpleTable(["ceiling", c.source === "datasheet" ? "used" : "measured", "datasheet", "measured / datasheet"], ceilRows, [false, true, true, true]),
      c.method ? el("p", { "class": "method" }, el("strong", { text: "Method: " }), c.method) : null,
      ds ? el("p", { "class": "method" }, el("strong", { text: "Datasheet: " }), ds.name + " — " + ds.source) : null,
      c.measured_at ? el("p", { "class": "method", text: "Measured " + c.measured_at + (c.torch_version ? " with torch " + c.torch_version : "") }) : null];
  }

  function environmentSection() {
    var env = D.environment, c = D.ceilings, byDevice = D.ceilings_by_device || [];
    function envValue(k) { return env[k] || ((env.unknown || []).indexOf(k) >= 0 ? "not recorded in the trace" : ""); }
    var sec = R.section("environment", "Environment and ceilings", byDevice.length
      ? "The roofs every efficiency is measured against: each op against those of the GPU its kernels ran on; kernel-class % of roof and the doctor's roof-based estimates use " + (c.device_name || c.device) + "'s."
      : "The roofs every efficiency is measured against.");
    var name = c.device_name || c.device;
    var blocks = byDevice.length
      ? [].concat.apply([], byDevice.map(function (g) { return ceilingsBlock(g.ceilings, "Ceilings of device " + g.device + ": " + (g.ceilings.device_name || g.ceilings.device) + " (" + (g.ceilings.source || "?") + ")"); }))
      : ceilingsBlock(c, "Ceilings" + (name ? " of " + name : "") + " (" + (c.source || "?") + ")");
    var grid = el("div", { "class": "two" },
      el("div", null, blocks),
      el("div", null, el("h3", { text: "Environment" }), R.kv([
        ["device", env.device_name || c.device_name || c.device], ["torch", envValue("torch_version")],
        ["python", envValue("python_version")], ["platform", envValue("platform")], ["host", envValue("hostname")],
        ["time", envValue("timestamp")],
        env.world_size ? ["rank / world", (env.rank === null ? "?" : env.rank) + " / " + env.world_size + (env.backend ? " (" + env.backend + ")" : "")] : null,
        ["command", el("code", { text: env.command_line || "—" })]
      ])));
    sec.appendChild(grid);
    return sec;
  }

  function simpleTable(head, rows, numeric) {
    return el("div", { "class": "table-scroll" }, el("table", { "class": "simple" },
      el("thead", null, el("tr", null, head.map(function (h, i) { return el("th", { "class": numeric && numeric[i] ? "n" : "", text: h }); }))),
      el("tbody", null, rows.map(function (r) {
        return el("tr", null, r.map(function (v, i) { return el("td", { "class": numeric && numeric[i] ? "n" : "" }, v instanceof Node ? v : String(v === null || v === undefined ? "" : v)); }));
      }))));
  }

  try {
    build();
    window.__rooflineReadyAt = Date.now();
    window.__rooflineReady = true;
  } catch (err) {
    var app = document.getElementById("app");
    R.clear(app);
    app.appendChild(el("pre", { "class": "error", text: "This report could not be displayed: " + err }));
    throw err;
  }
})();
