"""`io doctor` through the real CLI (#23): the verdict on this machine, a configured
backend that cannot run gives exit 1 with the cause and the fix, `--json` is one object."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_io

_NO_BWRAP = {"PATH": "/nonexistent-io-doctor"}


def _ws(tmp_path: Path, backend: str) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "io.toml").write_text(f'[sandbox]\nbackend = "{backend}"\n')
    return ws


def test_doctor_json_on_this_machine_is_one_object_and_exit_0_for_auto(tmp_path: Path) -> None:
    result = run_io(["doctor", "--json", "-w", str(_ws(tmp_path, "auto"))])
    assert result.returncode == 0, result.stderr
    [line] = result.stdout.splitlines()
    report = json.loads(line)
    assert report["configured"] == "auto" and report["configured_runs"] is True
    names = [b["backend"] for b in report["backends"]]
    assert names[1:] == ["floor", "off"]
    assert report["auto"] == (names[0] if report["backends"][0]["works"] else "floor")
    assert report["egress_proxy"]["health"] == "ok"
    assert report["store"]["ok"] is True


def test_native_without_bwrap_exits_1_with_the_cause_and_the_fix(tmp_path: Path) -> None:
    ws = _ws(tmp_path, "native")
    text = run_io(["doctor", "-w", str(ws)], env=_NO_BWRAP)
    assert text.returncode == 1, text.stderr
    assert "linux   CANNOT RUN: bwrap (bubblewrap) is not installed" in text.stdout
    assert "fix: install bubblewrap: `sudo apt-get install bubblewrap`" in text.stdout
    assert 'the configured backend ("native") CANNOT run here' in text.stdout
    assert "auto would pick: floor" in text.stdout and "Traceback" not in text.stderr
    report = json.loads(run_io(["doctor", "--json", "-w", str(ws)], env=_NO_BWRAP).stdout)
    assert report["configured_runs"] is False
    assert report["backends"][0]["cause"] == "bwrap (bubblewrap) is not installed"


def test_the_floor_runs_anywhere_so_doctor_exits_0(tmp_path: Path) -> None:
    result = run_io(["doctor", "-w", str(_ws(tmp_path, "floor"))], env=_NO_BWRAP)
    assert result.returncode == 0, result.stderr
    assert 'the configured backend ("floor") can run here' in result.stdout


def test_doctor_needs_no_provider_key(tmp_path: Path) -> None:
    ws = _ws(tmp_path, "auto")
    (ws / "io.toml").write_text('[provider]\nkind = "openai"\nmodel = "m"\n'
                                'api_key = "${env:IO_TEST_UNSET_KEY}"\n')
    result = run_io(["doctor", "-w", str(ws)])
    assert result.returncode == 0, result.stderr
