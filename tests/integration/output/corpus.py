"""A corpus of real runs through the real CLI, one per way a run can go (issue 37):
finished (with a refusal and a gate), paused for approval, paused for a question,
stopped, interrupted, errored, compacted, an output schema that rejects an answer,
a tree, a batch and a session turn.

Each scenario runs twice: with `--json` (its stdout lines are what the event schema must
describe) and as a person runs it (its stdout and stderr, then `io trace` and `io runs`
of the run, are what must hold no Python repr). The provider is the shipped `scripted`
replay; everything else (store, sandbox, subprocesses) is real.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.conftest import REPO, io_cmd
from tests.integration.cli.helpers import make_workspace, replay_line

__all__ = ["Corpus", "build_corpus"]

ASK = '[policy]\ntier = "workspace-write"\napproval = "ask"\n'
SCHEMA = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}


class Corpus:
    """What the scenarios printed: `json[name]` the `--json` stdout, `human[name]` the
    human stdout + stderr of the same scenario and of `io trace`/`io runs` after it,
    `live[name]` the live trace alone (the human run's stderr)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.json: dict[str, str] = {}
        self.human: dict[str, str] = {}
        self.live: dict[str, str] = {}

    def io(self, args: list[str], *, cwd: Path | None = None,
           extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*io_cmd(), *args], cwd=cwd, env={**self.env, **(extra or {})},
                              capture_output=True, text=True, timeout=180, check=False)

    def lines(self) -> list[tuple[str, str]]:
        """(scenario, line) for every `--json` line of the corpus."""
        return [(name, line) for name, out in self.json.items()
                for line in out.splitlines() if line.strip()]


def _finished(root: Path) -> tuple[Path, list[str]]:
    ws = make_workspace(root, [
        replay_line("looking", ("list_dir", {})),
        replay_line("trying", ("exec", {"argv": ["rm", "-rf", "/tmp/x"]})),
        replay_line("planning", ("todo_write", {"todos": [
            {"content": "look", "status": "done"}, {"content": "answer", "status": "pending"}]})),
        replay_line("the answer is 42"),
    ], toml_extra='[policy]\ntier = "workspace-write"\napproval = "deny"\n', verify="true")
    return ws, ["run", "find the answer"]


def _approval(root: Path) -> tuple[Path, list[str]]:
    ws = make_workspace(root, [replay_line("make", ("exec", {"argv": ["touch", "m"]})),
                               replay_line("done")], toml_extra=ASK)
    return ws, ["run", "make m"]


def _question(root: Path) -> tuple[Path, list[str]]:
    ws = make_workspace(root, [
        replay_line("asking", ("ask_question", {"question": "Which colour?"})),
        replay_line("blue")])
    return ws, ["run", "pick a colour"]


def _stopped(root: Path) -> tuple[Path, list[str]]:
    ws = make_workspace(root, [
        replay_line(f"working {i}", ("write_file", {"path": f"f{i}", "content": "x"}))
        for i in range(3)] + [replay_line("done")],
        toml_extra="[budget]\nmax_steps = 2\n\n[rewind]\nmax_bytes = 1\n")  # snapshots capped: a warning
    return ws, ["run", "write files"]


def _stalled(root: Path) -> tuple[Path, list[str]]:
    ws = make_workspace(root, [replay_line(f"looking {i}", ("list_dir", {})) for i in range(5)])
    return ws, ["run", "look around"]


def _errored(root: Path) -> tuple[Path, list[str]]:
    ws = make_workspace(root, [replay_line("one", ("list_dir", {}))])  # then the replay ends
    return ws, ["run", "run out of replay"]


def _compacted(root: Path) -> tuple[Path, list[str]]:
    shutil.copytree(REPO / "examples" / "compaction", root)
    return root, ["run"]


def _schema(root: Path) -> tuple[Path, list[str]]:
    ws = make_workspace(root, [replay_line("n is three"), replay_line('```json\n{"n": 3}\n```')])
    (root / "schema.json").write_text(json.dumps(SCHEMA))
    return ws, ["run", "count", "--output-schema", str(root / "schema.json")]


def _tree(root: Path) -> tuple[Path, list[str]]:
    ws = make_workspace(root, [
        replay_line("", ("spawn_agent", {"goal": "review it", "agent": "reviewer"})),
        replay_line("reviewed"),
        replay_line("root done"),
    ], toml_extra='[agents.reviewer]\nrole = "Review."\n')
    return ws, ["run", "lead"]


SCENARIOS: dict[str, Callable[[Path], tuple[Path, list[str]]]] = {
    "finished": _finished, "paused_approval": _approval, "paused_question": _question,
    "stopped": _stopped, "stalled": _stalled, "errored": _errored, "compacted": _compacted, "schema": _schema,
    "tree": _tree,
}


def _human(corpus: Corpus, name: str, ws: Path, args: list[str]) -> None:
    plain = corpus.io([*args, "-w", str(ws)], extra={"NO_COLOR": "1"})
    corpus.live[name] = plain.stderr
    runs = corpus.io(["runs", "-w", str(ws), "--json"])
    text = [plain.stdout, plain.stderr]
    for line in runs.stdout.splitlines():
        run_id = json.loads(line)["run_id"]
        trace = corpus.io(["trace", run_id, "-w", str(ws)], extra={"NO_COLOR": "1"})
        text += [trace.stdout, trace.stderr]
    listed = corpus.io(["runs", "-w", str(ws)], extra={"NO_COLOR": "1"})
    corpus.human[name] = "\n".join([*text, listed.stdout, listed.stderr])


def _interrupted(corpus: Corpus, root: Path, json_mode: bool) -> None:
    started, release = root / "started", root / "release"
    script = root / "block.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text("import pathlib, sys, time\n"
                      "pathlib.Path(sys.argv[2]).write_text('started')\n"
                      "while not pathlib.Path(sys.argv[1]).exists():\n"
                      "    time.sleep(0.02)\n")
    ws = make_workspace(root / "w", [
        replay_line("wait", ("exec", {"argv": [sys.executable, str(script), str(release),
                                               str(started)]})),
        replay_line("done")], toml_extra='[policy]\ntier = "full"\n')
    extra = ["--json"] if json_mode else []
    env = {**corpus.env, **({} if json_mode else {"NO_COLOR": "1"})}
    proc = subprocess.Popen([*io_cmd(), "run", "wait", "-w", str(ws), *extra], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not started.exists():  # poll: the blocking call has started
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the blocking call never started"
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    release.write_text("go")
    assert proc.returncode == 130, err
    if json_mode:
        corpus.json["interrupted"] = out
    else:
        run_id = json.loads(corpus.io(["runs", "-w", str(ws), "--json"]).stdout
                            .splitlines()[0])["run_id"]
        trace = corpus.io(["trace", run_id, "-w", str(ws)], extra={"NO_COLOR": "1"})
        corpus.live["interrupted"] = err
        corpus.human["interrupted"] = "\n".join([out, err, trace.stdout, trace.stderr])


def _batch(corpus: Corpus, root: Path, json_mode: bool) -> None:
    for name in ("a", "b"):
        make_workspace(root / name, [
            replay_line("writing", ("write_file", {"path": "a.txt", "content": "x\n"})),
            replay_line("done")])
    tasks = root / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"goal": f"task {n}", "workspace": n}) + "\n"
                             for n in ("a", "b")))
    extra = ["--json"] if json_mode else []
    result = corpus.io(["batch", str(tasks), *extra, "-w", str(root / "a")],
                       extra=None if json_mode else {"NO_COLOR": "1"})
    assert result.returncode == 0, result.stderr
    if json_mode:
        corpus.json["batch"] = result.stdout
    else:
        corpus.human["batch"] = result.stdout + "\n" + result.stderr


def _session(corpus: Corpus, root: Path, json_mode: bool) -> None:
    ws = make_workspace(root, [replay_line("hello there")])
    made = corpus.io(["session", "new", "-w", str(ws)])
    session_id = made.stdout.strip()
    extra = ["--json"] if json_mode else []
    turn = corpus.io(["session", "turn", session_id, "hi", "-w", str(ws), *extra],
                     extra=None if json_mode else {"NO_COLOR": "1"})
    assert turn.returncode == 0, turn.stderr
    if json_mode:
        corpus.json["session"] = turn.stdout
    else:
        corpus.human["session"] = "\n".join([made.stderr, turn.stdout, turn.stderr])


def build_corpus(base: Path) -> Corpus:
    """Run every scenario under `base` (its own home, store and temp dir)."""
    home = base / "home"
    (home / "tmp").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("OTEL_") and k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update({"HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"),
                "XDG_STATE_HOME": str(home / "state"),
                "IO_SYSTEM_CONFIG": str(home / "system" / "io.toml"),
                "IO_STORE": str(home / "state" / "io" / "state.db"),
                "TMPDIR": str(home / "tmp")})
    corpus = Corpus(env)
    for name, make in SCENARIOS.items():
        ws, args = make(base / "json" / name)
        corpus.json[name] = corpus.io([*args, "-w", str(ws), "--json"]).stdout
        ws, args = make(base / "human" / name)
        _human(corpus, name, ws, args)
    for json_mode in (True, False):
        where = base / ("json" if json_mode else "human")
        _interrupted(corpus, where / "interrupted", json_mode)
        _batch(corpus, where / "batch", json_mode)
        _session(corpus, where / "session", json_mode)
    return corpus
