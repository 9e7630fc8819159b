"""Toolchain detection over committed fixture trees (tests/fixtures/toolchain), one per
ecosystem and package manager, plus a monorepo: the table below is the expectation."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness_core import Toolchain, Workspace, detect_toolchain, survey_toolchain
from tests.conftest import run_io

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "toolchain"

# fixture: (ecosystem, package manager, test, build, lint, marker)
TABLE: dict[str, tuple[str, str, str | None, str | None, str | None, str]] = {
    "python-uv": ("python", "uv", "uv run pytest", "uv build", "uv run ruff check .",
                  "pyproject.toml"),
    "python-poetry": ("python", "poetry", "poetry run pytest", "poetry build",
                      "poetry run ruff check .", "pyproject.toml"),
    "python-pdm": ("python", "pdm", "pdm run pytest", "pdm build", "pdm run ruff check .",
                   "pyproject.toml"),
    "python-hatch": ("python", "hatch", "hatch test", "hatch build", "hatch fmt --check",
                     "pyproject.toml"),
    "python-pip": ("python", "pip", "python -m pytest -q", "python -m build", "ruff check .",
                   "pyproject.toml"),
    "python-requirements": ("python", "pip", "python -m pytest -q", None, "ruff check .",
                            "requirements.txt"),
    "python-setup": ("python", "pip", "python -m pytest -q", "python -m build", "ruff check .",
                     "setup.py"),
    "node-npm": ("node", "npm", "npm test", "npm run build", None, "package.json"),
    "node-pnpm": ("node", "pnpm", "pnpm test", None, "pnpm run lint", "package.json"),
    "node-yarn": ("node", "yarn", "yarn test", None, None, "package.json"),
    "node-bun": ("node", "bun", "bun test", None, None, "package.json"),
    "rust": ("rust", "cargo", "cargo test", "cargo build", "cargo clippy", "Cargo.toml"),
    "go": ("go", "go", "go test ./...", "go build ./...", "go vet ./...", "go.mod"),
    "java-maven": ("java", "maven", "./mvnw test", "./mvnw package", "./mvnw verify", "pom.xml"),
    "java-gradle": ("java", "gradle", "./gradlew test", "./gradlew build", "./gradlew check",
                    "build.gradle.kts"),
    "dotnet": ("dotnet", "dotnet", "dotnet test", "dotnet build",
               "dotnet format --verify-no-changes", "Demo.sln"),
    "ruby": ("ruby", "bundler", "bundle exec rspec", None, "bundle exec rubocop", "Gemfile"),
    "php": ("php", "composer", "composer test", "composer install", "composer validate",
            "composer.json"),
    "elixir": ("elixir", "mix", "mix test", "mix compile", "mix format --check-formatted",
               "mix.exs"),
    "swift": ("swift", "swiftpm", "swift test", "swift build", None, "Package.swift"),
    "c-cmake": ("c/c++", "cmake", "ctest --test-dir build",
                "cmake -S . -B build && cmake --build build", None, "CMakeLists.txt"),
    "c-meson": ("c/c++", "meson", "meson test -C build",
                "meson setup build && meson compile -C build", None, "meson.build"),
    "c-make": ("c/c++", "make", "make test", "make", None, "Makefile"),
}


def test_every_fixture_tree_is_in_the_table() -> None:
    trees = {p.name for p in FIXTURES.iterdir() if p.is_dir()} - {"monorepo"}
    assert trees == set(TABLE)


@pytest.mark.parametrize("fixture", sorted(TABLE))
def test_detection_of_each_ecosystem(fixture: str) -> None:
    ecosystem, manager, test, build, lint, marker = TABLE[fixture]
    found = detect_toolchain(Workspace(FIXTURES / fixture))
    assert (found.ecosystem, found.package_manager) == (ecosystem, manager)
    assert (found.test, found.build, found.lint) == (test, build, lint)
    assert found.marker == marker and found.reason


def test_a_monorepo_lists_its_nested_markers_and_skips_build_output() -> None:
    report = survey_toolchain(Workspace(FIXTURES / "monorepo"))
    listed = [(d.directory, d.toolchain.ecosystem, d.toolchain.package_manager)
              for d in report.detected]
    assert listed == [("", "node", "pnpm"), ("packages/api", "python", "poetry"),
                      ("packages/web", "node", "npm"), ("services/core", "rust", "cargo")]
    assert report.effective.ecosystem == "node"
    assert report.detected[1].toolchain.marker == "packages/api/pyproject.toml"


def test_toolchain_table_overrides_detection_and_says_so() -> None:
    report = survey_toolchain(Workspace(FIXTURES / "rust"), Toolchain(test="cargo nextest run"))
    assert report.effective.test == "cargo nextest run"
    assert report.effective.build == "cargo build"
    assert report.overridden == ("test",)
    assert "[toolchain] sets test" in str(report.effective.reason)


def test_an_empty_workspace_detects_nothing(tmp_path: Path) -> None:
    assert detect_toolchain(Workspace(tmp_path)) == Toolchain()
    assert survey_toolchain(Workspace(tmp_path)).detected == ()


def test_io_toolchain_prints_what_and_why(tmp_path: Path) -> None:
    ws = tmp_path / "mono"
    shutil.copytree(FIXTURES / "monorepo", ws)
    (ws / "io.toml").write_text('[toolchain]\nlint = "pnpm -r lint"\n')
    human = run_io(["toolchain", "-w", str(ws)])
    assert human.returncode == 0, human.stderr
    assert "toolchain: node (pnpm)" in human.stdout
    assert "pnpm-lock.yaml beside package.json" in human.stdout
    assert "pnpm -r lint [toolchain]" in human.stdout
    assert "packages/api" in human.stdout and "services/core" in human.stdout
    data = json.loads(run_io(["toolchain", "-w", str(ws), "--json"]).stdout)
    assert data["effective"]["lint"] == "pnpm -r lint" and data["overridden"] == ["lint"]
    assert [d["directory"] for d in data["detected"]] == [
        ".", "packages/api", "packages/web", "services/core"]
