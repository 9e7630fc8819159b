"""Issue 27 items 5 and 6: password-protected Office files are reported as such and
open with `password`; a legacy .doc under a .docx name is named; an .xlsm edit keeps
its macros and prints no stray ZipFile.__del__ traceback."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from harness_core.documents import check_document
from harness_core.documents._office import OLE_MAGIC, encrypt
from harness_core.workspace import Workspace
from tests.conftest import REPO
from tests.integration.documents.conftest import call, make_ctx

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "documents"


@pytest.fixture
def files(tmp_path: Path) -> Path:
    for name in ("locked.docx", "locked.xlsx", "legacy.docx", "macro.xlsm", "deck.pptx"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    return tmp_path


@pytest.mark.parametrize(("name", "tool"), [("locked.docx", "docx_read"),
                                            ("locked.xlsx", "xlsx_read")])
def test_an_encrypted_file_is_reported_as_password_protected(files: Path, name: str,
                                                             tool: str) -> None:
    out = call(make_ctx(files), tool, path=name)
    assert out.is_error
    assert out.output == (f"{tool}: {name} is password-protected; pass its `password` to"
                          " open it")
    wrong = call(make_ctx(files), tool, path=name, password="guess")
    assert wrong.is_error and "the `password` given is wrong" in wrong.output


def test_the_password_opens_a_docx_and_an_xlsx(files: Path) -> None:
    doc = call(make_ctx(files), "docx_read", path="locked.docx", password="s3cret")
    assert not doc.is_error and "[Heading 1] Supply Agreement" in doc.output
    book = call(make_ctx(files), "xlsx_read", path="locked.xlsx", password="s3cret")
    assert not book.is_error and "Zürich Parts AG" in book.output


def test_a_protected_pptx_opens_with_its_password(files: Path) -> None:
    (files / "locked.pptx").write_bytes(encrypt((files / "deck.pptx").read_bytes(), "pw"))
    assert "password-protected" in call(make_ctx(files), "pptx_read", path="locked.pptx").output
    out = call(make_ctx(files), "pptx_read", path="locked.pptx", password="pw")
    assert not out.is_error and "Launch Plan" in out.output


def test_an_edit_of_a_protected_workbook_stays_protected(files: Path) -> None:
    ctx = make_ctx(files)
    out = call(ctx, "xlsx_edit", path="locked.xlsx", password="s3cret", cells={"B2": 9})
    assert not out.is_error and "encrypted with the same password" in out.output
    assert (files / "locked.xlsx").read_bytes()[:8] == OLE_MAGIC
    again = call(ctx, "xlsx_read", path="locked.xlsx", password="s3cret", range="B2:B2")
    assert again.data.extra["read"][0]["rows"] == [[9]]


def test_a_legacy_doc_named_docx_is_named_as_such(files: Path) -> None:
    out = call(make_ctx(files), "docx_read", path="legacy.docx")
    assert out.is_error and "a legacy .doc file" in out.output
    assert "File is not a zip file" not in out.output


def test_the_document_gate_says_a_file_is_protected(files: Path) -> None:
    check = check_document(Workspace(files), "locked.docx", text="Supply")
    assert not check.passed and "password-protected" in check.detail


def test_an_xlsm_edit_keeps_macros_and_writes_no_traceback(files: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "IO_SYSTEM_CONFIG": str(files / "none"),
           "HOME": str(files)}
    done = subprocess.run([sys.executable, "-m", "io_harness_cli", "tool", "xlsx_edit",
                           "--args", '{"path": "macro.xlsm", "cells": {"B2": 7}}'],
                          cwd=files, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr  # was: Exception ignored in ZipFile.__del__
    with zipfile.ZipFile(io.BytesIO((files / "macro.xlsm").read_bytes())) as archive:
        assert "xl/vbaProject.bin" in archive.namelist()
