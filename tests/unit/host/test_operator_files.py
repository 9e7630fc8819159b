"""`write_operator_file`: what io writes for the operator never goes through a link, hard
link or special file the agent could have planted in the workspace; the operator's own
links outside it are followed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness_core import HostBoundaryError, write_operator_file


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def test_a_plain_file_is_written_and_replaced(ws: Path) -> None:
    target = ws / "answer.txt"
    write_operator_file(target, b"one", workspace=ws)
    write_operator_file(target, b"two", workspace=ws)
    assert target.read_bytes() == b"two"
    assert [p.name for p in ws.iterdir()] == ["answer.txt"]  # no temp file left


def test_a_link_in_the_workspace_is_refused_and_its_target_kept(tmp_path: Path, ws: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (ws / "out").symlink_to(victim)
    with pytest.raises(HostBoundaryError, match="symbolic link inside the workspace"):
        write_operator_file(ws / "out", b"x", workspace=ws)
    assert victim.read_text() == "precious"


def test_a_linked_folder_on_the_way_is_refused(tmp_path: Path, ws: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (ws / "reports").symlink_to(elsewhere)
    with pytest.raises(HostBoundaryError, match="symbolic link inside the workspace"):
        write_operator_file(ws / "reports" / "junit.xml", b"x", workspace=ws)
    assert list(elsewhere.iterdir()) == []


def test_a_hard_link_in_the_workspace_is_refused(tmp_path: Path, ws: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    os.link(victim, ws / "out")
    with pytest.raises(HostBoundaryError, match="hard link"):
        write_operator_file(ws / "out", b"x", workspace=ws)
    assert victim.read_text() == "precious"


def test_a_fifo_is_refused_without_waiting(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    with pytest.raises(HostBoundaryError, match="not a regular file"):
        write_operator_file(ws / "pipe", b"x", workspace=ws)
    with pytest.raises(HostBoundaryError, match="not a regular file"):
        write_operator_file(ws / "pipe", b"x", workspace=ws, append=True)


def test_the_operators_link_outside_the_workspace_is_followed(tmp_path: Path, ws: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "via").symlink_to(real)
    written = write_operator_file(tmp_path / "via" / "f.txt", b"x", workspace=ws)
    assert (real / "f.txt").read_bytes() == b"x" and written == real / "f.txt"


def test_append_adds_and_exclusive_never_replaces(ws: Path) -> None:
    summary = ws / "summary.md"
    write_operator_file(summary, b"a\n", workspace=ws, append=True)
    write_operator_file(summary, b"b\n", workspace=ws, append=True)
    assert summary.read_bytes() == b"a\nb\n"
    with pytest.raises(HostBoundaryError) as refused:
        write_operator_file(summary, b"new", workspace=ws, exclusive=True)
    assert refused.value.exists and summary.read_bytes() == b"a\nb\n"
