/* roofline report helpers: DOM building and number formatting. Hand-written, no dependencies.
   Every string from the report goes into the page through text nodes, never as markup. */
"use strict";
var R = (function () {
  var SVGNS = "http://www.w3.org/2000/svg";

  function el(tag, attrs) {
    var node = document.createElement(tag);
    setAttrs(node, attrs);
    appendKids(node, Array.prototype.slice.call(arguments, 2));
    return node;
  }
  function svg(tag, attrs) {
    var node = document.createElementNS(SVGNS, tag);
    setAttrs(node, attrs);
    appendKids(node, Array.prototype.slice.call(arguments, 2));
    return node;
  }
  function setAttrs(node, attrs) {
    if (!attrs) return;
    for (var k in attrs) {
      if (!Object.prototype.hasOwnProperty.call(attrs, k) || attrs[k] === null || attrs[k] === undefined) continue;
      if (k === "text") node.textContent = String(attrs[k]);
      else if (k.slice(0, 2) === "on") node.addEventListener(k.slice(2), attrs[k]);
      else node.setAttribute(k, attrs[k]);
    }
  }
  function appendKids(node, kids) {
    kids.forEach(function (kid) {
      if (kid === null || kid === undefined || kid === false) return;
      if (Array.isArray(kid)) { appendKids(node, kid); return; }
      node.appendChild(typeof kid === "object" ? kid : document.createTextNode(String(kid)));
    });
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  function num(x) { return typeof x === "number" && isFinite(x) ? x : null; }

  function si(x, unit, digits) {
    x = num(x);
    if (x === null) return "—";
    if (x === 0) return "0 " + unit;
    var prefixes = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
    var a = Math.abs(x);
    for (var i = 0; i < prefixes.length; i++) {
      if (a >= prefixes[i][0]) return trim(x / prefixes[i][0], digits) + " " + prefixes[i][1] + unit;
    }
    return trim(x, digits) + " " + unit;
  }
  function trim(x, digits) {
    digits = digits || 3;
    var a = Math.abs(x);
    if (a >= 100) return x.toFixed(Math.max(0, digits - 3));
    if (a >= 10) return x.toFixed(Math.max(0, digits - 2));
    if (a >= 1) return x.toFixed(Math.max(0, digits - 1));
    return x.toPrecision(digits);
  }
  function time(s) {
    s = num(s);
    if (s === null) return "—";
    var a = Math.abs(s);
    if (a === 0) return "0";
    if (a >= 1) return trim(s) + " s";
    if (a >= 1e-3) return trim(s * 1e3) + " ms";
    if (a >= 1e-6) return trim(s * 1e6) + " µs";
    return trim(s * 1e9) + " ns";
  }
  function pct(f, digits) {
    f = num(f);
    if (f === null) return "—";
    return (f * 100).toFixed(digits === undefined ? 1 : digits) + "%";
  }
  function signedPct(p) {
    p = num(p);
    if (p === null) return "—";
    return (p > 0 ? "+" : "") + p.toFixed(1) + "%";
  }
  function signedTime(s) {
    s = num(s);
    if (s === null) return "—";
    return (s > 0 ? "+" : s < 0 ? "−" : "") + time(Math.abs(s));
  }
  function plain(x) {
    x = num(x);
    if (x === null) return "—";
    if (Math.abs(x) >= 1e5 || (x !== 0 && Math.abs(x) < 1e-2)) return x.toExponential(2);
    return String(Math.round(x * 100) / 100);
  }
  function value(v) {
    if (v === null || v === undefined) return "—";
    if (typeof v === "number") return plain(v);
    if (typeof v === "string") return v;
    var text = JSON.stringify(v);
    return text.length > 300 ? text.slice(0, 297) + "…" : text;
  }
  function badge(bound) {
    return el("span", { "class": "badge b-" + (bound || "unmodeled").replace(/[^a-z]/g, ""), text: bound || "unmodeled" });
  }
  function section(id, title, subtitle) {
    var head = el("div", { "class": "sec-head" }, el("h2", { text: title }), subtitle ? el("p", { "class": "sub", text: subtitle }) : null);
    return el("section", { id: id, "class": "card" }, head);
  }
  function kv(rows) {
    return el("table", { "class": "kv" }, el("tbody", null, rows.filter(function (r) { return r; }).map(function (r) {
      return el("tr", null, el("th", { text: r[0] }), el("td", null, r[1] instanceof Node ? r[1] : value(r[1])));
    })));
  }
  function stat(label, big, small, cls) {
    return el("div", { "class": "stat " + (cls || "") }, el("div", { "class": "stat-label", text: label }),
      el("div", { "class": "stat-value", text: big }), small ? el("div", { "class": "stat-small", text: small }) : null);
  }
  function readData() {
    return JSON.parse(document.getElementById("roofline-data").textContent);
  }
  var BOUND_COLORS = __BOUND_COLORS__;  /* roofline/render/colors.py, spliced in by html.page_html */
  function boundColor(b) { return BOUND_COLORS[b] || BOUND_COLORS.unmodeled; }

  return {
    el: el, svg: svg, clear: clear, si: si, time: time, pct: pct, signedPct: signedPct, signedTime: signedTime,
    plain: plain, value: value, badge: badge, section: section, kv: kv, stat: stat, readData: readData,
    boundColor: boundColor, BOUND_COLORS: BOUND_COLORS, num: num
  };
})();
