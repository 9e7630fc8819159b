"""Python started in safe-path mode, for gates and project-scope hooks.

A command that starts a Python interpreter directly (``python -m pytest``,
``python3 check.py``, ``python -c …``) runs so that the working directory and the
script's own folder are not first on ``sys.path``: a ``json.py`` planted beside a hook's
script, or a ``pytest.py`` in the workspace, cannot stand in for the standard library or
the runner. Both folders are appended after the standard library and the installed
packages instead, so a script's own helper modules still import.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

__all__ = ["safe_python_argv"]


_PYTHON = re.compile(r"^(?:python|pypy)(?:\d+(?:\.\d+)?)?$")
_PYTHON_VALUED = frozenset({"-W", "-X", "-Q"})
_SAFE_BOOT = (
    "import sys\n"
    "if sys.path and sys.path[0] == '': del sys.path[0]\n"
    "import os\n"
    "mode, target = sys.argv[1], sys.argv[2]\n"
    "del sys.argv[1:3]\n"
    "sys.path.append(os.getcwd())\n"
    "import runpy\n"
    "if mode == 'm':\n"
    "    sys.argv[0] = '-m'\n"
    "    runpy._run_module_as_main(target)\n"
    "elif mode == 's':\n"
    "    sys.argv[0] = target\n"
    "    sys.path.append(os.path.dirname(os.path.abspath(target)))\n"
    "    runpy.run_path(target, run_name='__main__')\n"
    "else:\n"
    "    import builtins\n"
    "    sys.argv[0] = '-c'\n"
    "    exec(compile(target, '<string>', 'exec'),"
    " {'__name__': '__main__', '__builtins__': builtins})\n"
)
"""What a Python gate runs first, through ``-c``: before importing anything that is not
already loaded it drops the working directory from the front of ``sys.path``, then
appends it at the end and runs the module, script or code the gate named (``-m`` runs
through the same `runpy` function the interpreter's own ``-m`` uses). It works on every
Python 3, unlike ``-P`` (3.11+)."""


def safe_python_argv(argv: Sequence[str], pycache: str | None = None) -> list[str]:
    """`argv` with a directly started Python interpreter put in safe-path mode.

    Anything else (``pytest``, ``sh -c …``, an interpreter reading stdin) is returned
    unchanged: a ``pytest`` console script puts its own directory first, not the
    workspace.

    Args:
        argv: The gate's argv.
        pycache: A directory outside the workspace for the gate's bytecode
            (``-X pycache_prefix``); None leaves bytecode where Python puts it.

    Returns:
        The argv to start.
    """
    if not argv or not _PYTHON.match(os.path.basename(argv[0])):
        return list(argv)
    i = 1
    while i < len(argv) and argv[i].startswith("-") and argv[i] not in ("-m", "-c", "-"):
        i += 2 if argv[i] in _PYTHON_VALUED else 1
    if i >= len(argv) or argv[i] == "-" or (argv[i] in ("-m", "-c") and i + 1 >= len(argv)):
        return list(argv)
    if argv[i] in ("-m", "-c"):
        mode, target, rest = argv[i][1], argv[i + 1], argv[i + 2:]
    else:
        mode, target, rest = "s", argv[i], argv[i + 1:]
    prefix = ["-X", f"pycache_prefix={pycache}"] if pycache else []
    return [argv[0], *argv[1:i], "-s", *prefix, "-c", _SAFE_BOOT, mode, target, *rest]
