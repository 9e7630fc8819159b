"""`[requirements]`: the floor the system scope sets and nothing below it may loosen.

The table is read from the system scope's file only (`/etc/io/io.toml` or
`$IO_SYSTEM_CONFIG`); in any other scope it is a `RequirementError`. `_requirements_table`
reads it into a `Requirements`; `Requirements.check` judges one value from anywhere (a
scope file, a `-c` file, an agent definition, a flag) and raises `RequirementError` when
it loosens a requirement, naming the requirement, its file and what tried; `check_tree`
judges every value of one scope file. A value that tightens passes. Nothing here clamps: filling in a default the floor excludes is `_enforce`'s, and
only for values no file or flag set. This module reads no file and no environment.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harness_core._record import record
from harness_core.config._tree import Node, Sourced, dotted
from harness_core.errors import RequirementError
from harness_core.policy import ApprovalMode, Tier
from harness_core.sandbox import BackendChoice

__all__ = ["CEILINGS", "McpAllowed", "Requirements", "check_tree", "traces_url"]

CEILINGS = {
    "max_steps": "budget", "max_tokens": "budget", "max_cost_usd": "budget",
    "wall_seconds": "budget", "max_depth": "agents", "max_children": "agents",
    "parallel": "agents",
}
"""Each ceiling requirement and the io.toml table of the key it caps (same key name)."""

_TIER_ORDER = {Tier.READ_ONLY: 0, Tier.WORKSPACE_WRITE: 1, Tier.FULL: 2}

_DEFAULT_HOSTS = {
    "anthropic": "api.anthropic.com", "openai": "api.openai.com",
    "openai-responses": "api.openai.com", "openrouter": "openrouter.ai",
}
"""Where each vendor's provider sends requests when `base_url` is not set (each provider
module's `default_base_url`; not imported, which would import httpx)."""

_HINT = ("a lower scope, a flag or an agent definition may only tighten what the system"
         " scope's [requirements] holds; ask the machine's owner to change the floor")


@record
class McpAllowed:
    """One MCP server the floor allows: its name and its command or URL, exactly.

    Attributes:
        name: The `[[mcp]] name`.
        command: The `[[mcp]] command` it must run (None: a remote server).
        url: The `[[mcp]] url` it must reach (None: a local server).
    """

    name: str
    command: str | None = None
    url: str | None = None


@record
class Requirements:
    """The system scope's `[requirements]`, typed; None (or empty) means "not required".

    Attributes:
        source: The system scope file that set them (None: no requirements).
        max_tier: The highest `[policy] tier` any place may ask for.
        approval: The `[policy] approval` modes allowed.
        sandbox_backends: The `[sandbox] backend` values allowed.
        sandbox_fallback: False: io must refuse rather than fall back to a weaker
            sandbox, so `backend = "auto"` is refused.
        max_steps: Ceiling of `[budget] max_steps` (and `--max-steps`).
        max_tokens: Ceiling of `[budget] max_tokens`.
        max_cost_usd: Ceiling of `[budget] max_cost_usd`.
        wall_seconds: Ceiling of `[budget] wall_seconds`.
        max_depth: Ceiling of `[agents] max_depth` (the size of a tree of runs).
        max_children: Ceiling of `[agents] max_children`.
        parallel: Ceiling of `[agents] parallel`.
        providers: The provider kinds allowed (primary and fallbacks).
        models: Glob patterns of the models allowed (`[provider]`, fallbacks, agent
            definitions, `--model`).
        base_url_hosts: Glob patterns of the hosts a provider may send to (a provider
            without `base_url` sends to its vendor's host).
        mcp: The MCP servers allowed, by name plus command or URL; None: any.
        hooks: Names of `[[hooks]]` entries the system scope must define.
        telemetry: Span export must be on.
        telemetry_endpoint: The OTLP endpoint spans must go to (implies `telemetry`).
        io_version: A PEP 440 specifier set the running io's version must satisfy.
    """

    source: Path | None = None
    max_tier: Tier | None = None
    approval: tuple[ApprovalMode, ...] | None = None
    sandbox_backends: tuple[BackendChoice, ...] | None = None
    sandbox_fallback: bool = True
    max_steps: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    wall_seconds: float | None = None
    max_depth: int | None = None
    max_children: int | None = None
    parallel: int | None = None
    providers: tuple[str, ...] | None = None
    models: tuple[str, ...] | None = None
    base_url_hosts: tuple[str, ...] | None = None
    mcp: tuple[McpAllowed, ...] | None = None
    hooks: tuple[str, ...] = ()
    telemetry: bool = False
    telemetry_endpoint: str | None = None
    io_version: str | None = None

    @property
    def is_empty(self) -> bool:
        """Whether no requirement is set."""
        return not any(True for _ in self.items())

    def where(self) -> str:
        """``system scope (/etc/io/io.toml)``: how messages name the requirements' file."""
        return f"system scope ({self.source})"

    def items(self) -> Iterator[tuple[str, Any]]:
        """Each requirement set, as (``requirements.KEY``, JSON-able value), in order."""
        for name in self.__dataclass_fields__:
            if self._is_set(name):
                yield f"requirements.{name}", _jsonable(getattr(self, name))

    def holds(self, key: str, hooks: Sequence[str] = ()) -> str | None:
        """The requirement (``requirements.KEY``) that holds config key `key`, or None.

        Args:
            key: A dotted key as `Config.show` lists it (``budget.max_steps``).
            hooks: The names of the hooks in force, in order: of ``hooks[i].*`` only a
                required hook's keys are held.
        """
        for name in _holders(key.split(".")):
            if not self._is_set(name):
                continue
            if name == "hooks":
                index = int(key.split("[", 1)[1].split("]", 1)[0])
                if index >= len(hooks) or hooks[index] not in self.hooks:
                    return None
            return f"requirements.{name}"
        return None

    def _is_set(self, name: str) -> bool:
        """Whether requirement `name` asks for anything (its default asks for nothing)."""
        if name == "source":
            return False
        value = getattr(self, name)
        if name == "sandbox_fallback":
            return value is False
        if name in ("hooks", "telemetry"):
            return bool(value)
        return value is not None

    def check(self, field: str, value: Any, *, key: str, tried_by: str) -> None:
        """Refuse `value` for `field` when it loosens a requirement; accept it otherwise.

        Args:
            field: What the value is: ``tier``, ``approval``, ``backend``, a ceiling's
                name (``max_steps``…), ``provider``, ``model``, ``telemetry_endpoint``.
            value: The value asked for (`False` or None for a ceiling: no ceiling).
            key: The config key or flag it was given as, for the message.
            tried_by: The place that asked for it, for the message.

        Raises:
            RequirementError: It loosens a requirement.
        """
        found = _JUDGES[field](self, value)
        if found is not None:
            requirement, allowed = found
            raise self.refusal(requirement, f"{key} = {_show(value)}", allowed, tried_by)

    def loosens(self, field: str, value: Any) -> bool:
        """Whether `value` for `field` (as in `check`) loosens a requirement."""
        return _JUDGES[field](self, value) is not None

    def check_host(self, kind: str, base_url: str | None, *, key: str, tried_by: str) -> None:
        """Refuse a provider that would send to a host `base_url_hosts` does not name.

        Args:
            kind: The provider kind ("" when not known where `base_url` is set).
            base_url: Its `base_url`; None: the vendor's own host.
            key: The config key, for the message.
            tried_by: The place that asked for it, for the message.

        Raises:
            RequirementError: The host is not allowed (or not known).
        """
        if self.base_url_hosts is None or (base_url is None and kind == "scripted"):
            return  # the scripted provider sends nothing anywhere
        if base_url is not None:
            host, asked = (urlsplit(base_url).hostname or "").lower(), f"{key} = {base_url!r}"
        else:
            host = _DEFAULT_HOSTS.get(kind, "")
            asked = f"{key} (no base_url: the vendor's own host {host or '(unknown)'})"
        if host and any(fnmatch.fnmatchcase(host, p.lower()) for p in self.base_url_hosts):
            return
        allowed = "only " + ", ".join(map(repr, self.base_url_hosts))
        raise self.refusal("requirements.base_url_hosts", asked, allowed, tried_by)

    def check_mcp(self, name: str, command: str | None, url: str | None, *, key: str,
                  tried_by: str) -> None:
        """Refuse an MCP server the allowlist does not name with this command or URL.

        Raises:
            RequirementError: `mcp` is set and no entry matches.
        """
        if self.mcp is None:
            return
        for allowed in self.mcp:
            if allowed.name == name and allowed.command == command and allowed.url == url:
                return
        shown = f"{key} (name {name!r}, " + (f"command {command!r})" if command is not None
                                              else f"url {url!r})")
        names = ", ".join(a.name for a in self.mcp) or "none"
        raise self.refusal("requirements.mcp", shown, f"only: {names}", tried_by)

    def refusal(self, requirement: str, asked: str, allowed: str, tried_by: str
                ) -> RequirementError:
        """The error for `asked` (``key = value``) loosening `requirement`."""
        return RequirementError(
            f"{asked} from {tried_by} loosens {requirement} ({allowed}) set in {self.where()}",
            requirement=requirement, source=str(self.source), tried_by=tried_by, hint=_HINT)


def check_tree(req: Requirements, tree: Mapping[str, Node], tried_by: str) -> None:
    """Refuse every value of one scope file's checked tree that loosens a requirement.

    Args:
        req: The requirements in force.
        tree: The file's annotated tree (after the schema check and substitution).
        tried_by: How messages name the file (``project scope (/w/io.toml)``).

    Raises:
        RequirementError: The first value that loosens a requirement.
    """
    if req.is_empty:
        return
    for path, leaf in _leaves(tree, ()):
        field = _field(path)
        if field is None:
            continue
        who = tried_by
        if path[0] == "agents" and len(path) == 3:
            who = f"agent definition {path[1]!r} in {tried_by}"
        if field == "base_url":
            req.check_host(_kind_beside(tree, path), str(leaf.value), key=dotted(path),
                           tried_by=who)
            continue
        value = None if leaf.ceiling and leaf.value is False else leaf.value
        req.check(field, value, key=dotted(path), tried_by=who)
    servers = tree.get("mcp")
    if isinstance(servers, Sourced):
        for index, item in enumerate(servers.value):
            name, command, url = (_plain_leaf(item, k) for k in ("name", "command", "url"))
            req.check_mcp(str(name), command, url, key=f"mcp[{index}]", tried_by=tried_by)


def _leaves(tree: Mapping[str, Node], path: tuple[str | int, ...]
            ) -> Iterator[tuple[tuple[str | int, ...], Sourced]]:
    for key, node in tree.items():
        here = (*path, key)
        if isinstance(node, dict):
            yield from _leaves(node, here)
        elif isinstance(node.value, list) and key != "mcp":
            for index, item in enumerate(node.value):
                yield from _leaves(item, (*here, index))
        elif not isinstance(node.value, list):
            yield here, node


def _field(path: tuple[str | int, ...]) -> str | None:
    """Which requirement judges the leaf at `path`, or None."""
    head, last = path[0], path[-1]
    if head == "policy" and last in ("tier", "approval"):
        return str(last)
    if path == ("sandbox", "backend"):
        return "backend"
    if len(path) == 2 and isinstance(last, str) and CEILINGS.get(last) == head:
        return last
    if head == "provider" and last in ("kind", "model", "base_url"):
        return {"kind": "provider", "model": "model", "base_url": "base_url"}[str(last)]
    if head == "agents" and len(path) == 3 and last == "model":
        return "model"
    if path == ("telemetry", "otlp_endpoint"):
        return "telemetry_endpoint"
    return None


def _kind_beside(tree: Mapping[str, Node], path: tuple[str | int, ...]) -> str:
    """The provider kind set beside `path` in the same file ("" when unset there)."""
    node: Any = tree
    for part in path[:-1]:
        node = node.value[part] if isinstance(node, Sourced) else node.get(part)
    kind = node.get("kind") if isinstance(node, dict) else None
    return str(kind.value) if isinstance(kind, Sourced) else ""


def _plain_leaf(item: Mapping[str, Node], key: str) -> str | None:
    leaf = item.get(key)
    return str(leaf.value) if isinstance(leaf, Sourced) and leaf.value is not None else None


def _holders(parts: list[str]) -> Iterator[str]:
    """The requirements that can hold config key `parts` (indices stripped)."""
    head, last = parts[0].split("[")[0], parts[-1].split("[")[0]
    if head == "policy" and last in ("tier", "approval"):
        yield "max_tier" if last == "tier" else "approval"
    elif head == "sandbox" and last == "backend":
        yield from ("sandbox_backends", "sandbox_fallback")
    elif last in CEILINGS and CEILINGS[last] == head and len(parts) == 2:
        yield last
    elif head in ("provider", "agents") and last in ("kind", "model", "base_url"):
        yield {"kind": "providers", "model": "models", "base_url": "base_url_hosts"}[last]
    elif head == "mcp":
        yield "mcp"
    elif head == "hooks":
        yield "hooks"
    elif head == "telemetry" and last == "otlp_endpoint":
        yield from ("telemetry_endpoint", "telemetry")


def _jsonable(value: Any) -> Any:
    if isinstance(value, Tier | ApprovalMode | BackendChoice):
        return value.value
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, McpAllowed):
        return {k: v for k, v in (("name", value.name), ("command", value.command),
                                  ("url", value.url)) if v is not None}
    return value


def _show(value: Any) -> str:
    if value is None or value is False:
        return "false (no ceiling)"
    if isinstance(value, Tier | ApprovalMode | BackendChoice):
        value = value.value
    return repr(value) if isinstance(value, str) else str(value)


_Found = tuple[str, str] | None


def _tier(req: Requirements, value: Any) -> _Found:
    tier = value if isinstance(value, Tier) else Tier.parse(str(value))
    if req.max_tier is not None and _TIER_ORDER[tier] > _TIER_ORDER[req.max_tier]:
        return "requirements.max_tier", f"at most {req.max_tier.value!r}"
    return None


def _approval(req: Requirements, value: Any) -> _Found:
    mode = value if isinstance(value, ApprovalMode) else ApprovalMode.parse(str(value))
    if req.approval is not None and mode not in req.approval:
        return "requirements.approval", "only " + ", ".join(repr(m.value) for m in req.approval)
    return None


def _backend(req: Requirements, value: Any) -> _Found:
    backend = value if isinstance(value, BackendChoice) else BackendChoice(str(value))
    if req.sandbox_backends is not None and backend not in req.sandbox_backends:
        allowed = ", ".join(repr(b.value) for b in req.sandbox_backends)
        return "requirements.sandbox_backends", f"only {allowed}"
    if not req.sandbox_fallback and backend is BackendChoice.AUTO:
        return "requirements.sandbox_fallback", "false: io refuses rather than falls back"
    return None


def _ceiling(name: str) -> Callable[[Requirements, Any], _Found]:
    def judge(req: Requirements, value: Any) -> _Found:
        limit = getattr(req, name)
        if limit is None:
            return None
        if value is None or value is False or float(value) > float(limit):
            return f"requirements.{name}", f"at most {limit}"
        return None

    return judge


def _provider(req: Requirements, value: Any) -> _Found:
    if req.providers is not None and str(value) not in req.providers:
        return "requirements.providers", "only " + ", ".join(map(repr, req.providers))
    return None


def _model(req: Requirements, value: Any) -> _Found:
    if req.models is not None and not any(fnmatch.fnmatchcase(str(value), p)
                                          for p in req.models):
        return "requirements.models", "only " + ", ".join(map(repr, req.models))
    return None


def _endpoint(req: Requirements, value: Any) -> _Found:
    if req.telemetry_endpoint is None:
        return None
    if value and traces_url(str(value)) == traces_url(req.telemetry_endpoint):
        return None
    return "requirements.telemetry_endpoint", f"only {req.telemetry_endpoint!r}"


_JUDGES: dict[str, Callable[[Requirements, Any], _Found]] = {
    "tier": _tier, "approval": _approval, "backend": _backend, "provider": _provider,
    "model": _model, "telemetry_endpoint": _endpoint,
    **{name: _ceiling(name) for name in CEILINGS},
}


def traces_url(endpoint: str) -> str:
    """`endpoint` as the OTLP traces URL io posts to (what two endpoints compare as)."""
    base = endpoint.rstrip("/")
    return base if base.endswith("/v1/traces") else base + "/v1/traces"
