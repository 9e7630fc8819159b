"""`kill -9` of `io run` at a random moment, then `io undo` or `io resume`: what is left.

    python bench/kill_anywhere.py                 # 100 kills, native sandbox when present
    python bench/kill_anywhere.py --kills 300 --seed 7

Not a test: the kill lands wherever the clock puts it, so a finding is a lead to turn
into a deterministic test (the placeholder and unfinished-write gaps of 2026-12-07 were
both of this kind). Each round runs one scripted run of writes and commands in a fresh
workspace and store, waits for its run row, sends SIGKILL to io's process group after a
random delay within the rest of the run's usual length, and then, alternately:

- `io resume` of the run: it must end 0, and the workspace must match the uninterrupted
  run's except for the files of calls the ledger marks interrupted (io never runs an
  interrupted call again: it tells the model, which decides; this script does not);
- `io undo` of the run: it must end 0, or say there is no step (or no snapshot) to undo,
  or refuse naming the step the process died in; never blame a change outside io alone.

Either way nothing io made may be left (placeholders, `.io-*.tmp`).

It prints each round whose outcome breaks a rule, then one line of counts. Only
127.0.0.1 is involved (the scripted provider talks to nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_TOML = """\
[provider]
kind = "scripted"
script = "replay.jsonl"
[policy]
tier = "workspace-write"
approval = "deny"
allow_exec = ["sh*", "true*"]
"""

_STEPS: list[dict[str, object]] = [
    {"text": "a", "tool_calls": [{"name": "write_file",
                                  "arguments": {"path": "a.txt", "content": "v1\n" * 2000}},
                                 {"name": "write_file",  # long enough for a kill to land in
                                  "arguments": {"path": "big.txt", "content": "x" * 4_000_000}}]},
    {"text": "c", "tool_calls": [{"name": "exec",
                                  "arguments": {"argv": ["sh", "-c", "echo c > c.txt"]}}]},
    {"text": "b", "tool_calls": [{"name": "write_file",
                                  "arguments": {"path": "sub/b.txt", "content": "b\n"}},
                                 {"name": "write_file",
                                  "arguments": {"path": "a.txt", "content": "v2\n"}}]},
    {"text": "t", "tool_calls": [{"name": "exec", "arguments": {"argv": ["true"]}}]},
    {"text": "done"},
]

_IO_MADE = (".gitmodules", "io.local.toml", ".git")


def _io(args: list[str], env: dict[str, str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "io_harness_cli", *args], env=env,
                          capture_output=True, text=True, timeout=120, **kw)  # type: ignore[call-overload]


def _fresh(base: Path, n: int) -> tuple[Path, dict[str, str]]:
    root = base / f"r{n}"
    ws = root / "ws"
    ws.mkdir(parents=True)
    (ws / "io.toml").write_text(_TOML)
    (ws / "a.txt").write_text("v0\n")
    (ws / "replay.jsonl").write_text("\n".join(json.dumps(s) for s in _STEPS) + "\n")
    env = {**os.environ, "IO_STORE": str(root / "store.db"), "TMPDIR": str(root)}
    return ws, env


def _files(ws: Path) -> dict[str, str]:
    return {str(p.relative_to(ws)): p.read_text(errors="replace") for p in sorted(ws.rglob("*"))
            if p.is_file() and p.name not in ("io.toml", "replay.jsonl")}


def _residue(ws: Path) -> list[str]:
    left = [str(p.relative_to(ws)) for p in ws.rglob(".io-*.tmp")]
    return left + [name for name in _IO_MADE if (ws / name).exists()]


def _count_swept(stderr: str, counts: dict[str, int]) -> None:
    """Count what the sweep said it removed (placeholders, write temporaries)."""
    line = next((x for x in stderr.splitlines() if "left after it died:" in x), "")
    counts["placeholders swept"] += any(n in line for n in _IO_MADE)
    counts["temporaries swept"] += ".io-" in line


def _interrupted_files(env: dict[str, str]) -> set[str]:
    """The files the calls the ledger marks interrupted would have written."""
    import sqlite3

    out: set[str] = set()
    with sqlite3.connect(env["IO_STORE"]) as db:
        rows = db.execute("SELECT name, arguments FROM ledger WHERE observation LIKE"
                          " 'interrupted:%'").fetchall()
    for name, arguments in rows:
        if name == "write_file":
            out.add(str(json.loads(arguments)["path"]))
        elif name == "exec" and "c.txt" in arguments:
            out.add("c.txt")
    return out


def _run_id(env: dict[str, str]) -> str | None:
    import sqlite3

    try:
        with sqlite3.connect(env["IO_STORE"]) as db:
            row = db.execute("SELECT run_id FROM runs").fetchone()
    except sqlite3.Error:
        return None
    return None if row is None else str(row[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="io-kill-anywhere-"))
    counts = {"rounds": 0, "no run yet": 0, "resumed": 0, "undone": 0,
              "placeholders swept": 0, "temporaries swept": 0, "broken": 0}
    try:
        ws, env = _fresh(base, -1)
        proc = _start(ws, env)
        started = _wait_for_run(env, proc)
        proc.wait()
        length = time.monotonic() - started
        if proc.returncode != 0:
            print(f"the uninterrupted run failed: exit {proc.returncode}")
            return 1
        reference = _files(ws)
        print(f"uninterrupted run: {length * 1000:.0f} ms from its run row to its end;"
              f" {len(reference)} files")
        for n in range(args.kills):
            counts["rounds"] += 1
            ws, env = _fresh(base, n)
            proc = _start(ws, env)
            _wait_for_run(env, proc)
            time.sleep(rng.uniform(0, length))
            with_process_group_gone(proc)
            run_id = _run_id(env)
            if run_id is None:
                counts["no run yet"] += 1
                shutil.rmtree(ws.parent, ignore_errors=True)
                continue
            problems: list[str] = []
            if n % 2 == 0:
                counts["resumed"] += 1
                resumed = _io(["resume", run_id, "--json"], env)
                _count_swept(resumed.stderr, counts)
                if resumed.returncode != 0 and "already" not in resumed.stderr:
                    problems.append(f"resume exit {resumed.returncode}: {resumed.stderr[-400:]}")
                got, spared = _files(ws), _interrupted_files(env)
                for name in sorted(set(reference) | set(got)):
                    if name not in spared and got.get(name) != reference.get(name):
                        problems.append(f"{name} differs after resume")
            else:
                counts["undone"] += 1
                undone = _io(["undo", run_id], env)
                _count_swept(undone.stderr, counts)
                if undone.returncode != 0 and not any(
                        why in undone.stderr for why in ("no step left to undo",
                                                         "has no workspace snapshots",
                                                         "process died inside step")):
                    problems.append(f"undo exit {undone.returncode}: {undone.stderr[-400:]}")
            residue = _residue(ws)
            if residue:
                problems.append(f"left by io: {residue}")
            if problems:
                counts["broken"] += 1
                print(f"round {n} ({'resume' if n % 2 == 0 else 'undo'}): {'; '.join(problems)}")
            else:
                shutil.rmtree(ws.parent, ignore_errors=True)
        print(" ".join(f"{k}={v}" for k, v in counts.items()) + f" (kept: {base})")
        return 1 if counts["broken"] else 0
    finally:
        if not counts["broken"]:
            shutil.rmtree(base, ignore_errors=True)


def _start(ws: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "io_harness_cli", "run", "go", "-w",
                             str(ws), "--json"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def _wait_for_run(env: dict[str, str], proc: subprocess.Popen[bytes]) -> float:
    """Poll until the run's row exists (or io ended); the time it was seen."""
    while _run_id(env) is None and proc.poll() is None:
        time.sleep(0.002)
    return time.monotonic()


def with_process_group_gone(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL io's whole process group (io, its sandbox, its commands) and reap io."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


if __name__ == "__main__":
    raise SystemExit(main())
