"""The quick start as a new user runs it: no IO_STORE, the store at its default place
under the home directory, which the native sandbox hides. Commands and the gate must
still run (masking a path inside the hidden home would make every command fail)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from harness_core import Selected
from tests.conftest import REPO, io_cmd


def test_the_quick_start_passes_with_the_store_at_its_default_place(
        tmp_path: Path, native: Selected) -> None:
    work = tmp_path / "quickstart"
    shutil.copytree(REPO / "examples" / "quickstart", work)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("IO_STORE", "XDG_STATE_HOME", "XDG_CONFIG_HOME")}
    env["HOME"] = str(home)
    result = subprocess.run([*io_cmd(), "run", "-w", str(work)], env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (home / ".local" / "state" / "io" / "state.db").is_file()
    assert "Read-only file system" not in result.stderr
