"""`io` as the README installs it, for bench/startup.py: a venv per source tree.

A checkout run with ``PYTHONPATH`` measures the developer's interpreter, not what a user
starts: on this machine the development environment's ``site-packages`` holds ``.pth``
files that run code at every start (the editable install's import finder, a certifi
hook that reads the CA bundle, setuptools' distutils shim), about 25 ms of each
`io` start that a user's ``pip install .`` does not have. Codex CLI is timed as its
native binary; io is timed as its own install:

* `install` builds the tree into a wheel (``pip wheel --no-deps``: the build backend
  named in pyproject.toml is fetched from the package index, as for a user) and installs
  it into a fresh venv made without the system's site-packages, so its ``.pyc`` files
  are compiled at install time as for a user.
* The dependencies are not downloaded again: one plain path line in a ``.pth`` of the
  venv puts the bench interpreter's ``site-packages`` after the venv's own, where the
  already-installed httpx, typer, pydantic ... are found. A path line is all ``site``
  does with it; the ``.pth`` files inside that folder are not read, because it is not
  a site folder of the venv. The versions are the same for every tree measured.
* `BOOT` starts `io` as its console script does (``from io_harness_cli.main import
  console``, or ``main`` in a tree older than ``console``), plus an exit hook that writes the process's peak RSS (VmHWM) to the file
  ``IO_BENCH_RSS`` names.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RSS_REPORT = """
import atexit, os, sys
def _report():
    with open("/proc/self/status") as f:
        peak = next(l.split()[1] for l in f if l.startswith("VmHWM:"))
    with open(os.environ["IO_BENCH_RSS"], "w") as out:
        out.write(peak)
atexit.register(_report)
sys.argv[0] = "io"
"""
"""The start of every child the benches time: an exit hook that writes the process's
peak RSS (VmHWM: ``ru_maxrss`` of a child spawned with vfork reports the parent's) to
``$IO_BENCH_RSS``."""

BOOT = RSS_REPORT + """
try:
    from io_harness_cli.main import console as entry
except ImportError:  # a tree from before the console entry point
    from io_harness_cli.main import main as entry
sys.exit(entry())
"""


@dataclass(frozen=True)
class Installed:
    """One tree installed into its own venv."""

    venv: Path
    source: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def cwd(self) -> Path:
        """An empty folder to start in: `python -c` puts it first on sys.path."""
        return self.venv / "empty"

    def env(self, store: Path) -> dict[str, str]:
        """The environment of a timed child: its own store, plain output, nothing that
        points Python at a checkout or a bytecode cache of its own."""
        env = {key: value for key, value in os.environ.items()
               if key not in ("PYTHONPATH", "PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE",
                              "PYTHONSTARTUP", "VIRTUAL_ENV")}
        env.update(IO_STORE=str(store), NO_COLOR="1")
        return env


def interpreter_note(python: Path) -> str:
    """Which interpreter `python` is, and how it was built: a Python whose executable
    links libpython as a shared library and was built without profile-guided
    optimization runs io's start-up measurably slower (about a fifth on this machine)
    than a distribution's statically linked, optimized build of the same version."""
    probe = "import sys; print(sys.version.split()[0], sys.executable)"
    words = subprocess.run([str(python), "-c", probe], capture_output=True, text=True,
                           check=True).stdout.split()
    libpython = subprocess.run(["ldd", os.path.realpath(words[1])], capture_output=True,
                               text=True).stdout
    linked = "libpython linked as a shared library" if "libpython" in libpython else (
        "libpython linked into the executable")
    return f"Python {words[0]} ({os.path.realpath(words[1])}; {linked})"


def install(source: Path, venv: Path, python: Path | None = None) -> Installed:
    """Install the source tree `source` (a folder with pyproject.toml) into a new venv of
    the interpreter `python` (default: the one running the bench)."""
    if venv.exists():
        shutil.rmtree(venv)
    wheels = venv.with_name(venv.name + "-wheel")
    shutil.rmtree(wheels, ignore_errors=True)
    _quiet([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels),
            str(source)])
    _quiet([str(python or sys.executable), "-m", "venv", "--without-pip", str(venv)])
    target = Installed(venv, source)
    wheel = next(wheels.glob("*.whl"))
    _quiet([sys.executable, "-m", "pip", "--python", str(target.python), "install", "-q",
            "--no-deps", "--no-index", str(wheel)])
    site = Path(subprocess.run(
        [str(target.python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip())
    (site / "_io_bench_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    target.cwd.mkdir()
    shutil.rmtree(wheels, ignore_errors=True)
    return target


def working_tree(tmp: Path) -> Path:
    """A copy of this checkout's files as they are now (tracked ones and new ones git does
    not ignore), so that building it leaves nothing behind in the checkout."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], capture_output=True, check=True).stdout
    target = tmp / "tree-working"
    for name in sorted(set(listed.decode().split("\0")) - {""}):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def _quiet(argv: list[str]) -> None:
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:5])} ... failed ({result.returncode}):"
                         f" {(result.stderr or result.stdout)[-2000:]}")
