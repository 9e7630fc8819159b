"""`${file:PATH}` at a FIFO, a directory or a device is refused at once with a
ConfigError (exit 2 from the CLI), never a read that waits for a writer."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness_core import ConfigError
from harness_core.config._substitute import Substituter
from tests.conftest import run_io


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_a_file_substitution_of_a_special_file_is_refused(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "key"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "directory":
        target.mkdir()
    else:
        target = Path("/dev/zero")
    with pytest.raises(ConfigError, match="not a regular file"):
        Substituter(env={}).resolve(f"${{file:{target}}}", where="k", base_dir=tmp_path)


def test_config_check_with_a_fifo_key_file_exits_2_without_hanging(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "key")
    (tmp_path / "io.toml").write_text(
        '[provider]\nkind = "anthropic"\nmodel = "m"\napi_key = "${file:key}"\n')
    result = run_io(["config", "check", "-w", str(tmp_path)], timeout=30)
    assert result.returncode == 2
    assert "it is a FIFO, not a regular file" in result.stderr
    assert "Traceback" not in result.stderr
