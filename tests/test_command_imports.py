"""Issue 24 item 3: each command imports only what it uses, pinned as a table.

Every row runs one `io` command line through the console entry point in a fresh
interpreter and compares the heavy modules it loaded (read from `sys.modules` at exit)
with the row. A module that starts being imported, or stops being imported, fails its
row: make it lazy again, or change the row and say why in the commit.

A package counts as loaded when its root is in `sys.modules` (no submodule loads without
it), so ``harness_core.documents`` stands for every ``harness_core.documents.*`` and
``opentelemetry`` for the whole SDK. The last tests are the positive controls: a run
with a gate does load the gate runner and a run that calls a document tool does load the
document package, so the table cannot pass by breaking those paths.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.cli.helpers import json_lines, make_workspace, replay_line

DOCUMENT_LIBRARIES = ("openpyxl", "docx", "pptx", "pypdf", "fpdf", "zxingcpp", "PIL", "lxml")
HEAVY = (
    "harness_core.verification", "harness_core.spend", "harness_core.documents",
    "harness_core.mcp", "harness_core.telemetry", "psutil", "mcp", "opentelemetry", "rich",
    "pydantic", "httpx", "typer", *DOCUMENT_LIBRARIES, "psycopg", "ray", "sqlite3",
)
"""The modules the table watches: io's packages that only some runs need, and every
third-party library (or stdlib module with a C part) that costs a start measurably."""

CLI = frozenset({"typer"})  # a command line is parsed by Typer (`--help`, `--version` alone are not)
STORE = CLI | {"sqlite3"}  # ... and a command that opens the run store opens SQLite

# The command lines, their placeholders filled in by `_argv`: {ws} the scripted
# workspace, {run} a finished run's id, {paused} and {paused_ws} a run paused on an
# approval (made for the row) and its workspace.
TABLE: dict[str, tuple[list[str], frozenset[str]]] = {
    "io --help": (["--help"], frozenset()),  # the index help typer rendered ahead of time
    "io --version": (["--version"], frozenset()),
    "io run --json": (["run", "say done", "-w", "{ws}", "--json"], STORE),
    "io run": (["run", "say done", "-w", "{ws}"], STORE),
    "io resume": (["resume", "{paused}", "-w", "{paused_ws}", "--approve", "--json"], STORE),
    "io tool read_file": (["tool", "read_file", "--args", '{{"path": "a.txt"}}', "-w", "{ws}"],
                          STORE),
    "io runs --json": (["runs", "--json"], STORE),
    "io runs": (["runs"], STORE),
    "io trace --json": (["trace", "{run}", "--json"], STORE),
    "io trace": (["trace", "{run}"], STORE),
    "io spend --json": (["spend", "--json"], STORE | {"harness_core.spend"}),
    # `Config` holds a `RunSpec`'s defaults, and `RunOutcome` maps each `RunStatus` of the
    # store to an exit code: naming them loads the store package, and with it sqlite3.
    "io config show": (["config", "show", "-w", "{ws}"], STORE),
    "io config check": (["config", "check", "-w", "{ws}"], STORE | {"pydantic"}),
    "io config schema": (["config", "schema"], STORE | {"pydantic"}),
}
"""Command -> (its argv, the heavy modules it loads)."""


@dataclass(frozen=True)
class Ran:
    code: int
    stdout: str
    stderr: str
    loaded: frozenset[str]

    @property
    def heavy(self) -> frozenset[str]:
        return frozenset(name for name in HEAVY if name in self.loaded)


@dataclass(frozen=True)
class Place:
    """Where the table's commands run: one home (store and user scope) for all of them."""

    home: Path
    ws: Path
    run: str = ""

    def env(self) -> dict[str, str]:
        env = {name: value for name, value in os.environ.items()
               if not name.startswith("OTEL_") and name not in ("NO_COLOR", "FORCE_COLOR")}
        env.update(HOME=str(self.home), XDG_CONFIG_HOME=str(self.home / "config"),
                   XDG_STATE_HOME=str(self.home / "state"),
                   IO_SYSTEM_CONFIG=str(self.home / "none"),
                   IO_STORE=str(self.home / "state.db"),
                   # A private temp dir: the sandbox ledger folder lives there, so what
                   # crashed tests elsewhere left behind is not swept (with psutil) here.
                   TMPDIR=str(self.home / "tmp"))
        (self.home / "tmp").mkdir(exist_ok=True)
        return env

    def io(self, argv: list[str], cwd: Path | None = None, *, tty: bool = False) -> Ran:
        """`io ARGV` in a fresh interpreter, and what it loaded; its stdout and stderr are
        pipes, or one terminal (a pseudo-terminal, drained while it runs) with `tty`."""
        fd, listing = tempfile.mkstemp(dir=self.home, suffix=".json")
        os.close(fd)
        code = (
            "import sys, json, atexit\n"
            f"atexit.register(lambda: open({listing!r}, 'w').write(json.dumps(sorted(sys.modules))))\n"
            f"sys.argv = ['io', *{argv!r}]\n"
            "from io_harness_cli.main import main\n"
            "main()\n"
        )
        run = _on_a_terminal if tty else _through_pipes
        code_, out, err = run([sys.executable, "-c", code], self.env(), cwd or self.ws)
        return Ran(code_, out, err, frozenset(json.loads(Path(listing).read_text())))


def _through_pipes(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env,
                            cwd=str(cwd))
    return result.returncode, result.stdout, result.stderr


def _on_a_terminal(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    main, child = pty.openpty()
    with subprocess.Popen(argv, stdout=child, stderr=child, stdin=subprocess.DEVNULL,
                          env={**env, "TERM": "xterm", "COLUMNS": "100"}, cwd=str(cwd)) as proc:
        os.close(child)
        screen: list[bytes] = []
        reader = threading.Thread(target=_drain, args=(main, screen))
        reader.start()
        proc.wait(timeout=120)
        reader.join(timeout=30)
    os.close(main)
    text = b"".join(screen).decode(errors="replace")
    return proc.returncode, text, text


def _drain(fd: int, into: list[bytes]) -> None:
    """Read a pseudo-terminal until its last writer closes it."""
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the child side is closed
            return
        if not data:
            return
        into.append(data)


def _scripted(root: Path, toml_extra: str = "", *lines: str) -> Path:
    ws = make_workspace(root, list(lines) or [
        replay_line("", ("write_file", {"path": "b.txt", "content": "x"})), replay_line("done")],
        toml_extra=toml_extra)
    (ws / "io.toml").write_text((ws / "io.toml").read_text().replace(
        'backend = "floor"', 'backend = "off"'))
    (ws / "a.txt").write_text("hello")
    return ws


def _paused(place: Place) -> tuple[Path, str]:
    """A new run paused on an approval (each resume needs its own): its workspace and id."""
    ws = _scripted(Path(tempfile.mkdtemp(dir=place.home.parent)), '[policy]\napproval = "ask"\n',
                   replay_line("make", ("exec", {"argv": ["touch", "made.txt"]})),
                   replay_line("done"))
    paused = place.io(["run", "make it", "-w", str(ws), "--json"], cwd=ws)
    assert paused.code == 4, paused.stderr  # paused on the approval
    return ws, str(json_lines(paused.stdout)[-1]["run_id"])


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Place:
    """A store holding a finished scripted run and a paused one."""
    root = tmp_path_factory.mktemp("imports")
    bare = Place(root / "home", _scripted(root / "ws"))
    bare.home.mkdir()
    first = bare.io(["run", "say done", "-w", str(bare.ws), "--json"])
    assert first.code == 0, first.stderr
    _paused(bare)
    return Place(bare.home, bare.ws, str(json_lines(first.stdout)[-1]["run_id"]))


def _argv(argv: list[str], place: Place) -> list[str]:
    """`argv` with its placeholders filled in (a fresh paused run for `{paused}`)."""
    paused_ws, paused = _paused(place) if "{paused}" in argv else (place.ws, "")
    return [word.format(ws=place.ws, paused_ws=paused_ws, run=place.run, paused=paused)
            for word in argv]


@pytest.mark.parametrize("command", list(TABLE))
def test_each_command_loads_exactly_its_row_of_heavy_modules(place: Place, command: str) -> None:
    argv, expected = TABLE[command]
    ran = place.io(_argv(argv, place))
    assert ran.code == 0, (command, ran.stdout, ran.stderr)
    assert ran.heavy == expected, (
        f"{command}: newly imported {sorted(ran.heavy - expected)},"
        f" no longer imported {sorted(expected - ran.heavy)}")


def test_a_run_on_a_terminal_loads_rich_for_its_live_view(place: Place) -> None:
    """The live view is the one user of rich in a run: only a terminal gets it."""
    ran = place.io(["run", "say done", "-w", str(place.ws)], tty=True)
    assert ran.code == 0, ran.stderr
    assert "done" in ran.stdout
    assert ran.heavy == STORE | {"rich"}


def test_the_rows_ran_what_they_name(place: Place) -> None:
    """The plain run and the resume really ran to the end in the process that was
    watched (a row that failed early would load little and pass for the wrong reason)."""
    run = place.io(_argv(TABLE["io run --json"][0], place))
    assert json_lines(run.stdout)[-1]["status"] == "finished"
    assert "harness_core.run._loop" in run.loaded and "harness_core.config._plain" in run.loaded
    assert "harness_core.tools._document_tools" in run.loaded  # the document tools offered
    argv = _argv(TABLE["io resume"][0], place)
    resumed = place.io(argv)
    assert resumed.code == 0, resumed.stderr
    assert json_lines(resumed.stdout)[-1]["status"] == "finished"
    assert (Path(argv[argv.index("-w") + 1]) / "made.txt").exists()


def test_a_run_offers_the_document_tools_without_importing_the_document_package(
        place: Place) -> None:
    """The model is offered every installed document tool (its spec is plain data) and
    the run imports none of `harness_core.documents` until one is called."""
    script = ("import sys\n"
              "from harness_core.tools import default_toolbox\n"
              "names = default_toolbox().names()\n"
              "print(' '.join(sorted(names)))\n"
              "print(any(m.startswith('harness_core.documents') for m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, env=place.env()).stdout.splitlines()
    assert {"xlsx_read", "pdf_write", "view_image"} <= set(out[0].split())
    assert out[1] == "False"


def test_a_run_with_a_gate_loads_the_gate_runner(place: Place, tmp_path: Path) -> None:
    ws = _scripted(tmp_path / "gated", '[[contract.verify]]\ncommand = "test -f b.txt"\n')
    ran = place.io(["run", "say done", "-w", str(ws), "--json"], cwd=ws)
    assert ran.code == 0, ran.stderr
    end = json_lines(ran.stdout)[-1]
    assert end["verified"] is True and end["gates"][0]["passed"] is True
    assert "harness_core.verification" in ran.loaded
    assert ran.heavy == STORE | {"harness_core.verification"}


def test_a_run_that_calls_a_document_tool_loads_the_document_package(
        place: Place, tmp_path: Path) -> None:
    ws = _scripted(tmp_path / "docs", "", replay_line(
        "", ("xlsx_write", {"path": "t.xlsx", "sheets": [{"name": "S", "rows": [["a", 1]]}]})),
        replay_line("done"))
    ran = place.io(["run", "say done", "-w", str(ws), "--json"], cwd=ws)
    assert ran.code == 0, ran.stderr
    assert (ws / "t.xlsx").read_bytes()[:2] == b"PK"
    assert {"harness_core.documents", "harness_core.documents._xlsx", "openpyxl"} <= ran.loaded
    assert not {"docx", "pptx", "pypdf", "fpdf", "zxingcpp"} & ran.loaded  # only its library


def test_a_stored_image_is_read_again_through_the_document_package(tmp_path: Path) -> None:
    """A resumed conversation without images never imports `harness_core.documents`; one
    that holds an image whose bytes the store did not keep reads it again through it."""
    script = (
        "import sys\n"
        "from harness_core.messages import Media, Message, Role\n"
        "from harness_core.run._resume import stored_conversation\n"
        "from harness_core.workspace import Workspace\n"
        f"ws = Workspace({str(tmp_path)!r})\n"
        "plain = stored_conversation([Message.user('hi')], ws)\n"
        "print(plain[0].content, 'harness_core.documents' in sys.modules)\n"
        "image = Media('image/png', path='pic.png', source_sha256='0' * 64)\n"
        "back = stored_conversation([Message(Role.USER, 'look', media=(image,))], ws)\n"
        "print(len(back[0].media), 'harness_core.documents' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines == ["hi False", "0 True"]  # pic.png is gone: dropped, never a stale image
