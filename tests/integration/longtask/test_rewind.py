"""`io undo` and `io rewind` (#26): workspace snapshots taken around each step that
changes files, restored on request, refused when files changed outside io, surviving a
kill -9."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from tests.conftest import io_cmd, run_io
from tests.integration.cli.helpers import json_lines

_TOML = """\
[provider]
kind = "scripted"
script = "replay.jsonl"
[policy]
tier = "workspace-write"
approval = "deny"
allow_exec = ["sleep*"]
"""


def _write(call_path: str, content: str) -> dict[str, object]:
    return {"name": "write_file", "arguments": {"path": call_path, "content": content}}


def _workspace(tmp_path: Path, steps: list[dict[str, object]]) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "io.toml").write_text(_TOML)
    (ws / "a.txt").write_text("v0\n")
    (ws / ".gitignore").write_text("build/\n")
    (ws / "build").mkdir()
    (ws / "build" / "out.bin").write_text("cache\n")
    (ws / "replay.jsonl").write_text("\n".join(json.dumps(s) for s in steps) + "\n")
    return ws


_STEPS: list[dict[str, object]] = [
    {"text": "edit a", "tool_calls": [_write("a.txt", "v1\n")]},
    {"text": "add b", "tool_calls": [_write("b.txt", "new\n")]},
    {"text": "done"},
]


def _run(ws: Path) -> str:
    done = run_io(["run", "do it", "-w", str(ws), "--json"])
    assert done.returncode == 0, done.stderr
    return str(json_lines(done.stdout)[-1]["run_id"])


def test_undo_reverts_the_last_changing_step_then_the_one_before(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, _STEPS)
    run_id = _run(ws)
    first = run_io(["undo", run_id, "--json"])
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == {"run_id": run_id, "undone_step": 1, "written": [],
                                        "removed": ["b.txt"], "left": []}
    assert not (ws / "b.txt").exists() and (ws / "a.txt").read_text() == "v1\n"
    (ws / "build" / "out.bin").write_text("rebuilt\n")  # ignored by .gitignore: no refusal
    second = run_io(["undo", run_id, "--json"])
    assert second.returncode == 0, second.stderr
    assert (ws / "a.txt").read_text() == "v0\n"
    third = run_io(["undo", run_id])
    assert third.returncode == 2
    assert "no step left to undo" in third.stderr


def test_undo_refuses_when_files_changed_outside_io(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, _STEPS)
    run_id = _run(ws)
    (ws / "a.txt").write_text("edited by hand\n")
    (ws / "c.txt").write_text("new by hand\n")
    refused = run_io(["undo", run_id])
    assert refused.returncode == 2
    assert "changed outside io" in refused.stderr
    assert "a.txt, c.txt" in refused.stderr
    assert (ws / "b.txt").exists()  # nothing was restored
    assert "Traceback" not in refused.stderr


def test_rewind_restores_the_files_and_continues_as_a_branch(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, _STEPS)
    run_id = _run(ws)
    (ws / "b.txt").unlink()  # make the branch's own step 1 visible: it writes b.txt again
    (ws / "b.txt").write_text("new\n")
    rewound = run_io(["rewind", run_id, "--to", "1", "--json"])
    assert rewound.returncode == 0, rewound.stderr
    branch = str(json_lines(rewound.stdout)[-1]["run_id"])
    assert branch != run_id
    assert (ws / "a.txt").read_text() == "v1\n" and (ws / "b.txt").read_text() == "new\n"
    with sqlite3.connect(os.environ["IO_STORE"]) as db:
        parent, settings = db.execute(  # the settings document, kept once by hash (#40)
            "SELECT parent_run_id, d.body FROM runs JOIN documents d ON d.hash = runs.settings"
            " WHERE run_id = ?", (branch,)).fetchone()
    assert parent == run_id
    assert json.loads(settings)["rewound_from"] == {"run_id": run_id, "step": 1}
    back = run_io(["rewind", run_id, "--to", "0", "--json"])
    assert back.returncode == 0, back.stderr
    assert (ws / "a.txt").read_text() == "v1\n"  # the branch replayed step 0 again


def test_rewind_refuses_changed_files_and_a_step_past_the_end(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, _STEPS)
    run_id = _run(ws)
    far = run_io(["rewind", run_id, "--to", "9"])
    assert far.returncode == 2 and "no step 9" in far.stderr
    (ws / "a.txt").write_text("mine\n")
    refused = run_io(["rewind", run_id, "--to", "0"])
    assert refused.returncode == 2
    assert "changed outside io since the run's last recorded state: a.txt" in refused.stderr
    assert (ws / "a.txt").read_text() == "mine\n"


def test_after_a_rewind_the_original_names_its_branch_and_the_branch_undoes(
        tmp_path: Path) -> None:
    ws = _workspace(tmp_path, _STEPS)
    script = ws / "build" / "replay.jsonl"  # ignored by .gitignore: outside the snapshots
    (ws / "replay.jsonl").rename(script)
    (ws / "io.toml").write_text(_TOML.replace('"replay.jsonl"', '"build/replay.jsonl"'))
    run_id = _run(ws)
    steps = [_STEPS[0], {"text": "add b", "tool_calls": [_write("b.txt", "b2\n")]}, _STEPS[2]]
    script.write_text("\n".join(json.dumps(s) for s in steps) + "\n")
    rewound = run_io(["rewind", run_id, "--to", "1", "--json"])  # the branch goes another way
    assert rewound.returncode == 0, rewound.stderr
    branch = str(json_lines(rewound.stdout)[-1]["run_id"])
    assert (ws / "b.txt").read_text() == "b2\n"
    refused = run_io(["undo", run_id])
    assert refused.returncode == 2, refused.stderr
    assert "changed outside io" not in refused.stderr  # io's own branch changed it
    assert f"its branch {branch}" in refused.stderr and "b.txt" in refused.stderr
    assert f"io undo {branch}" in refused.stderr and "Traceback" not in refused.stderr
    assert (ws / "b.txt").read_text() == "b2\n"
    undone = run_io(["undo", branch, "--json"])
    assert undone.returncode == 0, undone.stderr
    assert not (ws / "b.txt").exists() and (ws / "a.txt").read_text() == "v1\n"


def _wait_for(query: str) -> None:
    end = time.monotonic() + 60
    while time.monotonic() < end:
        try:
            with sqlite3.connect(os.environ["IO_STORE"]) as db:
                if db.execute(query).fetchone()[0]:
                    return
        except sqlite3.Error:
            pass
        time.sleep(0.05)
    raise AssertionError(f"not reached: {query}")


def _kill_when(args: list[str], query: str) -> None:
    proc = subprocess.Popen([*io_cmd(), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _wait_for(query)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
        proc.communicate()


def _killed_in_step_1(tmp_path: Path) -> tuple[Path, str]:
    """A run killed while step 1's command (`sleep 300`) runs, after step 0 wrote a.txt:
    its workspace and run id."""
    sleep = {"text": "wait", "tool_calls": [
        {"name": "exec", "arguments": {"argv": ["sleep", "300"]}}]}
    ws = _workspace(tmp_path, [_STEPS[0], sleep, _STEPS[1], _STEPS[2]])
    _kill_when(["run", "do it", "-w", str(ws), "--json"],
               "SELECT COUNT(*) FROM ledger WHERE step_index = 1 AND observation IS NULL")
    with sqlite3.connect(os.environ["IO_STORE"]) as db:
        run_id, = db.execute("SELECT run_id FROM runs").fetchone()
    return ws, str(run_id)


def test_snapshots_survive_a_kill_and_undo_then_rewind_resume(tmp_path: Path) -> None:
    ws, run_id = _killed_in_step_1(tmp_path)
    assert (ws / "a.txt").read_text() == "v1\n"
    undone = run_io(["undo", run_id, "--json"])
    assert undone.returncode == 0, undone.stderr
    assert json.loads(undone.stdout)["undone_step"] == 0
    assert (ws / "a.txt").read_text() == "v0\n"
    # A rewind whose branch is killed mid-step: resuming the branch finishes it.
    _kill_when(["rewind", run_id, "--to", "1", "--json"],
               "SELECT COUNT(*) FROM ledger l JOIN runs r ON r.run_id = l.run_id"
               " WHERE r.parent_run_id IS NOT NULL AND l.observation IS NULL")
    with sqlite3.connect(os.environ["IO_STORE"]) as db:
        branch, = db.execute("SELECT run_id FROM runs WHERE parent_run_id = ?",
                             (run_id,)).fetchone()
    assert (ws / "a.txt").read_text() == "v1\n"
    resumed = run_io(["resume", branch, "--json"])
    assert resumed.returncode == 0, resumed.stderr
    assert (ws / "b.txt").read_text() == "new\n"


def test_a_run_still_running_is_refused_by_undo_and_rewind(tmp_path: Path) -> None:
    sleep = {"text": "wait", "tool_calls": [
        {"name": "exec", "arguments": {"argv": ["sleep", "300"]}}]}
    ws = _workspace(tmp_path, [_STEPS[0], sleep, _STEPS[2]])
    proc = subprocess.Popen([*io_cmd(), "run", "do it", "-w", str(ws), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        _wait_for("SELECT COUNT(*) FROM ledger WHERE step_index = 1 AND observation IS NULL")
        with sqlite3.connect(os.environ["IO_STORE"]) as db:
            run_id, = db.execute("SELECT run_id FROM runs").fetchone()
        for args in (["undo", run_id], ["rewind", run_id, "--to", "0"]):
            refused = run_io(args)
            assert refused.returncode == 5, refused.stderr
            assert f"run {run_id} is in use by process {proc.pid}" in refused.stderr
            assert "Traceback" not in refused.stderr
        assert (ws / "a.txt").read_text() == "v1\n"  # nothing was restored
        with sqlite3.connect(os.environ["IO_STORE"]) as db:
            assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1  # no branch
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        proc.communicate()


def test_past_the_snapshot_cap_the_run_warns_and_undo_and_rewind_refuse(
        tmp_path: Path) -> None:
    big = {"text": "big", "tool_calls": [_write("big.txt", "x" * 6000)]}
    ws = _workspace(tmp_path, [_STEPS[0], big, _STEPS[2]])
    baseline = sum(p.stat().st_size for p in ws.iterdir() if p.is_file())
    with (ws / "io.toml").open("a") as toml:  # room for the baseline and step 0, not big.txt
        toml.write(f"[rewind]\nmax_bytes = {baseline + 100}\n")
    done = run_io(["run", "do it", "-w", str(ws), "--json"])
    assert done.returncode == 0, done.stderr
    events = json_lines(done.stdout)
    warnings = [e for e in events if e["kind"] == "warning" and "snapshots stopped" in
                str(e.get("text", ""))]
    assert len(warnings) == 1 and "snapshots stopped at step 1" in warnings[0]["text"]
    run_id = str(events[-1]["run_id"])
    with sqlite3.connect(os.environ["IO_STORE"]) as db:
        kinds = [r[0] for r in db.execute("SELECT kind FROM snapshots WHERE run_id = ?"
                                          " ORDER BY seq", (run_id,))]
    assert kinds == ["baseline", "after", "capped"]
    blobs = sum(p.stat().st_size for p in (_snapshot_root() / _store_id() / run_id)
                .rglob("*") if p.is_file())
    assert blobs <= baseline + 100
    for args in (["undo", run_id], ["rewind", run_id, "--to", "0"]):
        refused = run_io(args)
        assert refused.returncode == 2, refused.stderr
        assert "stopped taking snapshots at step 1" in refused.stderr
        assert "raise [rewind] max_bytes" in refused.stderr
    assert (ws / "big.txt").is_file() and (ws / "a.txt").read_text() == "v1\n"


def _snapshot_root() -> Path:
    return Path(os.environ["IO_STORE"]).parent / "snapshots"


def _store_id() -> str:
    with sqlite3.connect(os.environ["IO_STORE"]) as db:
        return str(db.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()[0])


def test_snapshots_of_a_run_gone_from_the_store_are_swept(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, _STEPS)
    kept = _run(ws)
    gone_dir = _snapshot_root() / _store_id() / "0123456789ab"
    (gone_dir / "blobs" / "ab").mkdir(parents=True)
    (gone_dir / "blobs" / "ab" / "abcd").write_text("left by a run the store lost\n")
    assert run_io(["undo", kept]).returncode == 0
    assert not gone_dir.exists()
    assert (_snapshot_root() / _store_id() / kept / "blobs").is_dir()


def test_with_snapshots_off_nothing_is_kept_and_both_refuse(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, _STEPS)
    with (ws / "io.toml").open("a") as toml:
        toml.write("[rewind]\nenabled = false\n")
    run_id = _run(ws)
    assert not _snapshot_root().exists()
    for args in (["undo", run_id], ["rewind", run_id, "--to", "0"]):
        refused = run_io(args)
        assert refused.returncode == 2
        assert "snapshots are off ([rewind] enabled = false)" in refused.stderr


_KILL_MID_RESTORE = """\
import os, signal, sys
from io_harness_cli.main import main
real = os.replace
done = []
def replace(src, dst, *a, **k):
    # The restore of the first file: copied beside it, not yet renamed into place.
    if str(src).endswith(".io-restore"):
        if done:
            os.kill(os.getpid(), signal.SIGKILL)
        done.append(src)
    return real(src, dst, *a, **k)
os.replace = replace
sys.argv = ["io", *sys.argv[1:]]
main()
"""


def test_a_kill_in_the_middle_of_an_undo_or_a_rewind_is_finished_by_running_it_again(
        tmp_path: Path) -> None:
    import sys

    steps: list[dict[str, object]] = [
        {"text": "edit both", "tool_calls": [_write("a.txt", "v1\n"), _write("c.txt", "c1\n")]},
        {"text": "done"},
    ]
    ws = _workspace(tmp_path, steps)
    (ws / "c.txt").write_text("c0\n")
    run_id = _run(ws)
    # io undo killed after restoring a.txt, with c.txt's copy beside it not yet in place.
    killed = subprocess.run([sys.executable, "-c", _KILL_MID_RESTORE, "undo", run_id],
                            capture_output=True, text=True, timeout=60)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert (ws / "a.txt").read_text() == "v0\n" and (ws / "c.txt").read_text() == "c1\n"
    again = run_io(["undo", run_id, "--json"])
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["undone_step"] == 0
    assert (ws / "c.txt").read_text() == "c0\n"
    assert sorted(p.name for p in ws.iterdir()) == [
        ".gitignore", "a.txt", "build", "c.txt", "io.toml", "replay.jsonl"]
    # io rewind killed the same way: running it again restores and records the branch.
    killed = subprocess.run([sys.executable, "-c", _KILL_MID_RESTORE, "rewind", run_id,
                             "--to", "1"], capture_output=True, text=True, timeout=60)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert (ws / "a.txt").read_text() == "v1\n" and (ws / "c.txt").read_text() == "c0\n"
    with sqlite3.connect(os.environ["IO_STORE"]) as db:
        assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1  # no branch yet
    again = run_io(["rewind", run_id, "--to", "1", "--json"])
    assert again.returncode == 0, again.stderr
    assert (ws / "a.txt").read_text() == "v1\n" and (ws / "c.txt").read_text() == "c1\n"
    assert not [p for p in ws.iterdir() if p.name.endswith(".io-restore")]
    with sqlite3.connect(os.environ["IO_STORE"]) as db:
        assert db.execute("SELECT COUNT(*) FROM runs WHERE parent_run_id = ?",
                          (run_id,)).fetchone()[0] == 1


def test_blobs_a_killed_drive_left_half_written_are_removed_when_the_run_resumes(
        tmp_path: Path) -> None:
    """A blob is written to a `.tmp-*` file, then renamed to its digest; `kill -9` in
    between leaves the temporary file. The run's next drive (it holds the run, and only
    the run's driver writes its blob folder) removes them, and nothing else."""
    ws, run_id = _killed_in_step_1(tmp_path)
    blobs = _snapshot_root() / _store_id() / run_id / "blobs"
    kept = sorted(p for p in blobs.rglob("*") if p.is_file())
    assert kept  # step 0's blobs
    (blobs / ".tmp-half").write_bytes(b"half a large blob")
    (kept[0].parent / ".tmp-small").write_bytes(b"half a small one")
    (blobs / ".tmp-folder").mkdir()  # not a file io writes: left alone
    resumed = run_io(["resume", run_id, "--json"])
    assert resumed.returncode == 0, resumed.stderr
    assert not (blobs / ".tmp-half").exists() and not (kept[0].parent / ".tmp-small").exists()
    assert (blobs / ".tmp-folder").is_dir() and all(p.is_file() for p in kept)
    undone = run_io(["undo", run_id, "--json"])  # the blobs kept still restore
    assert undone.returncode == 0, undone.stderr
    assert not (ws / "b.txt").exists()
