"""The git built-ins: git_status, git_diff, git_commit.

Each decides its acts through the run's gate before git runs, like every tool:

- ``git_status`` is a Read of the workspace root;
- ``git_diff`` is a Read of every file whose diff it would show (a file the policy
  will not let the agent read is left out, and the observation says so);
- ``git_commit`` is a Read of each path it stages and a Write of ``.git``. `.git`'s
  hooks and config stay protected from every other tool; this one writes objects,
  the index and refs through git itself, with hooks never run.

git runs on the host, so each call first opens the repository through `_git_repo`: a
repository whose files would make git run a program (`GitRefused`) is refused, recorded
through the gate like a policy refusal (layer ``builtin``), and git never starts.

A commit carries the trailer ``Io-Call: <run>/<step>/<call>``. When a run resumes and
finds a ``git_commit`` call with an intent but no observation, `GitCommit.resume`
searches recent history for that trailer and reports the commit that landed instead
of committing again; only when no commit carries it does it commit. That is the
durable marker the idempotency rests on, not git's "nothing staged".
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

from harness_core.errors import GitRefused, InvalidToolArguments, ToolError
from harness_core.messages import ToolSpec
from harness_core.policy import Act, ActKind
from harness_core.tool_data import GitCommitData, GitDiffData, GitStatusData
from harness_core.tools._base import ToolContext, ToolOutcome
from harness_core.tools._git import GitSettings, GitStatus, parse_status, quote_path
from harness_core.tools._git_repo import Repository, commit_identity, open_repository, run_git
from harness_core.tools._support import NOT_UTF8_NOTE, bounded, gated_path, refusal_outcome

__all__ = ["GitCommit", "GitDiff", "GitStatusTool", "git_tools"]

TRAILER = "Io-Call"
"""The commit trailer that names the call which made a commit."""


def _settings(ctx: ToolContext) -> GitSettings:
    found = ctx.services.git
    return found if found is not None else GitSettings()


def _failed(tool: str, exc: ToolError, ctx: ToolContext) -> ToolOutcome:
    if isinstance(exc, GitRefused):
        act = Act.exec(["git", tool.removeprefix("git_")])
        decision = ctx.gate.refuse(act, exc.reason, rule=f"git:{exc.key}")
        return refusal_outcome(act, decision)
    return ToolOutcome(f"{tool}: {exc}", is_error=True)


def _open(ctx: ToolContext) -> contextlib.AbstractContextManager[Repository]:
    return open_repository(str(ctx.workspace.root), _settings(ctx))


def _obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required,
            "additionalProperties": False}


def _status_text(status: GitStatus) -> tuple[str, bool]:
    if status.branch is None:
        head = f"HEAD detached at {(status.commit or '')[:12]}"
    else:
        head = f"on branch {status.branch}"
        if status.commit is None:
            head += " (no commits yet)"
    if status.upstream:
        head += f", upstream {status.upstream}: ahead {status.ahead}, behind {status.behind}"
    lines = [head]
    odd = False
    for entry in status.entries:
        shown, not_utf8 = quote_path(entry.path)
        odd = odd or not_utf8
        if entry.original is not None:
            shown = f"{quote_path(entry.original)[0]} -> {shown}"
        lines.append(f"{entry.index}{entry.worktree} {entry.kind:<9} {shown}")
    if not status.entries:
        lines.append("nothing to commit, working tree clean")
    return "\n".join(lines), odd


class GitStatusTool:
    """`git status`, parsed."""

    spec = ToolSpec(
        "git_status",
        "The repository's branch, upstream ahead/behind, and changed, staged, untracked or"
        " conflicted paths (XY: staged, unstaged; . unchanged).",
        _obj({}, []),
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        _, refused = gated_path(ctx, ".", ActKind.READ)
        if refused is not None:
            return refused
        try:
            with _open(ctx) as repo:
                done = run_git(repo, ["status", "--porcelain=v2", "--branch", "-z",
                                      "--ignore-submodules=dirty", "--", "."])
        except ToolError as exc:
            return _failed("git_status", exc, ctx)
        status = parse_status(done.stdout, repo.prefix)
        text, odd = _status_text(status)
        if odd:
            text += "\n" + NOT_UTF8_NOTE
        shown, cut = bounded(text, ctx.output_cap)
        return ToolOutcome(shown, data=GitStatusData(
            branch=status.branch, commit=status.commit, upstream=status.upstream,
            ahead=status.ahead, behind=status.behind,
            entries=tuple(e.to_json() for e in status.entries), truncated=cut))


_DIFF_HEADER = re.compile(rb"^diff --git ", re.M)


def _literal(rel: str) -> str:
    return f":(literal){rel}"


class GitDiff:
    """`git diff` of the worktree, the index, or against a ref; bounded."""

    spec = ToolSpec(
        "git_diff",
        "Unified diff: unstaged (default) or `staged`; with `ref`, the worktree (index if"
        " `staged`) against it. `paths` limits it. Files you may not read are left out, named.",
        _obj({"staged": {"type": "boolean"}, "ref": {"type": "string"},
              "paths": {"type": "array", "items": {"type": "string"}}}, []),
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        staged = args.get("staged", False)
        ref = args.get("ref")
        paths = args.get("paths", [])
        if not isinstance(staged, bool) or (ref is not None and not isinstance(ref, str)):
            raise InvalidToolArguments("git_diff: `staged` must be a boolean, `ref` a string")
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise InvalidToolArguments("git_diff: `paths` must be a list of strings")
        specs: list[str] = []
        for path in paths:
            rel, refused = gated_path(ctx, path, ActKind.READ)
            if refused is not None:
                return refused
            specs.append(_literal(rel) if rel else ".")
        try:
            with _open(ctx) as repo:
                return self._diff(ctx, repo, staged, ref, specs or ["."])
        except ToolError as exc:
            return _failed("git_diff", exc, ctx)

    def _diff(self, ctx: ToolContext, repo: Repository, staged: bool, ref: str | None,
              specs: list[str]) -> ToolOutcome:
        base = ["diff", "--relative", "--no-ext-diff", "--no-textconv", "--no-color",
                "--ignore-submodules=dirty"]
        if staged:
            base.append("--cached")
        if ref:
            if ref.startswith("-"):
                raise ToolError(f"{ref!r} is not a ref")
            run_git(repo, ["rev-parse", "--verify", "--quiet", "--end-of-options",
                           f"{ref}^{{commit}}"])
            base.append(ref)
        names = run_git(repo, [*base, "--name-only", "-z", "--", *specs])
        allowed: list[str] = []
        skipped: list[str] = []
        for raw in filter(None, names.stdout.split(b"\0")):
            rel = raw.decode("utf-8", "surrogateescape")
            decision = ctx.gate.check(Act.read(rel))
            (allowed if decision.is_allowed else skipped).append(rel)
        text = ""
        if allowed:
            done = run_git(repo, [*base, "--", *map(_literal, allowed)])
            text = done.stdout.decode("utf-8", "backslashreplace")
        return self._bounded(ctx, text, allowed, skipped, staged, ref)

    @staticmethod
    def _bounded(ctx: ToolContext, text: str, allowed: list[str], skipped: list[str],
                 staged: bool, ref: str | None) -> ToolOutcome:
        total = len(text.encode("utf-8"))
        shown, cut = bounded(text or "(no differences)", ctx.output_cap)
        if cut:
            kept = len(_DIFF_HEADER.findall(shown.encode("utf-8")))
            shown += (f"\n[diff cut at {ctx.output_cap} of {total} bytes: {len(allowed)} file(s)"
                      f" differ, the last {len(allowed) - kept + 1 if kept else len(allowed)}"
                      " shown partly or not at all; narrow it with `paths`]")
        if skipped:
            shown += ("\n[left out: the policy refuses reading "
                      + ", ".join(quote_path(p)[0] for p in skipped) + "]")
        return ToolOutcome(shown, data=GitDiffData(
            mode="staged" if staged else "worktree", ref=ref,
            files=tuple(quote_path(p)[0] for p in allowed),
            skipped=tuple(quote_path(p)[0] for p in skipped), total_bytes=total, truncated=cut))


def _found_commit(ctx: ToolContext, call_ref: str) -> tuple[str, str] | None:
    """The (commit, subject) in recent history whose message carries this call's trailer."""
    line = f"{TRAILER}: {call_ref}"
    # No --grep: with it, -n would cap the matches, not the commits walked, and the
    # search would reach the whole history instead of the last `history_depth` commits.
    with _open(ctx) as repo:
        done = run_git(repo, ["log", f"-n{repo.settings.history_depth}",
                              "--format=%H%x00%s%x00%B%x00", "HEAD", "--"], check=False)
    if done.returncode != 0:
        return None  # no commits yet, or not a repository: nothing landed
    fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    for start in range(0, len(fields) - 2, 3):
        sha, subject, body = fields[start].strip(), fields[start + 1], fields[start + 2]
        if line in (b.strip() for b in body.splitlines()):
            return sha, subject
    return None


class GitCommit:
    """Stage paths and commit, hooks never run; idempotent across a resume."""

    spec = ToolSpec(
        "git_commit",
        "Stage `paths` (files or directories, deletions too) and commit with `message`. No"
        " hooks run; the author is the operator.",
        _obj({"message": {"type": "string"},
              "paths": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
             ["message", "paths"]),
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        message = args.get("message")
        paths = args.get("paths")
        if not isinstance(message, str) or not message.strip():
            raise InvalidToolArguments("git_commit: `message` must be a non-empty string")
        if (not isinstance(paths, list) or not paths
                or not all(isinstance(p, str) and p for p in paths)):
            raise InvalidToolArguments("git_commit: `paths` must be a non-empty list of paths")
        specs: list[str] = []
        for path in paths:
            rel, refused = gated_path(ctx, path, ActKind.READ)
            if refused is not None:
                return refused
            specs.append(_literal(rel) if rel else ".")
        act = Act.write(".git")
        decision = ctx.gate.check(act)
        if not decision.is_allowed:
            return refusal_outcome(act, decision)
        try:
            with _open(ctx) as repo:
                return self._commit(ctx, repo, message, specs)
        except ToolError as exc:
            return _failed("git_commit", exc, ctx)

    def resume(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        """A call whose intent has no observation: report the commit if it landed."""
        if ctx.call_ref:
            try:
                found = _found_commit(ctx, ctx.call_ref)
            except ToolError as exc:
                return _failed("git_commit", exc, ctx)
            if found is not None:
                sha, subject = found
                return ToolOutcome(
                    f"committed {sha[:12]}: {subject} (it landed before the run was"
                    f" interrupted, found by its trailer {TRAILER}: {ctx.call_ref};"
                    " not committed again)",
                    data=GitCommitData(sha, call=ctx.call_ref, recovered=True),
                    changed=True)
        return self.run(args, ctx)

    def _commit(self, ctx: ToolContext, repo: Repository, message: str,
                specs: list[str]) -> ToolOutcome:
        identity = commit_identity(repo)
        run_git(repo, ["add", "-A", "--", *specs])
        body = message.strip() + "\n"
        if ctx.call_ref:
            body += f"\n{TRAILER}: {ctx.call_ref}\n"
        done = run_git(repo, ["commit", "--no-verify", "-q", "--cleanup=whitespace", "-m", body],
                       check=False, env=identity)
        if done.returncode != 0:
            said = (done.stdout + done.stderr).decode("utf-8", "replace").strip()
            if "nothing to commit" in said or "no changes added" in said:
                return ToolOutcome("git_commit: nothing to commit (the paths have no changes)",
                                   is_error=True)
            raise ToolError(f"git commit failed (exit {done.returncode}): {said[-2000:]}")
        sha = run_git(repo, ["rev-parse", "HEAD"]).stdout.decode().strip()
        files = run_git(repo, ["diff-tree", "--no-commit-id", "--name-only", "-r", "-z",
                               "--root", "--relative", "HEAD"]).stdout
        names = [quote_path(f.decode("utf-8", "surrogateescape"))[0]
                 for f in files.split(b"\0") if f]
        subject = message.strip().splitlines()[0]
        text = f"committed {sha[:12]}: {subject}\n{len(names)} file(s): " + ", ".join(names)
        shown, _ = bounded(text, ctx.output_cap)
        return ToolOutcome(shown, data=GitCommitData(sha, files=tuple(names),
                                                     call=ctx.call_ref or None), changed=True)


def git_tools() -> list[Any]:
    """The three git built-ins."""
    return [GitStatusTool(), GitDiff(), GitCommit()]
