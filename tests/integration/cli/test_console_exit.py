"""The `io` console script leaves without the interpreter's tear-down (#24), and loses
nothing by it: the exit code, what was written to stdout, the `atexit` functions. `main`
itself still ends by raising `SystemExit`, for a caller that runs it in its own process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

# A module-level object whose finalizer speaks: the interpreter's tear-down clears the
# globals of __main__ and so runs it; leaving without the tear-down does not.
_WITNESS = (
    "import atexit, sys\n"
    "class Witness:\n"
    "    def __del__(self):\n"
    "        sys.__stderr__.write('torn down\\n')\n"
    "witness = Witness()\n"
    "atexit.register(lambda: sys.__stderr__.write('atexit ran\\n'))\n"
)


def _python(code: str, *args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "IO_STORE": str(tmp / "state.db"),
           "HOME": str(tmp), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-c", code, *args], cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=60)


def test_the_console_keeps_the_code_runs_atexit_and_skips_the_tear_down(
        tmp_path: Path) -> None:
    script = (_WITNESS + "sys.argv = ['io', *sys.argv[1:]]\n"
              "from io_harness_cli.main import console\nconsole()\n")
    usage = _python(script, "runs", "--status", "bogus", tmp=tmp_path)
    assert usage.returncode == 2, usage.stderr
    assert "atexit ran" in usage.stderr and "torn down" not in usage.stderr
    schema = _python(script, "config", "schema", tmp=tmp_path)
    assert schema.returncode == 0, schema.stderr
    assert "provider" in json.loads(schema.stdout)["properties"]
    assert "atexit ran" in schema.stderr and "torn down" not in schema.stderr


def test_every_byte_written_to_stdout_reaches_the_reader(tmp_path: Path) -> None:
    """A big answer written just before the end is flushed before the process leaves."""
    script = ("import sys\nfrom io_harness_cli.main import console\n"
              "sys.stdout.write('x' * 1_000_000)\n"
              "sys.argv = ['io', '--definitely-not-an-option']\nconsole()\n")
    done = _python(script, tmp=tmp_path)
    assert done.returncode == 2
    assert done.stdout.count("x") == 1_000_000


def test_a_thread_that_is_not_a_daemon_is_waited_for(tmp_path: Path) -> None:
    script = (
        "import sys, threading\n"
        "def late():\n"
        "    threading.Event().wait(0.2)\n"
        "    sys.__stderr__.write('thread finished\\n')\n"
        "threading.Thread(target=late).start()\n"
        "sys.argv = ['io', 'runs', '--status', 'bogus']\n"
        "from io_harness_cli.main import console\nconsole()\n")
    done = _python(script, tmp=tmp_path)
    assert done.returncode == 2
    assert "thread finished" in done.stderr


def test_main_still_raises_system_exit_for_a_caller_in_the_same_process(
        tmp_path: Path) -> None:
    script = (_WITNESS + "sys.argv = ['io', 'runs', '--status', 'bogus']\n"
              "from io_harness_cli.main import main\n"
              "try:\n    main()\nexcept SystemExit as ended:\n"
              "    print('caught', ended.code)\n")
    done = _python(script, tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("caught 2")
    assert "torn down" in done.stderr  # this process leaves the usual way


def test_the_installed_console_script_is_console() -> None:
    text = (REPO / "pyproject.toml").read_text()
    assert 'io = "io_harness_cli.main:console"' in text
