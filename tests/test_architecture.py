"""The host boundary as an architecture test: every place io starts a process, or opens a
host path for writing, is listed here with the reason it may; anything else fails.

The scan is over the syntax tree of every module of `harness_core` and `io_harness_cli`
(not a grep: a call split over lines, an alias or a `from subprocess import Popen` is
still a call). What counts:

- **a process:** `subprocess.run/Popen/call/check_call/check_output/getoutput/
  getstatusoutput`, `os.system/popen/fork/forkpty/posix_spawn*/exec*/spawn*`,
  `asyncio.create_subprocess_*`, `anyio.open_process/run_process`, `pexpect.spawn/run`,
  `pty.spawn`, and the MCP SDK's `stdio_client` (which starts the server);
- **a write:** `open()` / `Path.open()` with a mode that writes (`w`, `a`, `x`, `+`, or
  a mode not written as a literal), `os.open` with flags that write (`O_WRONLY`,
  `O_RDWR`, `O_CREAT`, `O_APPEND`, `O_TRUNC`, or flags not spelled out), `write_text`,
  `write_bytes`, and `shutil.copy*/move/copytree`.

Each allowed site is (module, enclosing function, kind). A site that is allowed but no
longer found fails too, so the list stays the true list of host call sites;
docs/ARCHITECTURE.md ("The host boundary") draws the same list.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("harness_core", "io_harness_cli")

_SUBPROCESS = {"run", "Popen", "call", "check_call", "check_output", "getoutput",
               "getstatusoutput"}
_OS_PROCESS = {"system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp"}
_BARE_PROCESS = {"Popen", "stdio_client", "create_subprocess_exec", "create_subprocess_shell",
                 "execv", "execve", "execvp", "execvpe", "posix_spawn", "posix_spawnp",
                 "check_output", "check_call"}
_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC")
_SHUTIL_WRITES = {"copy", "copy2", "copyfile", "copytree", "move", "copyfileobj"}

HOST = "the host boundary itself (harness_core.host)"
SANDBOX = "a sandbox backend: it starts the agent's commands confined, which is its job"
RESOLVER = "the workspace resolver: opens under the root by no-follow folder descriptors"

ALLOWED: dict[tuple[str, str, str], str] = {
    # ---- processes -------------------------------------------------------------------
    ("harness_core/host/_process.py", "run_helper", "process"): HOST,
    ("harness_core/host/_process.py", "stdio_transport", "process"): HOST,
    ("harness_core/sandbox/_process.py", "PosixLauncher.popen", "process"): SANDBOX,
    ("harness_core/sandbox/_windows.py", "WindowsLauncher.popen", "process"): SANDBOX,
    ("harness_core/sandbox/_box.py", "Resident.__init__", "process"):
        SANDBOX + " (the resident launcher that forks the confined commands)",
    ("harness_core/sandbox/_inner.py", "Launcher.fork_spare", "process"):
        SANDBOX + " (runs inside the sandbox: forks a spare launcher there)",
    ("harness_core/sandbox/_inner.py", "_execute", "process"):
        SANDBOX + " (runs inside the sandbox: execs the confined command)",
    ("harness_core/documents/_pdf_worker.py", "_poppler", "process"):
        "runs inside io's PDF worker (a script that imports nothing of io's, started by"
        " host.run_helper in io's private folder): pdftotext by absolute path, PDF on stdin",
    ("harness_core/sandbox/_linux.py", "_run_quietly", "process"):
        "probes bwrap/unshare with a fixed argv io chose (`true`), in no workspace",
    # ---- writes ----------------------------------------------------------------------
    ("harness_core/host/_files.py", "_write", "write"): HOST,
    ("harness_core/workspace.py", "Workspace.write_text", "write"): RESOLVER,
    ("harness_core/workspace.py", "_Dir.open", "write"): RESOLVER,
    ("harness_core/workspace.py", "Workspace.write_bytes", "write"): RESOLVER,
    ("harness_core/tools/_files.py", "WriteFile.run", "write"):
        "write_file: through the workspace resolver (ctx.workspace), after the policy",
    ("harness_core/tools/_files.py", "EditFile.run", "write"):
        "edit_file: through the workspace resolver (ctx.workspace), after the policy",
    ("harness_core/documents/_common.py", "write_output", "write"):
        "a document tool's output: through the workspace resolver, after the policy",
    ("harness_core/shell/_runner.py", "Execution._spawn", "write"):
        "a shell redirect of the agent's command: checked by the policy, opened with"
        " O_NOFOLLOW under the workspace",
    ("harness_core/shell/_handles.py", "HandleRegistry.start", "write"):
        "a background handle's capture file: O_EXCL in io's private state folder",
    ("harness_core/sandbox/_resident.py", "_stdio", "write"):
        "/dev/null for a confined command's unused stdio",
    ("harness_core/sandbox/_placeholders.py", "_create", "write"):
        "the sandbox's placeholders: O_EXCL|O_NOFOLLOW, recorded in the ledger first",
    ("harness_core/sandbox/_ledger.py", "Ledger._file", "write"):
        "the placeholder ledger in io's state folder (0600)",
    ("harness_core/sandbox/_ledger.py", "Ledger._compact", "write"):
        "the placeholder ledger's compaction, beside the ledger in io's state folder",
    ("harness_core/sandbox/_sweep.py", "_remove_leftovers", "write"):
        "appends 'released' and 'renamed' lines to the ledger in io's state folder",
    ("harness_core/sandbox/_cgroup.py", "PidsCgroup.create", "write"):
        "cgroupfs control files (pids.max), not a file the agent can name",
    ("harness_core/sandbox/_cgroup.py", "PidsCgroup.admit", "write"):
        "cgroupfs control files (cgroup.procs)",
    ("harness_core/sandbox/_cgroup.py", "PidsCgroup.kill_all", "write"):
        "cgroupfs control files (cgroup.kill)",
    ("harness_core/sandbox/_inner.py", "Cgroups.create", "write"):
        "cgroupfs control files, inside the sandbox",
    ("harness_core/mcp/_server.py", "ServerHandle.__init__", "write"):
        "a local MCP server's stderr log: a mkstemp file io just created",
    ("harness_core/run/_restore_files.py", "_write", "write"):
        "a restore writes recorded content back into the workspace, beside the target"
        " (checked no-follow by `_safe`) and renamed over it (docs/guide/rewind.md)",
    ("harness_core/run/_scanner.py", "Scanner._read", "write"):
        "a read: the snapshot scan opens each file with FILE_FLAGS (O_RDONLY|O_NOFOLLOW),"
        " imported, so the scan cannot see they do not write",
    ("harness_core/run/_scan.py", "_open", "write"):
        "a read: the no-follow snapshot walk's open, called only with FILE_FLAGS and"
        " _DIR_FLAGS (O_RDONLY|O_NOFOLLOW…), which the scan cannot follow into a parameter",
    ("harness_core/store/_clean.py", "OpenMarker.__init__", "write"):
        "the store's open marker beside the store file: O_EXCL|O_NOFOLLOW, 0600",
    ("harness_core/store/_clean.py", "_write_fingerprint", "write"):
        "the store's clean-close fingerprint beside the store file: O_EXCL|O_NOFOLLOW,"
        " then renamed",
    ("harness_core/run/_rewind.py", "_link_blobs", "write"):
        "copies blobs between io's snapshot folders",
    ("io_harness_cli/output.py", "drop", "write"):
        "/dev/null over stdout when the reader went away (EPIPE)",
    ("io_harness_cli/commands/_scratch.py", "make_scratch", "write"):
        "copies the workspace into a new mkdtemp folder, links copied as links",
    ("io_harness_cli/main.py", "write_index_help", "write"):
        "a developer's generator: rewrites the package's own _index_help.py",
    ("harness_core/config/_gen_plain.py", "main", "write"):
        "a developer's generator: rewrites the package's own config/_plain.py",
}
"""Every allowed (module, function, kind) with the reason it is allowed."""

PENDING: dict[tuple[str, str, str], str] = {
}


def _mode(call: ast.Call, position: int) -> str | None:
    for keyword in call.keywords:
        if keyword.arg == "mode":
            value = keyword.value
            return str(value.value) if isinstance(value, ast.Constant) else "?"
    if len(call.args) > position:
        value = call.args[position]
        return str(value.value) if isinstance(value, ast.Constant) else "?"
    return None


def _writes(mode: str | None) -> bool:
    return mode is not None and (mode == "?" or any(c in mode for c in "wax+"))


def _kind(call: ast.Call, names: dict[str, str]) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        if func.id in _BARE_PROCESS:
            return "process"
        if func.id == "open" and _writes(_mode(call, 1)):
            return "write"
        return None
    if not isinstance(func, ast.Attribute):
        return None
    base = func.value
    owner = base.id if isinstance(base, ast.Name) else (
        base.attr if isinstance(base, ast.Attribute) else None)
    name = func.attr
    if ((owner == "subprocess" and name in _SUBPROCESS)
            or (owner == "os" and (name in _OS_PROCESS or name.startswith(("exec", "spawn"))))
            or (owner == "asyncio" and name.startswith("create_subprocess"))
            or (owner == "anyio" and name in ("open_process", "run_process"))
            or (owner == "pexpect" and name in ("spawn", "run"))
            or (owner == "pty" and name == "spawn")):
        return "process"
    if name in ("write_text", "write_bytes"):
        return "write"
    if owner == "shutil" and name in _SHUTIL_WRITES:
        return "write"
    if owner == "os" and name == "open":
        return "write" if _write_flags(call, names) else None
    if name == "open" and (_writes(_literal_mode(call)) or any(
            flag in ast.unparse(arg) for arg in call.args[1:] for flag in _WRITE_FLAGS)):
        return "write"  # a literal mode, or a descriptor-relative open with write flags
    return None


def _literal_mode(call: ast.Call) -> str | None:
    """The mode of `thing.open(...)`: a literal first argument or `mode=`; a method named
    open whose first argument is no string (`zipfile.open(info)`) opens nothing on disk."""
    for keyword in call.keywords:
        if keyword.arg == "mode":
            value = keyword.value
            return str(value.value) if isinstance(value, ast.Constant) else "?"
    if call.args and isinstance(call.args[0], ast.Constant) and isinstance(
            call.args[0].value, str):
        return call.args[0].value
    return None


def _write_flags(call: ast.Call, names: dict[str, str]) -> bool:
    """Whether `os.open`'s flags can write: spelled out, or through the names they are
    built from (in the function or the module); flags io cannot trace count as writing."""
    if len(call.args) < 2:
        return True
    text = ast.unparse(call.args[1])
    for _ in range(3):  # follow names a few assignments deep
        for word in list(names):
            if word in text and not word.startswith("O_"):
                text += " " + names.pop(word)
    if any(flag in text for flag in _WRITE_FLAGS):
        return True
    words = {w for w in text.replace("|", " ").replace("(", " ").replace(")", " ")
             .replace(",", " ").split()}
    known = {w for w in words if "O_" in w or w.startswith(("os.", "getattr", "_O"))}
    return not known


def _assignments(node: ast.AST) -> dict[str, str]:
    """`name -> source of its value` for every plain assignment under `node`."""
    out: dict[str, str] = {}
    for child in ast.walk(node):
        if isinstance(child, ast.Assign):
            for target in child.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = out.get(target.id, "") + " " + ast.unparse(child.value)
        elif isinstance(child, ast.AnnAssign) and isinstance(child.target, ast.Name) and (
                child.value is not None):
            out[child.target.id] = ast.unparse(child.value)
    return out


class _Finder(ast.NodeVisitor):
    def __init__(self, module: str) -> None:
        self.module = module
        self.scope: list[str] = []
        self.names: list[dict[str, str]] = []
        self.found: list[tuple[tuple[str, str, str], int]] = []

    def visit_Module(self, node: ast.Module) -> None:
        top = ast.Module(body=[n for n in node.body if isinstance(n, (ast.Assign, ast.AnnAssign))],
                         type_ignores=[])
        self.names.append(_assignments(top))
        self.generic_visit(node)

    def _enter(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.scope.append(f"{node.name}." if isinstance(node, ast.ClassDef) else node.name)
        self.names.append({**self.names[0], **_assignments(node)} if self.names else
                          _assignments(node))
        self.generic_visit(node)
        self.names.pop()
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _enter

    def visit_Call(self, node: ast.Call) -> None:
        kind = _kind(node, dict(self.names[-1]) if self.names else {})
        if kind is not None:
            self.found.append(((self.module, _site(self.scope), kind), node.lineno))
        self.generic_visit(node)


def _site(scope: list[str]) -> str:
    """`Class.method` or `function`: nested functions belong to the function they are in."""
    if not scope:
        return "<module>"
    if scope[0].endswith(".") and len(scope) >= 2:  # a class's method
        return scope[0] + scope[1].rstrip(".")
    return scope[0].rstrip(".")


def host_call_sites() -> dict[tuple[str, str, str], list[int]]:
    """Every process start and host write in the two packages, with its line numbers."""
    sites: dict[tuple[str, str, str], list[int]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = path.relative_to(ROOT).as_posix()
            finder = _Finder(module)
            finder.visit(ast.parse(path.read_text(encoding="utf-8"), filename=module))
            for site, line in finder.found:
                sites.setdefault(site, []).append(line)
    return sites


def test_every_host_process_and_write_is_a_listed_call_site() -> None:
    sites = host_call_sites()
    listed = ALLOWED | PENDING
    unlisted = sorted(f"{m}:{lines[0]} {f} ({k})" for (m, f, k), lines in sites.items()
                      if (m, f, k) not in listed)
    assert not unlisted, (
        "a process or host write outside the host boundary: go through harness_core.host"
        " (run_helper, host_launcher, stdio_transport, write_operator_file), or list the"
        " site in tests/test_architecture.py with its reason:\n" + "\n".join(unlisted))


def test_no_listed_site_is_stale() -> None:
    sites = host_call_sites()
    stale = sorted(f"{m} {f} ({k})" for (m, f, k) in ALLOWED | PENDING
                   if (m, f, k) not in sites)
    assert not stale, "listed but no longer found (remove it from the list):\n" + "\n".join(
        stale)


def test_every_listed_site_has_a_reason() -> None:
    assert all(reason.strip() for reason in (ALLOWED | PENDING).values())


def test_the_scan_sees_what_it_must(tmp_path: Path) -> None:
    """The detector itself: each spelling of a process or a write is found, reads are not."""
    source = '''
import os, subprocess, asyncio, shutil
from subprocess import Popen
def a(): subprocess.run(["x"])
def b(): Popen(["x"])
def c(): os.execve("x", [], {})
async def d(): await asyncio.create_subprocess_exec("x")
def e(): open("f", "w")
def f(p): p.write_text("x")
def g(): os.open("f", os.O_WRONLY | os.O_CREAT)
def h(m): open("f", m)
def i(): shutil.copyfile("a", "b")
def j(): os.posix_spawn("x", [], {})
def k(): stdio_client(params)
def r1(): open("f")
def r2(): open("f", "rb")
def r3(): os.open("f", os.O_RDONLY | os.O_CLOEXEC)
def r4(archive, info): archive.open(info)
def r5():
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    os.open("f", flags)
def l():
    flags = os.O_WRONLY | os.O_CREAT
    os.open("f", flags)
'''
    finder = _Finder("m.py")
    finder.visit(ast.parse(source))
    found = {site[1]: site[2] for site, _ in finder.found}
    assert found == {"a": "process", "b": "process", "c": "process", "d": "process",
                     "e": "write", "f": "write", "g": "write", "h": "write", "i": "write",
                     "j": "process", "k": "process", "l": "write"}
