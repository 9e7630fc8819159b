"""The inline stylesheet and script of the HTML trace (no network: nothing is fetched).

The script only filters and searches rows the page already holds: it reads the text of
the rows and sets `hidden`; it never builds markup from data, so nothing it touches can
turn recorded text into code.
"""

from __future__ import annotations

__all__ = ["CSS", "SCRIPT"]

CSS = """
:root { --fg:#1d1f21; --muted:#6a6f75; --line:#dde1e5; --bg:#fff; --soft:#f5f7f9;
  --red:#b3261e; --green:#1b7f3b; --amber:#8a5a00; --blue:#1f5fbf; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif; color:var(--fg);
  background:var(--bg); }
header, main { padding: 0 20px; }
h1 { font-size:20px; margin:16px 0 4px; } h2 { font-size:17px; margin:24px 0 8px; }
h3 { font-size:15px; margin:18px 0 6px; color:var(--muted); }
code, pre { font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; }
pre { white-space:pre-wrap; word-break:break-word; margin:4px 0; padding:6px 8px;
  background:var(--soft); border-radius:4px; max-height:28em; overflow:auto; }
.toolbar { position:sticky; top:0; z-index:2; display:flex; flex-wrap:wrap; gap:12px;
  align-items:center; padding:8px 20px; background:#fbfcfd; border-bottom:1px solid var(--line); }
.toolbar input[type=search] { min-width:260px; padding:4px 8px; }
.facts { display:grid; grid-template-columns:max-content 1fr; gap:2px 14px; margin:6px 0; }
.facts dt { color:var(--muted); } .facts dd { margin:0; }
table { border-collapse:collapse; margin:4px 0; }
th, td { text-align:left; padding:3px 10px 3px 0; border-bottom:1px solid var(--line);
  vertical-align:top; }
.tree a { text-decoration:none; } .tree li { list-style:none; }
ol.timeline { list-style:none; padding:0; margin:0; }
li.step { border-left:3px solid var(--line); margin:0 0 10px; padding:2px 0 2px 10px; }
.row { padding:3px 0; }
.step-head { font-weight:600; display:flex; flex-wrap:wrap; gap:4px 14px; align-items:center; }
.step-head .n { min-width:5em; }
.metric { color:var(--muted); font-weight:400; }
meter { width:140px; height:10px; }
.call { margin-left:14px; } .call .name { font-weight:600; color:var(--blue); }
.policy, .plan, .question, .gate { margin-left:14px; }
.bad { color:var(--red); } .good { color:var(--green); } .warn { color:var(--amber); }
.refusal { color:var(--red); } .approval { color:var(--amber); }
.badge { display:inline-block; padding:0 6px; border-radius:8px; font-size:12px;
  border:1px solid currentColor; font-weight:400; }
details > summary, .toggle { cursor:pointer; color:var(--muted); }
.toggle::before { content:"▸ "; } .toggle[aria-expanded=true]::before { content:"▾ "; }
.fold { margin-left:4px; }
.plan ul { margin:2px 0; padding-left:20px; } .plan li.done { text-decoration:line-through;
  color:var(--muted); } .plan li.in_progress { font-weight:600; }
pre.diff .add { color:var(--green); } pre.diff .del { color:var(--red); }
pre.diff .hunk { color:var(--blue); }
.note { color:var(--muted); font-size:13px; }
[hidden] { display:none !important; }
"""

SCRIPT = """
(function () {
  "use strict";
  var q = document.getElementById("q");
  var refusals = document.getElementById("f-refusals");
  var errors = document.getElementById("f-errors");
  var tool = document.getElementById("f-tool");
  var shown = document.getElementById("shown");
  var steps = Array.prototype.slice.call(document.querySelectorAll("li.step"));
  var loose = Array.prototype.slice.call(document.querySelectorAll(".loose > .ev"));
  var all = Array.prototype.slice.call(document.querySelectorAll(".ev"));
  var texts = null;
  function text(row) {
    if (texts === null) { texts = new Map(); }
    var t = texts.get(row);
    if (t === undefined) { t = row.textContent.toLowerCase(); texts.set(row, t); }
    return t;
  }
  function keep(row, f) {
    var d = row.dataset;
    if (f.refusals && !(d.kind === "refusal" || d.refused === "1")) { return false; }
    if (f.errors && d.error !== "1") { return false; }
    if (f.tool && d.tool !== f.tool) { return false; }
    if (f.q && text(row).indexOf(f.q) < 0) { return false; }
    return true;
  }
  var filtered = false;
  function apply() {
    var f = { q: q.value.trim().toLowerCase(), refusals: refusals.checked,
              errors: errors.checked, tool: tool.value };
    var active = f.q || f.refusals || f.errors || f.tool;
    if (!active && !filtered) {
      shown.textContent = "showing " + all.length + " of " + all.length + " rows";
      return;
    }
    filtered = !!active;
    var visible = 0;
    steps.forEach(function (li) {
      var head = li.querySelector(".step-head");
      var rows = li.querySelectorAll(".ev:not(.step-head)");
      var any = false;
      for (var i = 0; i < rows.length; i++) {
        var ok = !active || keep(rows[i], f);
        rows[i].hidden = !ok;
        if (ok) { any = true; visible++; }
      }
      var headOk = !active || any || (f.q && !f.refusals && !f.errors && !f.tool
                                       && text(head).indexOf(f.q) >= 0);
      head.hidden = !headOk;
      if (headOk) { visible++; }
      li.hidden = !headOk;
    });
    loose.forEach(function (row) {
      var ok = !active || keep(row, f);
      row.hidden = !ok;
      if (ok) { visible++; }
    });
    shown.textContent = "showing " + visible + " of " + all.length + " rows";
  }
  [q, tool].forEach(function (el) { el.addEventListener("input", apply); });
  [refusals, errors].forEach(function (el) { el.addEventListener("change", apply); });
  tool.addEventListener("change", apply);
  function unfold(event) {
    var t = event.target;
    if (!t.classList || !t.classList.contains("toggle")) { return; }
    if (event.type === "keydown" && event.key !== "Enter" && event.key !== " ") { return; }
    event.preventDefault();
    var body = t.nextElementSibling;
    body.hidden = !body.hidden;
    t.setAttribute("aria-expanded", body.hidden ? "false" : "true");
  }
  document.addEventListener("click", unfold);
  document.addEventListener("keydown", unfold);
  apply();
})();
"""
