"""Fixtures for the document tools: files written by a real office suite.

The sources in `sources/` (flat ODF XML and one HTML form) are converted by LibreOffice
headless once per test session, one `soffice` call per target format, into a cached
directory; each test copies what it needs into its own workspace. LibreOffice is also
the oracle for what the writing tools produce (`office_convert`), and poppler for PDFs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from harness_core.clock import SystemClock
from harness_core.documents import default_toolbox
from harness_core.messages import ToolCall
from harness_core.policy import Policy, Tier
from harness_core.run import Gate
from harness_core.sandbox import Backend, BackendChoice, SandboxSpec, Selected, launcher
from harness_core.tools import ToolContext, ToolOutcome
from harness_core.workspace import Workspace

SOURCES = Path(__file__).resolve().parent / "sources"

# (target format, import filter or None, the sources LibreOffice converts)
_CONVERSIONS = [
    ("xlsx", None, ["orders.fods"]),
    ("docx", None, ["report.fodt"]),
    ("pptx", None, ["deck.fodp"]),
    ("pdf", None, ["report.fodt", "deck.fodp"]),
    # Opened as Writer (not Writer/Web, which adds a blank first page); its form
    # controls become AcroForm fields.
    ("pdf", "HTML (StarWriter)", ["form.html"]),
]


def soffice() -> str:
    found = shutil.which("soffice") or shutil.which("libreoffice")
    if found is None:
        pytest.fail("LibreOffice (soffice) is not installed; .ci/run installs"
                    " libreoffice-calc, libreoffice-writer and libreoffice-impress")
    return found


def office_convert(files: Iterable[Path], target: str, outdir: Path, profile: Path,
                   infilter: str | None = None) -> None:
    """Convert `files` to `target` (e.g. ``xlsx``, ``csv:…``) with one soffice call."""
    argv = [soffice(), "--headless", "--norestore",
            f"-env:UserInstallation={profile.as_uri()}", "--convert-to", target,
            "--outdir", str(outdir), *map(str, files)]
    if infilter is not None:
        argv.insert(3, f"--infilter={infilter}")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=180,
                          env={**os.environ, "SAL_USE_VCLPLUGIN": "svp"})
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="session")
def office_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lo-profile")


@pytest.fixture(scope="session")
def office_files(tmp_path_factory: pytest.TempPathFactory, office_profile: Path) -> Path:
    """A directory of documents LibreOffice wrote: orders.xlsx, report.docx, deck.pptx,
    report.pdf, deck.pdf and form.pdf (AcroForm fields full_name, city, agree)."""
    out = tmp_path_factory.mktemp("office")
    for target, infilter, names in _CONVERSIONS:
        office_convert([SOURCES / n for n in names], target, out, office_profile, infilter)
    return out


def make_ctx(root: Path, policy: Policy | None = None) -> ToolContext:
    """A tool context over `root` with the run's real gate (no store, no approver)."""
    policy = policy or Policy.from_lists(tier=Tier.WORKSPACE_WRITE, approval="deny")
    gate = Gate(policy, store=None, run_id="", approver=None, emit=lambda event: None)
    spec = SandboxSpec(workdir=root, env={"PATH": os.environ.get("PATH", os.defpath)})
    return ToolContext(workspace=Workspace(root), gate=gate,
                       launcher=launcher(Selected(Backend.OFF, BackendChoice.OFF), spec),
                       clock=SystemClock())


def call(ctx: ToolContext, name: str, **args: Any) -> ToolOutcome:
    """One call through the default toolbox, as the loop makes it."""
    return default_toolbox(include_shell=False).call(ToolCall("t1", name, args), ctx)


@pytest.fixture
def workspace(tmp_path: Path, office_files: Path) -> Path:
    """A workspace holding a copy of every office fixture."""
    root = tmp_path / "ws"
    shutil.copytree(office_files, root)
    return root
