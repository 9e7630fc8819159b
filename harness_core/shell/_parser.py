"""The parser: tokens to a `Plan` (chains of pipelines of stages), refusing by name.

Refuses what the lexer cannot see alone: keywords, assignments and shell builtins in
command position, an operator with nothing on one side, a redirect with no target,
``2>&1`` on a stage whose stdout is piped, and a ``cd`` it cannot apply at planning.
``cd`` is applied here, lexically as bash's logical ``cd`` is, to every later stage of
the line; the checker then resolves each directory through the workspace.

Pure: no filesystem, no policy, no processes.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Iterator

from harness_core.shell._lexer import (
    KEYWORDS,
    Op,
    OpKind,
    Token,
    Word,
    keyword_refusal,
    lex,
    refuse,
)
from harness_core.shell._plan import (
    Chain,
    Connector,
    Pipeline,
    Plan,
    Redirect,
    RedirectKind,
    Stage,
)

__all__ = ["KEYWORDS", "SHELL_BUILTINS", "parse"]

SHELL_BUILTINS = frozenset(
    "alias bg bind break builtin caller command compgen complete compopt continue declare"
    " dirs disown enable eval exec exit export fc fg getopts hash help history jobs let"
    " local logout mapfile popd pushd read readarray readonly return set shift shopt"
    " source suspend times trap type typeset ulimit umask unalias unset wait . :".split()
)
"""Builtins that act on the shell itself; with no shell they mean nothing, so refused."""

_REDIRECTS = {
    OpKind.OUT: RedirectKind.STDOUT,
    OpKind.APPEND: RedirectKind.APPEND,
    OpKind.IN: RedirectKind.STDIN,
    OpKind.ERR: RedirectKind.STDERR,
    OpKind.ERR_APPEND: RedirectKind.STDERR_APPEND,
}
_STAGE_REDIRECTS = frozenset((*_REDIRECTS, OpKind.ERR_TO_OUT))
_CONNECTORS = {OpKind.SEMI: Connector.THEN, OpKind.AND: Connector.AND, OpKind.OR: Connector.OR}
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")


def _join_dir(cwd: str, target: str) -> str:
    joined = posixpath.normpath(posixpath.join(cwd, target)) if cwd else posixpath.normpath(
        target
    )
    return "" if joined == "." else joined


class _Parser:
    def __init__(self, line: str) -> None:
        self.line = line
        self.cwd = ""
        self.chains: list[Chain] = []
        self.pipelines: list[Pipeline] = []
        self.connectors: list[Connector] = []
        self.stages: list[Stage] = []

    def run(self, tokens: list[Token]) -> Plan:
        # The stage being read: its first word, the text of all its words, its
        # redirects, and the column it starts at.
        head: Word | None = None
        texts: list[str] = []
        redirects: list[Redirect] = []
        column = 0
        pending: Op | None = None  # the last operator that needs a command after it
        following = iter(tokens)  # a redirect takes its target word from here
        for token in following:
            if isinstance(token, Word):
                if head is None:
                    head = token
                    if not redirects:
                        column = token.column
                texts.append(token.text)
                pending = None
                continue
            op = token
            if op.kind in _STAGE_REDIRECTS:
                if head is None and not redirects:
                    column = op.column
                redirects.append(_redirect(op, following))
                pending = None
                continue
            self.operator(op, head, texts, tuple(redirects), column)
            head, texts, redirects = None, [], []
            pending = op
        if pending is not None and pending.kind is not OpKind.SEMI:
            raise refuse("empty command", pending.column, f"nothing after {pending.kind.value}")
        if head is not None or redirects:
            self.end_stage(head, texts, tuple(redirects), column, piped=False)
        if self.stages:
            self.end_pipeline()
        if self.pipelines:
            self.chains.append(Chain(tuple(self.pipelines), tuple(self.connectors)))
        return Plan(self.line, tuple(self.chains))

    def operator(
        self,
        op: Op,
        head: Word | None,
        texts: list[str],
        redirects: tuple[Redirect, ...],
        column: int,
    ) -> None:
        if head is None and not redirects:
            raise refuse("empty command", op.column, f"nothing before {op.kind.value}")
        kind = op.kind
        self.end_stage(head, texts, redirects, column, piped=kind is OpKind.PIPE)
        if kind is OpKind.PIPE:
            return
        self.end_pipeline()
        if kind is OpKind.SEMI:
            self.chains.append(Chain(tuple(self.pipelines), tuple(self.connectors)))
            self.pipelines, self.connectors = [], []
        else:
            self.connectors.append(_CONNECTORS[kind])

    def end_stage(
        self,
        head: Word | None,
        texts: list[str],
        redirects: tuple[Redirect, ...],
        column: int,
        *,
        piped: bool,
    ) -> None:
        if piped and redirects:
            _refuse_dup_into_pipe(redirects)
        if head is None:
            self.stages.append(Stage((), redirects, self.cwd, column))
            return
        _refuse_command_position(head)
        argv = tuple(texts)
        if head.text == "cd":
            self.stages.append(self.cd_stage(argv, redirects, column))
            return
        self.stages.append(Stage(argv, redirects, self.cwd, column))

    def cd_stage(
        self, argv: tuple[str, ...], redirects: tuple[Redirect, ...], column: int
    ) -> Stage:
        operands = argv[2:] if len(argv) > 1 and argv[1] == "--" else argv[1:]
        if redirects:
            raise refuse("cd", redirects[0].column, "a redirect on cd")
        if len(operands) != 1:
            raise refuse("cd", column, f"{len(operands)} operands")
        target = operands[0]
        if not target or (target.startswith("-") and argv[1] != "--"):
            raise refuse("cd", column, f"operand {target!r}")
        before = self.cwd
        self.cwd = _join_dir(before, target)
        return Stage(argv, (), before, column, cd=self.cwd)

    def end_pipeline(self) -> None:
        stages = tuple(self.stages)
        self.stages = []
        if len(stages) > 1:
            for stage in stages:
                if stage.cd is not None:
                    raise refuse("cd", stage.column, "cd inside a pipeline")
        self.pipelines.append(Pipeline(stages))


def _redirect(op: Op, following: Iterator[Token]) -> Redirect:
    """The redirect `op` starts; its target is the next token, except for ``2>&1``."""
    if op.kind is OpKind.ERR_TO_OUT:
        return Redirect(RedirectKind.STDERR_TO_STDOUT, "", op.column)
    target = next(following, None)
    if not isinstance(target, Word):
        raise refuse("missing redirect target", op.column, op.kind.value)
    return Redirect(_REDIRECTS[op.kind], target.text, op.column)


def _refuse_dup_into_pipe(redirects: tuple[Redirect, ...]) -> None:
    stdout_is_pipe = True
    for redirect in redirects:
        if redirect.kind in (RedirectKind.STDOUT, RedirectKind.APPEND):
            stdout_is_pipe = False
        elif redirect.kind is RedirectKind.STDERR_TO_STDOUT and stdout_is_pipe:
            raise refuse("2>&1 into a pipe", redirect.column)


def _refuse_command_position(head: Word) -> None:
    if not head.text:
        raise refuse("empty command", head.column, "the program name is empty")
    if not head.quoted and head.text in KEYWORDS:
        raise keyword_refusal(head.text, head.column)
    if "=" in head.plain_prefix and _ASSIGNMENT.match(head.plain_prefix):
        raise refuse("assignment", head.column, head.text.split("=", 1)[0])
    if head.text in SHELL_BUILTINS:
        raise refuse("shell builtin", head.column, head.text)


@functools.lru_cache(maxsize=512)
def parse(line: str) -> Plan:
    """Parse one command line into a `Plan`.

    Pure, and the `Plan` is immutable, so recent lines are remembered (a run tends to
    repeat its test and build commands); a refusal is raised afresh each time.

    Args:
        line: The line.

    Returns:
        The plan: chains (joined by ``;``) of pipelines (joined by ``&&``/``||``) of
        stages (joined by ``|``), with each stage's lexical working directory.

    Raises:
        ShellRefused: A construct outside what `shell` runs, named, with its column.
    """
    return _Parser(line).run(lex(line))
