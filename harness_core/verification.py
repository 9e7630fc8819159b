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
import re
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


_PYTHON = re.compile(r"^(?:python|pypy)(?:\d+(?:\.\d+)?)?$")
_PYTHON_VALUED = frozenset({"-W", "-X", "-Q"})
_SAFE_BOOT = (
    "import sys\n"
    "if sys.path and sys.path[0] == '': del sys.path[0]\n"
    "import os\n"
    "mode, target = sys.argv[1], sys.argv[2]\n"
    "del sys.argv[1:3]\n"
    "sys.path.append(os.getcwd())\n"
    "import runpy\n"
    "if mode == 'm':\n"
    "    sys.argv[0] = '-m'\n"
    "    runpy._run_module_as_main(target)\n"
    "elif mode == 's':\n"
    "    sys.argv[0] = target\n"
    "    sys.path.append(os.path.dirname(os.path.abspath(target)))\n"
    "    runpy.run_path(target, run_name='__main__')\n"
    "else:\n"
    "    import builtins\n"
    "    sys.argv[0] = '-c'\n"
    "    exec(compile(target, '<string>', 'exec'),"
    " {'__name__': '__main__', '__builtins__': builtins})\n"
)
"""What a Python gate runs first, through ``-c``: before importing anything that is not
already loaded it drops the working directory from the front of ``sys.path``, then
appends it at the end and runs the module, script or code the gate named (``-m`` runs
through the same `runpy` function the interpreter's own ``-m`` uses). It works on every
Python 3, unlike ``-P`` (3.11+)."""


def safe_python_argv(argv: Sequence[str], pycache: str | None = None) -> list[str]:
    """`argv` with a directly started Python interpreter put in safe-path mode.

    Anything else (``pytest``, ``sh -c …``, an interpreter reading stdin) is returned
    unchanged: a ``pytest`` console script puts its own directory first, not the
    workspace.

    Args:
        argv: The gate's argv.
        pycache: A directory outside the workspace for the gate's bytecode
            (``-X pycache_prefix``); None leaves bytecode where Python puts it.

    Returns:
        The argv to start.
    """
    if not argv or not _PYTHON.match(os.path.basename(argv[0])):
        return list(argv)
    i = 1
    while i < len(argv) and argv[i].startswith("-") and argv[i] not in ("-m", "-c", "-"):
        i += 2 if argv[i] in _PYTHON_VALUED else 1
    if i >= len(argv) or argv[i] == "-" or (argv[i] in ("-m", "-c") and i + 1 >= len(argv)):
        return list(argv)
    if argv[i] in ("-m", "-c"):
        mode, target, rest = argv[i][1], argv[i + 1], argv[i + 2:]
    else:
        mode, target, rest = "s", argv[i], argv[i + 1:]
    prefix = ["-X", f"pycache_prefix={pycache}"] if pycache else []
    return [argv[0], *argv[1:i], "-s", *prefix, "-c", _SAFE_BOOT, mode, target, *rest]


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
