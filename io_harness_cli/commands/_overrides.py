"""What the command line sets for one run over io.toml, and its second application.

`io run -c FILE`, `-m MODEL`, `--max-steps N` and `io batch`'s `--narrow JSON` choose
the config file, the model, the budget and the policy of that run only. They are
recorded with the run (`RunSpec.run_overrides`, kept in its settings), and `io resume`
and `io rewind` (whose branch goes on from the run) apply them again: the same config
file is read (`resume_config`) and the rest applied to what it loaded
(`apply_recorded`), so a run started with five steps, under another file, or narrowed by
its batch task keeps that boundary after a pause or a crash instead of falling back to
the workspace's io.toml. `io resume --max-steps N` (and the other budget flags) adds
``budget``, the room the operator gave, applied last. Each value is judged against the
system scope's requirements in force when the command runs, not those of the run's
start. `io run --scratch` adds the workspace it copied
(`_scratch.SCRATCH_OF`), which `apply_overrides` leaves alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness_core import Config

__all__ = ["ROOM_FIELDS", "apply_overrides", "apply_recorded", "resume_config", "run_overrides"]

ROOM_FIELDS = ("max_steps", "max_tokens", "max_cost_usd", "wall_seconds")
"""The `[budget]` limits `io resume` may raise (`--max-steps`, `--max-tokens`,
`--max-cost`, `--max-wall`), kept in the run's overrides under ``budget``."""


def run_overrides(model: str | None, max_steps: int | None, narrow: str | None,
                  config: Path | None = None) -> dict[str, Any]:
    """The overrides the command line gave (empty: none), `narrow` parsed, `config` made
    absolute.

    Raises:
        UsageError: `narrow` is not JSON.
    """
    import json

    from harness_core import UsageError

    found: dict[str, Any] = {}
    if config is not None:
        found["config"] = str(config.expanduser().resolve())
    if narrow is not None:
        try:
            found["narrow"] = json.loads(narrow)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--narrow is not JSON: {exc.msg}") from exc
    if model is not None:
        found["model"] = model
    if max_steps is not None:
        found["max_steps"] = max_steps
    return found


def resume_config(settings: Mapping[str, Any], run_id: str) -> Path | None:
    """The config file a run (its recorded `settings`) was started with (`io run -c`),
    None for the workspace's.

    Raises:
        UsageError: That file is gone: resuming under another config would change the
            run's boundary unannounced, so the operator names one with `-c`.
    """
    from harness_core import UsageError

    overrides = settings.get("run_overrides")
    recorded = overrides.get("config") if isinstance(overrides, Mapping) else None
    if not isinstance(recorded, str):
        return None
    path = Path(recorded)
    if not path.is_file():
        raise UsageError(f"run {run_id} was started with --config {recorded}, which is gone",
                         hint=f"io resume {run_id} --config FILE")
    return path


def apply_overrides(cfg: Config, overrides: Mapping[str, Any], *, recorded: bool = False
                    ) -> Config:
    """`cfg` with `overrides` applied: the narrowing first (it can only narrow), then the
    model and the step budget, each judged against the system scope's requirements in
    force now (`recorded`: the flags were given when the run started).

    Raises:
        UsageError: An empty model, or a model with no `[provider]` to send it to.
        ConfigError: The narrowing would widen the policy or the budget.
        RequirementError: `--model` or `--max-steps` loosens a requirement.
    """
    from dataclasses import replace

    from harness_core import UsageError, narrow_run

    late = " (recorded with the run when it started)" if recorded else ""

    narrow = overrides.get("narrow")
    if narrow is not None:
        policy, budget = narrow_run(cfg.policy, cfg.budget, narrow)
        cfg = replace(cfg, policy=policy, budget=budget)
    max_steps = overrides.get("max_steps")
    if isinstance(max_steps, int):
        cfg.requirements.check("max_steps", max_steps, key="--max-steps",
                               tried_by=f"the --max-steps flag{late}")
        cfg = replace(cfg, budget=replace(cfg.budget, max_steps=max_steps))
    room = overrides.get("budget")  # `io resume --max-steps/--max-tokens/...`
    if isinstance(room, Mapping):
        limits: dict[str, Any] = {k: v for k, v in room.items()
                                  if k in ROOM_FIELDS and isinstance(v, (int, float))}
        for name, value in limits.items():
            cfg.requirements.check(name, value, key=f"io resume's {name}",
                                   tried_by="the io resume budget flags")
        cfg = replace(cfg, budget=replace(cfg.budget, **limits))
    model = overrides.get("model")
    if isinstance(model, str):
        if not model.strip():
            raise UsageError("--model must not be empty")
        if cfg.provider is None:
            raise UsageError("--model needs a [provider] in io.toml to send it to",
                             hint="`io config init` writes one")
        cfg.requirements.check("model", model, key="--model",
                               tried_by=f"the -m/--model flag{late}")
        cfg = replace(cfg, provider=replace(cfg.provider, model=model))
    return cfg


def apply_recorded(cfg: Config, settings: Mapping[str, Any]) -> Config:
    """`cfg` with the overrides a run recorded in its `settings` applied again (none: as is).

    Raises:
        UsageError, ConfigError: As `apply_overrides`.
    """
    overrides = settings.get("run_overrides")
    return (apply_overrides(cfg, overrides, recorded=True) if isinstance(overrides, Mapping)
            else cfg)
