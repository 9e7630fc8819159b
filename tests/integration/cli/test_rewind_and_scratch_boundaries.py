"""What `io run`'s command line set for a run holds after `io rewind` and `io resume`:
the model and step budget of `-m`/`--max-steps`, the scratch copy of `--scratch`, the
files' permissions a restore puts back."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line


def test_a_rewound_run_keeps_the_model_and_step_budget_its_command_line_gave(
        tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        *[replay_line(f"file {i}", ("write_file", {"path": f"f{i}.txt", "content": "x"}))
          for i in range(6)], replay_line("done")], toml_extra='[budget]\nmax_steps = 50\n')
    (ws / "io.toml").write_text((ws / "io.toml").read_text().replace(
        'script = "replay.jsonl"', 'script = "replay.jsonl"\nmodel = "from-toml"'))
    first = run_io(["run", "g", "-w", str(ws), "--json", "-m", "from-flag", "--max-steps", "3"])
    assert first.returncode == 3, first.stderr
    run_id = str(json_lines(first.stdout)[-1]["run_id"])
    # The branch goes on under the run's own budget and model (before: io.toml's 50 steps
    # and model, and exit 0 after running every step the budget had refused).
    rewound = run_io(["rewind", run_id, "--to", "1", "-w", str(ws), "--json"])
    events = json_lines(rewound.stdout)
    assert rewound.returncode == 3, rewound.stderr
    assert events[-1]["steps"] == 3 and "step budget of 3" in str(events[-1]["reason"])
    assert {e["request_model"] for e in events if e["kind"] == "completion"} == {"from-flag"}


def _paused_scratch_run(tmp_path: Path) -> tuple[Path, str, Path]:
    """A workspace, a `--scratch` run of it paused for an approval, and its copy."""
    ws = make_workspace(tmp_path / "w", [
        replay_line("making it", ("exec", {"argv": ["touch", "made.txt"]})),
        replay_line("done")], toml_extra='[policy]\ntier = "workspace-write"\napproval = "ask"\n')
    paused = run_io(["run", "g", "-w", str(ws), "--scratch", "--json"])
    assert paused.returncode == 4, paused.stderr
    kept = re.search(r"scratch copy kept at (\S+)", paused.stderr)
    assert kept is not None, paused.stderr
    return ws, str(json_lines(paused.stdout)[-1]["run_id"]), Path(kept.group(1))


def test_a_resumed_scratch_run_acts_in_its_copy_and_shows_what_it_changed(
        tmp_path: Path) -> None:
    ws, run_id, copy = _paused_scratch_run(tmp_path)
    resumed = run_io(["resume", run_id, "--approve"], cwd=ws)
    assert resumed.returncode == 0, resumed.stderr
    assert not (ws / "made.txt").exists()
    # As at the end of an uninterrupted --scratch run: the diff and where the copy is.
    assert "changes made in the scratch copy" in resumed.stderr and "b/made.txt" in resumed.stderr
    # The run has ended: its copy is removed (it was kept while the run could go on).
    assert "scratch copy removed: the run has ended" in resumed.stderr
    assert not copy.exists() and not copy.parent.exists()


def test_a_scratch_run_whose_copy_is_gone_is_not_resumed_in_the_real_workspace(
        tmp_path: Path) -> None:
    ws, run_id, copy = _paused_scratch_run(tmp_path)
    import shutil

    shutil.rmtree(copy.parent)  # the temporary directory was cleaned
    # `-w` may name a new place for a workspace that moved, but never the workspace the
    # scratch copy was made to protect (before: the approved act ran in it, exit 0, and
    # the trace said "resumed in" the copy).
    for command in (["resume", run_id, "-w", str(ws), "--approve"],
                    ["rewind", run_id, "--to", "0", "-w", str(ws)]):
        refused = run_io(command)
        assert refused.returncode == 2, refused.stderr
        assert "scratch copy" in refused.stderr and "Traceback" not in refused.stderr
        assert not (ws / "made.txt").exists()
    moved = tmp_path / "moved"
    shutil.copytree(ws, moved)  # a copy of the files elsewhere: a new place, allowed
    elsewhere = run_io(["resume", run_id, "-w", str(moved), "--approve", "--json"])
    assert elsewhere.returncode == 0, elsewhere.stderr
    started = [e for e in json_lines(elsewhere.stdout) if e["kind"] == "run_started"]
    assert started[0]["workspace"] == str(moved.resolve())  # where it acts, said truly
    assert (moved / "made.txt").exists() and not (ws / "made.txt").exists()


def test_the_scratch_diff_shows_every_change_not_only_text_lines(tmp_path: Path) -> None:
    script = ("touch made.txt; rm gone.txt; chmod +x run.sh; printf 'b\\000' > data.bin;"
              " ln -sfn run.sh link")
    ws = make_workspace(tmp_path / "w", [
        replay_line("changing", ("exec", {"argv": ["bash", "-c", script]})),
        replay_line("done")], toml_extra='[policy]\ntier = "full"\n',
        files={"gone.txt": "", "run.sh": "echo hi\n"})
    (ws / "data.bin").write_bytes(b"a\x00")
    os.symlink("gone.txt", ws / "link")
    result = run_io(["run", "g", "-w", str(ws), "--scratch"])
    assert result.returncode == 0, result.stderr
    # Before: "the scratch copy is unchanged" (each was the same list of text lines).
    assert "the scratch copy is unchanged" not in result.stderr
    for line in ("new file b/made.txt (empty)", "deleted file a/gone.txt (empty)",
                 "run.sh: file became executable file",
                 "Binary files a/data.bin and b/data.bin differ",
                 "link: a symlink to gone.txt became a symlink to run.sh"):
        assert line in result.stderr
    assert (ws / "gone.txt").exists() and not (ws / "made.txt").exists()
    assert stat.S_IMODE((ws / "run.sh").stat().st_mode) & 0o111 == 0


def _tree(root: Path) -> dict[bytes, tuple[object, ...]]:
    """Every entry under `root` by its byte path: kind, and permissions and bytes or target."""
    out: dict[bytes, tuple[object, ...]] = {}
    base = os.fsencode(root)
    for top, dirs, files in os.walk(base):
        for name in dirs + files:
            full = os.path.join(top, name)
            st = os.lstat(full)
            rel = os.path.relpath(full, base)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(full))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir",)
            else:
                out[rel] = ("file", oct(stat.S_IMODE(st.st_mode)), Path(full.decode(
                    "utf-8", "surrogateescape")).read_bytes())
    return out


def test_undo_puts_every_file_back_byte_for_byte_with_its_permissions(
        tmp_path: Path) -> None:
    script = ("printf 'changed\\n' > edited.txt; printf 'now full' > empty.txt; : > full.txt;"
              " chmod -x run.sh; chmod +x plain.txt; ln -sfn other link; rm -f $'old-\\xff.bin';"
              " printf x > $'new-\\xfe.txt'; printf 'secret2' > secret.txt;"
              " printf 'v2' > tool.sh; mkdir -p new/sub && printf y > new/sub/f.txt")
    ws = make_workspace(tmp_path / "w", [
        replay_line("mutate", ("exec", {"argv": ["bash", "-c", script]})), replay_line("done")],
        toml_extra='[policy]\ntier = "full"\n')
    files = {"edited.txt": (b"orig\r\nline2 \x00\xff", 0o644), "empty.txt": (b"", 0o644),
             "full.txt": (b"full", 0o644), "run.sh": (b"#!/bin/sh\n", 0o755),
             "plain.txt": (b"p", 0o644), "secret.txt": (b"secret", 0o600),
             "tool.sh": (b"v1", 0o700)}
    for name, (data, mode) in files.items():
        (ws / name).write_bytes(data)
        os.chmod(ws / name, mode)
    os.symlink("edited.txt", ws / "link")
    Path(os.fsdecode(os.fsencode(ws) + b"/old-\xff.bin")).write_bytes(b"bin\xff")
    before = _tree(ws)
    done = run_io(["run", "g", "-w", str(ws), "--json"])
    assert done.returncode == 0, done.stderr
    assert _tree(ws) != before
    undone = run_io(["undo", str(json_lines(done.stdout)[-1]["run_id"]), "-w", str(ws)])
    assert undone.returncode == 0, undone.stderr
    # Before: secret.txt came back 0644 (readable by everyone) and tool.sh 0755.
    assert _tree(ws) == before


def _hiding_run(tmp_path: Path, name: str) -> tuple[Path, str]:
    """A finished run whose step 0 wrote a .gitignore that hides the log step 1 wrote."""
    ws = make_workspace(tmp_path / name, [
        replay_line("ignore logs", ("write_file", {"path": ".gitignore", "content": "*.log\n"})),
        replay_line("log", ("write_file", {"path": "out.log", "content": "x"}),
                    ("write_file", {"path": "a.txt", "content": "new"})),
        replay_line("done")], files={"a.txt": "old"})
    done = run_io(["run", "g", "-w", str(ws), "--json"])
    assert done.returncode == 0, done.stderr
    return ws, str(json_lines(done.stdout)[-1]["run_id"])


def test_a_gitignore_the_run_wrote_hides_nothing_from_undo(tmp_path: Path) -> None:
    """Step 0 wrote a .gitignore hiding the log step 1 wrote. io obeys the rules of the
    run's first snapshot (#35), so it saw out.log: undoing step 1 removes it like any
    file the run made (before: it was left, "io never saw it"), and nothing is left."""
    ws, run_id = _hiding_run(tmp_path, "w")
    first = run_io(["undo", run_id, "-w", str(ws), "--json"])
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["removed"] == ["out.log"]
    second = run_io(["undo", run_id, "-w", str(ws), "--json"])
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["left"] == []
    assert not (ws / "out.log").exists() and not (ws / ".gitignore").exists()
    assert (ws / "a.txt").read_text() == "old"


def test_a_file_the_restored_rules_no_longer_hide_is_named_not_passed_over(
        tmp_path: Path) -> None:
    """The operator's .gitignore hides keep.log (io never saw it); step 0 empties the
    .gitignore. A rewind to step 1 restores that empty .gitignore, whose rules the branch
    goes on with: keep.log shows, was not in the state restored, and io cannot tell whose
    it is, so it is left in place and named."""
    ws = make_workspace(tmp_path / "r", [
        replay_line("unignore", ("write_file", {"path": ".gitignore", "content": "# none\n"})),
        replay_line("edit", ("write_file", {"path": "a.txt", "content": "new"})),
        replay_line("done")], files={"a.txt": "old", ".gitignore": "*.log\n",
                                     "keep.log": "operator's"})
    done = run_io(["run", "g", "-w", str(ws), "--json"])
    assert done.returncode == 0, done.stderr
    run_id = str(json_lines(done.stdout)[-1]["run_id"])
    rewound = run_io(["rewind", run_id, "--to", "1", "-w", str(ws)])
    assert rewound.returncode == 0, rewound.stderr
    assert "left keep.log" in rewound.stderr and "not removed" in rewound.stderr
    assert (ws / "keep.log").read_text() == "operator's"


def test_a_missing_snapshot_blob_refuses_before_any_file_is_touched(tmp_path: Path) -> None:
    import hashlib

    ws = make_workspace(tmp_path / "w", [
        replay_line("edit", ("write_file", {"path": "a.txt", "content": "A2"}),
                    ("write_file", {"path": "z.txt", "content": "Z2"}),
                    ("write_file", {"path": "new.txt", "content": "n"})),
        replay_line("done")], files={"a.txt": "A1", "z.txt": "Z1"})
    done = run_io(["run", "g", "-w", str(ws), "--json"])
    assert done.returncode == 0, done.stderr
    run_id = str(json_lines(done.stdout)[-1]["run_id"])
    digest = hashlib.sha256(b"Z1").hexdigest()
    blobs = list((Path(os.environ["IO_STORE"]).parent / "snapshots").rglob(digest))
    assert len(blobs) == 1
    blobs[0].unlink()  # the snapshot directory changed outside io
    for command in (["undo", run_id], ["rewind", run_id, "--to", "0"]):
        refused = run_io([*command, "-w", str(ws)])
        assert refused.returncode == 2, refused.stderr
        assert "snapshot blob of z.txt is missing" in refused.stderr
        # Nothing restored in part (before: a.txt restored and new.txt removed, exit 2).
        assert (ws / "a.txt").read_text() == "A2" and (ws / "new.txt").exists()
        assert (ws / "z.txt").read_text() == "Z2"
