"""What every command shares: options, error handling, and assembling a run from config.

Uses only names `harness_core` exports; imports them inside functions so that
`io --help` stays cheap.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer

from io_harness_cli.exit_codes import ExitCode, exit_code_for_error
from io_harness_cli.output import error

if TYPE_CHECKING:
    from harness_core import Answer, Approver, Config, Provider, Responder, RunSpec, Store

WorkspaceOpt = Annotated[
    Path | None,
    typer.Option("--workspace", "-w", help="The workspace directory (default: .).",
                 file_okay=False, dir_okay=True),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="Use FILE as the project-scope io.toml."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output on stdout.")]

T = TypeVar("T")


def run_app(app: typer.Typer) -> None:
    """Run the Typer app; the only place where an unexpected exception is caught."""
    from harness_core import HarnessError

    _escape_unencodable_output()
    try:
        app(prog_name="io")
    except HarnessError as exc:
        error(exc.message, exc.hint)
        sys.exit(int(exit_code_for_error(exc)))
    except KeyboardInterrupt:
        sys.exit(int(ExitCode.INTERRUPTED))
    except Exception:  # the one outermost frame: anything else is a bug
        sys.stderr.write("io: internal error (this is a bug in io):\n")
        traceback.print_exc()
        sys.exit(int(ExitCode.FAILED))


def _escape_unencodable_output() -> None:
    """Text that cannot be encoded (a file name that is not UTF-8) is printed escaped,
    as stderr already does, instead of failing the command."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if callable(reconfigure):
            reconfigure(errors="backslashreplace")


def fail(exc: BaseException) -> NoReturn:
    """Print a `HarnessError` as one line (+hint) and exit with its code."""
    from harness_core import HarnessError

    if isinstance(exc, HarnessError):
        error(exc.message, exc.hint)
    raise typer.Exit(int(exit_code_for_error(exc)))


def environment() -> dict[str, str]:
    """The process environment, read once here and passed down as a mapping."""
    return dict(os.environ)


def workspace_path(workspace: Path | None) -> Path:
    """The workspace directory, which must exist."""
    from harness_core import UsageError

    path = (workspace or Path(".")).expanduser()
    if not path.is_dir():
        raise UsageError(f"workspace {str(path)!r} is not a directory",
                         hint="pass an existing directory with --workspace/-w")
    return path.resolve()


def load_config(workspace: Path, config: Path | None) -> Config:
    from harness_core import load_config as load

    return load(workspace, config_file=config, env=environment())


def open_store(config: Config) -> Store:
    from harness_core import Store

    return Store(config.store_url or config.store_path)


def build_spec(config: Config, workspace: Path, goal: str) -> RunSpec:
    """Project the loaded config onto a `RunSpec` for `goal` in `workspace`."""
    from dataclasses import replace

    from harness_core import RunSpec, Workspace, discover_skills, survey_toolchain

    ws = Workspace(workspace)
    contract = replace(config.contract, goal=goal)
    provider = config.provider
    settings = config.run
    env = environment()
    return RunSpec(
        workspace=ws,
        contract=contract,
        policy=config.policy,
        budget=config.budget,
        model=provider.model if provider is not None else "",
        max_tokens=provider.max_tokens if provider is not None else 4096,
        sandbox=config.sandbox,
        context_max_tokens=config.context_max_tokens,
        output_cap=settings.output_cap_bytes,
        exec_timeout=settings.exec_timeout_seconds,
        stall_window=settings.stall_window,
        toolchain=survey_toolchain(ws, config.toolchain).effective,
        env=env,
        web=config.web,
        protected_paths=_store_paths(config, workspace),
        mcp=tuple(config.mcp),
        cost_of=_cost_function(config),
        store_path=config.store_path.resolve(),
        provider_keys=provider_keys(config, env),
        git=config.git,
        agents=config.agents,
        agent_limits=config.agent_limits,
        skills=discover_skills(workspace),
    )


PROVIDER_KEY_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY")
"""Environment variables the providers read a key from when `api_key` is unset."""


def provider_keys(config: Config, env: Mapping[str, str]) -> tuple[str, ...]:
    """Every provider credential this process holds: configured keys and key variables."""
    keys: list[str] = [env[name] for name in PROVIDER_KEY_VARIABLES if env.get(name)]
    provider = config.provider
    if provider is not None:
        keys += [p.api_key for p in (provider, *provider.fallback) if p.api_key]
    return tuple(dict.fromkeys(keys))


def _cost_function(config: Config) -> Callable[[str, Any], float | None] | None:
    """Price a completion from `[prices]`; `max_cost_usd` without prices is a config error."""
    from harness_core import ConfigError

    prices = config.prices
    if config.budget.max_cost_usd is not None and prices is None:
        raise ConfigError("[budget] max_cost_usd needs a [prices] table (with as_of) to derive"
                          " costs from", hint="add [prices] with the models you use")
    if prices is None:
        return None

    def cost_of(model: str, usage: Any) -> float | None:
        price = prices.price_for(model)
        return price.cost_of(usage) if price is not None else None

    return cost_of


def _store_paths(config: Config, workspace: Path) -> tuple[str, ...]:
    store = config.store_path.resolve()
    return tuple(str(Path(str(store) + suffix)) for suffix in ("", "-wal", "-shm")
                 if str(store).startswith(str(workspace) + os.sep))


def build_provider(config: Config) -> Provider:
    from harness_core import ConfigError, SystemClock
    from harness_core import build_provider as build

    if config.provider is None:
        raise ConfigError("no [provider] is configured",
                          hint="add a [provider] table to io.toml (kind = \"scripted\" works offline)")
    return build(config.provider, env=environment(), clock=SystemClock())


Hold = Callable[[], AbstractContextManager[None]]
"""Keeps the terminal still (the live panel down) while the operator is prompted."""


class TtyApprover:
    """Asks the operator on the terminal (stderr prompt, stdin answer)."""

    def __init__(self, hold: Hold | None = None) -> None:
        self._hold = hold or nullcontext

    def decide(self, act: Any, decision: Any) -> Any:
        with self._hold():
            return self._ask(act, decision)

    def _ask(self, act: Any, decision: Any) -> Any:
        from harness_core import ApprovalDecision

        sys.stderr.write(
            f"\nio: approval needed: {act.describe()}\n    {decision.reason}\n"
            "    allow it? [y/N] "
        )
        sys.stderr.flush()
        try:
            line = sys.stdin.readline()
        except (OSError, ValueError):
            return None
        if not line:
            return None
        return ApprovalDecision.APPROVE if line.strip().lower() in ("y", "yes") \
            else ApprovalDecision.DENY


def make_approver(interactive: bool, hold: Hold | None = None) -> Approver | None:
    """A terminal approver when stdin and stderr are TTYs; None pauses the run instead."""
    if interactive and sys.stdin.isatty() and sys.stderr.isatty():
        return TtyApprover(hold)
    return None


class TtyResponder:
    """Puts the agent's question to the operator on the terminal (stderr prompt, stdin
    answer). An empty line or end of input leaves it unanswered: the run pauses."""

    def __init__(self, hold: Hold | None = None) -> None:
        self._hold = hold or nullcontext

    def answer(self, question: str) -> Answer | None:
        with self._hold():
            return self._ask(question)

    def _ask(self, question: str) -> Answer | None:
        from harness_core import Answer, AnsweredBy

        sys.stderr.write(f"\nio: the agent asks: {question}\n"
                         "    your answer (an empty line pauses the run): ")
        sys.stderr.flush()
        try:
            line = sys.stdin.readline()
        except (OSError, ValueError):
            return None
        text = line.strip()
        return Answer(text, AnsweredBy.PERSON) if text else None


def make_responder(interactive: bool, hold: Hold | None = None) -> Responder | None:
    """A terminal responder when stdin and stderr are TTYs; None pauses the run instead."""
    if interactive and sys.stdin.isatty() and sys.stderr.isatty():
        return TtyResponder(hold)
    return None


def sigterm_as_interrupt() -> Callable[[], None]:
    """Treat SIGTERM like Ctrl-C while a run goes; returns a restore function."""
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore
