"""The collector runs rarely while `io` starts and as usual once a run is assembled, with
what start-up built frozen out of its sight (io_harness_cli/commands/_start_up.py)."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

from io_harness_cli.commands import _start_up as _common


def test_start_up_raises_the_threshold_and_its_end_restores_it_and_freezes() -> None:
    before = gc.get_threshold()
    try:
        _common.begin_start_up()
        assert gc.get_threshold() == _common._START_UP_GC
        _common.begin_start_up()  # twice: the default is kept, not the start-up value
        _common.end_start_up()
        assert gc.get_threshold() == before
        assert gc.get_freeze_count() > 0
        _common.end_start_up()  # a second end changes nothing
        assert gc.get_threshold() == before
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_a_run_steps_with_the_default_threshold(tmp_path: Path) -> None:
    """Through the real CLI: a run ends with the default threshold and start-up frozen."""
    (tmp_path / "replay.jsonl").write_text(
        '{"tool_calls": [{"name": "exec", "arguments": {"argv": ["true"]}}]}\n'
        '{"text": "done"}\n')
    (tmp_path / "io.toml").write_text(
        '[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n[sandbox]\nbackend = "off"\n'
        '[policy]\nallow_exec = ["true"]\n')
    code = (
        "import gc, json, sys, atexit\n"
        "atexit.register(lambda: sys.__stderr__.write('\\n' + json.dumps("
        "[list(gc.get_threshold()), gc.get_freeze_count() > 0])))\n"
        f"sys.argv = ['io', 'run', 'g', '-w', {str(tmp_path)!r}, '--json']\n"
        "from io_harness_cli.main import main\n"
        "main()\n"
    )
    env = {**os.environ, "IO_STORE": str(tmp_path / "state.db")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, env=env)
    assert '"status": "finished"' in result.stdout, result.stderr
    threshold, frozen = json.loads(result.stderr.strip().splitlines()[-1])
    assert tuple(threshold) == gc.get_threshold() and frozen
