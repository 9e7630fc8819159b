"""The checker: a `Plan` to a `RunPlan`, every act through the gate before anything runs.

For each stage, in the order written: the working directory (as ``cd`` left it) is
resolved through the workspace; the whole argv is an `Act.exec`; each redirect target
is resolved relative to that directory and is an `Act.write` (``>``, ``>>``, ``2>``,
``2>>``) or an `Act.read` (``<``); and the file operands of programs such as ``mv``
are Read and Write acts (see `_operands`). The first refusal blocks the whole line, so
a line with one denied stage runs none.

At spawn time the runner asks `recheck` about each stage again, with the filesystem as
it is then: a path that now resolves elsewhere (a link made earlier in the same line)
blocks the rest of the line, and operand acts that were not asked about before (a
directory that gained entries) go to the gate. This module starts no process.
"""

from __future__ import annotations

from typing import Protocol

from harness_core.errors import PathEscape, WorkspaceError
from harness_core.policy import Act, ActKind, Decision, Verdict
from harness_core.shell._operands import OPERAND_PROGRAMS, OperandProblem, operand_acts
from harness_core.shell._plan import (
    Blocked,
    CheckedChain,
    CheckedPipeline,
    CheckedRedirect,
    CheckedStage,
    Plan,
    RedirectKind,
    RunPlan,
    Stage,
)
from harness_core.workspace import Workspace

__all__ = ["Gate", "LineChecker"]


class Gate(Protocol):
    """The run's policy gate, as the shell needs it (`harness_core.tools.ActGate`)."""

    def check(self, act: Act) -> Decision:
        """Decide `act` (policy, then approver); may raise the loop's pause signal."""
        ...

    def refuse(self, act: Act, reason: str, *, rule: str = "workspace-boundary") -> Decision:
        """Record a built-in refusal (by default the workspace resolver's) and return the
        deny decision, named `rule` in layer `builtin`."""
        ...


def _from_decision(act: Act, decision: Decision, column: int) -> Blocked:
    return Blocked(
        reason=decision.reason,
        act=act.kind.value,
        target=act.describe(),
        column=column,
        rule=decision.rule,
        layer=decision.layer,
    )


class LineChecker:
    """Checks plans against one workspace and one gate.

    Args:
        workspace: The resolver.
        gate: The gate every act goes through.
    """

    def __init__(self, workspace: Workspace, gate: Gate) -> None:
        self.workspace = workspace
        self.gate = gate

    def check(self, plan: Plan, base_cwd: str = "") -> RunPlan | Blocked:
        """Resolve and check every stage of `plan`.

        Args:
            plan: The parsed line.
            base_cwd: The directory the line starts in, relative to the root.

        Returns:
            The plan ready to run, or why it may not run at all.
        """
        # What this one check learnt, dropped when it returns: each lexical directory's
        # resolution, and what each location inspected was (so a directory shared by
        # several paths of the line is looked at once). Nothing outlives the call.
        check = _Check(self, base_cwd)
        check_stage = check.stage
        chains: list[CheckedChain] = []
        for chain in plan.chains:
            pipelines: list[CheckedPipeline] = []
            for pipeline in chain.pipelines:
                stages: list[CheckedStage] = []
                for stage in pipeline.stages:
                    checked = check_stage(stage)
                    if isinstance(checked, Blocked):
                        return checked
                    stages.append(checked)
                pipelines.append(CheckedPipeline(tuple(stages)))
            chains.append(CheckedChain(tuple(pipelines), chain.connectors))
        return RunPlan(plan.line, tuple(chains), base_cwd)

    def _gate(self, act: Act, column: int, acts: dict[Act, None]) -> Blocked | None:
        if acts and act in acts:
            return None
        decision = self.gate.check(act)
        if decision.verdict is not Verdict.ALLOW:
            return _from_decision(act, decision, column)
        acts[act] = None
        return None

    def _escape(self, kind: ActKind, word: str, reason: str, column: int) -> Blocked:
        act = Act(kind, word)
        decision = self.gate.refuse(act, reason)
        return Blocked(
            reason=decision.reason, act=kind.value, target=f"{kind.value} {word}",
            column=column, rule=decision.rule, layer=decision.layer,
        )

    def _operands(self, stage: Stage, cwd: str, acts: dict[Act, None]) -> Blocked | None:
        found, problem = operand_acts(stage.argv, cwd, self.workspace)
        if problem is not None:
            return self._problem(problem, stage.column)
        for act in found:
            blocked = self._gate(act, stage.column, acts)
            if blocked is not None:
                return blocked
        return None

    def _problem(self, problem: OperandProblem, column: int) -> Blocked:
        return self._escape(problem.kind, problem.word, problem.reason, column)

    def recheck(
        self, stage: CheckedStage, base_cwd: str = "", *, consult_gate: bool = True
    ) -> Blocked | None:
        """Check `stage` again just before it starts, against the filesystem as it is now.

        Args:
            stage: The stage about to start.
            base_cwd: The directory the line started in.
            consult_gate: Ask the gate about acts the first check did not see (a
                directory that gained entries, a destination that became a directory).
                When False (a handle's line, re-checked on its own thread, where nobody
                can be asked), any such act stops the line instead.

        Returns:
            None when it may start; otherwise why the line must stop here.
        """
        plain = stage.stage
        lexical = [(plain.cwd, stage.cwd)]
        if plain.cd is not None and stage.cd is not None:
            lexical.append((plain.cd, stage.cd))
        for word, planned in lexical:
            now = self._now(word, base_cwd)
            if now != planned:
                return self._moved(f"cd {word}", planned, now, plain.column)
        for redirect in stage.redirects:
            if redirect.kind is RedirectKind.STDERR_TO_STDOUT:
                continue
            now = self._now(redirect.word, stage.cwd)
            if now != redirect.path:
                return self._moved(redirect.word, redirect.path, now, plain.column)
        if plain.cd is not None:
            return None
        found, problem = operand_acts(plain.argv, stage.cwd, self.workspace)
        if problem is not None:
            return self._problem(problem, plain.column)
        acts = dict.fromkeys(stage.acts)
        for act in found:
            if not consult_gate and act not in acts:
                return Blocked(
                    reason=f"the line now also reaches {act.describe()!r}, which was not "
                    "checked before it started; run that part again as its own line",
                    act=act.kind.value, target=act.describe(), column=plain.column,
                )
            blocked = self._gate(act, plain.column, acts)
            if blocked is not None:
                return blocked
        return None

    def _now(self, word: str, cwd: str) -> str | None:
        try:
            return self.workspace.resolve(word, cwd=cwd)
        except (PathEscape, WorkspaceError):
            return None

    def _moved(self, word: str, planned: str, now: str | None, column: int) -> Blocked:
        where = "outside the workspace root" if now is None else repr(now or ".")
        return Blocked(
            reason=f"{word!r} resolved to {planned or '.'!r} when the line was checked and "
            f"now resolves {where} (a link made earlier in the line?); the rest of the line "
            "was not run",
            target=word,
            column=column,
            layer="workspace",
        )


class _Check:
    """The state of one `LineChecker.check` call; made afresh for each call, never kept."""

    __slots__ = ("checker", "workspace", "gate", "base_cwd", "dirs", "kinds")

    def __init__(self, checker: LineChecker, base_cwd: str) -> None:
        self.checker = checker
        self.workspace = checker.workspace
        self.gate = checker.gate
        self.base_cwd = base_cwd
        self.dirs: dict[str, str] = {}
        """Each lexical directory of the line, resolved."""
        self.kinds: dict[str, int] = {}
        """What each location inspected was (`Workspace.resolve`'s private memo)."""

    def stage(self, stage: Stage) -> CheckedStage | Blocked:
        dirs = self.dirs
        cwd = dirs.get(stage.cwd)
        if cwd is None:
            found_dir = self.dir(stage.cwd, stage.column)
            if isinstance(found_dir, Blocked):
                return found_dir
            cwd = found_dir
        argv = stage.argv
        if stage.cd is not None:
            target = self.dir(stage.cd, stage.column)
            if isinstance(target, Blocked):
                return target
            return CheckedStage(stage, cwd, (), target, _NO_ACTS)
        if not argv:
            acts: dict[Act, None] = {}
        else:
            # The parser refuses an empty program name; `Act.exec` checks it again.
            act = Act(ActKind.EXEC, argv[0], argv) if argv[0] else Act.exec(argv)
            decision = self.gate.check(act)
            if decision.verdict is not Verdict.ALLOW:
                return _from_decision(act, decision, stage.column)
            if not stage.redirects and argv[0].rpartition("/")[2] not in OPERAND_PROGRAMS:
                return CheckedStage(stage, cwd, (), None, frozenset((act,)))
            acts = {act: None}
        redirects = self.redirects(stage, cwd, acts) if stage.redirects else ()
        if isinstance(redirects, Blocked):
            return redirects
        if argv and argv[0].rpartition("/")[2] in OPERAND_PROGRAMS:
            blocked = self.checker._operands(stage, cwd, acts)
            if blocked is not None:
                return blocked
        return CheckedStage(stage, cwd, redirects, None, frozenset(acts))

    def redirects(
        self, stage: Stage, cwd: str, acts: dict[Act, None]
    ) -> tuple[CheckedRedirect, ...] | Blocked:
        checked: list[CheckedRedirect] = []
        for redirect in stage.redirects:
            one = self.redirect(redirect.kind, redirect.target, cwd, redirect.column, acts)
            if isinstance(one, Blocked):
                return one
            checked.append(one)
        return tuple(checked)

    def dir(self, lexical: str, column: int) -> str | Blocked:
        dirs = self.dirs
        if lexical in dirs:
            return dirs[lexical]
        base_cwd = self.base_cwd
        if not lexical and not base_cwd:
            dirs[lexical] = ""  # the root itself: nothing to resolve
            return ""
        try:
            resolved = self.workspace.resolve(lexical, cwd=base_cwd, _kinds=self.kinds)
        except (PathEscape, WorkspaceError) as exc:
            reason = exc.reason if isinstance(exc, PathEscape) else exc.message
            act = Act.read(lexical)
            decision = self.gate.refuse(act, f"cd {lexical!r}: {reason}")
            return Blocked(
                reason=decision.reason, act="read", target=f"cd {lexical}", construct="cd",
                column=column, rule=decision.rule, layer=decision.layer,
            )
        dirs[lexical] = resolved
        return resolved

    def redirect(
        self, kind: RedirectKind, word: str, cwd: str, column: int, acts: dict[Act, None]
    ) -> CheckedRedirect | Blocked:
        if kind is RedirectKind.STDERR_TO_STDOUT:
            return CheckedRedirect(kind, "", "")
        act_kind = ActKind.READ if kind is RedirectKind.STDIN else ActKind.WRITE
        if not word:
            return Blocked(reason="a redirect needs a file name after it",
                           construct="missing redirect target", column=column)
        checker = self.checker
        try:
            path = self.workspace.resolve(word, cwd=cwd, _kinds=self.kinds)
        except PathEscape as exc:
            return checker._escape(act_kind, word, f"{word!r} {exc.reason}", column)
        except WorkspaceError as exc:
            return checker._escape(act_kind, word, exc.message, column)
        blocked = checker._gate(Act(act_kind, path), column, acts)
        if blocked is not None:
            return blocked
        return CheckedRedirect(kind, word, path)


_NO_ACTS: frozenset[Act] = frozenset()
