"""The HTML page as markup: approvals, machine-answered questions, a tree of runs, and
hostile names from the model (a tool name is model text too) escaped in attributes.
What a person sees in a browser is tested in tests/integration/trace (Chromium)."""

from __future__ import annotations

from pathlib import Path

from harness_core import Answer, AnsweredBy, ApproveAll, Runner, Store, load_tree
from io_harness_cli.render.html import render_html
from tests.unit.session.support import RecordingProvider, spec_for

EVIL_TOOL = 'x"><img src=y onerror=alert(1)>'


class Machine:
    def answer(self, question: str) -> Answer | None:
        return Answer("blue", AnsweredBy.MACHINE)


def _page(tmp_path: Path) -> tuple[str, Store, str]:
    ws = tmp_path / "ws"
    ws.mkdir()
    store = Store(tmp_path / "state.db")
    lines = [
        ("", [("ask_question", {"question": "which <colour>?"}), ("exec", {"argv": ["true"]}),
              (EVIL_TOOL, {"a": 1})]),
        ("done", []),
    ]
    outcome = Runner(store, RecordingProvider(lines), approver=ApproveAll(),
                     responder=Machine()).start(spec_for(ws, "goal"))
    record = store.run(outcome.run_id)
    store.create_run("child-1", goal="sub", workspace=record.workspace, model="m",
                     settings={}, policy={}, sandbox=None, messages=(),
                     parent_run_id=outcome.run_id)
    return render_html(load_tree(store, outcome.run_id)), store, outcome.run_id


def test_questions_show_who_answered_and_approvals_their_decider(tmp_path: Path) -> None:
    page, _, _ = _page(tmp_path)
    assert "which &lt;colour&gt;?" in page
    assert "answered by <strong>machine</strong>: blue" in page
    assert 'class="row ev policy approval"' in page
    assert "allow (by approver) exec <code>exec true</code>" in page


def test_a_tree_gets_a_section_per_run_and_a_list_of_runs(tmp_path: Path) -> None:
    page, _, run_id = _page(tmp_path)
    assert page.count('<section class="run"') == 2
    assert f'id="run-{run_id}"' in page and 'id="run-child-1"' in page
    assert '<nav class="tree"' in page and 'data-depth="1"' in page
    assert f'<a href="#run-{run_id}"><code>{run_id}</code></a>' in page  # the child's parent
    assert "the whole tree: 2 runs" in page


def test_a_hostile_tool_name_is_escaped_in_text_and_attributes(tmp_path: Path) -> None:
    page, _, _ = _page(tmp_path)
    assert "<img" not in page
    assert 'data-tool="x&quot;&gt;&lt;img src=y onerror=alert(1)&gt;"' in page
    assert '<option value="x&quot;&gt;&lt;img' in page
