"""Running the task contract's verification gates (the contract's records are
`harness_core.contract`'s, re-exported here).

A gate is a command the operator wrote (`[[contract.verify]]`); passing proves that the
command ran against the workspace and reported success, nothing more. A
`document_contains` gate reads a document (xlsx, docx, pptx, pdf) in this process and
passes when its text holds the given text or regex; it exists in every install and
names the pip extra to install when the format's library is missing.

A command gate that starts a Python interpreter directly (``python -m pytest``,
``python3 check.py``, ``python -c …``) runs in safe-path mode: the workspace is not put
first on ``sys.path``, so a ``pytest.py``, a ``pytest/`` package or a module named like
one of the standard library's in the workspace cannot stand in for the runner. The
workspace root (and a script's own directory) is appended *after* the standard
library and the installed packages instead, so the code under test still imports as
it did. Packages installed in the user site (``pip install --user``) are not seen
either (``-s``), and bytecode is read from and written to a fresh directory outside the
workspace for each gate (``-X pycache_prefix``), so a planted ``__pycache__/*.pyc``
whose header matches an unchanged source cannot replace a test or the code under test.
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import replace

from harness_core._record import record
from harness_core.clock import Clock, SystemClock
from harness_core.contract import CriterionKind, TaskContract, VerifyCriterion
from harness_core.errors import MissingExtra, SandboxUnavailable, ToolError, WorkspaceError
from harness_core.host import safe_python_argv
from harness_core.sandbox import LaunchRequest, ProcessLauncher, run_command
from harness_core.tools import DocumentLimits
from harness_core.tools._document_registry import extra_for_suffix, require_extra
from harness_core.workspace import Workspace

__all__ = [
    "CriterionKind",
    "GateResult",
    "TaskContract",
    "VerifyCriterion",
    "require_gate_extras",
    "run_gates",
]


@record
class GateResult:
    """The result of one gate.

    Attributes:
        criterion: What ran (the command line, or ``each_compiles_python``).
        passed: Whether it reported success.
        exit_status: The command's exit status (None when killed or not a command).
        output: Its combined output, bounded.
        duration_seconds: How long it ran (the harness's own clock).
    """

    criterion: str
    passed: bool
    exit_status: int | None
    output: str
    duration_seconds: float = 0.0


_GATE_OUTPUT_CAP = 16_000


def _tail(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    if len(text) > _GATE_OUTPUT_CAP:
        return f"[{len(text) - _GATE_OUTPUT_CAP} earlier characters cut]\n" + text[-_GATE_OUTPUT_CAP:]
    return text


def _run_command(
    criterion: VerifyCriterion, workspace: Workspace, launcher: ProcessLauncher
) -> GateResult:
    try:
        argv = shlex.split(criterion.command)
    except ValueError as exc:
        return GateResult(criterion.command, False, None, f"cannot split the command: {exc}")
    if not argv:
        return GateResult(criterion.command, False, None, "empty verification command")
    # Unguessable and made after the agent's last act: nothing planted there in advance.
    pycache = os.path.join(tempfile.gettempdir(), f"io-gate-pyc-{secrets.token_hex(8)}")
    request = LaunchRequest(argv=safe_python_argv(argv, pycache), cwd=workspace.root,
                            stderr=subprocess.STDOUT)
    try:
        result = run_command(launcher, request, timeout=criterion.timeout_seconds,
                             max_output=_GATE_OUTPUT_CAP)
    except (ToolError, SandboxUnavailable) as exc:
        return GateResult(criterion.command, False, None, str(exc))
    finally:
        shutil.rmtree(pycache, ignore_errors=True)
    output = _tail(result.stdout)
    if result.truncated_bytes:
        output += f"\n[{result.truncated_bytes} more bytes of output not kept]"
    if result.timed_out:
        return GateResult(criterion.command, False, None,
                          output + f"\n[killed after {criterion.timeout_seconds:g}s]")
    return GateResult(criterion.command, result.exit_status == 0, result.exit_status, output)


def _compile_python(workspace: Workspace, changed: Sequence[str]) -> GateResult:
    problems: list[str] = []
    for rel in changed:
        if not rel.endswith(".py") or not workspace.is_file(rel):
            continue
        try:
            source = workspace.read_bytes(rel)
            compile(source, rel, "exec", dont_inherit=True)
        except SyntaxError as exc:
            problems.append(f"{rel}:{exc.lineno}: {exc.msg}")
        except (ValueError, WorkspaceError) as exc:
            problems.append(f"{rel}: {exc}")
    return GateResult("each_compiles_python", not problems, None,
                      "\n".join(problems) or "every changed .py file compiles")


def require_gate_extras(criterion: VerifyCriterion) -> None:
    """Raise `MissingExtra` when a document gate's format library is not installed.

    Raises:
        MissingExtra: Names the extra and its ``pip install`` command.
    """
    if criterion.kind is CriterionKind.DOCUMENT_CONTAINS:
        extra = extra_for_suffix(criterion.path)
        if extra is not None:
            require_extra(extra, f"the document_contains gate on {criterion.path}")


def _document(criterion: VerifyCriterion, workspace: Workspace,
              limits: DocumentLimits | None) -> GateResult:
    from harness_core.documents import check_document  # only for a document gate

    name = criterion.describe()
    try:
        check = check_document(workspace, criterion.path, text=criterion.text,
                               regex=criterion.regex, page=criterion.page,
                               sheet=criterion.sheet, timeout=criterion.timeout_seconds,
                               limits=limits)
    except MissingExtra as exc:
        return GateResult(name, False, None, str(exc))
    return GateResult(name, check.passed, None, check.detail)


def run_gates(
    contract: TaskContract,
    workspace: Workspace,
    launcher: ProcessLauncher,
    *,
    changed: Sequence[str] = (),
    clock: Clock | None = None,
    documents: DocumentLimits | None = None,
) -> list[GateResult]:
    """Run every gate of `contract` in order (each one, even after a failure).

    Args:
        contract: The task contract whose `verify` gates run.
        workspace: The workspace they run in.
        launcher: The (sandboxed) launcher commands go through.
        changed: Workspace paths the run changed (for `each_compiles_python`).
        clock: Times each gate (the system clock when None).
        documents: The `[documents]` limits a `document_contains` gate reads under.
    """
    clock = clock or SystemClock()
    results: list[GateResult] = []
    for criterion in contract.verify:
        began = clock.monotonic()
        if criterion.kind is CriterionKind.EACH_COMPILES_PYTHON:
            result = _compile_python(workspace, changed)
        elif criterion.kind is CriterionKind.DOCUMENT_CONTAINS:
            result = _document(criterion, workspace, documents)
        else:
            result = _run_command(criterion, workspace, launcher)
        results.append(replace(result, duration_seconds=clock.monotonic() - began))
    return results
