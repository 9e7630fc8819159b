"""Detect the project's ecosystems and conventional commands from marker files.

One table (`_RULES`) maps a marker file to an ecosystem; a small function per
ecosystem reads the marker's neighbours (lockfiles, tool tables, wrapper scripts) to
pick the package manager and its test, build and lint commands, and says why. The
root decides the primary toolchain; markers in subdirectories (a monorepo's packages)
are listed beside it. Each ecosystem also names the files a test verdict usually
depends on (`GATE_INPUTS`), which the run uses to infer a verification gate's inputs.

Detection is a default shown to the model and to the operator (``io toolchain``); the
harness never runs these commands on its own, and `[toolchain]` in io.toml overrides
them. This module only reads the workspace.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from harness_core._record import record
from harness_core.workspace import Workspace

__all__ = ["GATE_INPUTS", "RUNNER_INPUTS", "DetectedToolchain", "Toolchain", "ToolchainReport", "detect", "survey"]


@record
class Toolchain:
    """Conventional commands of an ecosystem. None: unknown.

    Attributes:
        ecosystem: ``python``, ``node``, ``rust``, ``go``, ``java``, ``dotnet``,
            ``ruby``, ``php``, ``elixir``, ``swift``, ``c/c++`` … or None. May grow.
        test: The test command.
        build: The build command.
        lint: The lint command.
        package_manager: The tool that drives it (``uv``, ``pnpm``, ``gradle`` …).
        marker: The file that decided, relative to the root.
        reason: Why, in one line (``uv.lock beside pyproject.toml``).
    """

    ecosystem: str | None = None
    test: str | None = None
    build: str | None = None
    lint: str | None = None
    package_manager: str | None = None
    marker: str | None = None
    reason: str | None = None

    def overridden_by(self, other: Toolchain) -> Toolchain:
        """This toolchain with every field `other` sets replaced."""
        changes = {k: v for k, v in vars(other).items() if v is not None}
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        return dict(vars(self))


@record
class DetectedToolchain:
    """A marker found somewhere in the workspace.

    Attributes:
        directory: The directory holding the marker, relative to the root (``""``: root).
        toolchain: What it implies (commands run from that directory).
    """

    directory: str
    toolchain: Toolchain

    def to_json(self) -> dict[str, Any]:
        return {"directory": self.directory or ".", **self.toolchain.to_json()}


@record
class ToolchainReport:
    """Everything detection found, and what the run will use.

    Attributes:
        effective: The root's primary toolchain with the `[toolchain]` overrides applied.
        detected: Every marker found, the root's first (in table order), then nested.
        overridden: Fields `[toolchain]` set (their values replace detection).
    """

    effective: Toolchain
    detected: tuple[DetectedToolchain, ...] = ()
    overridden: tuple[str, ...] = ()

    @property
    def root(self) -> tuple[Toolchain, ...]:
        """The toolchains detected at the root, primary first."""
        return tuple(d.toolchain for d in self.detected if not d.directory)

    def to_json(self) -> dict[str, Any]:
        return {
            "effective": self.effective.to_json(),
            "overridden": list(self.overridden),
            "detected": [d.to_json() for d in self.detected],
        }


GATE_INPUTS: dict[str, tuple[str, ...]] = {
    "python": ("tests/**", "**/test_*.py", "**/*_test.py", "**/conftest.py", "pyproject.toml",
               "setup.cfg", "pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini",
               "tox.ini", "noxfile.py"),
    "node": ("package.json", "**/*.test.*", "**/__tests__/**", "jest.config.*",
             "vitest.config.*", "vitest.workspace.*"),
    "rust": ("tests/**", "Cargo.toml"),
    "go": ("**/*_test.go", "go.mod"),
    "java": ("src/test/**", "pom.xml", "build.gradle", "build.gradle.kts", "settings.gradle",
             "settings.gradle.kts"),
    "dotnet": ("**/*Tests/**", "**/*.Tests/**"),
    "ruby": ("spec/**", "test/**", "Gemfile", "Rakefile", ".rspec"),
    "php": ("tests/**", "composer.json", "phpunit.xml", "phpunit.xml.dist"),
    "elixir": ("test/**", "mix.exs"),
    "swift": ("Tests/**", "Package.swift"),
    "c/c++": ("tests/**", "test/**", "CMakeLists.txt", "meson.build", "Makefile"),
}
"""Per ecosystem, the path patterns (policy dialect, relative to the marker's directory)
of files a test verdict usually depends on: a gate's inputs when it names none."""

_PYTHON_START = ("**/sitecustomize.py", "**/usercustomize.py", "**/*.pth",
                 "**/*.dist-info/**", "**/*.egg-info/**")
"""What a Python interpreter may run before the gate's own code, wherever it lies: a
distribution's metadata in a folder on ``sys.path`` (the workspace root is one) names
entry points that runners load on their own (a ``pytest11`` plugin)."""
_PYTEST = ("**/conftest.py", "pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini",
           "tox.ini", "setup.cfg",
           "pyproject.toml", "tests/**", "test/**", "**/test_*.py", "**/*_test.py",
           "noxfile.py", "pytest.py", "pytest/**", "_pytest/**", "py.py", "pluggy.py",
           "pluggy/**", *_PYTHON_START)
_NODE = ("package.json", "package-lock.json", "npm-shrinkwrap.json", "pnpm-lock.yaml",
         "pnpm-workspace.yaml", "yarn.lock", "bun.lock", "bun.lockb", ".npmrc", ".yarnrc",
         ".yarnrc.yml", "**/*.test.*", "**/*.spec.*", "**/__tests__/**", "test/**", "tests/**",
         "jest.config.*", "jest.setup.*", "vitest.config.*", "vitest.workspace.*",
         "vite.config.*", ".mocharc*", "babel.config.*", ".babelrc*", "tsconfig*.json")

RUNNER_INPUTS: dict[str, tuple[str, ...]] = {
    "python": _PYTHON_START,
    "pytest": _PYTEST,
    "unittest": ("**/test*.py", "tests/**", "test/**", "unittest.py", "unittest/**",
                 *_PYTHON_START),
    "tox": ("tox.ini", "tox.toml", *_PYTEST),
    "nox": _PYTEST,
    "coverage": (".coveragerc", *_PYTEST),
    "uv": ("pyproject.toml", "uv.lock", "uv.toml", ".python-version"),
    "poetry": ("pyproject.toml", "poetry.lock", "poetry.toml"),
    "pdm": ("pyproject.toml", "pdm.lock", "pdm.toml"),
    "pipenv": ("Pipfile", "Pipfile.lock"),
    "hatch": ("pyproject.toml", "hatch.toml"),
    "rye": ("pyproject.toml", "requirements.lock", "requirements-dev.lock"),
    "ruff": ("ruff.toml", ".ruff.toml", "pyproject.toml", *_PYTHON_START),
    "mypy": ("mypy.ini", ".mypy.ini", "setup.cfg", "pyproject.toml", *_PYTHON_START),
    "flake8": (".flake8", "setup.cfg", "tox.ini", *_PYTHON_START),
    "black": ("pyproject.toml", *_PYTHON_START),
    "pylint": (".pylintrc", "pylintrc", "pyproject.toml", "setup.cfg", *_PYTHON_START),
    "pyright": ("pyrightconfig.json", "pyproject.toml"),
    "node": _NODE,
    "eslint": ("eslint.config.*", ".eslintrc*", ".eslintignore", *_NODE),
    "tsc": _NODE,
    "prettier": (".prettierrc*", "prettier.config.*", ".prettierignore", *_NODE),
    "cargo": ("**/Cargo.toml", "Cargo.lock", "**/build.rs", "**/tests/**", "**/benches/**",
              ".cargo/config", ".cargo/config.toml", "rust-toolchain", "rust-toolchain.toml"),
    "go": ("go.mod", "go.sum", "go.work", "go.work.sum", "**/*_test.go", "**/testdata/**"),
    "make": ("Makefile", "GNUmakefile", "makefile", "**/*.mk"),
    "shell": (),
}
"""Per test runner or checker a gate command can start, the path patterns (relative to
the workspace root) of the files its verdict depends on beyond the code under test:
its configuration, the tests, and what could stand in for the runner itself (a
``pytest.py`` or ``sitecustomize.py`` in the workspace)."""


class _Dir:
    """One directory's file names, and its files read on demand (never beyond 256 KiB)."""

    def __init__(self, root: str, rel: str, names: frozenset[str]) -> None:
        self.root, self.rel, self.names = root, rel, names

    def path(self, name: str) -> str:
        return f"{self.rel}/{name}" if self.rel else name

    def text(self, name: str) -> str:
        try:
            with open(os.path.join(self.root, self.rel, name), "rb") as fh:
                return fh.read(256 * 1024).decode("utf-8", errors="replace")
        except OSError:
            return ""

    def has_dir(self, name: str) -> bool:
        try:
            return stat.S_ISDIR(os.lstat(os.path.join(self.root, self.rel, name)).st_mode)
        except OSError:
            return False

    def scripts(self, name: str) -> dict[str, Any]:
        try:
            data = json.loads(self.text(name) or "{}")
        except ValueError:
            return {}
        scripts = data.get("scripts") if isinstance(data, dict) else None
        return scripts if isinstance(scripts, dict) else {}


def _python(d: _Dir, marker: str) -> Toolchain:
    text = d.text(marker) if marker == "pyproject.toml" else ""
    managers = (
        ("uv", "uv.lock", "[tool.uv", ("uv run pytest", "uv build", "uv run ruff check .")),
        ("poetry", "poetry.lock", "[tool.poetry",
         ("poetry run pytest", "poetry build", "poetry run ruff check .")),
        ("pdm", "pdm.lock", "[tool.pdm", ("pdm run pytest", "pdm build", "pdm run ruff check .")),
        ("hatch", "hatch.toml", "[tool.hatch", ("hatch test", "hatch build", "hatch fmt --check")),
    )
    for name, lock, table, (test, build, lint) in managers:
        if lock in d.names:
            return Toolchain("python", test, build, lint, name, d.path(marker),
                             f"{lock} beside {marker}")
        if text and table in text:
            return Toolchain("python", test, build, lint, name, d.path(marker),
                             f"{marker} has a {table}] table")
    if marker == "requirements.txt":
        return Toolchain("python", "python -m pytest -q", None, "ruff check .", "pip",
                         d.path(marker), "requirements.txt lists pip dependencies")
    return Toolchain("python", "python -m pytest -q", "python -m build", "ruff check .", "pip",
                     d.path(marker), f"{marker} with no uv, poetry, pdm or hatch marker")


def _node(d: _Dir, marker: str) -> Toolchain:
    locks = (("pnpm-lock.yaml", "pnpm"), ("yarn.lock", "yarn"), ("bun.lockb", "bun"),
             ("bun.lock", "bun"), ("package-lock.json", "npm"), ("npm-shrinkwrap.json", "npm"))
    manager, why = "npm", "package.json with no lockfile (npm by default)"
    for lock, name in locks:
        if lock in d.names:
            manager, why = name, f"{lock} beside package.json"
            break
    scripts = d.scripts(marker)
    run = f"{manager} run"

    def script(name: str, command: str) -> str | None:
        return command if not scripts or name in scripts else None

    return Toolchain("node", script("test", f"{manager} test"), script("build", f"{run} build"),
                     script("lint", f"{run} lint"), manager, d.path(marker), why)


def _java(d: _Dir, marker: str) -> Toolchain:
    if marker == "pom.xml":
        mvn = "./mvnw" if "mvnw" in d.names else "mvn"
        return Toolchain("java", f"{mvn} test", f"{mvn} package", f"{mvn} verify", "maven",
                         d.path(marker), "pom.xml" + (" and the mvnw wrapper" if mvn != "mvn" else ""))
    gradle = "./gradlew" if "gradlew" in d.names else "gradle"
    return Toolchain("java", f"{gradle} test", f"{gradle} build", f"{gradle} check", "gradle",
                     d.path(marker), marker + (" and the gradlew wrapper" if gradle != "gradle" else ""))


def _ruby(d: _Dir, marker: str) -> Toolchain:
    rspec = ".rspec" in d.names or d.has_dir("spec")
    test = "bundle exec rspec" if rspec else "bundle exec rake test"
    why = "Gemfile" + (" and an rspec suite" if rspec else "")
    return Toolchain("ruby", test, None, "bundle exec rubocop", "bundler", d.path(marker), why)


def _php(d: _Dir, marker: str) -> Toolchain:
    test = "composer test" if "test" in d.scripts(marker) else "vendor/bin/phpunit"
    return Toolchain("php", test, "composer install", "composer validate", "composer",
                     d.path(marker), "composer.json")


def _fixed(ecosystem: str, manager: str, test: str | None, build: str | None,
           lint: str | None) -> Callable[[_Dir, str], Toolchain]:
    def make(d: _Dir, marker: str) -> Toolchain:
        return Toolchain(ecosystem, test, build, lint, manager, d.path(marker), marker)

    return make


_CMAKE = _fixed("c/c++", "cmake", "ctest --test-dir build",
                "cmake -S . -B build && cmake --build build", None)
_MESON = _fixed("c/c++", "meson", "meson test -C build",
                "meson setup build && meson compile -C build", None)

_RULES: tuple[tuple[str, Callable[[_Dir, str], Toolchain]], ...] = (
    ("pyproject.toml", _python),
    ("setup.py", _python),
    ("requirements.txt", _python),
    ("package.json", _node),
    ("Cargo.toml", _fixed("rust", "cargo", "cargo test", "cargo build", "cargo clippy")),
    ("go.mod", _fixed("go", "go", "go test ./...", "go build ./...", "go vet ./...")),
    ("pom.xml", _java),
    ("build.gradle", _java),
    ("build.gradle.kts", _java),
    ("*.sln", _fixed("dotnet", "dotnet", "dotnet test", "dotnet build",
                     "dotnet format --verify-no-changes")),
    ("*.csproj", _fixed("dotnet", "dotnet", "dotnet test", "dotnet build",
                        "dotnet format --verify-no-changes")),
    ("*.fsproj", _fixed("dotnet", "dotnet", "dotnet test", "dotnet build", None)),
    ("Gemfile", _ruby),
    ("composer.json", _php),
    ("mix.exs", _fixed("elixir", "mix", "mix test", "mix compile", "mix format --check-formatted")),
    ("Package.swift", _fixed("swift", "swiftpm", "swift test", "swift build", None)),
    ("CMakeLists.txt", _CMAKE),
    ("meson.build", _MESON),
    ("Makefile", _fixed("c/c++", "make", "make test", "make", None)),
)
"""(marker, reader) in priority order: the first root marker is the primary toolchain.
A ``*.ext`` marker matches any file with that suffix."""

_SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", "target", "build",
    "dist", "vendor", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "_build",
    "deps", ".build", "bin", "obj",
})
_MAX_DEPTH = 4
"""Directory levels below the root searched for nested markers (a monorepo's
``packages/<name>/`` sits at depth 2; deeper is rarely a package of its own)."""
_MAX_DIRS = 2000
"""Directories examined at most, so a huge tree cannot make detection slow."""


def _matches(marker: str, names: frozenset[str]) -> list[str]:
    if marker.startswith("*"):
        return sorted(n for n in names if n.endswith(marker[1:]) and len(n) > len(marker) - 1)
    return [marker] if marker in names else []


def _in_directory(d: _Dir) -> list[Toolchain]:
    found: list[Toolchain] = []
    seen: set[str] = set()
    for marker, read in _RULES:
        for name in _matches(marker, d.names):
            toolchain = read(d, name)
            key = toolchain.ecosystem or ""
            if key in seen:
                continue
            seen.add(key)
            found.append(toolchain)
    if not found and not d.rel and any(n.startswith("test_") and n.endswith(".py") for n in d.names):
        found.append(Toolchain("python", "python -m pytest -q", package_manager="pip",
                               marker=d.path(min(n for n in d.names if n.startswith("test_"))),
                               reason="test_*.py files and no other marker"))
    return found


def _directories(root: str) -> Iterator[_Dir]:
    """Each directory (root first, breadth first), with its file names; links not followed."""
    queue: list[tuple[str, int]] = [("", 0)]
    visited = 0
    while queue and visited < _MAX_DIRS:
        rel, depth = queue.pop(0)
        visited += 1
        try:
            with os.scandir(os.path.join(root, rel) if rel else root) as listing:
                entries = list(listing)
        except OSError:
            continue
        files: set[str] = set()
        for entry in sorted(entries, key=lambda e: e.name):
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth < _MAX_DEPTH and entry.name not in _SKIP_DIRS \
                            and not entry.name.startswith("."):
                        queue.append((f"{rel}/{entry.name}" if rel else entry.name, depth + 1))
                elif entry.is_file(follow_symlinks=False):
                    files.add(entry.name)
            except OSError:
                continue
        yield _Dir(root, rel, frozenset(files))


def survey(workspace: Workspace, override: Toolchain | None = None) -> ToolchainReport:
    """Every marker in the workspace (root and nested), and the toolchain the run uses.

    Args:
        workspace: The workspace to examine.
        override: The `[toolchain]` table; its set fields replace detection.

    Returns:
        The report: the effective toolchain, everything detected, what was overridden.
    """
    detected: list[DetectedToolchain] = []
    for directory in _directories(str(workspace.root)):
        detected.extend(DetectedToolchain(directory.rel, t) for t in _in_directory(directory))
    root = [d.toolchain for d in detected if not d.directory]
    primary = root[0] if root else Toolchain()
    override = override or Toolchain()
    fields_set = tuple(k for k, v in vars(override).items() if v is not None)
    effective = primary.overridden_by(override)
    if fields_set and "reason" not in fields_set:
        effective = replace(effective, reason=(primary.reason + "; " if primary.reason else "")
                            + "[toolchain] sets " + ", ".join(fields_set))
    return ToolchainReport(effective, tuple(detected), fields_set)


def detect(workspace: Workspace) -> Toolchain:
    """The toolchain the root's markers imply (the primary one), or an empty one."""
    found = _in_directory(next(_directories(str(workspace.root)), _Dir("", "", frozenset())))
    return found[0] if found else Toolchain()

