"""`io --help` and `io runs --json` stay cheap: checked on `sys.modules` in a subprocess,
never on time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HEAVY = ("httpx", "mcp", "openpyxl", "docx", "pptx", "pypdf", "fpdf", "zxingcpp", "pydantic")
DOCUMENT_LIBRARIES = ("openpyxl", "docx", "pptx", "pypdf", "fpdf", "zxingcpp", "PIL", "lxml")


def _modules_after(argv: list[str], env: dict[str, str] | None = None,
                   cwd: str | None = None) -> set[str]:
    code = (
        "import sys, json\n"
        f"sys.argv = ['io', *{argv!r}]\n"
        "from io_harness_cli.main import app\n"
        "try:\n"
        "    app(prog_name='io')\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.__stderr__.write(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, env=env, cwd=cwd)
    return set(json.loads(result.stderr.strip().splitlines()[-1]))


def test_io_help_imports_no_httpx_mcp_or_document_library() -> None:
    loaded = _modules_after(["--help"])
    for name in (*HEAVY, "httpcore", "h2", "truststore"):
        assert name not in loaded, f"{name} imported by io --help"
    assert not any(m.startswith("harness_core.") for m in loaded)


def test_io_version_imports_no_heavy_module() -> None:
    loaded = _modules_after(["--version"])
    assert not {"httpx", "mcp", "rich.console"} & loaded


def test_importing_harness_core_imports_nothing_heavy() -> None:
    code = "import sys, harness_core; print(sorted(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    loaded = set(eval(out))  # a list literal printed by the child
    assert "httpx" not in loaded and "sqlite3" not in loaded and "rich" not in loaded


def test_io_runs_json_does_not_import_rich(tmp_path: object) -> None:
    loaded = _modules_after(["runs", "--json"])
    assert "rich.console" not in loaded and "rich.table" not in loaded
    assert "httpx" not in loaded


def test_a_run_that_uses_no_document_tool_imports_no_document_library(tmp_path: Path) -> None:
    (tmp_path / "replay.jsonl").write_text(
        '{"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]}\n'
        '{"text": "done"}\n')
    (tmp_path / "io.toml").write_text(
        '[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n[contract]\ngoal = "g"\n')
    loaded = _modules_after(["run", "--json", "-w", str(tmp_path)], cwd=str(tmp_path))
    assert (tmp_path / "a.txt").read_text() == "x"
    assert "harness_core.tools._document_tools" in loaded  # the document tools were offered …
    assert not any(m.startswith("harness_core.documents") for m in loaded)  # … not their package
    for name in DOCUMENT_LIBRARIES:  # … nor any of their libraries
        assert name not in loaded, f"{name} imported by a run that used no document tool"
    assert "psycopg" not in loaded  # a SQLite store loads nothing of PostgreSQL's driver


def test_io_tool_of_a_core_tool_imports_no_document_library(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello")
    loaded = _modules_after(["tool", "read_file", "--args", '{"path": "a.txt"}', "-w",
                             str(tmp_path)], cwd=str(tmp_path))
    for name in DOCUMENT_LIBRARIES:
        assert name not in loaded, f"{name} imported by io tool read_file"


def test_a_scripted_run_imports_no_httpx(tmp_path: Path) -> None:
    """The scripted provider speaks no HTTP, so a whole `io run` with it loads no httpx
    (nor httpcore, h2 or truststore)."""
    (tmp_path / "replay.jsonl").write_text('{"text": "done"}\n')
    (tmp_path / "io.toml").write_text(
        '[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n[sandbox]\nbackend = "off"\n'
    )
    env = {**os.environ, "IO_STORE": str(tmp_path / "state.db"),
           "IO_SYSTEM_CONFIG": str(tmp_path / "none"), "HOME": str(tmp_path)}
    loaded = _modules_after(["run", "say done", "-w", str(tmp_path), "--json"], env=env)
    assert "harness_core.run" in loaded  # the run really happened in this process
    assert not {"httpx", "httpcore", "h2", "truststore"} & loaded
    # The keys' docstrings are read for `io config schema|init`, not on a load.
    assert "harness_core.config._plain" in loaded and "harness_core.config._docs" not in loaded
    # A run that calls no `shell` tool keeps a handle registry but loads no shell planner.
    assert "harness_core.shell._handles" in loaded
    assert not {"harness_core.shell._plan", "harness_core.shell._runner",
                "harness_core.shell._parser", "harness_core.shell._lexer"} & loaded


def test_config_show_names_the_trust_store_without_importing_httpx(tmp_path: Path) -> None:
    (tmp_path / "io.toml").write_text('[provider]\nkind = "openai"\nmodel = "m"\n')
    env = {**os.environ, "IO_SYSTEM_CONFIG": str(tmp_path / "none"), "HOME": str(tmp_path)}
    loaded = _modules_after(["config", "show", "-w", str(tmp_path)], env=env)
    assert "harness_core.providers._tls" in loaded
    assert not {"httpx", "httpcore", "h2"} & loaded


def test_a_command_named_first_builds_only_that_command(tmp_path: Path) -> None:
    """`io run ...` is parsed by an app holding only `run` (Typer builds every registered
    command before parsing); the other commands' modules are never imported."""
    (tmp_path / "replay.jsonl").write_text('{"text": "done"}\n')
    (tmp_path / "io.toml").write_text(
        '[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n[sandbox]\nbackend = "off"\n'
    )
    env = {**os.environ, "IO_STORE": str(tmp_path / "state.db"),
           "IO_SYSTEM_CONFIG": str(tmp_path / "none"), "HOME": str(tmp_path)}
    code = (
        "import sys, json, atexit\n"
        "atexit.register(lambda: sys.__stderr__.write(json.dumps(sorted(sys.modules))))\n"
        f"sys.argv = ['io', 'run', 'say done', '-w', {str(tmp_path)!r}, '--json']\n"
        "from io_harness_cli.main import main\n"
        "main()\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    assert '"status": "finished"' in result.stdout
    loaded = set(json.loads(result.stderr.strip().splitlines()[-1]))
    assert "io_harness_cli.commands.run" in loaded
    others = {f"io_harness_cli.commands.{n}" for n in ("batch", "trace", "session", "config",
                                                       "store", "spend", "tool")}
    assert not others & loaded


# What each command may import (#24): the normal path loads no pydantic (io.toml is checked
# by the plain validator generated from the models), no psutil (a start time is read from
# /proc), no telemetry exporter, MCP client, JSON Schema checker, document library or
# live view unless the command uses one; nor io's own packages for gates, spend reports,
# documents, MCP servers or telemetry (#24 item 3; tests/test_command_imports.py pins each
# command's row).
NEVER_ON_THE_NORMAL_PATH = frozenset({
    "harness_core.verification", "harness_core.spend", "harness_core.documents",
    "harness_core.mcp", "harness_core.telemetry",
    "pydantic", "pydantic_core", "annotated_types", "psutil", "jsonschema", "mcp", "httpx",
    "opentelemetry", "rich.live", "rich.progress", "ctypes", "decimal",
    "harness_core.config._model", "harness_core.config._fields",
    "harness_core.config._validate", "harness_core.config._gen_plain",
    "harness_core.telemetry._sink", "harness_core.mcp._client", "harness_core.mcp._tools",
    *DOCUMENT_LIBRARIES,
})


def _modules_of(argv: list[str], workspace: Path) -> tuple[int, str, set[str]]:
    """Run `io ARGV` through the console entry point in a fresh interpreter (stdout not a
    TTY); its exit code, stdout, and every module loaded by its exit."""
    env = {**os.environ, "IO_STORE": str(workspace / "state.db"), "HOME": str(workspace),
           "IO_SYSTEM_CONFIG": str(workspace / "none"), "XDG_CONFIG_HOME": str(workspace),
           # A private temp dir holds the sandbox ledger folder: residue that other tests'
           # crashes left in the shared one would be swept here, with psutil.
           "TMPDIR": str(workspace / "tmp")}
    (workspace / "tmp").mkdir(exist_ok=True)
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    code = (
        "import sys, json, atexit\n"
        "atexit.register(lambda: sys.__stderr__.write('\\n' + json.dumps(sorted(sys.modules))))\n"
        f"sys.argv = ['io', *{argv!r}]\n"
        "from io_harness_cli.main import main\n"
        "main()\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, env=env, cwd=str(workspace))
    return (result.returncode, result.stdout,
            set(json.loads(result.stderr.strip().splitlines()[-1])))


def _scripted_workspace(tmp_path: Path) -> Path:
    (tmp_path / "replay.jsonl").write_text(
        '{"tool_calls": [{"name": "exec", "arguments": {"argv": ["echo", "hi"]}}]}\n'
        '{"text": "done"}\n')
    (tmp_path / "io.toml").write_text(
        '[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n[sandbox]\nbackend = "off"\n'
        '[policy]\ntier = "full"\n')
    (tmp_path / "a.txt").write_text("hello")
    return tmp_path


def test_each_command_imports_only_what_it_uses(tmp_path: Path) -> None:
    ws = _scripted_workspace(tmp_path)
    code, out, loaded = _modules_of(["run", "say done", "-w", str(ws), "--json"], ws)
    assert code == 0 and '"status": "finished"' in out, out
    assert "harness_core.run" in loaded and "harness_core.config._plain" in loaded
    assert not NEVER_ON_THE_NORMAL_PATH & loaded, sorted(NEVER_ON_THE_NORMAL_PATH & loaded)
    run_id = json.loads(out.strip().splitlines()[-1])["run_id"]
    for argv in (["runs"], ["runs", "--json"], ["trace", run_id], ["trace", run_id, "--json"],
                 ["tool", "read_file", "--args", '{"path": "a.txt"}', "-w", str(ws)],
                 ["config", "show", "-w", str(ws)], ["--help"], ["--version"]):
        code, out, loaded = _modules_of(argv, ws)
        assert code == 0, (argv, out)
        found = NEVER_ON_THE_NORMAL_PATH & loaded
        assert not found, f"io {' '.join(argv)} imported {sorted(found)}"


def test_config_check_and_schema_use_pydantic_itself(tmp_path: Path) -> None:
    """The plain validator is a twin of the models for the normal path; `io config check`
    and `io config schema` read the declaration."""
    ws = _scripted_workspace(tmp_path)
    for argv in (["config", "check", "-w", str(ws)], ["config", "schema"]):
        code, out, loaded = _modules_of(argv, ws)
        assert code == 0, (argv, out)
        assert {"pydantic", "harness_core.config._model"} <= loaded, argv


def test_a_run_that_starts_no_process_tree_work_loads_no_psutil_but_one_that_does_can(
        tmp_path: Path) -> None:
    """Negative control for the check above: the deny list sees a module that a command
    really loads (psutil is there as soon as anything asks it a question)."""
    ws = _scripted_workspace(tmp_path)
    code = "import harness_core.sandbox._process as p, sys; p._descendants(1); print('psutil' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=str(ws)).stdout
    assert out.strip() == "True"
