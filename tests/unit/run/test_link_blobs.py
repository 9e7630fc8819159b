"""A rewound branch's first blobs: hard links, or whole copies across file systems."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from harness_core.run import _rewind
from harness_core.run._snapshots import clear_partial_blobs


def _blob(folder: Path, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    (folder / digest[:2]).mkdir(parents=True, exist_ok=True)
    (folder / digest[:2] / digest).write_bytes(data)
    return digest


def test_a_copy_across_file_systems_is_named_by_its_digest_only_once_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not os.path.isdir("/dev/shm") or os.stat("/dev/shm").st_dev == tmp_path.stat().st_dev:
        pytest.skip("needs /dev/shm on another file system than the temporary folder")
    source = Path(tempfile.mkdtemp(dir="/dev/shm"))
    try:
        digest = _blob(source, b"kept\n" * 1000)
        dest = tmp_path / "branch"
        copied: list[str] = []
        real = shutil.copyfile

        def watched(src: object, dst: object) -> object:
            copied.append(Path(str(dst)).name)
            return real(str(src), str(dst))

        monkeypatch.setattr(_rewind.shutil, "copyfile", watched)
        _rewind._link_blobs(source, dest, {"a.txt": (digest, 5000, "f")})  # pyright: ignore[reportPrivateUsage]
        assert copied == [f".tmp-{digest}"]  # never written under the digest directly
        target = dest / digest[:2] / digest
        assert target.read_bytes() == b"kept\n" * 1000
        assert os.stat(target).st_ino != os.stat(source / digest[:2] / digest).st_ino
        assert clear_partial_blobs(dest) == []
    finally:
        shutil.rmtree(source)


def test_clear_partial_blobs_removes_only_temporary_files(tmp_path: Path) -> None:
    digest = _blob(tmp_path, b"whole")
    (tmp_path / ".tmp-a").write_bytes(b"half")
    (tmp_path / digest[:2] / ".tmp-b").write_bytes(b"half")
    (tmp_path / ".tmp-dir").mkdir()
    (tmp_path / ".tmp-link").symlink_to(tmp_path / digest[:2] / digest)
    removed = clear_partial_blobs(tmp_path)
    assert sorted(p.name for p in removed) == [".tmp-a", ".tmp-b"]
    assert (tmp_path / digest[:2] / digest).read_bytes() == b"whole"
    assert (tmp_path / ".tmp-dir").is_dir() and (tmp_path / ".tmp-link").is_symlink()
    assert clear_partial_blobs(tmp_path / "missing") == []
