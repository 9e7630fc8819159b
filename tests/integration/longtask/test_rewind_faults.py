"""`io undo` and `io rewind` under faults and steering (#35): the sandbox's placeholders
are never a change, a `.gitignore` the agent writes cannot blind the outside-change
check, a restore refuses rather than deleting what io never recorded, files io writes
for the operator (CI reports, a redirect) never block a restore, a full disk stops
snapshots without ending the run, and copies never hold what `deny_read` refuses (#34).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, io_cmd, run_io
from tests.integration.cli.helpers import json_lines

_TOML = """\
[provider]
kind = "scripted"
script = "replay.jsonl"
[policy]
tier = "workspace-write"
approval = "deny"
allow_exec = ["sh*", "touch*", "cat*"]
"""


def _write(path: str, content: str) -> dict[str, object]:
    return {"name": "write_file", "arguments": {"path": path, "content": content}}


def _exec(*argv: str) -> dict[str, object]:
    return {"name": "exec", "arguments": {"argv": list(argv)}}


def _workspace(tmp_path: Path, steps: list[dict[str, object]], toml: str = _TOML) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "io.toml").write_text(toml)
    (ws / "a.txt").write_text("v0\n")
    (ws / "replay.jsonl").write_text("\n".join(json.dumps(s) for s in steps) + "\n")
    return ws


def _run(ws: Path, *extra: str) -> tuple[str, subprocess.CompletedProcess[str]]:
    done = run_io(["run", "do it", "-w", str(ws), "--json", *extra])
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return str(json_lines(done.stdout)[-1]["run_id"]), done


def _outputs(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [str(e.get("output", "")) for e in json_lines(done.stdout)
            if e.get("kind") == "tool_result"]


def test_placeholders_are_never_listed_snapshotted_or_an_outside_change(
        tmp_path: Path) -> None:
    """Two command steps in a workspace that is no git repository: the native sandbox
    covers `.gitmodules`, `io.local.toml` and `.git` with placeholders while they run.
    The model's `list_dir`, `find` and `grep` never show them, and `io undo` then works
    (it exited 2 with a false "files changed outside io")."""
    ws = _workspace(tmp_path, [
        {"text": "one", "tool_calls": [_exec("sh", "-c", "echo one > a.txt")]},
        {"text": "two", "tool_calls": [
            _exec("touch", "b.txt"), {"name": "list_dir", "arguments": {}},
            {"name": "find", "arguments": {"pattern": "*"}},
            {"name": "grep", "arguments": {"pattern": ".*"}}]},
        {"text": "done"},
    ], _TOML + '[sandbox]\nbackend = "native"\n')
    run_id, done = _run(ws)
    listing, found, grepped = _outputs(done)[-3:]
    for name in (".gitmodules", "io.local.toml", ".git"):
        assert name not in listing.split() and name not in found.split(), (listing, found)
        assert name + ":" not in grepped
    assert "b.txt" in listing.split() and "b.txt" in found.split()
    assert not (ws / ".gitmodules").exists() and not (ws / ".git").exists()
    undone = run_io(["undo", run_id, "--json"])
    assert undone.returncode == 0, undone.stderr
    assert json.loads(undone.stdout)["removed"] == ["b.txt"]
    again = run_io(["undo", run_id, "--json"])
    assert again.returncode == 0, again.stderr
    assert (ws / "a.txt").read_text() == "v0\n"


def test_a_gitignore_the_agent_writes_does_not_blind_the_check(tmp_path: Path) -> None:
    """The agent writes `.gitignore` = `*`; the operator then edits a.txt. The check
    reads with the rules of the run's first snapshot, so the edit is seen and `io undo`
    refuses, naming it (it overwrote the edit without a word)."""
    ws = _workspace(tmp_path, [
        {"text": "hide", "tool_calls": [_write(".gitignore", "*\n")]},
        {"text": "edit", "tool_calls": [_write("a.txt", "agent\n")]},
        {"text": "done"},
    ])
    run_id, _ = _run(ws)
    (ws / "a.txt").write_text("operator\n")
    refused = run_io(["undo", run_id])
    assert refused.returncode == 2, refused.stderr
    assert "changed outside io" in refused.stderr and "a.txt" in refused.stderr
    assert (ws / "a.txt").read_text() == "operator\n"
    assert "Traceback" not in refused.stderr


def test_a_restore_refuses_and_names_what_io_never_recorded(tmp_path: Path) -> None:
    """Rewinding to a state with a file where a folder now stands: the folder holds a
    file the operator's `.gitignore` hides (io never saw it). The rewind refuses, names
    it and changes nothing (it deleted the whole folder)."""
    ws = _workspace(tmp_path, [
        {"text": "dir", "tool_calls": [_exec("sh", "-c", "rm a.txt && mkdir a.txt"),
                                       _write("a.txt/made.txt", "x\n")]},
        {"text": "done"},
    ])
    (ws / ".gitignore").write_text("*.log\n")
    run_id, _ = _run(ws)
    (ws / "a.txt" / "keep.log").write_text("precious\n")
    refused = run_io(["rewind", run_id, "--to", "0"])
    assert refused.returncode == 2, refused.stderr
    assert "a.txt/keep.log" in refused.stderr and "never recorded" in refused.stderr
    assert (ws / "a.txt" / "keep.log").read_text() == "precious\n"
    assert (ws / "a.txt" / "made.txt").is_file()
    (ws / "a.txt" / "keep.log").unlink()  # moved out of the way: the rewind goes through
    done = run_io(["rewind", run_id, "--to", "0", "--json"])
    assert done.returncode == 0, done.stderr
    assert "1 file(s) restored, 1 removed" in done.stderr  # then the branch redid step 0


def test_the_ci_guides_workflow_then_undo(tmp_path: Path) -> None:
    """docs/guide/ci.md's command line, run by a shell in the workspace as a CI job
    does, writes events.jsonl, answer.txt and io-gates.xml there; `io undo` then works,
    and so does `io rewind ... > out.txt` (each refused: "changed outside io")."""
    guide = (REPO / "docs" / "guide" / "ci.md").read_text()
    line = next(x.strip() for x in guide.splitlines() if "> events.jsonl" in x)
    assert line.startswith("io run --json --junit io-gates.xml --output-last-message")
    ws = _workspace(tmp_path, [
        {"text": "edit", "tool_calls": [_write("a.txt", "v1\n")]},
        {"text": "more", "tool_calls": [_write("b.txt", "b\n")]},
        {"text": "done"},
    ])
    io = f"{shlex.quote(sys.executable)} -m io_harness_cli"
    script = f"io() {{ {io} \"$@\"; }}\nGOAL=go\nstatus=0\n{line}\nexit $status\n"
    job = subprocess.run(["sh", "-c", script], cwd=ws, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=120)
    assert job.returncode == 0, job.stderr
    for name in ("events.jsonl", "answer.txt", "io-gates.xml"):
        assert (ws / name).is_file(), name
    run_id = str(json_lines((ws / "events.jsonl").read_text())[-1]["run_id"])
    undone = subprocess.run(["sh", "-c", f"{io} undo {run_id} --json > undo.txt"], cwd=ws,
                            capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=120)
    assert undone.returncode == 0, undone.stderr
    assert json.loads((ws / "undo.txt").read_text())["removed"] == ["b.txt"]
    rewound = subprocess.run(["sh", "-c", f"{io} rewind {run_id} --to 0 --json > out.txt"],
                             cwd=ws, capture_output=True, text=True,
                             env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=120)
    assert rewound.returncode == 0, rewound.stderr
    assert (ws / "a.txt").read_text() == "v1\n"  # the branch wrote step 0's edit again
    assert (ws / "events.jsonl").stat().st_size > 0 and (ws / "out.txt").stat().st_size > 0


def test_copies_never_hold_what_deny_read_refuses(tmp_path: Path) -> None:
    """With the store inside the workspace, the snapshots keep no copy of a refused
    file, and a command cannot read the snapshot folder (`grep -r` printed the secret)."""
    ws = _workspace(tmp_path, [
        {"text": "look", "tool_calls": [
            _exec("sh", "-c", "grep -r TOKEN= . ; cat .io/snapshots/*/*/blobs/*/* ;"
                              " ls -R .io/snapshots")]},
        {"text": "done"},
    ], _TOML.replace('allow_exec', 'deny_read = ["secrets/**"]\nallow_exec')
       + '[sandbox]\nbackend = "native"\n')
    (ws / "secrets").mkdir()
    (ws / "secrets" / "prod.env").write_text("TOKEN=SECRET-42\n")
    store = ws / ".io" / "state.db"
    done = run_io(["run", "do it", "-w", str(ws), "--json"],
                  env={"IO_STORE": str(store)})
    assert done.returncode == 0, done.stderr
    output = "".join(_outputs(done))
    assert "SECRET-42" not in output, output
    assert ".io/snapshots:\n\n" in output  # the folder is masked: `ls -R` lists nothing
    blobs = [p for p in (ws / ".io" / "snapshots").rglob("*") if p.is_file()]
    assert blobs  # the snapshots are there, and hold no copy of the secret
    assert all(b"SECRET-42" not in p.read_bytes() for p in blobs)


def _namespaces() -> None:
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"the kernel refuses user + mount namespaces here: {probe.stderr.strip()}")


def test_a_full_snapshot_disk_stops_snapshots_and_the_run_goes_on(tmp_path: Path) -> None:
    """The snapshot folder is a 1 MiB tmpfs and the run writes a 2 MB file: the run
    finishes (it ended with "internal error: OSError: No space left on device"), warns,
    and `io undo` refuses naming the cause."""
    _namespaces()
    big = "x" * 2_000_000
    ws = _workspace(tmp_path, [
        {"text": "small", "tool_calls": [_write("a.txt", "v1\n")]},
        {"text": "big", "tool_calls": [_write("big.txt", big)]},
        {"text": "after", "tool_calls": [_write("c.txt", "c\n")]},
        {"text": "done"},
    ])
    store = tmp_path / "store" / "state.db"
    snaps = store.parent / "snapshots"
    snaps.mkdir(parents=True)
    io = f"IO_STORE={shlex.quote(str(store))} {shlex.quote(sys.executable)} -m io_harness_cli"
    script = (f"mount -t tmpfs -o size=1m tmpfs {shlex.quote(str(snaps))} && "
              f"{io} run go -w {shlex.quote(str(ws))} --json > {tmp_path}/ev.jsonl;"
              f" echo \"run=$?\"; {io} undo $(tail -1 {tmp_path}/ev.jsonl |"
              " sed 's/.*\"run_id\": *\"\\([0-9a-f]*\\)\".*/\\1/'); echo \"undo=$?\"")
    result = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                             script], capture_output=True, text=True, timeout=180,
                            env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert "run=0" in result.stdout, result.stderr
    assert "undo=2" in result.stdout, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert "No space left on device" in result.stderr
    events = json_lines((tmp_path / "ev.jsonl").read_text())
    warnings = [e for e in events if e.get("kind") == "warning"]
    assert any("snapshots stopped" in json.dumps(e) for e in warnings)
    assert (ws / "c.txt").read_text() == "c\n"  # the run went on past the fault


SWAPPER = """
import os, sys
ws, outside = sys.argv[1:3]
sub, aside = os.path.join(ws, "sub"), os.path.join(ws, "sub.aside")
while not os.path.exists(os.path.join(ws, "stop")):
    os.rename(sub, aside)
    os.symlink(outside, sub)
    os.unlink(sub)
    os.rename(aside, sub)
"""


def test_links_swapped_while_a_run_works_never_end_it(tmp_path: Path) -> None:
    """A folder of the workspace is swapped for a link to a folder outside, over and
    over, while a run writes files step after step: the run finishes (it ended with
    "internal error: FileNotFoundError"), and no snapshot holds the outside file."""
    steps: list[dict[str, object]] = [
        {"text": f"w{i}", "tool_calls": [_write(f"f{i}.txt", f"{i}\n")]} for i in range(8)]
    ws = _workspace(tmp_path, [*steps, {"text": "done"}])
    (ws / "sub").mkdir()
    for i in range(100):  # files read between listing the root and entering `sub`
        (ws / "sub" / f"g{i:03d}.txt").write_text("g" * 500)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("OUTSIDE-SECRET\n")
    racer = subprocess.Popen([sys.executable, "-c", SWAPPER, str(ws), str(outside)])
    try:
        done = run_io(["run", "do it", "-w", str(ws), "--json"])
    finally:
        (ws / "stop").touch()
        racer.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    snaps = Path(os.environ["IO_STORE"]).parent / "snapshots"
    blobs = [p for p in snaps.rglob("*") if p.is_file()]
    assert blobs and all(b"OUTSIDE-SECRET" not in p.read_bytes() for p in blobs)


def test_a_write_killed_midway_leaves_nothing_that_blocks_undo(tmp_path: Path) -> None:
    """`kill -9` inside a workspace write leaves its temporary file beside the target;
    the process ledger names it, so the next `io` command removes it and `io undo` does
    not refuse it as a file changed outside io. The kill is injected at a chosen byte in
    a forked process holding a real ledger (no outside timing hits a write that short)."""
    from harness_core import workspace as workspace_module
    from harness_core.sandbox._ledger import Ledger, ledger_folder
    from harness_core.workspace import Workspace, record_temporaries

    ws = _workspace(tmp_path, [{"text": "edit", "tool_calls": [_write("a.txt", "v1\n")]},
                               {"text": "done"}])
    run_id, _ = _run(ws)
    owner = os.fork()
    if owner == 0:
        try:
            ledger = Ledger(ledger_folder())
            ledger.note_run(run_id, os.environ["IO_STORE"])
            record_temporaries((ledger.note_temporary, ledger.forget_temporary))

            def killed_midway(fd: int, data: bytes) -> None:
                os.write(fd, data[:3])
                os.kill(os.getpid(), signal.SIGKILL)

            workspace_module._write_all = killed_midway  # pyright: ignore[reportPrivateUsage]
            Workspace(ws).write_bytes("a.txt", b"v2 never written\n")
        finally:
            os._exit(0)
    os.waitpid(owner, 0)
    left = sorted(ws.glob(".io-*.tmp"))
    assert len(left) == 1
    undone = run_io(["undo", run_id, "--json"])
    assert undone.returncode == 0, undone.stderr
    assert f"unfinished writes io process {owner} left after it died: {left[0]}" in undone.stderr
    assert json.loads(undone.stdout)["undone_step"] == 0
    assert (ws / "a.txt").read_text() == "v0\n" and not left[0].exists()


def test_undo_after_a_kill_inside_a_changing_step_names_the_step_and_resume(
        tmp_path: Path) -> None:
    """A step's command changed a file, then `io` was killed before the step ended: io
    never recorded that change, so `io undo` refuses, but it says the run died inside
    that step and to resume it first; after `io resume`, undo works."""
    ws = _workspace(tmp_path, [{"text": "a", "tool_calls": [_write("a.txt", "v1\n")]},
                               {"text": "c", "tool_calls": [
                                   _exec("sh", "-c", "echo c > c.txt; exec sleep 300")]},
                               {"text": "done"}])
    proc = subprocess.Popen([*io_cmd(), "run", "do it", "-w", str(ws), "--json"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (ws / "c.txt").exists() and proc.poll() is None:
            assert time.monotonic() < deadline, "the command never wrote c.txt"
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    with sqlite3.connect(os.environ["IO_STORE"]) as db:
        run_id, = db.execute("SELECT run_id FROM runs").fetchone()
    refused = run_io(["undo", run_id])
    assert refused.returncode == 2, refused.stderr
    assert ("files changed since the run's last recorded state: c.txt; the run's process"
            " died inside step 1") in refused.stderr
    assert f"io resume {run_id}" in refused.stderr and "Traceback" not in refused.stderr
    assert (ws / "a.txt").read_text() == "v1\n"  # nothing was restored
    resumed = run_io(["resume", run_id, "--json"])
    assert resumed.returncode == 0, resumed.stderr
    undone = run_io(["undo", run_id, "--json"])
    assert undone.returncode == 0, undone.stderr
    assert (ws / "a.txt").read_text() == "v0\n"
