/* roofline diff page: total verdict, per class / op / module deltas, findings that appeared or went away. */
"use strict";
(function () {
  var el = R.el, D = R.readData(), t = D.total;

  function build() {
    var app = document.getElementById("app");
    R.clear(app);
    app.appendChild(el("header", { "class": "top" }, el("div", { "class": "brand", text: "roofline diff" }),
      el("h1", null, D.a_label, el("span", { "class": "muted", text: "  →  " }), D.b_label)));
    (D.warnings || []).forEach(function (w) { app.appendChild(el("p", { "class": "bad", text: "warning: " + w })); });
    (D.notes || []).forEach(function (n) { app.appendChild(el("p", { "class": "method", text: n })); });
    app.appendChild(totalSection());
    app.appendChild(rowsSection("classes", "By bound class", D.classes, D.classes.length));
    app.appendChild(rowsSection("ops", "Ops (" + (D.op_key || "name @ module") + ")", D.ops, D.n_ops));
    if (D.modules && D.modules.length) app.appendChild(rowsSection("modules", "Modules", D.modules, D.n_modules));
    app.appendChild(findingsSection());
    app.appendChild(el("footer", { text: "roofline · self-contained page: no network requests, data inlined" }));
  }

  function sized(side) { return side.unsized ? (side.bytes ? "≥" + R.si(side.bytes, "B") : "?") : R.si(side.bytes, "B"); }
  function cls(delta) { return delta > 0 ? "bad" : delta < 0 ? "good" : ""; }

  function totalSection() {
    var sec = R.section("total", "Total", t.quantity);
    sec.appendChild(el("div", { "class": "stats" },
      R.stat("A", R.time(t.a_total_s)), R.stat("B", R.time(t.b_total_s)),
      R.stat("Δ time", R.signedTime(t.delta_s), R.signedPct(t.delta_pct), cls(t.delta_s)),
      R.stat("Run-to-run noise", R.time(t.noise_s), "change must exceed this"),
      R.stat("FLOPs A → B", R.si(D.work.b_flops, "FLOP"), "was " + R.si(D.work.a_flops, "FLOP")),
      R.stat("Bytes A → B", R.si(D.work.b_bytes, "B"), "was " + R.si(D.work.a_bytes, "B"))));
    sec.appendChild(el("p", { "class": "method", text: "Noise: " + t.noise_method }));
    if (t.threshold_pct !== null && t.threshold_pct !== undefined) {
      sec.appendChild(el("div", { "class": "verdict " + (t.failed ? "fail" : "pass"), id: "verdict",
        text: "Gate --fail-above " + t.threshold_pct + "%: " + (t.failed ? "FAIL" : "pass") + " — " + t.reason }));
    }
    return sec;
  }

  function rowsSection(id, title, rows, total) {
    var sec = R.section(id, title, rows.length < total ? "largest " + rows.length + " of " + total + " changes by |Δ time|" : "sorted by |Δ time|");
    if (!rows.length) { sec.appendChild(el("p", { "class": "muted", text: "nothing to compare" })); return sec; }
    var head = ["", "time A", "time B", "Δ time", "Δ %", "FLOPs A → B", "bytes A → B", "% of roof A → B", "bound"];
    var max = 0;
    rows.forEach(function (r) { max = Math.max(max, Math.abs(r.delta_time_s)); });
    var body = el("tbody");
    var shown = 0;
    function more(n) {
      rows.slice(shown, shown + n).forEach(function (r) {
        var a = r.a, b = r.b, c = cls(r.delta_time_s);
        body.appendChild(el("tr", null,
          el("td", { "class": "opname key", text: r.key }),
          el("td", { "class": "n", text: a ? R.time(a.time_s) : "—" }),
          el("td", { "class": "n", text: b ? R.time(b.time_s) : "—" }),
          el("td", { "class": "n delta-" + c }, R.signedTime(r.delta_time_s),
            el("span", { "class": "dbar " + c, style: "width:" + (max ? 60 * Math.abs(r.delta_time_s) / max : 0).toFixed(0) + "px" })),
          el("td", { "class": "n delta-" + c, text: r.status === "added" || r.status === "removed" ? r.status : R.signedPct(r.delta_time_pct) }),
          el("td", { "class": "n", text: a && b ? R.si(a.flops, "") + " → " + R.si(b.flops, "") : "" }),
          el("td", { "class": "n", title: a && b && (a.unsized || b.unsized) ? "?: collectives whose message size the trace did not record" : null, text: a && b ? sized(a) + " → " + sized(b) : "" }),
          el("td", { "class": "n", text: a && b ? R.pct(a.efficiency, 0) + " → " + R.pct(b.efficiency, 0) : "" }),
          el("td", null, r.bound_changed ? [R.badge(a.bound), " → ", R.badge(b.bound)] : R.badge((a || b).bound))));
      });
      shown = Math.min(rows.length, shown + n);
      moreBtn.hidden = shown >= rows.length;
    }
    var moreBtn = el("button", { type: "button", text: "show more", onclick: function () { more(100); } });
    sec.appendChild(el("div", { "class": "table-scroll tall" }, el("table", { "class": "simple" },
      el("thead", null, el("tr", null, head.map(function (h, i) { return el("th", { "class": i > 0 && i < 8 ? "n" : "", text: h }); }))), body)));
    sec.appendChild(el("div", { "class": "table-controls" }, moreBtn));
    more(25);
    return sec;
  }

  function findingsSection() {
    var sec = R.section("findings", "Findings", "Doctor findings present in only one of the two reports.");
    [["Appeared in B", D.findings_appeared, "bad"], ["Went away in B", D.findings_gone, "good"]].forEach(function (g) {
      sec.appendChild(el("h3", { text: g[0] + " (" + g[1].length + ")" }));
      if (!g[1].length) { sec.appendChild(el("p", { "class": "muted", text: "none" })); return; }
      g[1].forEach(function (f) {
        sec.appendChild(el("article", { "class": "finding" },
          el("div", { "class": "f-head" }, el("h3", { text: f.title }), el("span", { "class": "delta-" + g[2], text: "≈ " + R.time(f.estimated_savings_s) })),
          el("div", { "class": "f-meta" }, el("code", { text: f.rule }), f.locations.slice(0, 5).map(function (l) { return el("code", { text: l }); })),
          f.fix ? el("div", { "class": "fix" }, el("strong", { text: "Fix: " }), f.fix) : null));
      });
    });
    return sec;
  }

  build();
  window.__rooflineReady = true;
})();
