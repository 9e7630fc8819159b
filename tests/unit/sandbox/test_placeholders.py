"""Placeholders made, shared, released and recorded in one process (`_placeholders`):
what the native backend's launcher does around each sandbox, here without bubblewrap,
with a real ledger file read back the way a later sweep reads it."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_core.sandbox import _placeholders
from harness_core.sandbox._ledger import Ledger, read_ledger
from harness_core.sandbox._placeholders import (
    claim_placeholders,
    is_untouched,
    pending_placeholders,
    release_placeholders,
    remove_if_untouched,
    remove_recorded,
)


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Ledger]:
    kept = Ledger(tmp_path / "ledgers")
    kept.folder.mkdir()
    monkeypatch.setattr(_placeholders, "current_ledger", lambda: kept)
    yield kept
    kept.close_file()


def _recorded(ledger: Ledger) -> dict[str, dict[str, object]]:
    data = read_ledger(ledger.path.read_text()) if ledger.path.exists() else None
    return {str(p["path"]): p for p in (data or {}).get("placeholders", [])}


def test_a_claim_makes_and_notes_each_placeholder_and_the_last_release_removes_it(
        tmp_path: Path, ledger: Ledger) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    git, modules = ws / ".git", ws / ".gitmodules"
    assert claim_placeholders([git], [modules]) == [git, modules]
    assert git.is_dir() and modules.is_file() and modules.stat().st_size == 0
    noted = _recorded(ledger)
    for path in (git, modules):
        info = os.lstat(path)
        assert noted[str(path)] == {"path": str(path), "device": info.st_dev,
                                    "inode": info.st_ino, "changed": info.st_ctime_ns}
    assert sorted(pending_placeholders()) == [git, modules]
    # A second sandbox shares them: they stay until both have ended.
    assert claim_placeholders([git], [modules]) == [git, modules]
    release_placeholders([git, modules])
    assert git.is_dir() and modules.is_file()
    assert set(_recorded(ledger)) == {str(git), str(modules)}
    release_placeholders([git, modules])
    assert list(ws.iterdir()) == [] and _recorded(ledger) == {}
    assert pending_placeholders() == []
    release_placeholders([git])  # released once too often: nothing happens
    assert list(ws.iterdir()) == []


def test_a_path_that_exists_is_not_claimed_and_never_removed(
        tmp_path: Path, ledger: Ledger) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "io.local.toml").touch()  # the user's own, empty
    (ws / ".git").mkdir()
    assert claim_placeholders([ws / ".git"], [ws / "io.local.toml", ws / ".gitmodules"]) == [
        ws / ".gitmodules"]
    assert set(_recorded(ledger)) == {str(ws / ".gitmodules")}
    release_placeholders([ws / ".git", ws / "io.local.toml", ws / ".gitmodules"])
    assert sorted(p.name for p in ws.iterdir()) == [".git", "io.local.toml"]


def test_a_placeholder_that_cannot_be_made_undoes_the_claim(
        tmp_path: Path, ledger: Ledger) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(FileNotFoundError):
        claim_placeholders([ws / ".git"], [ws / "gone" / "io.local.toml"])
    assert list(ws.iterdir()) == []  # the one made first was removed again
    assert _recorded(ledger) == {}  # and neither is left named in the ledger


def test_a_placeholder_something_wrote_into_is_kept_and_no_longer_pending(
        tmp_path: Path, ledger: Ledger) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    made = ws / ".gitmodules"
    assert claim_placeholders([], [made]) == [made]
    made.write_text("[submodule]\n")
    assert pending_placeholders() == []
    # A new sandbox does not share it: it is no longer io's, so it is not claimed again.
    assert claim_placeholders([], [made]) == []
    release_placeholders([made])
    assert made.read_text() == "[submodule]\n" and _recorded(ledger) == {}


def test_without_a_ledger_placeholders_are_still_made_and_removed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_placeholders, "current_ledger", lambda: None)
    made, folder = tmp_path / "io.local.toml", tmp_path / ".git"
    assert claim_placeholders([folder], [made]) == [folder, made]
    assert folder.is_dir() and made.is_file()
    release_placeholders([folder, made])
    assert list(tmp_path.iterdir()) == []


def test_recorded_identities_remove_only_the_same_empty_placeholder(tmp_path: Path) -> None:
    made = tmp_path / ".gitmodules"
    made.touch()
    info = os.lstat(made)
    record = {"path": str(made), "device": info.st_dev, "inode": info.st_ino,
              "changed": info.st_ctime_ns}
    assert remove_recorded([{**record, "inode": info.st_ino + 1}]) == []
    assert remove_recorded([{**record, "changed": info.st_ctime_ns + 1}]) == []
    assert remove_recorded([{**record, "path": ".gitmodules"}]) == []  # not absolute
    assert remove_recorded([{"path": str(made)}, {**record, "inode": "x"},
                            {**record, "device": None}]) == []
    assert made.exists()
    # A bad record does not stop the ones after it.
    assert remove_recorded([{**record, "path": "rel"}, {"path": 1}, record]) == [str(made)]
    assert not made.exists()
    folder = tmp_path / ".git"
    folder.mkdir()
    info = os.lstat(folder)
    assert remove_recorded([{"path": str(folder), "device": info.st_dev,
                             "inode": info.st_ino, "changed": info.st_ctime_ns}]) == [
        str(folder)]


def test_an_announced_placeholder_is_taken_within_the_bounds_inclusive(
        tmp_path: Path) -> None:
    """The window is [announced - 50 ms, announced + 10 s], both ends included."""
    made = tmp_path / "io.local.toml"
    slack, window = 50 * 10**6, 10 * 10**9

    def taken(announced_from_ctime: int) -> bool:
        made.touch()
        ctime = os.lstat(made).st_ctime_ns
        entry = {"path": str(made), "kind": "file",
                 "announced": ctime + announced_from_ctime}
        return remove_recorded([entry]) == [str(made)]

    assert not taken(slack + 1)  # changed last over 50 ms before the announcement
    assert taken(slack)
    assert not taken(-window - 1)  # over 10 s after it
    assert taken(-window)
    assert taken(0)
    folder = tmp_path / ".git"
    folder.mkdir()
    ctime = os.lstat(folder).st_ctime_ns
    assert remove_recorded([{"path": str(folder), "kind": "file", "announced": ctime}]) == []
    assert remove_recorded([{"path": str(folder), "kind": "dir", "announced": ctime}]) == [
        str(folder)]


def test_placeholders_are_made_with_fixed_modes_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0)
    try:
        claimed = claim_placeholders([tmp_path / ".git"], [tmp_path / "io.local.toml"])
    finally:
        os.umask(previous)
    assert stat.S_IMODE(os.lstat(tmp_path / ".git").st_mode) == 0o755
    assert stat.S_IMODE(os.lstat(tmp_path / "io.local.toml").st_mode) == 0o644
    release_placeholders(claimed)


def test_the_ledger_names_each_placeholder_with_its_kind_before_it_is_made(
        tmp_path: Path, ledger: Ledger) -> None:
    claimed = claim_placeholders([tmp_path / ".git"], [tmp_path / "io.local.toml"])
    lines = [line for line in ledger.path.read_text().splitlines() if "announced" in line]
    assert [(r["path"], r["kind"]) for r in (json.loads(line)["placeholder"] for line in lines)
            ] == [(str(tmp_path / ".git"), "dir"), (str(tmp_path / "io.local.toml"), "file")]
    release_placeholders(claimed)


def test_a_placeholder_removed_by_someone_else_is_no_longer_io_s(
        tmp_path: Path, ledger: Ledger) -> None:
    made = tmp_path / ".gitmodules"
    claimed = claim_placeholders([], [made])
    identity = next(iter(_recorded(ledger).values()))
    made.unlink()
    assert not is_untouched(made, (int(str(identity["device"])), int(str(identity["inode"])),
                                   int(str(identity["changed"]))))
    assert pending_placeholders() == []
    release_placeholders(claimed)
    assert not made.exists() and _recorded(ledger) == {}


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("chattr") is None,
                    reason="needs root and chattr to make a file that cannot be removed")
def test_a_placeholder_that_cannot_be_removed_is_not_reported_removed(tmp_path: Path) -> None:
    made = tmp_path / "io.local.toml"
    made.touch()
    info = os.lstat(made)
    if subprocess.run(["chattr", "+i", str(made)], capture_output=True).returncode != 0:
        pytest.skip("this file system has no immutable flag")
    try:
        assert not remove_if_untouched(made, (info.st_dev, info.st_ino,
                                              os.lstat(made).st_ctime_ns))
        assert made.exists()
    finally:
        subprocess.run(["chattr", "-i", str(made)], check=True)
