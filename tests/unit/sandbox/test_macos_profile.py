"""The sandbox-exec profile, as text (macOS is not exercised on this project's CI)."""

from __future__ import annotations

from pathlib import Path

from harness_core.sandbox import SandboxSpec
from harness_core.sandbox._macos import profile_text


def test_profile_denies_by_default_and_allows_writes_only_under_the_workdir(tmp_path: Path) -> None:
    text = profile_text(SandboxSpec(workdir=tmp_path))
    lines = text.splitlines()
    assert lines[:2] == ["(version 1)", "(deny default)"]
    assert f'(allow file-write* (subpath "{tmp_path.resolve()}"))' in lines
    assert [
        line for line in lines if line.startswith("(allow file-write*") and "subpath" in line
    ] == [f'(allow file-write* (subpath "{tmp_path}"))'] + (
        []
        if tmp_path.resolve() == tmp_path
        else [f'(allow file-write* (subpath "{tmp_path.resolve()}"))']
    )
    assert lines[-1] == "(deny network*)"


def test_network_true_allows_the_network(tmp_path: Path) -> None:
    assert (
        profile_text(SandboxSpec(workdir=tmp_path, network=True)).splitlines()[-1]
        == "(allow network*)"
    )


def test_protected_paths_are_denied_after_the_workdir_allow(tmp_path: Path) -> None:
    spec = SandboxSpec(workdir=tmp_path, read_only=(Path(".git/hooks"), tmp_path / "io.toml"))
    lines = profile_text(spec).splitlines()
    allow = lines.index(f'(allow file-write* (subpath "{tmp_path}"))')
    hooks = lines.index(f'(deny file-write* (subpath "{tmp_path / ".git" / "hooks"}"))')
    config = lines.index(f'(deny file-write* (subpath "{tmp_path / "io.toml"}"))')
    assert allow < hooks and allow < config  # SBPL: the last matching rule wins
    assert f'(deny file-write-unlink (literal "{tmp_path / ".git"}"))' in lines


def test_quotes_and_backslashes_in_paths_are_escaped(tmp_path: Path) -> None:
    odd = tmp_path / 'we"ird\\dir'
    odd.mkdir()
    text = profile_text(SandboxSpec(workdir=odd))
    assert '(subpath "' + str(odd).replace("\\", "\\\\").replace('"', '\\"') + '")' in text
