"""Read the scope files, check them, substitute, merge, and project: `load`.

Each file is checked on its own before anything merges, so every error names the one
file (and scope) at fault; the first problem found stops the load. Merging: tables
merge key by key and the higher scope wins a scalar or a plain array; an array of
tables (`[[contract.verify]]`, `[[mcp]]`, `[[provider.fallback]]`) is replaced
wholesale by the highest scope that sets it; the `[policy]` rule lists are not merged
at all, every scope keeps its own; `[[hooks]]` of every scope are kept, lowest scope
first (a higher scope cannot remove a hook: hooks only narrow). The system scope's
`[requirements]` table is taken out before the schema check, and every file's values are
judged against it (`_requirements`) as the file is read, so a loosening names its file;
when `/etc/io/io.toml` holds that table, `IO_SYSTEM_CONFIG` may not name another file.
`load` checks with the
plain validator generated from the pydantic models (`_plain`) and asks pydantic only
when that does not accept something, so a normal start imports no pydantic. This module
never writes anything and
reads the environment only from the mapping passed in.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, Literal

from harness_core.config._config import Config
from harness_core.config._requirements import Requirements, check_tree
from harness_core.config._requirements_table import parse
from harness_core.config._scopes import SYSTEM_DEFAULT, ConfigFile, Scope, discover
from harness_core.config._substitute import Substituter
from harness_core.config._tree import RULE_KEYS, Node, Sourced
from harness_core.errors import ConfigError, RequirementError

__all__ = ["json_schema", "load", "merge", "parse_file", "schema_keys"]

_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


def parse_file(cf: ConfigFile) -> dict[str, Any]:
    """Read and parse one scope file (no schema check).

    Raises:
        ConfigError: The file cannot be read, is not UTF-8, or is not valid TOML
            (the message names the file, line and column).
    """
    try:
        data = cf.path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {cf.describe()}: {exc.strerror or exc}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{cf.describe()} is not UTF-8 text (byte {exc.start})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        position = _POSITION.search(message)
        if position is not None:
            line, column = position.groups()
            detail = message[: position.start()]
            raise ConfigError(
                f"malformed TOML in {cf.describe()} at line {line}, column {column}: {detail}"
            ) from exc
        raise ConfigError(f"malformed TOML in {cf.describe()}: {message}") from exc


def merge(low: Mapping[str, Node], high: Mapping[str, Node]) -> dict[str, Node]:
    """`low` overlaid with `high`: tables merge key by key, anything else is replaced."""
    out: dict[str, Node] = dict(low)
    for key, value in high.items():
        below = out.get(key)
        if isinstance(value, dict) and isinstance(below, dict):
            out[key] = merge(below, value)
        else:
            out[key] = value
    return out


def load(
    workspace: Path,
    *,
    config_file: Path | None = None,
    env: Mapping[str, str],
    tables: Collection[str] | None = None,
    validator: Literal["plain", "pydantic"] = "plain",
) -> Config:
    """Discover, read, check and merge the four scopes and project them onto types.

    The caller reads the configuration once, before a run; nothing in `harness_core`
    reads it again.

    Args:
        workspace: The workspace root.
        config_file: The `--config FILE` flag (replaces the project scope's file).
        env: The environment: substitutions, `IO_SYSTEM_CONFIG`, `XDG_CONFIG_HOME`,
            `XDG_STATE_HOME`, `HOME`, `IO_STORE`. The CLI passes `os.environ`.
        tables: Resolve and project only these top-level tables (e.g. ``("store",)``
            for a command that only reads the store, so an unset `${env:...}` for a
            provider key does not stop it). The other tables are still checked for
            unknown keys and wrong types, and project as if absent. None: all.
        validator: "plain" (the default) checks with the validator generated from the
            models and hands anything it does not accept to pydantic; "pydantic" asks
            pydantic directly (`io config check`). The result is the same either way.

    Returns:
        The validated configuration.

    Raises:
        ConfigError: The first problem found: a missing `--config` file, malformed
            TOML, an unknown key, a wrong type, a failed substitution, a value out of
            range, a missing required key. Messages never contain a substituted value.
    """
    from harness_core.config import _fast
    from harness_core.config._project import project

    guard_system_scope(env)
    files = discover(workspace, config_file=config_file, env=env)
    subst = Substituter(env)
    floor = _Floor(config_file)
    read = _read(files, subst, tables, _fast.check_file, floor) if validator == "plain" else None
    model = None if read is None else _fast.validate_merged(read[0])
    if read is None or model is None:
        # The plain validator did not accept something: pydantic decides, and words it.
        from harness_core.config._validate import check_file, validate_merged

        subst = Substituter(env)
        read = _read(files, subst, tables, check_file, floor)
        assert read is not None  # pydantic's check_file raises, never returns None
        model = validate_merged(read[0])
    merged, rule_sets = read
    return project(workspace, files, model, merged, rule_sets, frozenset(subst.secrets), env,
                   floor.requirements, tables)


def guard_system_scope(env: Mapping[str, str], default: Path = SYSTEM_DEFAULT) -> None:
    """Refuse `IO_SYSTEM_CONFIG` naming another file than `default` when `default` holds
    `[requirements]`: on a machine with a floor, the environment cannot swap it out.

    Raises:
        RequirementError: `default` holds `[requirements]` and the variable names
            another file.
        ConfigError: `default` cannot be read or parsed (fail closed).
    """
    named = env.get("IO_SYSTEM_CONFIG")
    if not named or Path(named).absolute() == default or not default.exists():
        return
    if "requirements" in parse_file(ConfigFile(Scope.SYSTEM, default)):
        raise RequirementError(
            f"IO_SYSTEM_CONFIG={named} would replace {default}, whose [requirements] hold"
            " on this machine",
            requirement="requirements", source=str(default),
            tried_by="the environment (IO_SYSTEM_CONFIG)",
            hint=f"unset IO_SYSTEM_CONFIG; the machine's owner changes the floor in {default}")


class _Floor:
    """The system scope's `[requirements]`, taken out of each parsed file before the
    schema check (the table is no io.toml key of any other scope)."""

    def __init__(self, config_file: Path | None) -> None:
        self.requirements = Requirements()
        self.config_file = None if config_file is None else config_file.absolute()

    def take(self, raw: dict[str, Any], cf: ConfigFile) -> dict[str, Any]:
        """`raw` without its `[requirements]`, which only the system scope may set."""
        if "requirements" not in raw:
            return raw
        table = raw.pop("requirements")
        if cf.scope is not Scope.SYSTEM:
            raise RequirementError(
                f"[requirements] in {self.describe(cf)}: only the system scope"
                " (/etc/io/io.toml or $IO_SYSTEM_CONFIG) sets requirements",
                requirement="requirements", source=str(self.requirements.source or ""),
                tried_by=self.describe(cf),
                hint="remove the table; a lower scope can tighten a value, not the floor")
        self.requirements = parse(table, cf.path)
        return raw

    def describe(self, cf: ConfigFile) -> str:
        """How a message names `cf`: a `-c` file as such."""
        if cf.scope is Scope.PROJECT and cf.path == self.config_file:
            return f"the -c file ({cf.path})"
        return cf.describe()

    def check(self, tree: Mapping[str, Node], cf: ConfigFile) -> None:
        """Refuse a value of `cf` that loosens a requirement."""
        check_tree(self.requirements, tree, self.describe(cf))


_Check = Callable[[Mapping[str, Any], ConfigFile, Substituter, Collection[str] | None],
                  dict[str, Node] | None]


def _read(
    files: tuple[ConfigFile, ...], subst: Substituter, tables: Collection[str] | None,
    check: _Check, floor: _Floor,
) -> tuple[dict[str, Node], list[tuple[ConfigFile, dict[str, Node]]]] | None:
    """Every scope file parsed, checked and merged, with each file's policy rules apart;
    None when `check` hands a file over."""
    merged: dict[str, Node] = {}
    rule_sets: list[tuple[ConfigFile, dict[str, Node]]] = []
    hooks: list[Node] = []
    for cf in files:
        tree = check(floor.take(parse_file(cf), cf), cf, subst, tables)
        if tree is None:
            return None
        floor.check(tree, cf)
        policy = tree.get("policy")
        if isinstance(policy, dict):
            rules = {k: policy.pop(k) for k in RULE_KEYS if k in policy}
            if rules:
                rule_sets.append((cf, rules))
        merged = merge(merged, tree)
        found = tree.get("hooks")
        if isinstance(found, Sourced):
            hooks += found.value
            merged["hooks"] = Sourced(list(hooks), cf)
    return merged, rule_sets


def schema_keys() -> frozenset[str]:
    """Every key io.toml accepts, dotted; operator-chosen names read ``*``.

    Arrays of tables contribute their item keys (``contract.verify.command``).
    """
    from harness_core.config._fields import schema_keys as keys

    return keys()


def json_schema() -> dict[str, Any]:
    """The JSON Schema of io.toml, from the models (what `io config schema` prints).

    Editors that read JSON Schema for TOML (Taplo, Even Better TOML) use it for
    completion and checking; point them at it with a `#:schema ./io.schema.json`
    comment or their settings.
    """
    from harness_core.config._fields import json_schema as schema

    return schema()
