"""The vocabulary of a policy: tiers, effects, verdicts, approval modes, rules, decisions.

Plain data with no I/O. How a `Policy` combines these into a decision is described in
`harness_core.policy._policy`.
"""

from __future__ import annotations

import re
from enum import Enum

from harness_core._record import record
from harness_core.errors import PolicyError
from harness_core.policy._act import ActKind
from harness_core.policy._patterns import compile_command, compile_host, compile_path

__all__ = [
    "BUILTIN_LAYER",
    "GATE_LAYER",
    "PROTECTED_WRITE_PATTERNS",
    "TIER_LAYER",
    "ApprovalMode",
    "Decision",
    "Effect",
    "Rule",
    "Tier",
    "Verdict",
    "compile_rule_pattern",
]

BUILTIN_LAYER = "builtin"
"""Layer name of decisions the policy takes before any rule (root escape, protected paths)."""
TIER_LAYER = "tier"
"""Layer name of decisions taken by the tier default."""
GATE_LAYER = "gate"
"""Layer of the deny-write rules that keep verification gates' inputs from the agent."""
PROTECTED_WRITE_PATTERNS: tuple[str, ...] = (
    "io.toml",
    "io.local.toml",
    ".git/hooks/**",
    ".git/config",
    ".gitmodules",
    ".git/commondir",
    ".git/config.worktree",
    ".git/info/**",
    ".git/worktrees/**",
    ".git/objects/info/alternates",
)
"""Paths no write reaches unless an allow-write rule names the exact path: the scope
files, and every file of ``.git`` that can make git read configuration (and so run a
program) or objects from somewhere else: hooks, config, ``commondir``, the per-worktree
config, ``info/`` (attributes), linked worktrees' directories, object alternates."""


class Tier(Enum):
    """What acts no rule names default to."""

    READ_ONLY = "read-only"
    """Reads are allowed; writes, commands and network need approval."""
    WORKSPACE_WRITE = "workspace-write"
    """Reads and writes are allowed; commands and network need approval."""
    FULL = "full"
    """Everything is allowed unless a rule or the built-in layer denies it."""

    @staticmethod
    def parse(value: str) -> Tier:
        """The tier named `value`.

        Raises:
            PolicyError: `value` names no tier.
        """
        for tier in Tier:
            if tier.value == value:
                return tier
        names = ", ".join(t.value for t in Tier)
        raise PolicyError(f"unknown policy tier {value!r}", hint=f"use one of: {names}")

    def allows(self, kind: ActKind) -> bool:
        """Whether this tier allows an act of `kind` that no rule names."""
        if kind is ActKind.READ:
            return True
        if kind is ActKind.WRITE:
            return self is not Tier.READ_ONLY
        return self is Tier.FULL


class Effect(Enum):
    """What a rule does to the acts it matches."""

    ALLOW = "allow"
    """Permit the act (unless a deny rule or the built-in layer refuses it)."""
    DENY = "deny"
    """Refuse the act, whatever any allow rule says."""


class Verdict(Enum):
    """The outcome of `Policy.check`."""

    ALLOW = "allow"
    """The act may go ahead."""
    DENY = "deny"
    """The act is refused; the refusal is an observation for the model."""
    ASK = "ask"
    """An `Approver` must decide; without one able to answer now, the run pauses."""


class ApprovalMode(Enum):
    """What happens to an act the tier does not allow and no rule names."""

    ASK = "ask"
    """Ask an approver (a prompt on a TTY; without one the run pauses)."""
    DENY = "deny"
    """Refuse it outright."""

    @staticmethod
    def parse(value: str) -> ApprovalMode:
        """The approval mode named `value`.

        Raises:
            PolicyError: `value` names no mode.
        """
        for mode in ApprovalMode:
            if mode.value == value:
                return mode
        raise PolicyError(f"unknown approval mode {value!r}", hint="use 'ask' or 'deny'")


@record
class Rule:
    """One allow or deny rule.

    Attributes:
        effect: Allow or deny.
        kind: The kind of act it applies to.
        pattern: A glob in the dialect of `kind` (path, command or host).
        layer: Where it came from: ``system``, ``user``, ``project``, ``local``,
            ``agent:<name>``, ``cli`` …

    Raises:
        PolicyError: The pattern is empty or not a valid glob, or the layer is empty.
    """

    effect: Effect
    kind: ActKind
    pattern: str
    layer: str

    def __post_init__(self) -> None:
        if not self.layer:
            raise PolicyError(f"rule {self.pattern!r} has no layer")
        compile_rule_pattern(self.kind, self.pattern)

    def to_json(self) -> dict[str, str]:
        """``{"effect", "kind", "pattern", "layer"}``."""
        return {
            "effect": self.effect.value,
            "kind": self.kind.value,
            "pattern": self.pattern,
            "layer": self.layer,
        }


@record
class Decision:
    """What `Policy.check` concluded about an act, and why.

    Attributes:
        verdict: Allow, deny or ask.
        reason: One line a person (and the model) can read.
        rule: The pattern that decided, when a rule or a protected path did.
        layer: The layer that decided: a scope name, ``builtin`` or ``tier``.
    """

    verdict: Verdict
    reason: str
    rule: str | None = None
    layer: str | None = None

    @property
    def is_allowed(self) -> bool:
        """Whether the act may go ahead without asking anyone."""
        return self.verdict is Verdict.ALLOW

    def to_json(self) -> dict[str, str]:
        """The verdict and reason, with rule and layer when set."""
        out = {"verdict": self.verdict.value, "reason": self.reason}
        if self.rule is not None:
            out["rule"] = self.rule
        if self.layer is not None:
            out["layer"] = self.layer
        return out


def compile_rule_pattern(kind: ActKind, pattern: str) -> re.Pattern[str]:
    """Compile `pattern` in the dialect of `kind` (raises `PolicyError` when malformed)."""
    if not isinstance(pattern, str):
        raise PolicyError(f"a {kind.value} pattern must be a string, not {pattern!r}")
    if kind is ActKind.EXEC:
        return compile_command(pattern)
    if kind is ActKind.NET:
        return compile_host(pattern)
    if kind is ActKind.MCP:
        return compile_tool(pattern)
    return compile_path(pattern)


def compile_tool(pattern: str) -> re.Pattern[str]:
    """Compile an mcp pattern ``server/tool``: ``*`` matches any run of characters but
    ``/``, so ``github/*`` is every tool of one server and ``*/delete_*`` one kind of
    tool of every server (raises `PolicyError` when it is not two parts)."""
    if not pattern.strip():
        raise PolicyError("a policy rule has an empty pattern",
                          hint="an empty pattern would match nothing; remove the rule or name"
                          " a target")
    server, sep, tool = pattern.partition("/")
    if not sep or not server or not tool or "/" in tool:
        raise PolicyError(f"an mcp pattern names server/tool, not {pattern!r}",
                          hint="e.g. 'github/*' for every tool of the server 'github'")
    regex = "/".join("[^/]*".join(re.escape(piece) for piece in part.split("*"))
                     for part in (server, tool))
    return re.compile(regex, re.DOTALL)
