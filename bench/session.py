"""Sessions at length: a session of 500 turns, then what showing it and taking turn 501 cost.

Each turn is what a small real turn looks like through the scripted provider: the agent
reads a 4 KB file (one tool call, one observation), then answers. `[context]
max_tokens` bounds what a turn is shown of the turns before it.

Figures printed:
- turn 2 vs turn 501, in process: wall time of `Session.turn` (no sandbox) for a second
  turn (history: one turn) and for a turn taken from turn 500 of a 500-turn session
  (history: as many turns of a 500-turn branch as the context budget admits). Median of
  several runs; the ratio is the target (<= 1.5x). What remains of a difference is the
  history the budget admits (stored with the new run), never the length of the session.
- the same two turns through the CLI (`io session turn`, a real subprocess, floor
  sandbox), which is what an operator waits for.
- `io session show SESSION` of the 500-turn session as a real subprocess (plain text and
  --json), next to a bare `python -c pass` for scale, and the same work in process
  (open, read the tree, render). Target: <= 300 ms for the command.

Run: python bench/session.py [--turns 500] [--repeat 7] [--context 8000]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness_core.providers import ProviderConfig  # noqa: E402
from harness_core.providers.scripted import ScriptedProvider  # noqa: E402
from harness_core.run import Budget, Runner, RunSpec  # noqa: E402
from harness_core.sandbox import BackendChoice, SandboxConfig  # noqa: E402
from harness_core.session import Session  # noqa: E402
from harness_core.store import Store  # noqa: E402
from harness_core.verification import TaskContract  # noqa: E402
from harness_core.workspace import Workspace  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _spec(ws: Path, goal: str, context: int) -> RunSpec:
    return RunSpec(workspace=Workspace(ws), contract=TaskContract(goal=goal),
                   budget=Budget(max_steps=5, max_tokens=None, wall_seconds=None),
                   sandbox=SandboxConfig(backend=BackendChoice.OFF), model="scripted",
                   context_max_tokens=context)


def _timed_turn(session: Session, runner: Runner, spec: RunSpec,
                from_turn: int | None = None) -> tuple[float, int]:
    """Seconds the turn took, and how many history messages it was shown."""
    began = time.perf_counter()
    outcome = session.turn(runner, spec, from_turn=from_turn)
    took = time.perf_counter() - began
    every = len(session.store.messages(outcome.run_id))
    own = len(session.store.turn_messages(outcome.run_id))
    return took, every - own - 1  # less the system prompt


def _median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000.0


def _command_ms(argv: list[str], env: dict[str, str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, check=True)
        times.append(time.perf_counter() - began)
    return _median_ms(times)


def _workspace(tmp: Path, context: int) -> tuple[Path, Path]:
    ws = tmp / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("notes about the project\n" + "lorem ipsum " * 340)
    script = ws / "replay.jsonl"
    script.write_text(
        '{"text": "let me look", "tool_calls": [{"name": "read_file",'
        ' "arguments": {"path": "notes.txt"}}], "usage": {"total_tokens": 40}}\n'
        '{"text": "noted; anything else?", "usage": {"total_tokens": 20}}\n')
    (ws / "io.toml").write_text(
        '[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n\n'
        f'[sandbox]\nbackend = "floor"\n\n[context]\nmax_tokens = {context}\n')
    return ws, script


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--context", type=int, default=8000)
    args = parser.parse_args()
    message = "please remember this detail about the project and check the notes"

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        ws, script = _workspace(tmp, args.context)
        provider = ScriptedProvider(ProviderConfig(kind="scripted", script=script))
        db = tmp / "state.db"
        env = {**os.environ, "IO_STORE": str(db), "NO_COLOR": "1",
               "XDG_CONFIG_HOME": str(tmp / "config"),
               "IO_SYSTEM_CONFIG": str(tmp / "system.toml")}
        io_cmd = [sys.executable, "-m", "io_harness_cli"]
        with Store(db) as store:
            runner = Runner(store, provider)
            spec = _spec(ws, message, args.context)

            second, fresh_ids = [], []
            for _ in range(args.repeat):
                fresh = Session.new(store, workspace=ws)
                fresh.turn(runner, spec)
                second.append(_timed_turn(fresh, runner, spec))
                fresh_ids.append(fresh.id)

            session = Session.new(store, workspace=ws, title="bench")
            began = time.perf_counter()
            for _ in range(args.turns):
                session.turn(runner, spec)
            built = time.perf_counter() - began

            later = [_timed_turn(session, runner, spec, from_turn=args.turns)
                     for _ in range(args.repeat)]

            began = time.perf_counter()
            for _ in range(args.repeat):
                tree = Session.open(store, session.id).tree()
                with redirect_stdout(io.StringIO()):
                    from io_harness_cli.commands.session import _plain_tree

                    _plain_tree(tree)
            in_process = (time.perf_counter() - began) / args.repeat * 1000.0

        cli_runs = max(3, args.repeat // 2)
        cli_second = statistics.median(
            _command_ms([*io_cmd, "session", "branch", sid, message, "--from", "1", "-w",
                         str(ws)], env, 1) for sid in fresh_ids[:cli_runs])
        cli_later = _command_ms([*io_cmd, "session", "branch", session.id, message, "--from",
                                 str(args.turns), "-w", str(ws)], env, cli_runs)
        show = [*io_cmd, "session", "show", session.id]
        show_plain = _command_ms(show, env, args.repeat)
        show_json = _command_ms([*show, "--json"], env, args.repeat)
        bare = _command_ms([sys.executable, "-c", "pass"], env, args.repeat)

    t2 = _median_ms([t for t, _ in second])
    t501 = _median_ms([t for t, _ in later])
    n = args.turns + 1
    print(f"session of {args.turns} turns built in {built:.1f} s"
          f" ({built / args.turns * 1000:.1f} ms a turn); [context] max_tokens {args.context}")
    print(f"in process  turn 2:   median {t2:7.2f} ms  (history messages shown:"
          f" {second[0][1]})")
    print(f"in process  turn {n}: median {t501:7.2f} ms  (history messages shown:"
          f" {later[0][1]})")
    print(f"in process  ratio turn {n} / turn 2: {t501 / t2:.2f}x   (target <= 1.5x)")
    print(f"io session  turn 2:   median {cli_second:7.1f} ms")
    print(f"io session  turn {n}: median {cli_later:7.1f} ms")
    print(f"io session  ratio turn {n} / turn 2: {cli_later / cli_second:.2f}x"
          "   (target <= 1.5x)")
    print(f"io session show (plain): median {show_plain:7.1f} ms   (target <= 300 ms)")
    print(f"io session show --json:  median {show_json:7.1f} ms")
    print(f"python -c pass:          median {bare:7.1f} ms   (interpreter start, for scale)")
    print(f"show in process (open + tree + render of {args.turns} turns): {in_process:.2f} ms")


if __name__ == "__main__":
    main()
