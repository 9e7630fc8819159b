"""Gate integrity: the files a verification gate's verdict depends on, kept from the agent.

A gate's inputs are the globs `[[contract.verify]] inputs` names or, when it names
none, what io infers: what the project's toolchains imply
(`harness_core.toolchain.GATE_INPUTS`, per marker directory), what the programs the
command starts read (`harness_core.run._gate_command`: a pytest gate protects its
configuration, its tests and anything that could stand in for pytest), and every
workspace file or directory the gate's argv names. A gate whose command starts a
program io cannot account for, in a workspace with no toolchain marker, has no
inferred inputs: it is refused with a `ConfigError` naming ``inputs = [...]``, never
given an empty set. A gate whose program or script does not exist when the run starts
is refused the same way, whatever its ``inputs`` and ``editable`` say: the agent could
write that file, and the gate would then run what the agent wrote. Unless the gate says ``editable = true``, its inputs are protected
for the run:

- in the policy, as deny-write rules of the layer ``gate`` (`GATE_LAYER`), so file
  tools, shell redirects and the operands of ``mv``/``cp``/``ln``/``rm``/``tee`` … are
  refused and recorded like any refusal;
- in the sandbox, the inputs that exist when the run starts are bound read-only for the
  agent's commands (`RunSpec.command_read_only`); the gates themselves run without
  that bind, so a test runner can still write its caches.

Whether protected or not, the inputs are fingerprinted when the run starts (recorded
with the run's settings) and again when each gate runs, so the report can say whether
they were untouched and, if not, which files changed. This module never runs a gate.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace

from harness_core._record import record
from harness_core.contract import CriterionKind
from harness_core.errors import ConfigError, PathEscape, PolicyError, WorkspaceError
from harness_core.policy import GATE_LAYER, ActKind, Effect, Policy
from harness_core.policy._patterns import GLOB_CHARS, compile_path
from harness_core.run._gate_command import command_inputs, literal
from harness_core.run._spec import RunSpec
from harness_core.toolchain import GATE_INPUTS, Toolchain, survey
from harness_core.workspace import Workspace

__all__ = [
    "GateInputs",
    "InputChange",
    "baseline_json",
    "fingerprint_inputs",
    "gate_inputs",
    "inputs_changed",
    "protect_gate_inputs",
]

_MAX_BINDS = 256
"""Gate-input paths bound read-only in the sandbox at most; beyond it (a tree with
thousands of ``*_test.go`` files) the policy layer still refuses every write, and the
fingerprint still notices one that got through."""
_CACHE = re.compile(r"(?:^|/)(?:__pycache__|\.pytest_cache|\.mypy_cache|\.ruff_cache)/|\.py[co]$")
"""Caches a test runner writes beside its inputs: not inputs, never fingerprinted."""
_PRUNED = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".nox",
                     ".pytest_cache", ".mypy_cache", ".ruff_cache"})
"""Directories never walked for inputs: the repository, dependencies, caches. Writes
under them are still refused by the policy when a pattern covers them; they are only
not fingerprinted (a `node_modules` holds thousands of ``*.test.js`` files)."""
_MAX_FINGERPRINT_FILES = 100_000
"""Files walked when fingerprinting (the workspace walk's own default)."""


@record
class GateInputs:
    """The inputs of one verification gate.

    Attributes:
        criterion: The gate (its command line, or its kind).
        patterns: Path patterns (policy dialect, relative to the root).
        inferred: Whether they were inferred (the gate named no ``inputs``).
        editable: Whether the agent may change them (``editable = true``).
    """

    criterion: str
    patterns: tuple[str, ...]
    inferred: bool
    editable: bool

    def to_json(self) -> dict[str, object]:
        return {"criterion": self.criterion, "inputs": list(self.patterns),
                "inferred": self.inferred, "editable": self.editable}


@record
class InputChange:
    """What happened to one gate's inputs between the run's start and the gate.

    Attributes:
        editable: Whether the gate let the agent change them.
        modified: Files created, changed or removed (empty: untouched).
        checked: Whether a fingerprint from the run's start existed to compare with.
    """

    editable: bool
    modified: tuple[str, ...]
    checked: bool = True

    @property
    def untouched(self) -> bool | None:
        """True when nothing changed, None when nothing could be compared."""
        return not self.modified if self.checked else None


_literal = literal


def _argv_inputs(command: str, workspace: Workspace) -> list[str]:
    """Workspace files and directories named by the words of a gate's command line."""
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    found: list[str] = []
    for word in words:
        if word.startswith("-"):
            _, eq, value = word.partition("=")
            if not eq:
                continue
            word = value
        word = word.split("::", 1)[0]  # a pytest node id names its file
        if not word:
            continue
        try:
            rel = workspace.resolve(word)
        except (PathEscape, WorkspaceError):
            continue
        if not rel:
            continue  # the root itself: protecting everything would stop all work
        if workspace.is_file(rel):
            found.append(_literal(rel))
        elif workspace.is_dir(rel):
            found.append(_literal(rel) + "/**")
    return found


def _ecosystem_inputs(toolchains: Iterable[tuple[str, Toolchain]]) -> list[str]:
    found: list[str] = []
    for directory, toolchain in toolchains:
        for pattern in GATE_INPUTS.get(toolchain.ecosystem or "", ()):
            found.append(f"{_literal(directory)}/{pattern}" if directory else pattern)
    return found


def gate_inputs(spec: RunSpec) -> tuple[GateInputs, ...]:
    """The inputs of each gate of `spec`'s contract, in the contract's order.

    Raises:
        PolicyError: A gate names an input pattern that is empty, absolute or malformed.
        ConfigError: A command gate names no ``inputs`` and io cannot infer them (the
            command starts a program io does not know and no toolchain marker was
            found), or a program or script it runs does not exist.
    """
    inferred_cache: list[str] | None = None
    out: list[GateInputs] = []
    for number, criterion in enumerate(spec.contract.verify, 1):
        label = criterion.command or criterion.kind.value
        for pattern in criterion.inputs or ():
            compile_path(pattern)  # fail early, naming the pattern
        found = command_inputs(criterion.command, spec.workspace, spec.env.get("PATH", "")) \
            if criterion.kind is CriterionKind.COMMAND else None
        if found is not None and found.missing:
            raise _missing(number, criterion.command, found.missing)
        if criterion.inputs is not None:
            out.append(GateInputs(label, tuple(criterion.inputs), False, criterion.editable))
            continue
        if found is None:
            out.append(GateInputs(label, (), True, criterion.editable))
            continue
        if inferred_cache is None:
            inferred_cache = _inferred(spec)
        if not found.known and not inferred_cache:
            raise _cannot_infer(number, criterion.command, found.unknown or "")
        patterns = [*inferred_cache, *found.patterns,
                    *_argv_inputs(criterion.command, spec.workspace)]
        out.append(GateInputs(label, tuple(dict.fromkeys(patterns)), True, criterion.editable))
    return tuple(out)


def _cannot_infer(number: int, command: str, unknown: str) -> ConfigError:
    return ConfigError(
        f"verification gate {number} ({command!r}) names no inputs and io cannot infer"
        f" them: {unknown!r} is a program io does not know, so what it reads in the"
        " workspace is unknown, and the workspace has no toolchain marker (pyproject.toml,"
        " package.json, Cargo.toml, go.mod …); a gate whose inputs are unknown could be"
        " rigged unseen, so the run does not start",
        hint="declare them in the gate's [[contract.verify]] table, e.g. "
             'inputs = ["tests/**", "check.cfg"] (inputs = [] says on purpose that it'
             " reads nothing the agent may change)")


def _missing(number: int, command: str, missing: Sequence[str]) -> ConfigError:
    named = ", ".join(repr(m) for m in missing)
    return ConfigError(
        f"verification gate {number} ({command!r}) runs {named}, which does not exist when"
        " the run starts; the agent could write it, and the gate would then run what the"
        " agent wrote and pass, so the run does not start",
        hint="fix the path or install the program, or write the script before the run"
             " (it and its folder are then protected from the agent)")


def _inferred(spec: RunSpec) -> list[str]:
    report = survey(spec.workspace)
    pairs = [(d.directory, d.toolchain) for d in report.detected]
    if spec.toolchain.ecosystem and not any(not d and t.ecosystem == spec.toolchain.ecosystem
                                            for d, t in pairs):
        pairs.insert(0, ("", spec.toolchain))
    return _ecosystem_inputs(pairs)


def _protected_patterns(inputs: Sequence[GateInputs]) -> list[str]:
    return list(dict.fromkeys(p for g in inputs if not g.editable for p in g.patterns))


def protect_gate_inputs(spec: RunSpec, inputs: Sequence[GateInputs] | None = None) -> RunSpec:
    """`spec` with its gates' inputs protected from the agent (see the module docstring).

    Deny-write rules of the layer ``gate`` are added to the policy (once: a stored policy
    that already has them is not given them twice), and the inputs that exist now are
    added to `RunSpec.command_read_only` for the sandbox. Gates marked editable add
    nothing. `io run`, `io resume` and `io tool` all go through this.

    Args:
        spec: The run's spec.
        inputs: The gates' inputs, when the caller already computed them.

    Raises:
        PolicyError: An input pattern is malformed.
    """
    inputs = gate_inputs(spec) if inputs is None else inputs
    patterns = _protected_patterns(inputs)
    if not patterns:
        return spec
    have = {r.pattern for r in spec.policy.rules
            if r.layer == GATE_LAYER and r.kind is ActKind.WRITE and r.effect is Effect.DENY}
    fresh = [p for p in patterns if p not in have]
    policy: Policy = spec.policy.narrowed(deny_write=fresh, layer=GATE_LAYER) if fresh \
        else spec.policy
    binds = _existing(spec.workspace, patterns)
    extra = tuple(p for p in binds if p not in spec.command_read_only)
    return replace(spec, policy=policy, command_read_only=spec.command_read_only + extra)


def _existing(workspace: Workspace, patterns: Sequence[str]) -> list[str]:
    """Existing paths covering `patterns`: a literal file, the directory of ``dir/**``,
    and the files a wider glob matches now (up to `_MAX_BINDS`)."""
    paths: list[str] = []
    globs: list[str] = []
    for pattern in patterns:
        head = pattern.removesuffix("/**")
        if not GLOB_CHARS.intersection(head):
            if workspace.exists(head):
                paths.append(head)
        else:
            globs.append(pattern)
    if globs:
        regex = _union(globs)
        for rel in _walk(workspace):
            if len(paths) >= _MAX_BINDS:
                break
            if regex.fullmatch(rel) and not any(rel.startswith(p + "/") for p in paths):
                paths.append(rel)
    return paths


def _union(patterns: Iterable[str]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{compile_path(p).pattern})" for p in patterns), re.DOTALL)


def _walk(workspace: Workspace, *, links: bool = False) -> Iterator[str]:
    """Regular files under the root (links not followed, but listed themselves when
    `links`), dependency and cache directories pruned, at most `_MAX_FINGERPRINT_FILES`."""
    root = str(workspace.root)
    count = 0
    for directory, dirs, files in os.walk(root):
        linked = [d for d in dirs if os.path.islink(os.path.join(directory, d))]
        dirs[:] = sorted(d for d in dirs if d not in _PRUNED and d not in linked)
        rel_dir = os.path.relpath(directory, root)
        for name in sorted([*files, *linked] if links else files):
            path = os.path.join(directory, name)
            if os.path.islink(path) and not links:
                continue
            count += 1
            if count > _MAX_FINGERPRINT_FILES:
                return
            yield name if rel_dir == "." else f"{rel_dir.replace(os.sep, '/')}/{name}"


def _digest(workspace: Workspace, rel: str) -> str:
    """A short digest of a file's content, or of where a link points (a link planted as
    ``conftest.py`` or ``pytest`` is a change like any other)."""
    path = os.path.join(str(workspace.root), rel)
    if os.path.islink(path):
        try:
            return "link:" + hashlib.blake2b(os.fsencode(os.readlink(path)),
                                             digest_size=8).hexdigest()
        except OSError:
            return "unreadable"
    try:
        data = workspace.read_bytes(rel)
    except WorkspaceError:
        return "unreadable"
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def fingerprint_inputs(workspace: Workspace, patterns: Sequence[str]) -> dict[str, str]:
    """A short content digest of every file (or link) matching `patterns` now, by path."""
    if not patterns:
        return {}
    try:
        regex = _union(patterns)
    except PolicyError:
        return {}
    return {rel: _digest(workspace, rel) for rel in _walk(workspace, links=True)
            if regex.fullmatch(rel) and not _CACHE.search(rel)}


def baseline_json(workspace: Workspace, inputs: Sequence[GateInputs]) -> list[dict[str, object]]:
    """What the run records at its start: each gate's inputs and their fingerprint."""
    return [{**g.to_json(), "fingerprint": fingerprint_inputs(workspace, g.patterns)}
            for g in inputs]


def inputs_changed(
    workspace: Workspace, baseline: Sequence[Mapping[str, object]] | None, index: int
) -> InputChange | None:
    """Compare gate `index`'s inputs now with the run's recorded baseline.

    Returns None when the run recorded no baseline for that gate (a run started by an
    older version, or a contract that changed between drives).
    """
    if baseline is None or index >= len(baseline):
        return None
    entry = baseline[index]
    listed = entry.get("inputs", [])
    patterns = [str(p) for p in listed] if isinstance(listed, (list, tuple)) else []
    editable = bool(entry.get("editable", False))
    before = entry.get("fingerprint")
    if not isinstance(before, Mapping):
        return InputChange(editable, (), checked=False)
    now = fingerprint_inputs(workspace, patterns)
    modified = sorted(p for p in set(before) | set(now) if before.get(p) != now.get(p))
    return InputChange(editable, tuple(modified))
