"""`io doctor`: which sandbox backends can run on this machine and, for each that
cannot, why and what fixes it; what `auto` would pick; whether the egress proxy starts
and the store opens; which provider `io run` would use and whether its key is set (no
request is sent); the system scope's requirements in force. Exit 1 when the configured
backend cannot run here, else 0."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from io_harness_cli.commands._options import ConfigOpt, JsonOpt, WorkspaceOpt

if TYPE_CHECKING:
    from harness_core import Config, Diagnosis

_KEY_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY")
"""The provider key variables this process may hold (`auto` will not degrade to a
floor that cannot keep them from commands)."""


def doctor(workspace: WorkspaceOpt = None, config: ConfigOpt = None,
           json_out: JsonOpt = False) -> None:
    """Say which sandbox backends run here, why not, and what `auto` would pick.

    Also whether the store opens, and the system scope's requirements in force.
    """
    import typer

    from harness_core import HostProbe, diagnose
    from io_harness_cli.commands._load import environment, load_config, workspace_path
    from io_harness_cli.output import write_json

    env = environment()
    cfg = load_config(workspace_path(workspace), config, ("sandbox", "store", "provider"))
    keys = tuple(env[name] for name in _KEY_VARIABLES if env.get(name))
    found = diagnose(cfg.sandbox, probe=HostProbe(env=env), secrets=keys)
    store = _store(cfg)
    floor = dict(cfg.requirements.items())
    provider = _provider(cfg)
    if json_out:
        write_json({**found.to_json(), "store": store, "provider": provider, "requirements": {
            "file": None if cfg.requirements.source is None else str(cfg.requirements.source),
            "values": floor}})
    else:
        _print(found, store)
        _print_provider(provider)
        _print_requirements(cfg, floor)
    raise typer.Exit(0 if found.configured_runs else 1)


def _store(cfg: Config) -> dict[str, Any]:
    """Whether the store opens (a store not made yet: whether it can be)."""
    import os
    from pathlib import Path

    from harness_core import HarnessError, Store, redact_url

    where = cfg.store_url or str(cfg.store_path)
    shown = where if cfg.store_url is None else redact_url(where)
    if cfg.store_url is None and not Path(where).exists():
        parent = Path(where).parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        ok = os.access(parent, os.W_OK)
        detail = (f"not made yet; the first run creates it ({parent} is writable)" if ok
                  else f"not made yet, and {parent} is not writable")
        return {"location": shown, "ok": ok, "detail": detail}
    try:
        Store(where).close()
    except HarnessError as exc:
        return {"location": shown, "ok": False, "detail": exc.message, "fix": exc.hint}
    return {"location": shown, "ok": True, "detail": "opens"}


def _print_requirements(cfg: Config, floor: dict[str, Any]) -> None:
    import json
    import sys

    if not floor:
        sys.stdout.write("requirements: none (the system scope sets no [requirements])\n")
        return
    sys.stdout.write(f"\nrequirements in force (from {cfg.requirements.source}):\n")
    for key, value in floor.items():
        sys.stdout.write(f"  {key} = {json.dumps(value)}\n")


def _provider(cfg: Config) -> dict[str, Any]:
    """Which provider `io run` would use, and whether its key resolves (nothing sent)."""
    from harness_core import HarnessError

    if cfg.provider is None:
        return {"kind": None, "model": None, "ok": False,
                "detail": "no [provider] is configured: `io run` needs one",
                "fix": "`io config init` writes an io.toml with one"}
    shown = {"kind": cfg.provider.kind, "model": cfg.provider.model or None}
    try:
        cfg.provider_for_run()
    except HarnessError as exc:
        return {**shown, "ok": False, "detail": exc.message, "fix": exc.hint}
    if cfg.provider.api_key_ref is not None:
        detail = "its key is set"
    elif cfg.provider.kind == "scripted":
        detail = "needs no key"
    else:
        detail = "no api_key in [provider] (only an endpoint that needs none will answer)"
    return {**shown, "ok": True, "detail": detail}


def _print_provider(provider: dict[str, Any]) -> None:
    import sys

    what = (f"{provider['kind']} (model {provider['model'] or '-'})" if provider["kind"]
            else "none")
    verdict = "ok" if provider["ok"] else "FAILED"
    sys.stdout.write(f"provider: {verdict}: {what}: {provider['detail']}\n")
    if provider.get("fix"):
        sys.stdout.write(f"          fix: {provider['fix']}\n")


def _print(found: Diagnosis, store: dict[str, Any]) -> None:
    import sys

    out = sys.stdout.write
    out(f"io doctor: {found.platform}, [sandbox] backend = \"{found.configured.value}\"\n\n")
    for report in found.backends:
        verdict = "runs here" if report.works else f"CANNOT RUN: {report.cause}"
        out(f"{report.backend.value:<8}{verdict}\n")
        if report.fix:
            out(f"{'':<8}fix: {report.fix}\n")
        for check in report.checks:
            out(f"{'':<8}{check.health.value:<9}{check.name}: {check.detail}\n")
            if check.fix and check.health.value != "ok" and check.fix != report.fix:
                out(f"{'':<17}fix: {check.fix}\n")
    auto = found.auto.value if found.auto is not None else "nothing (refuses to start)"
    out(f"\nauto would pick: {auto} ({found.auto_reason})\n")
    proxy = found.proxy
    out(f"egress proxy: {proxy.health.value}: {proxy.detail}\n")
    out(f"store: {'ok' if store['ok'] else 'FAILED'}: {store['location']}: {store['detail']}\n")
    if found.configured_runs:
        out(f"\nthe configured backend (\"{found.configured.value}\") can run here\n")
    else:
        out(f"\nthe configured backend (\"{found.configured.value}\") CANNOT run here\n")
