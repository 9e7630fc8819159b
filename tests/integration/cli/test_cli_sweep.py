"""No input a person can type ends in a traceback: hypothesis builds command lines from
io's own commands and options mixed with odd values (bytes that are not UTF-8, empty
strings, huge and negative numbers, control characters) and odd bytes on stdin, and the
real `io` (a subprocess) must answer each with a documented exit code and no traceback.

Plus the named cases of issue 10 as a table: each is a usage error, exit 2, one
`io: error:` line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.cli.helpers import make_workspace

DOCUMENTED_EXITS = {0, 1, 2, 3, 4, 5, 130}

COMMANDS = [
    ["run"], ["resume"], ["runs"], ["trace"], ["spend"], ["tool"], ["steer"], ["interrupt"],
    ["toolchain"], ["templates", "list"], ["config", "show"], ["config", "check"], ["store", "check"], ["session", "new"],
    ["session", "turn"], ["session", "list"], ["session", "show"], ["session", "branch"],
    [],
]
OPTIONS = ["--json", "-n", "--limit", "--by", "--since", "--args", "--answer", "--approve",
           "--deny", "--from", "-w", "-c", "--workspace", "--config", "--help", "--version",
           "--stored-policy", "--html", "--plan", "-"]
NUMBERS = ["0", "-1", "18446744073709551616", "99999999999999999999999999", "1e309", "nan",
           "-0", "3.5"]


def _odd_text() -> st.SearchStrategy[str]:
    raw = st.binary(max_size=12).map(os.fsdecode)  # not-UTF-8 bytes as argv hands them over
    return st.one_of(st.sampled_from(["", " ", "\t", "\x7f", "\u202e", "💥", "../..", "{", "[]",
                                      '{"path": 1}', "read_file", "exec"]),
                     st.sampled_from(NUMBERS), st.sampled_from(OPTIONS), raw,
                     st.text(max_size=10)).map(lambda text: text.replace("\x00", ""))
    # (no argv can hold a NUL byte: exec refuses it before io ever runs)


ARGV = st.tuples(st.sampled_from(COMMANDS), st.lists(_odd_text(), max_size=5)).map(
    lambda pair: [*pair[0], *pair[1]])


def _io(argv: list[str], cwd: Path, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, NO_COLOR="1")
    args = [os.fsencode(a) for a in argv]  # exactly the bytes a shell would pass
    return subprocess.run([sys.executable.encode(), b"-m", b"io_harness_cli", *args], cwd=cwd,
                          input=stdin, env=env, capture_output=True, timeout=60)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path / "ws", ['{"text": "done"}'])


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(argv=ARGV, stdin=st.binary(max_size=16))
def test_no_command_line_ends_in_a_traceback(workspace: Path, argv: list[str],
                                             stdin: bytes) -> None:
    result = _io(argv, workspace, stdin)
    err = result.stderr.decode("utf-8", "replace")
    assert b"Traceback" not in result.stderr and b"Traceback" not in result.stdout, err
    assert "internal error" not in err
    assert result.returncode in DOCUMENTED_EXITS, (argv, result.returncode, err)


USAGE_CASES = [
    (["run", os.fsdecode(b"caf\xe9")], b"", "not valid UTF-8"),
    (["run", "-"], b"caf\xe9 au lait", "not valid UTF-8"),
    (["session", "new", os.fsdecode(b"\xff\xfe")], b"", "not valid UTF-8"),
    (["resume", ""], b"", "must not be empty"),
    (["trace", "  "], b"", "must not be empty"),
    (["steer", "", "hello"], b"", "must not be empty"),
    (["session", "show", ""], b"", "must not be empty"),
    (["runs", "-n", "18446744073709551616"], b"", "not in the range"),
    (["runs", "-n", "0"], b"", "not in the range"),
    (["session", "list", "-n", "-3"], b"", "not in the range"),
    (["runs", "--no-such-option"], b"", "No such option"),
]


@pytest.mark.parametrize(("argv", "stdin", "says"), USAGE_CASES,
                         ids=[" ".join(repr(a) for a in c[0]) for c in USAGE_CASES])
def test_bad_input_is_a_one_line_usage_error(workspace: Path, argv: list[str], stdin: bytes,
                                             says: str) -> None:
    result = _io(argv, workspace, stdin)
    err = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 2, err
    lines = [line for line in err.splitlines() if line.startswith("io: ")]
    assert len(lines) == 1 and lines[0].startswith("io: error: ") and says in lines[0], err
    assert "Traceback" not in err


def test_resume_with_an_empty_id_never_picks_the_only_run(workspace: Path) -> None:
    first = _io(["run", "hello"], workspace, b"")
    assert first.returncode == 0, first.stderr
    again = _io(["resume", ""], workspace, b"")
    assert again.returncode == 2 and b"must not be empty" in again.stderr


@pytest.mark.parametrize(("toml", "says"), [
    ("[budget]\nmax_steps = 18446744073709551616\n", "out of range"),
    ("[budget]\nmax_tokens = 1000000000000000\n", "out of range"),
    ("[budget]\nwall_seconds = 1e300\n", "out of range"),
    ("[budget]\nmax_cost_usd = 2.0\n", "needs a [prices] table"),
    ("[budget]\ncache_read_weight = 2\n", "at most 1"),
])
def test_config_check_rejects_what_run_rejects(workspace: Path, toml: str, says: str) -> None:
    with open(workspace / "io.toml", "a") as handle:
        handle.write(toml)
    for argv in (["config", "check"], ["run", "hello"]):
        result = _io(argv, workspace, b"")
        err = result.stderr.decode()
        assert result.returncode == 2 and says in err and "Traceback" not in err, (argv, err)
