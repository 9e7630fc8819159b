"""`Policy`: rules, a tier and an approval mode that turn an `Act` into a `Decision`.

How `Policy.check` decides, in order (the first step that speaks wins):

1. **Built-in layer** (``builtin``), read and write only. A path that is absolute or
   climbs above the root after normalisation is denied as outside the workspace root
   (the workspace resolver already refuses these; this is defence in depth). A write
   to a protected path — `PROTECTED_WRITE_PATTERNS` (the scope files ``io.toml`` and
   ``io.local.toml``, git hooks, git config and the other ``.git`` files that can
   point git at configuration or objects elsewhere, ``.gitmodules``) and the policy's own
   `protected` paths (the store, when it lies inside the workspace) — is denied unless
   an allow-write rule's pattern is exactly that path, with no glob: an agent must not
   widen the boundary of its next run by editing the file it is loaded from. The
   policy's own `protected` entries are literal paths, not globs (``dir/**`` names a
   folder and everything in it, present or not: a hook's folder). Protected paths are
   matched case-insensitively, so ``IO.TOML`` on a case-folding filesystem is caught.
2. **Deny rules**: any deny rule of the act's kind that matches denies. A deny in any
   layer beats an allow in any layer; the decision records that rule and its layer.
3. **Allow rules**: any allow rule of the act's kind that matches allows.
4. **Tier default** (layer ``tier``) for acts no rule names: reads are allowed in
   every tier, writes in ``workspace-write`` and ``full``, commands and network only
   in ``full``. Anything else is ``ask`` when the approval mode is ``ask`` and ``deny``
   when it is ``deny``.

A policy made by `Policy.contain` is additionally bounded by the policies it was
contained in (`Policy.within`): its verdict is the strictest of its own and theirs.

Pattern dialects (see `_patterns`): path patterns match the **whole** path relative to
the root (``*.pem`` matches only at the root; write ``**/*.pem`` for any depth; ``dir/**``
matches ``dir`` and everything under it). Command patterns match the command line
``" ".join(argv)`` with ``*`` matching anything; a deny also matches the program alone
(``argv[0]`` or its basename) and the line with ``argv[0]`` replaced by its basename, so
``/usr/bin/git push`` is caught by ``git push*``. An allow must match the literal line:
widening an allow to the basename would let ``./pytest`` — a file the agent can write —
pass as ``pytest*``. Host patterns are case-insensitive, and numeric hosts and CIDR
networks compare as addresses (``127.1`` is ``127.0.0.1``; see `_net`); a net rule
that names a port (``pypi.org:443``) matches only that port, one that names none matches every port. An
act that names no port could reach any port: a rule with a port never allows it and a
deny rule with a port refuses it (deny wins whenever it might apply).
Command patterns are textual: ``git -C . push`` is not ``git push*``. MCP patterns
name ``server/tool`` (``*`` stays within one part: ``github/*``, ``*/delete_*``) and
match the whole target; a target with a second ``/`` (a tool whose name holds one) has
no one reading as server/tool, so the built-in rule ``mcp-target`` refuses it before any
rule is matched. The tier default treats an MCP call like a command (allowed only in
``full``).

`check` is pure and does no I/O; patterns are compiled once, when the policy is built.
Because a policy is frozen and `check` is pure, each policy remembers the decisions of
recent acts (a bounded memo keyed by the act): a run asks about the same few commands
and paths over and over.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field, replace
from typing import Any

from harness_core._record import record
from harness_core.errors import PolicyError
from harness_core.policy._act import Act, ActKind
from harness_core.policy._net import IPAddress, NetMatcher, NetView, parse_address
from harness_core.policy._patterns import (
    GLOB_CHARS,
    compile_path,
    normalise_path_pattern,
    normalise_target_path,
    split_host_port,
)
from harness_core.policy._rules import (
    BUILTIN_LAYER,
    GATE_LAYER,
    PROTECTED_WRITE_PATTERNS,
    TIER_LAYER,
    ApprovalMode,
    Decision,
    Effect,
    Rule,
    Tier,
    Verdict,
    compile_rule_pattern,
)

__all__ = ["POLICY_FORMAT", "Policy"]

POLICY_FORMAT = 1
"""Version of `Policy.to_json`'s shape."""

_TIER_RANK = {Tier.READ_ONLY: 0, Tier.WORKSPACE_WRITE: 1, Tier.FULL: 2}
_VERDICT_RANK = {Verdict.DENY: 0, Verdict.ASK: 1, Verdict.ALLOW: 2}
_MEMO_SIZE = 4096
"""Decisions a policy remembers; the memo is emptied when full (a run uses far fewer)."""
_MEMO_TEXT = 2048
"""Acts longer than this (characters of target and argv) are decided afresh every time,
so a memo of long command lines cannot grow beyond a few megabytes."""


@record
class _Matcher:
    """The rules of one kind and effect as one alternation: group ``i + 1`` is rule ``i``.

    A full match of an alternation takes the first alternative that matches whole, so
    the group that matched names the first rule, in order, that matches: the one
    whose decision (built once, here) is returned.
    """

    regex: re.Pattern[str] | None
    decisions: tuple[Decision, ...]

    @staticmethod
    def build(rules: Sequence[tuple[Rule, re.Pattern[str]]], verdict: Verdict) -> _Matcher:
        if not rules:
            return _Matcher(None, ())
        flags = rules[0][1].flags
        if any(regex.flags != flags for _, regex in rules):
            raise PolicyError("internal: patterns of one kind compiled with different flags")
        regex = re.compile("|".join(f"({regex.pattern})" for _, regex in rules), flags)
        word = "allowed" if verdict is Verdict.ALLOW else "denied"
        decisions = tuple(
            Decision(verdict, _reason(rule, word, verdict), rule.pattern, rule.layer)
            for rule, _ in rules
        )
        return _Matcher(regex, decisions)

    def first(self, candidates: tuple[str, ...]) -> Decision | None:
        """The decision of the first rule that matches any of `candidates`, if one does."""
        regex = self.regex
        if regex is None:
            return None
        best = 0
        for candidate in candidates:
            found = regex.fullmatch(candidate)
            if found is not None and found.lastindex is not None:
                if not best or found.lastindex < best:
                    best = found.lastindex
        return self.decisions[best - 1] if best else None


def _reason(rule: Rule, word: str, verdict: Verdict) -> str:
    if rule.layer == GATE_LAYER and verdict is Verdict.DENY:
        return (f"an input of a verification gate ({rule.pattern!r}): the agent may not change"
                " what judges its work (the operator can set editable = true on the gate)")
    return f"{word} by {verdict.value}_{rule.kind.value} {rule.pattern!r} ({rule.layer})"


@record
class _Compiled:
    deny: Mapping[ActKind, _Matcher]
    allow: Mapping[ActKind, _Matcher]
    net_deny: NetMatcher
    net_allow: NetMatcher
    defaults: Mapping[ActKind, Decision]
    exact_write_allows: frozenset[str]
    protected: tuple[tuple[str, re.Pattern[str]], ...]
    protected_any: re.Pattern[str]


def _build(
    rules: Iterable[Rule], protected: Iterable[str], tier: Tier, approval: ApprovalMode
) -> _Compiled:
    deny: dict[ActKind, list[tuple[Rule, re.Pattern[str]]]] = {k: [] for k in ActKind}
    allow: dict[ActKind, list[tuple[Rule, re.Pattern[str]]]] = {k: [] for k in ActKind}
    exact: set[str] = set()
    net: dict[Effect, list[Rule]] = {Effect.DENY: [], Effect.ALLOW: []}
    for rule in rules:
        if rule.kind is ActKind.NET:
            net[rule.effect].append(rule)
            continue
        bucket = deny if rule.effect is Effect.DENY else allow
        bucket[rule.kind].append((rule, compile_rule_pattern(rule.kind, rule.pattern)))
        if rule.effect is Effect.ALLOW and rule.kind is ActKind.WRITE:
            normal = normalise_path_pattern(rule.pattern)
            if not GLOB_CHARS.intersection(normal):
                exact.add(normal)
    flags = re.DOTALL | re.IGNORECASE
    guarded = tuple(
        (pattern, re.compile(compile_path(pattern).pattern, flags))
        for pattern in PROTECTED_WRITE_PATTERNS
    ) + tuple((path, re.compile(_protected_regex(path), flags)) for path in protected)
    return _Compiled(
        deny={k: _Matcher.build(v, Verdict.DENY) for k, v in deny.items()},
        allow={k: _Matcher.build(v, Verdict.ALLOW) for k, v in allow.items()},
        net_deny=NetMatcher.build(net[Effect.DENY], Verdict.DENY, _reason),
        net_allow=NetMatcher.build(net[Effect.ALLOW], Verdict.ALLOW, _reason),
        defaults={k: _tier_default(tier, approval, k) for k in ActKind},
        exact_write_allows=frozenset(exact),
        protected=guarded,
        protected_any=re.compile("|".join(f"(?:{r.pattern})" for _, r in guarded), flags),
    )


def _tier_default(tier: Tier, approval: ApprovalMode, act_kind: ActKind) -> Decision:
    kind, name = act_kind.value, tier.value
    if tier.allows(act_kind):
        return Decision(Verdict.ALLOW, f"the {name} tier allows {kind}", None, TIER_LAYER)
    if approval is ApprovalMode.ASK:
        return Decision(Verdict.ASK, f"the {name} tier needs approval for {kind}", None, TIER_LAYER)
    return Decision(
        Verdict.DENY,
        f"the {name} tier does not allow {kind} and approval is 'deny'",
        None,
        TIER_LAYER,
    )


def _protected_regex(path: str) -> str:
    """A protected entry as a regex: a literal path, or a folder and everything in it
    (``dir/**``: a hook's folder, where nothing may be created, changed or renamed)."""
    if isinstance(path, str) and path.endswith("/**"):
        return re.escape(_protected_path(path[:-3])) + "(?:/.*)?"
    return re.escape(_protected_path(path))


def _protected_path(path: str) -> str:
    normal = normalise_target_path(path) if isinstance(path, str) else None
    if not normal:
        raise PolicyError(
            f"protected path {path!r} must name a file inside the workspace root",
            hint="give it relative to the root, e.g. 'state/io.db'",
        )
    return normal


def _exec_lines(argv: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(candidates a deny may match, candidates an allow may match)."""
    line = " ".join(argv)
    program = argv[0]
    base = program.replace("\\", "/").rpartition("/")[2]
    if base == program and not base.lower().endswith(".exe"):
        return (line, program), (line,)  # the common case: a bare program name
    names = {program, base}
    if base.lower().endswith(".exe"):
        names.add(base[:-4])
    deny = {line, *names, *(" ".join((name, *argv[1:])) for name in names)}
    return tuple(deny), (line,)


def _act_size(act: Act) -> int:
    return len(act.target) + sum(map(len, act.argv))


_OUTSIDE = Decision(Verdict.DENY, "the path is outside the workspace root", "workspace-boundary",
                    BUILTIN_LAYER)

_AMBIGUOUS_MCP = Decision(
    Verdict.DENY, "the MCP target holds more than one '/', so no rule can tell its server"
    " from its tool (a rule such as '*/delete_*' would match neither reading)", "mcp-target",
    BUILTIN_LAYER)


@record
class Policy:
    """The boundary: rules, a tier default and an approval mode. Immutable data.

    Attributes:
        tier: The default for acts no rule names.
        rules: Allow and deny rules from every layer; order only affects attribution.
        approval: What an act the tier does not allow becomes: ask or deny.
        protected: Extra literal paths (relative to the root, no globs) protected from
            writes like `PROTECTED_WRITE_PATTERNS`: the store file and its ``-wal``,
            ``-shm`` and ``-journal`` siblings when the store lies inside the workspace.
        within: Policies this one was contained in (`contain`); each must also agree.

    Raises:
        PolicyError: A protected path is empty or outside the root, or `tier`/`approval`
            is a string that names no tier or mode.
    """

    tier: Tier = Tier.WORKSPACE_WRITE
    rules: tuple[Rule, ...] = ()
    approval: ApprovalMode = ApprovalMode.ASK
    protected: tuple[str, ...] = ()
    within: tuple[Policy, ...] = ()
    _compiled: _Compiled = field(init=False, repr=False, compare=False)
    _memo: dict[tuple[ActKind, str, tuple[str, ...]], Decision] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        tier: object = self.tier
        if isinstance(tier, str):
            object.__setattr__(self, "tier", Tier.parse(tier))
        approval: object = self.approval
        if isinstance(approval, str):
            object.__setattr__(self, "approval", ApprovalMode.parse(approval))
        object.__setattr__(self, "rules", tuple(self.rules))
        object.__setattr__(self, "protected", tuple(self.protected))
        object.__setattr__(self, "within", tuple(self.within))
        object.__setattr__(
            self, "_compiled", _build(self.rules, self.protected, self.tier, self.approval)
        )
        object.__setattr__(self, "_memo", {})

    def check(self, act: Act) -> Decision:
        """Decide `act` (see the module docstring for the order of the steps).

        Args:
            act: The act; a READ/WRITE target should already be resolved by the workspace.

        Returns:
            The decision with its reason, and the rule and layer that took it.
        """
        memo = self._memo
        # Keyed by the act's fields, not the act: a tuple hashes and compares in C.
        key = (act.kind, act.target, act.argv)
        try:
            known = memo.get(key)
        except TypeError:  # an act built by hand with a list for argv: not hashable
            return self._check(act)
        if known is not None:
            return known
        decision = self._check(act)
        if _act_size(act) <= _MEMO_TEXT:
            if len(memo) >= _MEMO_SIZE:
                memo.clear()  # atomic, so safe from the threads that recheck handles
            memo[key] = decision
        return decision

    def _check(self, act: Act) -> Decision:
        decision = self._decide(act)
        for outer in self.within:
            other = outer.check(act)
            if _VERDICT_RANK[other.verdict] < _VERDICT_RANK[decision.verdict]:
                decision = other
        return decision

    def _decide(self, act: Act) -> Decision:
        kind = act.kind
        compiled = self._compiled
        if kind is ActKind.EXEC:
            deny_candidates, allow_candidates = _exec_lines(act.command)
        elif kind is ActKind.NET:
            host, port = split_host_port(act.target)
            address = parse_address(host)
            decision = compiled.net_deny.first(host, port, address)
            if decision is None:
                decision = compiled.net_allow.first(host, port, address)
            return compiled.defaults[kind] if decision is None else decision
        elif kind is ActKind.MCP:
            if act.target.count("/") != 1:
                return _AMBIGUOUS_MCP
            deny_candidates = allow_candidates = (act.target,)
        else:
            path = normalise_target_path(act.target)
            if path is None:
                return _OUTSIDE
            if kind is ActKind.WRITE:
                refusal = self._protected(path)
                if refusal is not None:
                    return refusal
            deny_candidates = allow_candidates = (path,)
        decision = compiled.deny[kind].first(deny_candidates)
        if decision is None:
            decision = compiled.allow[kind].first(allow_candidates)
        return compiled.defaults[kind] if decision is None else decision

    def address_denial(self, address: IPAddress, port: int, view: NetView) -> Decision | None:
        """The deny rule that covers dialling `address` on `port`, in this policy or any
        policy it is contained in; None when none does.

        What the egress proxy asks about every address a destination resolves to (after
        `check` admitted the destination by name). Deny rules that name a host are
        resolved through `view`, and `view`'s interface addresses join the local host.

        Raises:
            PolicyError: `view` could not resolve a rule's host (the caller refuses).
        """
        decision = self._compiled.net_deny.covering(address, port, view)
        if decision is not None:
            return decision
        for outer in self.within:
            decision = outer.address_denial(address, port, view)
            if decision is not None:
                return decision
        return None

    def _protected(self, path: str) -> Decision | None:
        compiled = self._compiled
        if path in compiled.exact_write_allows or compiled.protected_any.fullmatch(path) is None:
            return None
        for pattern, regex in compiled.protected:
            if regex.fullmatch(path):
                return Decision(
                    Verdict.DENY,
                    f"{path} is protected (scope files, git hooks and "
                    "config, the store); only an allow_write rule naming this exact path "
                    "permits it",
                    pattern,
                    BUILTIN_LAYER,
                )
        return None

    def contain(self, child: Policy) -> Policy:
        """`child`, bounded by this policy: what a spawned child runs under.

        Allows intersect (an act is allowed only if both allow it), denies union, the
        stricter tier and the stricter approval mode apply, and protected paths add up.
        The result is never more permissive than either policy for any act, at any
        depth; it may be stricter than both (its tier default is the stricter one).

        Args:
            child: The policy the child asked for.

        Returns:
            The contained policy.
        """
        own_denies = tuple(
            rule for rule in self.rules if rule.effect is Effect.DENY and rule not in child.rules
        )
        tier = min(self.tier, child.tier, key=_TIER_RANK.__getitem__)
        strict = ApprovalMode.DENY in (self.approval, child.approval)
        return Policy(
            tier=tier,
            rules=child.rules + own_denies,
            approval=ApprovalMode.DENY if strict else ApprovalMode.ASK,
            protected=_union(child.protected, self.protected),
            within=child.within + (self,),
        )

    def narrowed(
        self,
        *,
        deny_write: Sequence[str] = (),
        deny_net: Sequence[str] = (),
        layer: str,
    ) -> Policy:
        """This policy with extra deny rules: how an agent definition narrows.

        There is no allow counterpart on purpose: a definition can only narrow.

        Args:
            deny_write: Path patterns the agent may not write.
            deny_net: Host patterns the agent may not dial (``host`` or ``host:port``).
            layer: The layer the rules are attributed to, e.g. ``agent:reviewer``.

        Raises:
            PolicyError: A pattern is empty or malformed.
        """
        extra = tuple(Rule(Effect.DENY, ActKind.WRITE, p, layer) for p in deny_write) + tuple(
            Rule(Effect.DENY, ActKind.NET, p, layer) for p in deny_net
        )
        return replace(self, rules=self.rules + extra)

    def to_json(self) -> dict[str, Any]:
        """A JSON object that `from_json` reads back to an equal policy."""
        out: dict[str, Any] = {
            "format": POLICY_FORMAT,
            "tier": self.tier.value,
            "approval": self.approval.value,
            "rules": [rule.to_json() for rule in self.rules],
            "protected": list(self.protected),
        }
        if self.within:
            out["within"] = [outer.to_json() for outer in self.within]
        return out

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Policy:
        """Read a policy written by `to_json` (e.g. recorded in the store).

        Raises:
            PolicyError: The data is not a policy this version reads.
        """
        return _from_json(data)

    @staticmethod
    def from_lists(
        *,
        tier: Tier | str,
        allow_read: Sequence[str] = (),
        deny_read: Sequence[str] = (),
        allow_write: Sequence[str] = (),
        deny_write: Sequence[str] = (),
        allow_exec: Sequence[str] = (),
        deny_exec: Sequence[str] = (),
        allow_net: Sequence[str] = (),
        deny_net: Sequence[str] = (),
        allow_mcp: Sequence[str] = (),
        deny_mcp: Sequence[str] = (),
        approval: ApprovalMode | str = ApprovalMode.ASK,
        layer: str = "project",
    ) -> Policy:
        """A one-layer policy from pattern lists, as written in ``[policy]``.

        Raises:
            PolicyError: An unknown tier or approval mode, or a malformed pattern.
        """
        lists = (
            (Effect.ALLOW, ActKind.READ, allow_read),
            (Effect.DENY, ActKind.READ, deny_read),
            (Effect.ALLOW, ActKind.WRITE, allow_write),
            (Effect.DENY, ActKind.WRITE, deny_write),
            (Effect.ALLOW, ActKind.EXEC, allow_exec),
            (Effect.DENY, ActKind.EXEC, deny_exec),
            (Effect.ALLOW, ActKind.NET, allow_net),
            (Effect.DENY, ActKind.NET, deny_net),
            (Effect.ALLOW, ActKind.MCP, allow_mcp),
            (Effect.DENY, ActKind.MCP, deny_mcp),
        )
        rules: list[Rule] = []
        for effect, kind, patterns in lists:
            if isinstance(patterns, str):
                raise PolicyError(
                    f"{effect.value}_{kind.value} must be a list of patterns, not a string"
                )
            rules.extend(Rule(effect, kind, p, layer) for p in patterns)
        return Policy(
            tier=Tier.parse(tier) if isinstance(tier, str) else tier,
            rules=tuple(rules),
            approval=ApprovalMode.parse(approval) if isinstance(approval, str) else approval,
        )


def _union(first: Sequence[str], second: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*first, *second)))


def _enum_value(data: Mapping[str, Any], key: str, default: str) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise PolicyError(f"stored policy: {key!r} must be a string")
    return value


def _rule_from_json(item: object) -> Rule:
    if not isinstance(item, Mapping):
        raise PolicyError(f"stored policy: a rule must be an object, not {item!r}")
    try:
        return Rule(
            Effect(item["effect"]), ActKind(item["kind"]), str(item["pattern"]), str(item["layer"])
        )
    except (KeyError, ValueError, TypeError) as exc:
        raise PolicyError(f"stored policy: malformed rule {dict(item)!r}") from exc


def _from_json(data: Mapping[str, Any]) -> Policy:
    if not isinstance(data, Mapping):
        raise PolicyError("stored policy: expected a JSON object")
    if data.get("format", POLICY_FORMAT) != POLICY_FORMAT:
        raise PolicyError(
            f"stored policy has format {data.get('format')!r}; this version reads {POLICY_FORMAT}"
        )
    rules, protected, within = (
        data.get("rules", []),
        data.get("protected", []),
        data.get("within", []),
    )
    for key, value in (("rules", rules), ("protected", protected), ("within", within)):
        if not isinstance(value, list):
            raise PolicyError(f"stored policy: {key!r} must be a list")
    if not all(isinstance(p, str) for p in protected):
        raise PolicyError("stored policy: 'protected' must hold strings")
    return Policy(
        tier=Tier.parse(_enum_value(data, "tier", Tier.WORKSPACE_WRITE.value)),
        rules=tuple(_rule_from_json(item) for item in rules),
        approval=ApprovalMode.parse(_enum_value(data, "approval", ApprovalMode.ASK.value)),
        protected=tuple(protected),
        within=tuple(_from_json(outer) for outer in within),
    )
