"""A restore killed before renaming its copy into place leaves `.NAME.io-restore` beside
the file (#26): the next restore removes it when it holds the snapshot's contents or the
start of them, and leaves any other file of that name alone."""

from __future__ import annotations

import hashlib
from pathlib import Path

from harness_core.run._restore_files import clear_leftovers as _clear_leftovers


def _blob(blobs: Path, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    (blobs / digest[:2]).mkdir(parents=True, exist_ok=True)
    (blobs / digest[:2] / digest).write_bytes(data)
    return digest


def test_whole_and_cut_short_copies_go_and_a_stranger_stays(tmp_path: Path) -> None:
    ws, blobs = tmp_path / "ws", tmp_path / "blobs"
    (ws / "sub").mkdir(parents=True)
    whole, cut, other = b"whole contents\n", b"0123456789" * 100, b"kept as is\n"
    target = {"a.txt": (_blob(blobs, whole), len(whole), "f"),
              "sub/b.bin": (_blob(blobs, cut), len(cut), "x"),
              "c.txt": (_blob(blobs, other), len(other), "f"),
              "gone/d.txt": (_blob(blobs, b"d"), 1, "f")}
    (ws / ".a.txt.io-restore").write_bytes(whole)
    (ws / "sub" / ".b.bin.io-restore").write_bytes(cut[:317])
    (ws / ".c.txt.io-restore").write_bytes(b"not what io would write\n")
    (ws / ".e.txt.io-restore").write_bytes(whole)  # no such path being restored
    _clear_leftovers(ws, blobs, target)
    assert sorted(p.name for p in ws.rglob("*") if p.is_file()) == [
        ".c.txt.io-restore", ".e.txt.io-restore"]
