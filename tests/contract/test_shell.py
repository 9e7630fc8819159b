"""docs/CONTRACT.md, "What `shell` will and will not run": there is never a `sh -c`. A
stage's parent is the process that planned the line (real shell tool, real processes),
and no module of the library hands a line to a shell."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from harness_core import Policy, Runner, RunStatus, Store
from tests.conftest import REPO
from tests.unit.session.support import RecordingProvider, spec_for

# The parent's executable, not its cmdline: a test runner may retitle its process
# (pytest-xdist writes "[pytest-xdist running] …" over the cmdline).
PARENT = "import os; print(repr(os.readlink(f'/proc/{os.getppid()}/exe')))"


def test_a_stage_is_started_by_io_itself_not_by_a_shell(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    line = f'{sys.executable} -c "{PARENT}"'
    provider = RecordingProvider([("run", [("shell", {"line": line})]), ("done", [])])
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, provider).start(
            spec_for(ws, "go", policy=Policy.from_lists(tier="full")))
        entry = store.ledger(outcome.run_id)[0]
    assert outcome.status is RunStatus.FINISHED, outcome.reason
    assert not entry.is_error, entry.observation
    output = entry.observation or ""
    parent = output[output.index("'"):output.rindex("'") + 1]
    argv0 = parent.strip("'").split("\\x00")[0]
    assert Path(argv0).name not in {"sh", "bash", "dash", "zsh"}, parent
    assert "python" in Path(argv0).name, parent  # the io process itself (here: pytest)


def test_no_library_module_passes_a_line_to_a_shell() -> None:
    shell_call = re.compile(r"shell\s*=\s*True|[\"'](/bin/)?(ba|da)?sh[\"']\s*,\s*[\"']-c[\"']")
    offenders = [str(p.relative_to(REPO)) for p in (REPO / "harness_core").rglob("*.py")
                 if shell_call.search(p.read_text())]
    assert offenders == []
