"""What the command line sets for one run over io.toml, and its second application.

`io run -m MODEL`, `--max-steps N` and `io batch`'s `--narrow JSON` change the model,
the budget and the policy of that run only. They are recorded with the run
(`RunSpec.run_overrides`, kept in its settings), and `io resume` and `io rewind` (whose
branch goes on from the run) apply them again to the config they load: a run started
with five steps, or narrowed by its batch task, keeps that boundary after a pause or a
crash instead of falling back to io.toml's.
`io run --scratch` adds the workspace it copied (`_scratch.SCRATCH_OF`), which
`apply_overrides` leaves alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness_core import Config

__all__ = ["apply_overrides", "apply_recorded", "run_overrides"]


def run_overrides(model: str | None, max_steps: int | None,
                  narrow: str | None) -> dict[str, Any]:
    """The overrides the command line gave (empty: none), `narrow` parsed.

    Raises:
        UsageError: `narrow` is not JSON.
    """
    import json

    from harness_core import UsageError

    found: dict[str, Any] = {}
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


def apply_overrides(cfg: Config, overrides: Mapping[str, Any]) -> Config:
    """`cfg` with `overrides` applied: the narrowing first (it can only narrow), then the
    model and the step budget.

    Raises:
        UsageError: An empty model, or a model with no `[provider]` to send it to.
        ConfigError: The narrowing would widen the policy or the budget.
    """
    from dataclasses import replace

    from harness_core import UsageError, narrow_run

    narrow = overrides.get("narrow")
    if narrow is not None:
        policy, budget = narrow_run(cfg.policy, cfg.budget, narrow)
        cfg = replace(cfg, policy=policy, budget=budget)
    max_steps = overrides.get("max_steps")
    if isinstance(max_steps, int):
        cfg = replace(cfg, budget=replace(cfg.budget, max_steps=max_steps))
    model = overrides.get("model")
    if isinstance(model, str):
        if not model.strip():
            raise UsageError("--model must not be empty")
        if cfg.provider is None:
            raise UsageError("--model needs a [provider] in io.toml to send it to",
                             hint="`io config init` writes one")
        cfg = replace(cfg, provider=replace(cfg.provider, model=model))
    return cfg


def apply_recorded(cfg: Config, settings: Mapping[str, Any]) -> Config:
    """`cfg` with the overrides a run recorded in its `settings` applied again (none: as is).

    Raises:
        UsageError, ConfigError: As `apply_overrides`.
    """
    overrides = settings.get("run_overrides")
    return apply_overrides(cfg, overrides) if isinstance(overrides, Mapping) else cfg
