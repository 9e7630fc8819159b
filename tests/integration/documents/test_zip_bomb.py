"""Issue 22 item 4: an Office file is bounded before it is inflated.

A 1 MB .docx whose word/document.xml inflates to 1 GiB took ~2 GiB and 15 s before a
clear error; now the zip guard refuses it from the central directory, in well under a
second and without inflating anything. Members whose header lies, and every zip-based
format and the `document_contains` gate, are covered too; `[documents]` sets the limits.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from harness_core.documents import check_document
from harness_core.documents._zipguard import guard_zip
from harness_core.errors import DocumentTooLarge
from harness_core.tools import DocumentLimits, RunServices
from harness_core.workspace import Workspace
from tests.conftest import REPO
from tests.integration.documents.conftest import call, make_ctx

_MIB = 1024 * 1024
_HEAD = (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:document xmlns:w='
         b'"http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>')
_TAIL = b"<w:p><w:r><w:t>end</w:t></w:r></w:p></w:body></w:document>"


def _with_member(source: Path, target: Path, member: str, mib: int, level: int = 9) -> None:
    """Copy `source` with `member` replaced by valid XML holding `mib` MiB of spaces,
    written in chunks (the test never holds the inflated member in memory)."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(
            target, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as new:
        for info in old.infolist():
            if info.filename != member:
                new.writestr(info, old.read(info))
        with new.open(member, "w", force_zip64=True) as out:
            out.write(_HEAD)
            block = b" " * _MIB
            for _ in range(mib):
                out.write(block)
            out.write(_TAIL)


def _lie_about_size(path: Path, member: str, declared: int) -> None:
    """Rewrite the central-directory and local sizes of `member` to `declared`."""
    data = bytearray(path.read_bytes())
    name = member.encode()
    pos = 0
    while (pos := data.find(b"PK\x01\x02", pos)) >= 0:
        size = struct.unpack_from("<H", data, pos + 28)[0]
        if data[pos + 46:pos + 46 + size] == name:
            struct.pack_into("<I", data, pos + 24, declared)
            offset = struct.unpack_from("<I", data, pos + 42)[0]
            struct.pack_into("<I", data, offset + 22, declared)
        pos += 4
    path.write_bytes(bytes(data))


@pytest.fixture(scope="session")
def gib_bomb(office_files: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """report.docx with a 1 GiB word/document.xml: about 1 MB on disk."""
    target = tmp_path_factory.mktemp("bomb") / "bomb.docx"
    _with_member(office_files / "report.docx", target, "word/document.xml", 1024)
    return target


_CHILD = """
import json, resource, sys, time
from pathlib import Path
from tests.integration.documents.conftest import call, make_ctx
root = Path(sys.argv[1])
ctx = make_ctx(root)
call(ctx, "docx_read", path="report.docx")  # libraries imported and warm
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
began = time.monotonic()
out = call(ctx, "docx_read", path="bomb.docx")
elapsed = time.monotonic() - began
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"error": out.is_error, "output": out.output, "seconds": elapsed,
                  "grew_kib": after - before}))
"""


def test_a_one_gib_docx_bomb_is_refused_within_a_second_in_bounded_memory(
        gib_bomb: Path, office_files: Path, tmp_path: Path) -> None:
    assert gib_bomb.stat().st_size < 2 * _MIB
    shutil.copy(gib_bomb, tmp_path / "bomb.docx")
    shutil.copy(office_files / "report.docx", tmp_path / "report.docx")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    seen = json.loads(done.stdout)
    assert seen["error"], seen
    assert "word/document.xml declares 1,024.0 MiB" in seen["output"]
    assert "max_member_bytes" in seen["output"]
    assert "refused before parsing" in seen["output"]
    assert seen["seconds"] < 1.0, seen
    assert seen["grew_kib"] < 64 * 1024, seen  # peak RSS grew by less than 64 MiB
    assert "Traceback" not in done.stderr


def test_a_member_whose_header_lies_is_never_inflated_past_what_it_declares(
        office_files: Path, tmp_path: Path) -> None:
    # Declares 4 KB (passes the look at the directory) but holds 64 MiB: inflation stops
    # at the declared size and the CRC fails, so the file is an error, fast and small.
    bomb = tmp_path / "liar.docx"
    _with_member(office_files / "report.docx", bomb, "word/document.xml", 64)
    _lie_about_size(bomb, "word/document.xml", 4000)
    with zipfile.ZipFile(bomb) as z:
        assert z.getinfo("word/document.xml").file_size == 4000
    began = time.monotonic()
    with pytest.raises(zipfile.BadZipFile):
        guard_zip(bomb.read_bytes(), None, "liar.docx")
    out = call(make_ctx(tmp_path), "docx_read", path="liar.docx")
    assert time.monotonic() - began < 1.0
    assert out.is_error and out.output.startswith("docx_read: not a valid docx file"), out.output


def test_members_under_each_limit_are_refused_together_past_the_total(tmp_path: Path) -> None:
    path = tmp_path / "two.docx"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("a.xml", b" " * (3 * _MIB))
        z.writestr("b.xml", b" " * (3 * _MIB))
    limits = DocumentLimits(max_total_bytes=5 * _MIB, max_ratio=1e6)
    with pytest.raises(DocumentTooLarge, match="declare 6.0 MiB .* max_total_bytes"):
        guard_zip(path.read_bytes(), limits, "two.docx")
    guard_zip(path.read_bytes(), DocumentLimits(max_total_bytes=7 * _MIB, max_ratio=1e6),
              "two.docx")


@pytest.mark.parametrize(("name", "member", "tool"), [
    ("orders.xlsx", "xl/worksheets/sheet1.xml", "xlsx_read"),
    ("orders.xlsx", "xl/worksheets/sheet1.xml", "xlsx_edit"),
    ("report.docx", "word/styles.xml", "docx_read"),
    ("deck.pptx", "ppt/slides/slide1.xml", "pptx_read"),
])
def test_every_zip_format_is_guarded(office_files: Path, tmp_path: Path, name: str,
                                     member: str, tool: str) -> None:
    target = tmp_path / f"bomb-{name}"
    _with_member(office_files / name, target, member, 64)  # 64 MiB at ~1000:1
    ctx = make_ctx(tmp_path)
    args = {"path": target.name}
    if tool == "xlsx_edit":
        args["cells"] = {"A1": 1}
    out = call(ctx, tool, **args)
    assert out.is_error and f"{tool}: " in out.output and member in out.output, out.output
    assert "max_ratio" in out.output


def test_the_limits_come_from_the_run(office_files: Path, tmp_path: Path) -> None:
    shutil.copy(office_files / "report.docx", tmp_path / "report.docx")
    ctx = make_ctx(tmp_path)
    assert not call(ctx, "docx_read", path="report.docx").is_error  # defaults: reads
    ctx.services = RunServices(documents=DocumentLimits(max_total_bytes=4096))
    out = call(ctx, "docx_read", path="report.docx")
    assert out.is_error and "max_total_bytes" in out.output


def test_too_many_members_are_refused_from_the_directory(tmp_path: Path) -> None:
    path = tmp_path / "many.docx"
    with zipfile.ZipFile(path, "w") as z:
        for i in range(60):
            z.writestr(f"m{i}.xml", b"<a/>")
    with pytest.raises(DocumentTooLarge, match="60 members"):
        guard_zip(path.read_bytes(), DocumentLimits(max_members=50), "many.docx")


def test_the_document_gate_refuses_a_bomb(office_files: Path, tmp_path: Path) -> None:
    _with_member(office_files / "report.docx", tmp_path / "b.docx", "word/document.xml", 64)
    check = check_document(Workspace(tmp_path), "b.docx", text="end")
    assert not check.passed and "max_ratio" in check.detail


def test_io_tool_reads_the_documents_table(office_files: Path, tmp_path: Path) -> None:
    shutil.copy(office_files / "report.docx", tmp_path / "report.docx")
    (tmp_path / "io.toml").write_text("[documents]\nmax_member_bytes = 1024\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "IO_SYSTEM_CONFIG": str(tmp_path / "no"),
           "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "io_harness_cli", "tool", "docx_read",
                           "--args", '{"path": "report.docx"}'], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert "max_member_bytes" in done.stdout + done.stderr, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
