"""Detect the project's conventional commands from a marker file in the workspace root.

Detection is a default shown to the model; the harness never runs these commands on
its own. `[toolchain]` in io.toml overrides what is detected.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from harness_core.workspace import Workspace

__all__ = ["Toolchain", "detect"]


@dataclass(frozen=True)
class Toolchain:
    """Conventional commands of an ecosystem. None: unknown.

    Attributes:
        ecosystem: ``python``, ``node``, ``rust``, ``go`` … or None.
        test: The test command.
        build: The build command.
        lint: The lint command.
    """

    ecosystem: str | None = None
    test: str | None = None
    build: str | None = None
    lint: str | None = None

    def overridden_by(self, other: Toolchain) -> Toolchain:
        """This toolchain with every field `other` sets replaced."""
        changes = {k: v for k, v in vars(other).items() if v is not None}
        return replace(self, **changes)


_MARKERS: tuple[tuple[str, Toolchain], ...] = (
    ("pyproject.toml", Toolchain("python", "python -m pytest -q", None, "ruff check .")),
    ("setup.py", Toolchain("python", "python -m pytest -q")),
    ("package.json", Toolchain("node", "npm test", "npm run build", "npm run lint")),
    ("Cargo.toml", Toolchain("rust", "cargo test", "cargo build", "cargo clippy")),
    ("go.mod", Toolchain("go", "go test ./...", "go build ./...", "go vet ./...")),
)


def detect(workspace: Workspace) -> Toolchain:
    """The toolchain a marker file in the root implies, or an empty one."""
    for marker, toolchain in _MARKERS:
        if workspace.is_file(marker):
            return toolchain
    for name in workspace.list_names(""):
        if name.startswith("test_") and name.endswith(".py"):
            return Toolchain("python", "python -m pytest -q")
    return Toolchain()
