"""docs/CONTRACT.md, "Install extras": what exists in every install, whatever extra is
missing: `Workspace.read_bytes`/`write_bytes` and the `document_contains` verification
kind, reached without importing any document library (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO

PROBE = """
import json, sys, tempfile, pathlib
from harness_core import CriterionKind, Workspace
root = pathlib.Path(tempfile.mkdtemp())
ws = Workspace(root)
ws.write_bytes("b.bin", b"\\x00\\xffraw")
print(json.dumps({
    "bytes": ws.read_bytes("b.bin").hex(),
    "kinds": [k.value for k in CriterionKind],
    "loaded": sorted(m for m in ("openpyxl", "docx", "pptx", "pypdf", "fpdf", "zxingcpp",
                                 "PIL") if m in sys.modules),
}))
"""


def test_bytes_io_and_the_document_gate_kind_need_no_extra() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True,
                         text=True, check=True, timeout=60)
    seen = json.loads(out.stdout)
    assert seen["bytes"] == b"\x00\xffraw".hex()
    assert "document_contains" in seen["kinds"]
    assert seen["loaded"] == []  # none of them came from an extra's library


def test_the_page_names_every_extra_and_no_other() -> None:
    import re
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    contract = (REPO / "docs" / "CONTRACT.md").read_text()
    sentence = contract[contract.index("Extras: "):contract.index("A feature whose extra")]
    assert set(re.findall(r"`(\w+)`", sentence)) == set(extras)
