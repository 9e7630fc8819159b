"""`io trace RUN --html`: one self-contained HTML page for a run or a whole tree.

The page carries its own stylesheet and script and fetches nothing: a Content Security
Policy (`default-src 'none'`, the script allowed by its hash only) backs that up, so the
file opens the same from a CI artifact as from a laptop. Everything recorded is hostile
text (a model can write any markup into its answer, a tool into its output): every
value goes through `html.escape` before it reaches the page, and the script never turns
text into markup. Filters and search run in the page, without a server.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Sequence
from html import escape
from typing import TYPE_CHECKING, Any

from io_harness_cli.render._html_assets import CSS, SCRIPT

if TYPE_CHECKING:
    from harness_core import CallView, FileChange, RunTrace, StepView

__all__ = ["render_html"]

_TEXT_LIMIT = 20_000
"""Characters of one model answer shown on the page (the store keeps all of it)."""


def e(value: object) -> str:
    """`value` as text safe inside an element or a quoted attribute."""
    return escape("" if value is None else str(value), quote=True)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit} more characters)"


def _num(value: float | None, unit: str = "", digits: int = 0) -> str:
    if value is None:
        return '<span title="not reported or not measured">—</span>'
    return e(f"{value:,.{digits}f}{unit}")


def _usd(value: float | None) -> str:
    if value is None:
        return "unpriced"
    return e(f"${value:.4f}" if value >= 0.01 or value == 0 else f"${value:.6f}")


def _attrs(**values: object) -> str:
    return "".join(f' data-{k.replace("_", "-")}="{e(v)}"' for k, v in values.items()
                   if v not in (None, "", False))


def _hash(source: str) -> str:
    return base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii")


def render_html(traces: Sequence[RunTrace], *, title: str | None = None) -> str:
    """The page for `traces` (a run, or a tree: the root first, then its descendants).

    Args:
        traces: What `harness_core.load_tree` (or `load_trace`) returned.
        title: The page title; defaults to the first run's id.
    """
    heading = title or f"io trace {traces[0].run.run_id}" if traces else "io trace"
    tools = sorted({c.name for t in traces for c in t.calls})
    csp = (f"default-src 'none'; style-src 'sha256-{_hash(CSS)}'; "
           f"script-src 'sha256-{_hash(SCRIPT)}'; img-src data:; base-uri 'none'; "
           "form-action 'none'")
    parts = [
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f'<meta http-equiv="Content-Security-Policy" content="{e(csp)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(heading)}</title><style>{CSS}</style></head><body>",
        f"<header><h1>{e(heading)}</h1>{_tree_nav(traces)}</header>",
        _toolbar(tools),
        "<main>",
        *(_run(t) for t in traces),
        "</main>",
        f"<script>{SCRIPT}</script></body></html>\n",
    ]
    return "\n".join(parts)


def _toolbar(tools: Iterable[str]) -> str:
    options = "".join(f'<option value="{e(t)}">{e(t)}</option>' for t in tools)
    return (
        '<nav class="toolbar" aria-label="filters">'
        '<input type="search" id="q" placeholder="Search the trace" aria-label="Search">'
        '<label><input type="checkbox" id="f-refusals"> refusals only</label>'
        '<label><input type="checkbox" id="f-errors"> errors only</label>'
        '<label>tool <select id="f-tool" aria-label="tool"><option value="">all tools</option>'
        f"{options}</select></label>"
        '<span id="shown" class="note" aria-live="polite"></span></nav>'
    )


def _tree_nav(traces: Sequence[RunTrace]) -> str:
    if len(traces) < 2:
        return ""
    items = "".join(
        f'<li data-depth="{t.depth}">{"↳ " * min(t.depth, 1)}'
        f'{"&nbsp;&nbsp;" * max(t.depth - 1, 0)}<a href="#run-{e(t.run.run_id)}">'
        f"<code>{e(t.run.run_id)}</code></a> {e(t.run.status.value)} · "
        f"{t.run.steps_used} steps</li>"
        for t in traces)
    costs = [t.cost.total_usd for t in traces if t.cost.total_usd is not None]
    unpriced = sum(t.cost.unpriced_calls for t in traces)
    total = (f"{sum(t.run.tokens_used for t in traces):,} billed tokens, cost "
             f"{_usd(sum(costs) if costs else None)}"
             + (f" ({unpriced} calls unpriced{', a floor' if costs else ''})" if unpriced else ""))
    return (f'<nav class="tree" aria-label="runs"><h3>Runs in this tree</h3><ul>{items}</ul>'
            f'<p class="note">the whole tree: {len(traces)} runs, {e(total)}</p></nav>')


def _compactions(trace: RunTrace) -> str:
    """Each compaction: before which step, the size that decided it, the summary's cost."""
    if not trace.compactions:
        return ""
    rows = "".join(
        f"<tr><td>{c.step_index}</td><td>{c.size_before:,} &gt; {c.threshold:,}</td>"
        f"<td>{e(c.model_served)}</td><td>{c.usage.prompt_tokens or 0:,} +"
        f" {c.usage.completion_tokens or 0:,}</td><td><pre>{e(_cut(c.summary, 4000))}</pre></td></tr>"
        for c in trace.compactions)
    return ('<h3>Compactions</h3><table class="compactions"><tr><th>before step</th>'
            "<th>history tokens &gt; threshold</th><th>model</th><th>prompt + completion"
            f"</th><th>summary</th></tr>{rows}</table>")


def _run(trace: RunTrace) -> str:
    run = trace.run
    sandbox = run.sandbox or {}
    degraded = sandbox.get("degraded")
    facts = [
        ("status", f'<span class="{_status_class(run.status.value)}">{e(run.status.value)}</span>'
                   + (f" — {e(run.reason)}" if run.reason else "")),
        ("steps", f'<span class="step-count">{len(trace.steps)} steps</span>'),
        ("goal", f"<pre>{e(_cut(run.goal, 4000))}</pre>"),
        ("workspace", f"<code>{e(run.workspace)}</code>"),
        ("model", e(run.model or "—")),
        ("tokens", f"{run.tokens_used:,} billed"),
        ("wall", e(f"{run.wall_used:.2f} s")),
        ("sandbox", e(f"{sandbox.get('backend', '—')}"
                      + (f" (degraded: {degraded})" if degraded else "")
                      + ("" if sandbox.get("commands_sandboxed", True)
                         else "; commands ran unsandboxed"))),
        ("started", e(run.created_at)),
    ]
    if run.parent_run_id:
        facts.insert(0, ("parent", f'<a href="#run-{e(run.parent_run_id)}">'
                                   f"<code>{e(run.parent_run_id)}</code></a>"))
    if run.pause:
        facts.append(("paused for", f"<pre>{e(json.dumps(run.pause.to_json(), ensure_ascii=False))}</pre>"))
    dl = "".join(f"<dt>{e(k)}</dt><dd>{v}</dd>" for k, v in facts)
    return "\n".join([
        f'<section class="run" id="run-{e(run.run_id)}" data-depth="{trace.depth}">',
        f"<h2>Run <code>{e(run.run_id)}</code></h2><dl class=\"facts\">{dl}</dl>",
        _cost(trace),
        _compactions(trace),
        "<h3>Timeline</h3>",
        _timeline(trace),
        _plan_section(trace),
        _changes(trace),
        _drives(trace),
        "</section>",
    ])


def _status_class(status: str) -> str:
    return {"finished": "good", "failed": "bad", "errored": "bad"}.get(status, "warn")


def _cost(trace: RunTrace) -> str:
    cost = trace.cost
    if cost.as_of is None:
        note = (f"No <code>[prices]</code> table was given, so no cost is derived:"
                f" {cost.unpriced_calls} calls unpriced.")
    else:
        note = (f"Derived from <code>[prices]</code> as of {e(cost.as_of.isoformat())}; a cost"
                " is never stored.")
        if cost.is_floor:
            note += (f" {cost.unpriced_calls} calls have no price (or reported no counts):"
                     " the total is a floor, not a total.")
    rows = "".join(
        f"<tr><td><code>{e(m.model)}</code></td><td>{m.calls}</td>"
        f"<td>{_num(m.prompt_tokens)}</td><td>{_num(m.completion_tokens)}</td>"
        f"<td>{_usd(m.cost_usd)}</td><td>{m.unpriced_calls}</td></tr>" for m in cost.by_model)
    total = _usd(cost.total_usd) + (" (floor)" if cost.is_floor and cost.total_usd else "")
    return (f'<h3>Cost</h3><p class="cost">total <strong>{total}</strong></p>'
            f'<p class="note">{note}</p><table><tr><th>model</th><th>calls</th>'
            f"<th>tokens in</th><th>tokens out</th><th>cost</th><th>unpriced</th></tr>"
            f"{rows}</table>")


def _by_step(items: Iterable[Any]) -> dict[int | None, list[Any]]:
    out: dict[int | None, list[Any]] = {}
    for item in items:
        out.setdefault(getattr(item, "step_index", getattr(item, "step", None)), []).append(item)
    return out


def _timeline(trace: RunTrace) -> str:
    policy = _by_step(trace.policy_events)
    plans = _by_step(trace.plan)
    questions = _by_step(trace.questions)
    gates = _by_step(trace.gates)
    operator = _by_step(trace.operator_inputs)
    longest = max((s.latency_ms or 0.0 for s in trace.steps), default=0.0) or 1.0
    sandbox = str((trace.run.sandbox or {}).get("backend", ""))
    out = ['<ol class="timeline">']
    loose = [_policy_row(p) for p in policy.pop(None, [])]
    loose += [_operator_row(o) for o in operator.pop(None, [])]
    for step in trace.steps:
        n = step.step
        rows = [_operator_row(o) for o in operator.pop(n, [])]
        rows += [_call_row(c) for c in step.calls]
        rows += [_policy_row(p) for p in policy.pop(n, [])]
        rows += [_plan_row(p) for p in plans.pop(n, [])]
        rows += [_question_row(q) for q in questions.pop(n, [])]
        rows += [_gate_row(g, sandbox) for g in gates.pop(n, [])]
        out.append(f'<li class="step" data-step="{n}">{_step_head(step, longest)}'
                   f'{"".join(rows)}</li>')
    rest = [*(_call_row(c) for c in trace.orphan_calls)]
    for mapping, make in ((operator, _operator_row), (policy, _policy_row),
                          (plans, _plan_row), (questions, _question_row)):
        rest += [make(item) for items in mapping.values() for item in items]
    rest += [_gate_row(g, sandbox) for items in gates.values() for g in items]
    out.append("</ol>")
    if loose or rest:
        out.append('<h3>Outside a committed step</h3><div class="loose">'
                   + "".join(loose + rest) + "</div>")
    return "\n".join(out)


def _step_head(step: StepView, longest: float) -> str:
    usage = step.usage
    latency = step.latency_ms or 0.0
    head = (
        f'<div class="row ev step-head" data-kind="step"><span class="n">step {step.step}</span>'
        f'<span class="metric" title="{e(step.created_at)}">{e(step.created_at[11:19])}</span>'
        f'<span class="metric">model <code>{e(step.model or "—")}</code></span>'
        f'<span class="metric" title="harness wall clock around the provider call">latency '
        f'{_num(step.latency_ms, " ms", 1)}</span>'
        f'<meter min="0" max="{longest:.3f}" value="{latency:.3f}" aria-label="latency"></meter>'
        f'<span class="metric">TTFT {_num(step.ttft_ms, " ms", 1)}</span>'
        f'<span class="metric">tokens in {_num(usage.get("prompt_tokens"))}'
        f' out {_num(usage.get("completion_tokens"))}'
        f'{" (estimated: not reported)" if usage.get("estimated") else ""}</span>'
        f'<span class="metric">{_usd(step.cost_usd)}</span></div>'
    )
    if step.text:
        head += f'<pre class="says">{e(_cut(step.text, _TEXT_LIMIT))}</pre>'
    return head


def _call_row(call: CallView) -> str:
    args = json.dumps(call.arguments, ensure_ascii=False, indent=2, default=str)
    brief = json.dumps(call.arguments, ensure_ascii=False, default=str)
    brief = brief if len(brief) <= 120 else brief[:119] + "…"
    bits = [f'<span class="name">{e(call.name)}</span> <code class="args">{e(brief)}</code>']
    if call.exit_status is not None:
        cls = "good" if call.exit_status == 0 else "bad"
        bits.append(f'<span class="{cls}">exit {call.exit_status}</span>')
    if call.sandbox:
        bits.append(f'<span class="metric">sandbox {e(call.sandbox)}</span>')
    if call.child_run_id:
        bits.append(f'child run <a href="#run-{e(call.child_run_id)}">'
                    f"<code>{e(call.child_run_id)}</code></a>")
    if call.refused:
        r = call.refused
        bits.append(f'<span class="refusal">refused: {e(r.get("reason"))} [rule'
                    f' {e(r.get("rule") or "—")}, layer {e(r.get("layer") or "—")}]</span>')
    elif call.output is None:
        bits.append('<span class="warn">intent only: the harness stopped while it ran</span>')
    elif call.is_error:
        bits.append('<span class="bad badge">error</span>')
    out = ""
    if call.output is not None:
        more = f", cut from {call.output_chars:,}" if call.is_truncated else ""
        out = _fold(f"output ({len(call.output):,} characters{more})", e(call.output))
    flags = _attrs(kind="call", tool=call.name, error="1" if call.is_error else "",
                   refused="1" if call.refused else "")
    return (f'<div class="row ev call"{flags}>→ {" · ".join(bits)}'
            f"{_fold('arguments', e(_cut(args, 8000)))}{out}</div>")


def _fold(label: str, body: str) -> str:
    """A folded block: its text is in the page (search finds it) but not laid out until
    opened. Thousands of `<details>` made a 1,000-step page twice as slow to open."""
    return (f'<div class="fold"><span class="toggle" role="button" tabindex="0"'
            f' aria-expanded="false">{e(label)}</span><pre hidden>{body}</pre></div>')


def _policy_row(event: Any) -> str:
    refused = event.verdict == "deny"
    kind = "refusal" if refused else "approval"
    label = "refused" if refused else f"{event.verdict} (by {e(event.decided_by)})"
    return (f'<div class="row ev policy {kind}"{_attrs(kind=kind, error="1" if refused else "")}>'
            f'{"⛔" if refused else "✋"} {label} {e(event.act)} <code>{e(event.target)}</code>'
            f' — {e(event.reason)} <span class="metric">[rule <code class="rule">'
            f'{e(event.rule or "—")}</code>, layer <code>{e(event.layer or "—")}</code>,'
            f" decided by {e(event.decided_by)}]</span></div>")


_OPERATOR_MARK = {"steer": "💬", "interrupt": "⏹", "resume": "▶", "approve": "✅",
                  "deny": "🚫", "answer": "🗨"}


def _operator_row(item: Any) -> str:
    """One thing the operator told the run: when, what, and where it landed."""
    state = item.state
    where = {"landed": f"landed at step {item.step}", "pending": "waiting for a step boundary",
             "void": f"never landed: {item.void_reason}"}[state]
    cls = "warn" if state == "void" else "metric"
    return (f'<div class="row ev operator"{_attrs(kind="operator", operator=item.kind)}>'
            f'{_OPERATOR_MARK.get(item.kind, "•")} operator {e(item.describe())}'
            f' <span class="{cls}">({e(where)})</span>'
            f' <span class="metric" title="{e(item.created_at)}">{e(item.created_at[11:19])}'
            "</span></div>")


def _plan_items(items: Iterable[dict[str, str]]) -> str:
    marks = {"done": "☑", "in_progress": "▶", "pending": "☐"}
    return "<ul>" + "".join(
        f'<li class="{e(i.get("status"))}">{marks.get(str(i.get("status")), "☐")}'
        f' {e(i.get("content"))}</li>' for i in items) + "</ul>"


def _plan_row(revision: Any) -> str:
    return (f'<div class="row ev plan"{_attrs(kind="plan", tool="todo_write")}>plan revision'
            f" {e(revision.revision)}{_plan_items(revision.items)}</div>")


def _question_row(q: Any) -> str:
    answer = (f"answered by <strong>{e(q.answered_by)}</strong>: {e(q.answer)}"
              if q.answered_by else '<span class="warn">not answered yet</span>')
    return (f'<div class="row ev question"{_attrs(kind="question", tool="ask_question")}>'
            f"❓ <q>{e(q.question)}</q> — {answer}</div>")


def _gate_row(gate: Any, sandbox: str) -> str:
    verdict = ('<span class="good">passed</span>' if gate.passed
               else '<span class="bad">failed</span>')
    return (f'<div class="row ev gate"{_attrs(kind="gate", error="" if gate.passed else "1")}>'
            f"gate <code>{e(gate.criterion)}</code>: {verdict} (exit {e(gate.exit_status)},"
            f" sandbox {e(sandbox or '—')})<details><summary>output</summary>"
            f"<pre>{e(_cut(gate.output, 4000))}</pre></details></div>")


def _plan_section(trace: RunTrace) -> str:
    if not trace.plan:
        return '<h3>Plan</h3><p class="note">The agent recorded no plan.</p>'
    revisions = "".join(f"<li>step {p.step}, revision {e(p.revision)}{_plan_items(p.items)}</li>"
                        for p in trace.plan)
    return ('<h3>Plan, as it changed</h3><p class="note">The agent\'s own claims: nothing'
            f" checks a plan.</p><ol>{revisions}</ol>")


def _diff_lines(diff: str) -> str:
    out = []
    for line in diff.splitlines():
        cls = ("hunk" if line.startswith("@@") else "add" if line.startswith("+")
               else "del" if line.startswith("-") else "")
        out.append(f'<span class="{cls}">{e(line)}</span>' if cls else e(line))
    return "\n".join(out)


def _file(change: FileChange) -> str:
    edits = "".join(
        f"<p class=\"note\">step {ed.step}, {e(ed.tool)}: +{e(ed.lines_added)}"
        f" −{e(ed.lines_removed)} lines, {e(ed.bytes_before)} → {e(ed.bytes_after)} bytes"
        f"{'' if ed.complete else ' (partial: the old content was not recorded)'}</p>"
        f'<pre class="diff">{_diff_lines(_cut(ed.diff, 40_000))}</pre>' for ed in change.edits)
    return (f"<details><summary><code>{e(change.path)}</code> +{change.lines_added}"
            f" −{change.lines_removed}{' (created)' if change.created else ''}"
            f"{'' if change.complete else ' · partial diff'}</summary>{edits}</details>")


def _changes(trace: RunTrace) -> str:
    note = ("Rebuilt from the recorded <code>write_file</code>/<code>edit_file</code> calls:"
            " a diff is exact where the old content is known from the run (a created file,"
            " or one the run wrote or read whole first) and partial otherwise.")
    if trace.commands_ran:
        note += (f" {trace.commands_ran} command calls ran; files they changed are not"
                 " recorded and do not appear here.")
    body = "".join(_file(c) for c in trace.changes) or "<p>No file tool changed a file.</p>"
    return f'<h3>Files changed</h3><p class="note">{note}</p>{body}'


def _drives(trace: RunTrace) -> str:
    rows = "".join(
        f"<tr><td>{e(d.seq)}</td><td>{e(d.started_at)}</td><td>{e(d.pid)}"
        f"</td><td>{e((d.sandbox or {}).get('backend', '—'))}</td></tr>"
        for d in trace.drives)
    return ("<h3>Drives</h3><table><tr><th>#</th><th>started</th><th>pid</th><th>sandbox</th>"
            f"</tr>{rows}</table>")
