"""A tree's network decisions under the native sandbox's egress proxy: each run's
commands are decided by that run's own policy (#10, found beside the shared-sandbox fix).

An agent may narrow the policy (`[agents.NAME] deny_net`). The proxy of the root's
sandbox used to be pointed at the gate of whichever run of the tree started last, so a
narrowed child's refusal stayed in force for the root after the child ended, and a
narrowed child running beside a plain sibling could be decided by the sibling's gate.
A child whose policy differs from its root's now runs its commands in a sandbox (and
proxy) of its own; the others share the root's and are decided by the root's gate.

Loopback only: one HTTP server on the host's 127.0.0.1, reached through the proxy.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness_core import Store
from harness_core.sandbox import Selected
from tests.conftest import run_io
from tests.integration.cli.helpers import replay_line
from tests.integration.sandbox import test_egress_ports

PROBE = test_egress_ports.PROBE
ports = test_egress_ports.ports  # the two loopback servers' fixture

# Waits for FILE (a rendezvous with a sibling) before probing URL; writes DONE after.
WAIT_THEN_PROBE = PROBE.replace(
    "out = {", "import pathlib, time\n"
    "while not pathlib.Path(sys.argv[1]).exists():\n    time.sleep(0.02)\n"
    "done = sys.argv[2]\nsys.argv[1:3] = []\nout = {", 1,
).replace("print(json.dumps(out))", "print(json.dumps(out))\npathlib.Path(done).write_text('x')")
# Writes STARTED, then waits for FILE.
HOLD = ("import pathlib, sys, time\npathlib.Path(sys.argv[1]).write_text('x')\n"
        "while not pathlib.Path(sys.argv[2]).exists():\n    time.sleep(0.02)\n")


def _workspace(ws: Path, lines: list[str], parallel: int) -> None:
    ws.mkdir()
    (ws / "probe.py").write_text(PROBE)
    (ws / "wait_probe.py").write_text(WAIT_THEN_PROBE)
    (ws / "hold.py").write_text(HOLD)
    (ws / "replay.jsonl").write_text("\n".join(lines) + "\n")
    (ws / "io.toml").write_text(
        '[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n\n'
        '[policy]\ntier = "workspace-write"\napproval = "deny"\nallow_exec = ["*"]\n'
        'allow_net = ["127.0.0.1"]\n\n'
        '[sandbox]\nbackend = "native"\nnetwork = true\n\n'
        f'[agents]\nparallel = {parallel}\n\n'
        '[agents.offline]\nrole = "No network."\ndeny_net = ["127.0.0.1"]\n')


def _probes(store: Path) -> dict[str, list[object]]:
    """Each run's goal -> the HTTP status of each of its probes."""
    out: dict[str, list[object]] = {}
    with Store(store) as opened:
        for run in opened.list_runs(10):
            for entry in opened.ledger(run.run_id):
                data = entry.data_json() or {}
                if entry.name == "exec" and "{" in str(data.get("stdout", "")):
                    probe = json.loads(str(data["stdout"]))
                    out.setdefault(run.goal, []).extend(
                        v[0] for k, v in probe.items() if k != "proxy")
    return out


def test_a_narrowed_childs_refusal_does_not_outlive_it(
        tmp_path: Path, native: Selected, ports: tuple[int, int]) -> None:
    url = f"http://127.0.0.1:{ports[0]}/"
    probe = ("exec", {"argv": ["python3", "probe.py", url]})
    ws = tmp_path / "ws"
    _workspace(ws, [
        replay_line("", ("spawn_agent", {"goal": "offline probe", "agent": "offline"})),
        replay_line("", probe),
        replay_line("offline done"),
        replay_line("", probe),  # the root, after its child ended
        replay_line("root done"),
    ], parallel=1)
    store = tmp_path / "state.db"
    result = run_io(["run", "lead", "--json"], cwd=ws, env={"IO_STORE": str(store)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert _probes(store) == {"offline probe": [403], "lead": [200]}
    with Store(store) as opened:
        refused = {run.goal: [e.target for e in opened.policy_events(run.run_id)]
                   for run in opened.list_runs(10)}
    assert refused["offline probe"] and not refused["lead"]  # recorded on the child only


def test_a_narrowed_child_beside_a_plain_sibling_keeps_its_own_policy(
        tmp_path: Path, native: Selected, ports: tuple[int, int]) -> None:
    """The narrowed child probes only once its plain sibling's command is running (so the
    sibling's drive started after it), and the sibling's command waits for that probe."""
    url = f"http://127.0.0.1:{ports[0]}/"
    ws = tmp_path / "ws"
    _workspace(ws, [
        replay_line("", ("spawn_agent", {"goal": "offline probe", "agent": "offline"}),
                    ("spawn_agent", {"goal": "plain"})),
        replay_line("", ("exec", {"argv": ["python3", "wait_probe.py", "plain.started",
                                           "offline.done", url]})),
        replay_line("offline done"),
        replay_line("", ("exec", {"argv": ["python3", "hold.py", "plain.started",
                                           "offline.done"]})),
        replay_line("plain done"),
        replay_line("root done"),
    ], parallel=2)
    store = tmp_path / "state.db"
    result = run_io(["run", "lead", "--json"], cwd=ws, env={"IO_STORE": str(store)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert _probes(store) == {"offline probe": [403]}
