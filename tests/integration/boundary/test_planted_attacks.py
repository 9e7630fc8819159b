"""The planted-file attacks on io's host call sites (tests/test_architecture.py lists the
sites): one attack each, as an agent that can write the workspace would try it.

Each case has two halves:
- a **negative control**: the same command run the way it ran before the host boundary
  (plain Python, make or git, started in the workspace) does run the planted file, so
  the attack is real;
- **io**: io does not run it (the planted code's marker file never appears) and refuses
  the act it guarded, or refuses to write through the planted link.

Every case runs under the native backend and under the floor.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness_core.errors import SandboxUnavailable
from harness_core.sandbox import BackendChoice, SandboxConfig, select
from tests.conftest import run_io

pytestmark = pytest.mark.usefixtures("isolated_env")

BACKENDS = ["native", "floor"]


def _backend_or_skip(backend: str) -> None:
    if backend != "native":
        return
    try:
        select(SandboxConfig(backend=BackendChoice.NATIVE), env={"PATH": "/usr/bin:/bin"})
    except SandboxUnavailable as exc:
        if os.environ.get("IO_REQUIRE_SANDBOX") == "1":
            pytest.fail(f"IO_REQUIRE_SANDBOX=1 but the native sandbox cannot run: {exc}",
                        pytrace=False)
        pytest.skip(f"the native sandbox cannot run here: {exc}")


def _planted(marker: Path) -> str:
    """Python source that leaves `marker` behind when it runs."""
    return f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"


def _workspace(tmp: Path, backend: str, extra: str = "", *,
               calls: list[dict[str, object]] | None = None) -> Path:
    """A workspace whose replayed model runs `touch made.txt` (or `calls`), then answers."""
    ws = tmp / "ws"
    ws.mkdir()
    steps = calls if calls is not None else [
        {"name": "exec", "arguments": {"argv": ["touch", "made.txt"]}}]
    lines = [json.dumps({"text": "act", "tool_calls": [call]}) for call in steps]
    (ws / "replay.jsonl").write_text("\n".join([*lines, json.dumps({"text": "done"})]) + "\n")
    (ws / "io.toml").write_text(f"""
[provider]
kind = "scripted"
script = "replay.jsonl"
[policy]
allow_exec = ["touch *", "git *", "python3 *"]
[sandbox]
backend = "{backend}"
{extra}
""")
    return ws


def _user_hook(home: Path, command: list[str], name: str = "user-hook") -> None:
    config = home / "config" / "io" / "io.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"""
[[hooks]]
event = "pre_tool"
name = "{name}"
command = {json.dumps(command)}
timeout_s = 20
""")


def _plain(argv: list[str], cwd: Path, payload: dict[str, object] | None = None
           ) -> subprocess.CompletedProcess[str]:
    """The negative control: `argv` started in the workspace, as io started hooks."""
    return subprocess.run(argv, cwd=cwd, input=json.dumps(payload or {}), text=True,
                          capture_output=True, timeout=60, check=False)


# ---- host hooks (host_launcher) ---------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_user_hook_run_as_python_m_does_not_import_a_planted_module(
        tmp_path: Path, isolated_env: Path, backend: str) -> None:
    _backend_or_skip(backend)
    marker = tmp_path / "pwned"
    ws = _workspace(tmp_path, backend)
    (ws / "fmt_tool.py").write_text(_planted(marker))
    command = [sys.executable, "-m", "fmt_tool"]
    _plain(command, ws)
    assert marker.exists(), "negative control: python -m in the workspace imports it"
    marker.unlink()
    _user_hook(isolated_env, command)
    result = run_io(["run", "go", "-w", str(ws), "--json"], cwd=ws)
    assert not marker.exists(), result.stderr
    assert not (ws / "made.txt").exists()  # the hook could not answer: the call is refused


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_user_hook_running_make_does_not_read_a_planted_makefile(
        tmp_path: Path, isolated_env: Path, backend: str) -> None:
    _backend_or_skip(backend)
    marker = tmp_path / "pwned"
    ws = _workspace(tmp_path, backend)
    (ws / "Makefile").write_text(f"fmt:\n\ttouch {marker}\n")
    _plain(["make", "-s", "fmt"], ws)
    assert marker.exists(), "negative control: make in the workspace runs its Makefile"
    marker.unlink()
    _user_hook(isolated_env, ["make", "-s", "fmt"])
    result = run_io(["run", "go", "-w", str(ws), "--json"], cwd=ws)
    assert not marker.exists(), result.stderr
    assert not (ws / "made.txt").exists()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_user_hook_naming_a_relative_script_is_refused(
        tmp_path: Path, isolated_env: Path, backend: str) -> None:
    _backend_or_skip(backend)
    marker = tmp_path / "pwned"
    ws = _workspace(tmp_path, backend)
    (ws / "fmt_hook.py").write_text(_planted(marker))  # written by the agent, "later"
    _plain(["python3", "fmt_hook.py"], ws)
    assert marker.exists(), "negative control: the relative script resolves in the workspace"
    marker.unlink()
    _user_hook(isolated_env, ["python3", "fmt_hook.py"], name="fmt")
    checked = run_io(["config", "check", "-w", str(ws)], cwd=ws)
    assert checked.returncode == 2
    assert "hook 'fmt'" in checked.stderr and "relative path" in checked.stderr
    result = run_io(["run", "go", "-w", str(ws), "--json"], cwd=ws)
    assert not marker.exists(), result.stderr
    assert not (ws / "made.txt").exists()
    assert "refused" in result.stdout


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_user_hook_naming_a_script_in_the_workspace_is_refused(
        tmp_path: Path, isolated_env: Path, backend: str) -> None:
    _backend_or_skip(backend)
    marker = tmp_path / "pwned"
    ws = _workspace(tmp_path, backend)
    (ws / "check.py").write_text(_planted(marker))
    _user_hook(isolated_env, ["python3", str(ws / "check.py")], name="check")
    checked = run_io(["config", "check", "-w", str(ws)])
    assert checked.returncode == 2 and "lies in the workspace" in checked.stderr
    result = run_io(["run", "go", "-w", str(ws), "--json"])
    assert not marker.exists(), result.stderr
    assert not (ws / "made.txt").exists()


# ---- project hooks (the sandboxed launcher) ---------------------------------------------

NO_PUSH = """\
import json, shlex, sys
call = json.load(sys.stdin)
args = call.get("arguments", {})
words = args.get("argv") or shlex.split(str(args.get("line", "")))
if "git" in words and "push" in words[words.index("git"):]:
    print("pushing is for people", file=sys.stderr)
    sys.exit(2)
"""
PLANTED_JSON = "def load(_stream):\n    return {}\n"
"""A `json.py` beside the hook: its `load` hides the call, so the hook answers allow."""


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_project_hook_never_imports_a_module_planted_beside_it(
        tmp_path: Path, backend: str) -> None:
    _backend_or_skip(backend)
    push: dict[str, object] = {"name": "exec",
                               "arguments": {"argv": ["git", "push", "origin", "main"]}}
    ws = _workspace(tmp_path, backend, """
[[hooks]]
event = "pre_tool"
matcher = "exec"
name = "no-push"
command = ["python3", "hooks/no_push.py"]
""", calls=[push, {"name": "write_file",
                   "arguments": {"path": "hooks/json.py", "content": PLANTED_JSON}}])
    (ws / "hooks").mkdir()
    (ws / "hooks" / "no_push.py").write_text(NO_PUSH)
    (ws / "hooks" / "json.py").write_text(PLANTED_JSON)  # planted before this run
    plain = _plain(["python3", "hooks/no_push.py"], ws, push)
    assert plain.returncode == 0, "negative control: the planted json.py turns the hook off"
    result = run_io(["run", "go", "-w", str(ws), "--json"])
    results = [json.loads(line) for line in result.stdout.splitlines()
               if '"tool_result"' in line]
    assert "pushing is for people" in str(results[0]["output"]), result.stdout
    # And the agent cannot plant it during a run: the hook's folder is protected whole.
    assert "refused" in str(results[1]["output"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_project_hook_whose_script_is_missing_refuses_every_call(
        tmp_path: Path, backend: str) -> None:
    _backend_or_skip(backend)
    ws = _workspace(tmp_path, backend, """
[[hooks]]
event = "pre_tool"
name = "typo"
command = ["python3", "hooks/missing.py"]
""")
    (ws / "hooks").mkdir()
    (ws / "hooks" / "empty.py").write_text("")
    plain = _plain(["python3", "hooks/empty.py"], ws)
    assert plain.returncode == 0, "negative control: an empty placeholder says no objection"
    checked = run_io(["config", "check", "-w", str(ws)])
    assert checked.returncode == 2
    assert "hook 'typo'" in checked.stderr and "hooks/missing.py" in checked.stderr
    result = run_io(["run", "go", "-w", str(ws), "--json"])
    assert not (ws / "made.txt").exists(), result.stdout
    assert "does not exist" in result.stdout


# ---- local MCP servers (stdio_transport) -------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_local_mcp_server_does_not_load_a_module_planted_in_the_workspace(
        tmp_path: Path, backend: str) -> None:
    _backend_or_skip(backend)
    marker = tmp_path / "pwned"
    ws = _workspace(tmp_path, backend, """
[[mcp]]
name = "srv"
command = "python3"
args = ["-m", "planted_server"]
optional = true
""")
    (ws / "planted_server.py").write_text(_planted(marker))
    _plain(["python3", "-m", "planted_server"], ws)
    assert marker.exists(), "negative control: python -m in the workspace imports it"
    marker.unlink()
    result = run_io(["run", "go", "-w", str(ws), "--json"], cwd=ws)
    assert not marker.exists(), result.stderr
    assert "srv" in result.stdout + result.stderr  # the optional server did not start


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_local_mcp_server_script_in_the_workspace_is_refused(
        tmp_path: Path, backend: str) -> None:
    _backend_or_skip(backend)
    marker = tmp_path / "pwned"
    ws = _workspace(tmp_path, backend, """
[[mcp]]
name = "srv"
command = "python3"
args = ["server.py"]
""")
    (ws / "server.py").write_text(_planted(marker))
    result = run_io(["run", "go", "-w", str(ws), "--json"], cwd=ws)
    assert result.returncode != 0
    assert not marker.exists()
    assert "MCP server 'srv' did not start" in result.stderr
    assert "Traceback" not in result.stderr


# ---- files io writes for the operator (write_operator_file) ------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("flag", ["--output-last-message", "--junit"])
def test_a_report_file_is_never_written_through_a_planted_link(
        tmp_path: Path, backend: str, flag: str) -> None:
    _backend_or_skip(backend)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    ws = _workspace(tmp_path, backend)
    planted = ws / "report.out"
    planted.symlink_to(victim)
    Path(planted).write_text("x")  # negative control: a plain write follows the link
    assert victim.read_text() == "x"
    victim.write_text("precious\n")
    result = run_io(["run", "go", "-w", str(ws), flag, str(planted), "--json"])
    assert victim.read_text() == "precious\n", result.stderr
    assert "symbolic link inside the workspace" in result.stderr


def test_the_html_trace_is_never_written_through_a_planted_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim.html"
    victim.write_text("precious\n")
    ws = _workspace(tmp_path, "floor")
    done = run_io(["run", "go", "-w", str(ws), "--json"])
    run_id = json.loads(done.stdout.splitlines()[-1])["run_id"]
    (ws / "trace.html").symlink_to(victim)
    result = run_io(["trace", run_id, "-w", str(ws), "--html", "--output",
                     str(ws / "trace.html")])
    assert result.returncode == 2, result.stderr
    assert victim.read_text() == "precious\n"
    assert "symbolic link inside the workspace" in result.stderr
    assert "Traceback" not in result.stderr


# ---- git (run_helper, in the repository) --------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_git_does_not_run_a_program_the_repository_config_names(
        tmp_path: Path, backend: str) -> None:
    _backend_or_skip(backend)
    marker = tmp_path / "pwned"
    ws = _workspace(tmp_path, backend)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    subprocess.run(["git", "-C", str(ws), "config", "core.fsmonitor", f"touch {marker}"],
                   check=True)
    subprocess.run(["git", "-C", str(ws), "status"], capture_output=True, check=False)
    assert marker.exists(), "negative control: plain git status runs the fsmonitor"
    marker.unlink()
    result = run_io(["tool", "git_status", "--args", "{}", "-w", str(ws), "--json"])
    assert not marker.exists(), result.stdout
    assert json.loads(result.stdout)["ok"] is False


def test_the_step_summary_is_never_appended_through_a_planted_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim.md"
    victim.write_text("precious\n")
    ws = _workspace(tmp_path, "floor")
    (ws / "summary.md").symlink_to(victim)
    result = run_io(["run", "go", "-w", str(ws), "--json"],
                    env={"GITHUB_STEP_SUMMARY": str(ws / "summary.md")})
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "precious\n"
    assert "symbolic link inside the workspace" in result.stderr


def test_io_config_init_never_writes_through_a_planted_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim.toml"
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "io.toml").symlink_to(victim)  # dangling: O_CREAT alone would create the victim
    result = run_io(["config", "init", "-w", str(ws), "--provider", "scripted"])
    assert result.returncode == 2, result.stderr
    assert not victim.exists() and "Traceback" not in result.stderr
