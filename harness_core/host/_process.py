"""Processes io starts on the host: hooks of the user and system scopes, local MCP
servers, git, the batch's `io run` children and io's own helpers (pdftotext, fc-match,
the PDF worker).

None of them runs in the sandbox, so none may run or load anything the agent can write.
Three rules, decided here and nowhere else:

- **Working directory.** A host process starts in `host_dir()`, a private folder the
  agent cannot write, never in the workspace; the workspace path travels in the payload
  and in `IO_WORKSPACE`. (git is the one exception: it runs in the repository with every
  program-naming setting refused first; see `tools/_git_repo.py`.)
- **Programs.** `check_host_command` refuses a program or script that lies in the
  workspace, a relative path (which would resolve in whatever folder the process starts
  in), and one that does not exist (the agent could create it later). Search paths in
  the environment (PATH, PYTHONPATH, NODE_PATH …) lose every entry inside the workspace
  and every relative one, and `PYTHONSAFEPATH=1` keeps a Python interpreter from putting
  a script's folder (or the current one) first on its import path.
- **Files.** `write_operator_file` (in `_files`) writes what io writes for the operator.

A command a project-scope hook names runs in the sandbox instead; `missing_files` tells
which of its files do not exist, so such a hook fails closed rather than running an
empty placeholder the sandbox binds over a missing path.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, TextIO

from harness_core.errors import HostBoundaryError

__all__ = ["SEARCH_PATH_VARIABLES", "check_host_command", "host_dir", "host_environment",
           "host_launcher", "is_inside", "missing_files", "run_helper", "script_arguments",
           "stdio_transport"]

SEARCH_PATH_VARIABLES = ("PATH", "PYTHONPATH", "NODE_PATH", "PERL5LIB", "PERLLIB", "RUBYLIB",
                         "GEM_PATH", "GEM_HOME", "CLASSPATH", "LD_LIBRARY_PATH", "LD_PRELOAD",
                         "DYLD_LIBRARY_PATH", "GOPATH", "R_LIBS", "R_LIBS_USER")
"""Variables whose entries name places a program is loaded from."""

_INTERPRETER = re.compile(r"^(python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|bash|sh|dash|zsh"
                          r"|ksh|fish|ruby|perl|php|Rscript|pwsh|lua|tclsh)(\.exe)?$")
"""Programs whose first operand is a script they run."""
_VALUE_OPTIONS = frozenset({"-m", "-c", "-e", "-W", "-X", "-O", "--eval", "--require", "-r",
                            "-I", "--import", "--loader"})
"""Interpreter options that take the next argument as their value."""
_SCRIPT_SUFFIX = re.compile(r"\.(py|pyw|sh|bash|js|mjs|cjs|ts|rb|pl|php|R|lua|tcl|ps1)$")


def is_inside(path: str | Path, root: str | Path) -> bool:
    """Whether `path` is `root` or lies under it, comparing both as written and resolved."""
    candidates = {os.path.abspath(path), os.path.realpath(path)}
    roots = {os.path.abspath(root), os.path.realpath(root)}
    return any(c == r or c.startswith(r.rstrip(os.sep) + os.sep)
               for c in candidates for r in roots)


def host_dir(workspace: Path | None = None) -> Path:
    """The private folder a host process starts in: `$TMPDIR/io-host-UID`, mode 0700,
    owned by this user, never a link; `/` when that folder would lie in the workspace.

    Raises:
        HostBoundaryError: The folder exists but is not this user's private folder.
    """
    base = Path(tempfile.gettempdir()) / f"io-host-{os.getuid() if hasattr(os, 'getuid') else 0}"
    if workspace is not None and is_inside(base, workspace):
        return Path(os.sep)
    try:
        base.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise HostBoundaryError(f"cannot make the host processes' folder {base}: "
                                f"{exc.strerror or exc}") from None
    info = os.lstat(base)
    import stat

    if (not stat.S_ISDIR(info.st_mode) or (hasattr(os, "getuid") and info.st_uid != os.getuid())
            or info.st_mode & 0o022):
        raise HostBoundaryError(f"{base} is not a private folder of this user (a link, another"
                                " user's, or writable by others); io will not start host"
                                " processes in it", hint=f"remove {base}")
    return base


def host_environment(env: Mapping[str, str], workspace: Path | None) -> dict[str, str]:
    """`env` for a host process: search paths without workspace or relative entries,
    `IO_WORKSPACE` naming the workspace, and `PYTHONSAFEPATH=1`."""
    out = dict(env)
    for name in SEARCH_PATH_VARIABLES:
        value = out.get(name)
        if value is None:
            continue
        kept = [entry for entry in value.split(os.pathsep)
                if entry and os.path.isabs(entry)
                and (workspace is None or not is_inside(entry, workspace))]
        if kept:
            out[name] = os.pathsep.join(kept)
        elif name == "PATH":
            out[name] = os.defpath
        else:
            del out[name]
    if workspace is not None:
        out["IO_WORKSPACE"] = str(workspace)
    out["PYTHONSAFEPATH"] = "1"
    return out


def script_arguments(argv: Sequence[str]) -> list[int]:
    """Indexes of the arguments of `argv` that name a file the program runs or loads:
    the script an interpreter is given, and any later argument written as a path to a
    script (`.py`, `.sh`, `.js` …)."""
    out: list[int] = []
    if _INTERPRETER.match(os.path.basename(argv[0])):
        index = 1
        while index < len(argv):
            arg = argv[index]
            if arg in ("-m", "-c", "-e", "--eval", "-"):
                break  # a module, inline code or stdin: no script file
            if arg in _VALUE_OPTIONS:
                index += 2
                continue
            if arg.startswith("-"):
                index += 1
                continue
            out.append(index)
            break
    for index, arg in enumerate(argv[1:], start=1):
        if index not in out and not arg.startswith("-") and _SCRIPT_SUFFIX.search(arg):
            out.append(index)
    return out


def missing_files(argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> list[str]:
    """What `argv` names that does not exist: the program (on PATH, or as a path from
    `cwd`) and each script argument (from `cwd`)."""
    missing: list[str] = []
    program = argv[0]
    if os.sep in program or (os.altsep and os.altsep in program):
        path = Path(program) if os.path.isabs(program) else cwd / program
        if not (path.is_file() and os.access(path, os.X_OK)):
            missing.append(program)
    elif shutil.which(program, path=env.get("PATH", os.defpath)) is None:
        missing.append(program)
    for index in script_arguments(argv):
        arg = argv[index]
        path = Path(arg) if os.path.isabs(arg) else cwd / arg
        if not path.is_file():
            missing.append(arg)
    return missing


def check_host_command(argv: Sequence[str], env: Mapping[str, str], *, workspace: Path,
                       what: str, cwd: Path | None = None, hint: str | None = None) -> str:
    """The program `argv` starts on the host, after checking nothing it names is the
    agent's.

    Args:
        argv: The command (no shell).
        env: Its environment, as `host_environment` made it.
        workspace: The run's workspace root.
        what: What the command is, for the message (``hook 'fmt'``, ``MCP server 'db'``).
        cwd: The folder (outside the workspace) it starts in, when the operator named one:
            relative paths resolve from it. None: a relative path is refused.
        hint: What the operator can do instead (a hook's default when None).

    Returns:
        The absolute path of its program.

    Raises:
        HostBoundaryError: A relative path (it would not resolve in the workspace, and a
            host process never starts there), a program or script in the workspace, or
            one that does not exist.
    """
    hint = hint or ("give an absolute path outside the workspace, or move the hook to the"
                    " project scope (io.toml), where it runs in the sandbox")
    if cwd is not None:
        scripts = set(script_arguments(argv)) | {0}
        argv = [os.path.join(cwd, arg) if index in scripts and (os.sep in arg or index)
                and not os.path.isabs(arg) else arg for index, arg in enumerate(argv)]
    program = argv[0]
    if os.sep in program or (os.altsep and os.altsep in program):
        if not os.path.isabs(program):
            raise HostBoundaryError(f"{what}: the program {program!r} is a relative path; a"
                                    " host process does not start in the workspace", hint=hint)
        resolved = program
    else:
        found = shutil.which(program, path=env.get("PATH", os.defpath))
        if found is None:
            raise HostBoundaryError(f"{what}: the program {program!r} was not found on PATH",
                                    hint=hint)
        resolved = os.path.abspath(found)
    _check_operands(argv, resolved, workspace=workspace, what=what, hint=hint)
    for index in script_arguments(argv):
        if not os.path.isfile(argv[index]):
            raise HostBoundaryError(f"{what}: the script {argv[index]!r} does not exist",
                                    hint=hint)
    if not (os.path.isfile(resolved) and os.access(resolved, os.X_OK)):
        raise HostBoundaryError(f"{what}: the program {resolved!r} does not exist or is not"
                                " executable", hint=hint)
    return resolved


def _check_operands(argv: Sequence[str], resolved: str, *, workspace: Path, what: str,
                    hint: str) -> None:
    """Refuse an operand that names a file in the workspace, or a relative script."""
    scripts = script_arguments(argv)
    for index, arg in enumerate(argv):
        named = arg.partition("=")[2] if index and arg.startswith("-") and "=" in arg else arg
        if not named or (index and named.startswith("-")):
            continue
        if index == 0:
            named = resolved
        elif not os.path.isabs(named):
            if index in scripts:
                raise HostBoundaryError(f"{what}: the script {arg!r} is a relative path; a host"
                                        " process does not start in the workspace", hint=hint)
            continue
        if is_inside(named, workspace) and not os.path.isdir(named):
            raise HostBoundaryError(f"{what}: {named!r} lies in the workspace, which the agent"
                                    " can write; io does not run it on the host", hint=hint)


def run_helper(argv: Sequence[str], *, cwd: Path | None = None,
               env: Mapping[str, str] | None = None, input: bytes | None = None,
               timeout: float | None = None, stdin: int | IO[Any] | None = None,
               preexec_fn: Callable[[], None] | None = None
               ) -> subprocess.CompletedProcess[bytes]:
    """Run one of io's own helper programs to completion on the host, output captured.

    Args:
        argv: The command: a program io chose (git, pdftotext, fc-match, this Python),
            never one the agent named.
        cwd: Where it starts; `host_dir()` when None. Only git passes the workspace.
        env: Its environment (this process's when None).
        input: Bytes for its stdin (stdin is /dev/null when None and `stdin` is None).
        timeout: Seconds before it is killed (`subprocess.TimeoutExpired`).
        stdin: Another stdin (a file object or descriptor) when `input` is None.
        preexec_fn: Run in the child before exec (the batch's die-with-parent signal).

    Raises:
        OSError: It could not start (FileNotFoundError: the program is missing).
        subprocess.TimeoutExpired: It ran past `timeout`.
    """
    start_in = cwd if cwd is not None else host_dir()
    return subprocess.run(list(argv), cwd=start_in, env=None if env is None else dict(env),
                          input=input, capture_output=True, timeout=timeout, check=False,
                          stdin=(subprocess.DEVNULL if stdin is None else stdin)
                          if input is None else None,
                          preexec_fn=preexec_fn)  # noqa: PLW1509 - die-with-parent only


def host_launcher(env: Mapping[str, str], workspace: Path) -> Any:
    """A launcher for host-scope hooks: no confinement, started in `host_dir()` with
    `host_environment(env)` (the launcher scrubs the rest, as for every command)."""
    from harness_core.sandbox import BackendChoice, SandboxConfig, SandboxSpec, launcher, select

    host_env = host_environment(env, workspace)
    off = select(SandboxConfig(backend=BackendChoice.OFF), env=host_env)
    return launcher(off, SandboxSpec(workdir=host_dir(workspace), env=host_env,
                                     env_allow=("IO_WORKSPACE", "PYTHONSAFEPATH")))


def stdio_transport(program: str, args: Sequence[str], env: Mapping[str, str], cwd: Path,
                    errlog: TextIO) -> Any:
    """The MCP SDK's stdio transport for a local server: `program` with `args`, started
    in `cwd` (a folder outside the workspace: `McpClient` checks it) and `env`."""
    from mcp import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=program, args=list(args), env=dict(env), cwd=cwd)
    return stdio_client(params, errlog=errlog)
