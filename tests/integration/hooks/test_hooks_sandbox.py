"""Where hooks run and who may touch them: a project-scope hook runs in the sandbox (it
cannot write outside the workspace), a user-scope hook on the host; the files a hook's
command names are protected from the agent's tools, redirects and sandboxed commands."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from harness_core.errors import SandboxUnavailable
from harness_core.sandbox import BackendChoice, SandboxConfig, select
from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines


def _native_or_skip() -> None:
    """Skip where the native sandbox cannot run; fail instead on CI (IO_REQUIRE_SANDBOX=1)."""
    try:
        select(SandboxConfig(backend=BackendChoice.NATIVE), env={"PATH": "/usr/bin:/bin"})
    except SandboxUnavailable as exc:
        if os.environ.get("IO_REQUIRE_SANDBOX") == "1":
            pytest.fail(f"IO_REQUIRE_SANDBOX=1 but the native sandbox cannot run here: {exc}",
                        pytrace=False)
        pytest.skip(f"the native sandbox cannot run here: {exc}")


WRITER = """\
import json, pathlib, sys
call = json.load(sys.stdin)
for target in sys.argv[1:]:
    try:
        pathlib.Path(target).write_text(call["hook"])
    except OSError as exc:
        print(f"{target}: {exc}", file=sys.stderr)
"""


def _workspace(tmp: Path, hooks: str) -> Path:
    ws = tmp / "ws"
    (ws / "hooks").mkdir(parents=True)
    (ws / "hooks" / "writer.py").write_text(WRITER)
    (ws / "hooks" / "other.py").write_text("# not a hook\n")
    (ws / "replay.jsonl").write_text(json.dumps(
        {"text": "touch", "tool_calls": [{"name": "exec",
                                          "arguments": {"argv": ["touch", "made.txt"]}}]})
        + "\n" + json.dumps({"text": "done"}) + "\n")
    (ws / "io.toml").write_text(f"""
[provider]
kind = "scripted"
script = "replay.jsonl"
[policy]
allow_exec = ["touch *", "sh *"]
[sandbox]
backend = "native"
{hooks}
""")
    return ws


def test_a_project_hook_runs_in_the_sandbox_and_a_user_hook_on_the_host(
        tmp_path: Path, isolated_env: Path) -> None:
    _native_or_skip()
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = _workspace(tmp_path, f"""
[[hooks]]
event = "pre_tool"
name = "project-writer"
command = ["python3", "hooks/writer.py", "{outside / 'from-project.txt'}", "inside.txt"]
""")
    user_hook = tmp_path / "user_writer.py"
    user_hook.write_text(WRITER)
    user_config = isolated_env / "config" / "io" / "io.toml"
    user_config.parent.mkdir(parents=True)
    user_config.write_text(f"""
[[hooks]]
event = "pre_tool"
name = "user-writer"
command = ["{sys.executable}", "{user_hook}", "{outside / 'from-user.txt'}"]
""")
    result = run_io(["run", "go", "-w", str(ws), "--json"])
    assert result.returncode == 0, result.stderr
    assert (ws / "made.txt").exists()
    assert (ws / "inside.txt").read_text() == "project-writer"  # it ran, in the workspace
    assert not (outside / "from-project.txt").exists()  # but could not write outside it
    assert (outside / "from-user.txt").read_text() == "user-writer"  # the host hook could


def test_the_agent_cannot_write_a_hooks_file(tmp_path: Path) -> None:
    _native_or_skip()
    ws = _workspace(tmp_path, """
[[hooks]]
event = "pre_tool"
command = ["python3", "hooks/writer.py"]
[[hooks]]
event = "post_tool"
command = ["./hooks/not-yet.sh"]
""")
    before = (ws / "hooks" / "writer.py").read_text()

    def tool(name: str, args: dict[str, object]) -> dict[str, object]:
        done = run_io(["tool", name, "--args", json.dumps(args), "-w", str(ws), "--json"])
        answer: dict[str, object] = json.loads(done.stdout)
        return answer

    for path in ("hooks/writer.py", "hooks/not-yet.sh", "HOOKS/WRITER.PY"):
        refused = tool("write_file", {"path": path, "content": "exit 0\n"})
        assert refused["ok"] is False, (path, refused)
        assert refused["refused"]["layer"] == "builtin"  # type: ignore[index]
    assert tool("edit_file", {"path": "hooks/writer.py", "old": "import", "new": "#"})[
        "ok"] is False
    assert tool("shell", {"line": "echo x > hooks/writer.py"})["ok"] is False
    sandboxed = tool("exec", {"argv": ["sh", "-c", "echo x > hooks/writer.py; echo y >"
                                       " hooks/not-yet.sh"]})
    assert sandboxed["ok"] is True and sandboxed["data"]["exit_status"] != 0  # type: ignore[index]
    assert (ws / "hooks" / "writer.py").read_text() == before
    assert not (ws / "hooks" / "not-yet.sh").is_file() or \
        (ws / "hooks" / "not-yet.sh").read_text() == ""
    # The hook's folder is protected whole: a module planted beside its script (which
    # the interpreter would import before the standard library's) is refused.
    assert tool("write_file", {"path": "hooks/json.py", "content": "x = 1\n"})["ok"] is False
    # Negative control: a file outside every hook's folder stays writable.
    assert tool("write_file", {"path": "other.py", "content": "x = 1\n"})["ok"] is True


def test_the_example_refuses_a_push_and_formats_the_written_file(tmp_path: Path) -> None:
    ws = tmp_path / "hooks"
    shutil.copytree(Path(__file__).parents[3] / "examples" / "hooks", ws)
    done = run_io(["run", "write the notes, then push", "-w", str(ws), "--json"])
    assert done.returncode == 0, done.stderr
    events = json_lines(done.stdout)
    run_id = str(events[-1]["run_id"])
    assert (ws / "notes.md").read_text() == "# Notes\nship it\n"
    results = [e for e in events if e["kind"] == "tool_result"]
    assert "[hook strip-trailing] strip-trailing removed trailing whitespace" in str(
        results[0]["output"])
    assert "refused: hook no-push: pushing is for people" in str(results[1]["output"])
    trace = json.loads(run_io(["trace", run_id, "-w", str(ws), "--json"]).stdout)
    hooks = [(e["rule"], e["layer"], e["verdict"]) for e in trace["refusals"]]
    assert hooks == [("strip-trailing", "hook", "allow"), ("no-push", "hook", "deny")]
    text = run_io(["trace", run_id, "-w", str(ws)]).stdout
    assert "rule no-push, layer hook" in text
    html = run_io(["trace", run_id, "-w", str(ws), "--html", "-o", "-"]).stdout
    assert "<code class=\"rule\">no-push</code>, layer <code>hook</code>" in html
