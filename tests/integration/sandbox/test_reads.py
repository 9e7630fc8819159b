"""Read confinement through `io tool`: deny_read, the home directory, secret stores, the store.

Each payload runs through the real CLI under the native backend and, as the negative
control, under `backend = "off"`, where the same payload shows the leak.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_core.sandbox import Selected
from tests.conftest import io_cmd, run_io

SECRET = "TOPSECRET-canary-7d1f"
PY_READ = (
    "import sys\n"
    "for p in sys.argv[1:]:\n"
    "    try:\n"
    "        print(p, open(p).read().strip() or '<empty>')\n"
    "    except OSError as e:\n"
    "        print(p, type(e).__name__)\n"
)


def write_config(ws: Path, backend: str, extra: str = "") -> None:
    (ws / "io.toml").write_text(
        f'[policy]\ntier = "full"\ndeny_read = ["secrets/**", "**/*.pem"]\n\n'
        f'[sandbox]\nbackend = "{backend}"\n{extra}\n'
    )


def tool(ws: Path, name: str, args: dict[str, Any], env: dict[str, str] | None = None
         ) -> dict[str, Any]:
    base = {"IO_STORE": str(ws.parent / "state.db")}
    result = run_io(["tool", name, "--json", "--args", json.dumps(args)], cwd=ws,
                    env={**base, **(env or {})})
    assert result.returncode in (0, 1), result.stderr
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def stdout_of(outcome: dict[str, Any]) -> str:
    return str(outcome.get("output", ""))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "secrets").mkdir(parents=True)
    (root / "secrets" / "prod.env").write_text(SECRET)
    (root / "keys").mkdir()
    (root / "keys" / "server.pem").write_text(SECRET)
    (root / "ok.txt").write_text("visible")
    os.link(root / "secrets" / "prod.env", root / "old-hard-link")
    return root


PAYLOADS = {
    "cat": ("shell", {"line": "cat secrets/prod.env"}),
    "head": ("shell", {"line": "head -n 1 secrets/prod.env"}),
    "python-open": ("exec", {"argv": ["python3", "-c", "print(open('secrets/prod.env').read())"]}),
    "glob-pattern": ("exec", {"argv": ["cat", "keys/server.pem"]}),
    "existing-hard-link": ("exec", {"argv": ["cat", "old-hard-link"]}),
}


@pytest.mark.parametrize("payload", sorted(PAYLOADS))
def test_deny_read_holds_for_commands(ws: Path, native: Selected, payload: str) -> None:
    name, args = PAYLOADS[payload]
    write_config(ws, "native")
    inside = tool(ws, name, args)
    assert SECRET not in stdout_of(inside)
    assert inside["data"]["sandbox"]["backend"] == "linux"
    assert "reads" in inside["data"]["sandbox"]["enforced"]

    write_config(ws, "off")
    control = tool(ws, name, args)
    assert SECRET in stdout_of(control)
    assert "reads" not in control["data"]["sandbox"]["enforced"]


def test_a_symlink_or_hard_link_planted_by_the_agent_does_not_reach_it(
    ws: Path, native: Selected
) -> None:
    write_config(ws, "native")
    tool(ws, "exec", {"argv": ["ln", "-s", "secrets/prod.env", "planted"]})
    hard = tool(ws, "exec", {"argv": ["ln", "secrets/prod.env", "hard"]})
    assert hard["data"]["exit_status"] != 0
    assert SECRET not in stdout_of(tool(ws, "exec", {"argv": ["cat", "planted"]}))
    assert "visible" in stdout_of(tool(ws, "exec", {"argv": ["cat", "ok.txt"]}))

    write_config(ws, "off")
    assert SECRET in stdout_of(tool(ws, "exec", {"argv": ["cat", "planted"]}))
    assert tool(ws, "exec", {"argv": ["ln", "secrets/prod.env", "hard"]})["data"][
        "exit_status"] == 0
    assert SECRET in stdout_of(tool(ws, "exec", {"argv": ["cat", "hard"]}))


def test_a_file_created_later_under_a_denied_pattern_is_masked(
    ws: Path, native: Selected
) -> None:
    write_config(ws, "native")
    (ws / "late.pem").write_text(SECRET)
    assert SECRET not in stdout_of(tool(ws, "exec", {"argv": ["cat", "late.pem"]}))


@pytest.fixture
def home() -> Iterator[Path]:
    """A fake home outside /tmp (which the sandbox replaces anyway)."""
    path = Path(tempfile.mkdtemp(prefix="io-home-", dir="/var/tmp"))
    (path / ".ssh").mkdir()
    (path / ".ssh" / "id_ed25519").write_text(SECRET)
    (path / ".aws").mkdir()
    (path / ".aws" / "credentials").write_text(SECRET)
    (path / ".netrc").write_text(SECRET)
    (path / "notes.txt").write_text(SECRET)
    (path / "shared.txt").write_text("shared-by-read-paths")
    (path / ".cargo" / "bin").mkdir(parents=True)
    (path / ".cargo" / "bin" / "tool").write_text("toolchain")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_home_directory_and_secret_stores_are_hidden(
    ws: Path, home: Path, native: Selected
) -> None:
    paths = [str(home / p) for p in (".ssh/id_ed25519", ".aws/credentials", ".netrc",
                                     "notes.txt", "shared.txt", ".cargo/bin/tool")]
    args = {"argv": ["python3", "-c", PY_READ, *paths]}
    write_config(ws, "native", 'read_paths = ["~/shared.txt"]')
    inside = stdout_of(tool(ws, "exec", args, env={"HOME": str(home)}))
    assert SECRET not in inside
    assert "shared-by-read-paths" in inside
    assert "toolchain" in inside

    write_config(ws, "off")
    control = stdout_of(tool(ws, "exec", args, env={"HOME": str(home)}))
    assert control.count(SECRET) == 4


def test_the_store_is_hidden(ws: Path, native: Selected) -> None:
    store = ws / "state.db"
    store.write_text(SECRET)
    write_config(ws, "native")
    inside = tool(ws, "exec", {"argv": ["cat", "state.db"]}, env={"IO_STORE": str(store)})
    assert SECRET not in stdout_of(inside)
    write_config(ws, "off")
    control = tool(ws, "exec", {"argv": ["cat", "state.db"]}, env={"IO_STORE": str(store)})
    assert SECRET in stdout_of(control)


def test_a_workspace_that_is_the_home_still_hides_its_secret_stores(
    home: Path, native: Selected
) -> None:
    store = home / ".local" / "state" / "io" / "state.db"
    store.parent.mkdir(parents=True)
    store.write_text(SECRET)
    write_config(home, "native")
    args = {"argv": ["python3", "-c", PY_READ, ".ssh/id_ed25519", ".netrc",
                     str(store), "shared.txt"]}
    inside = tool(home, "exec", args, env={"HOME": str(home), "IO_STORE": str(store)})
    assert inside["data"]["exit_status"] == 0, inside["output"]
    assert SECRET not in stdout_of(inside)
    assert "shared-by-read-paths" in stdout_of(inside)


def _without_dac(ws: Path, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """`io tool` run as root without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, so a
    directory whose permissions are taken away cannot be listed by io (as for any user
    but root); the sandboxed command still runs as the directory's owner."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to take the permission-bypass capabilities away")
    drop = "-dac_override,-dac_read_search"
    result = subprocess.run(
        ["setpriv", f"--inh-caps={drop}", f"--bounding-set={drop}", *io_cmd(), "tool", name,
         "--json", "--args", json.dumps(args)],
        cwd=ws, env={**os.environ, "IO_STORE": str(ws.parent / "state.db")},
        capture_output=True, text=True, timeout=120)
    assert result.returncode in (0, 1), result.stderr
    out: dict[str, Any] = json.loads(result.stdout)
    return out


@pytest.mark.parametrize("where", ["reached-by-a-pattern", "hard-link-search",
                                   "links-of-a-locked-refused-folder",
                                   "listed-but-not-searchable"])
def test_a_directory_io_cannot_list_is_masked_not_skipped(
    tmp_path: Path, native: Selected, where: str
) -> None:
    # A folder of the operator's whose permissions were taken away: io cannot list it,
    # so it cannot tell what in it a rule refuses. The command runs as its owner and can
    # give them back (chmod), so skipping it leaked what it held; it is masked whole.
    root = tmp_path / "ws"
    locked = root / "locked"
    locked.mkdir(parents=True)
    if where in ("reached-by-a-pattern", "listed-but-not-searchable"):  # `**/*.pem`
        # reaches every folder; without its search bit a folder's names are listed but
        # what they are cannot be read
        (locked / "server.pem").write_text(SECRET)
        deny = '["**/*.pem"]'
        target = "locked/server.pem"
    elif where == "hard-link-search":  # `secrets/**` does not reach `locked`, but a
        (root / "secrets").mkdir()     # refused file has a second name in it
        (root / "secrets" / "prod.env").write_text(SECRET)
        os.link(root / "secrets" / "prod.env", locked / "copy")
        deny = '["secrets/**"]'
        target = "locked/copy"
    else:  # the refused folder is the locked one: its files' other names are unknown
        (locked / "prod.env").write_text(SECRET)
        (root / "other").mkdir()
        os.link(locked / "prod.env", root / "other" / "copy")
        deny = '["locked/**"]'
        target = "other/copy"
    (root / "io.toml").write_text(f'[policy]\ntier = "full"\ndeny_read = {deny}\n\n'
                                  '[sandbox]\nbackend = "native"\n')
    (root / "ok.txt").write_text("visible")
    locked.chmod(0o644 if where == "listed-but-not-searchable" else 0)
    try:
        stolen = _without_dac(root, "exec", {"argv": [
            "sh", "-c", f"chmod 700 locked; cat {target}; cat ok.txt"]})
    finally:
        locked.chmod(0o700)
    assert SECRET not in stdout_of(stolen)
    assert "visible" in stdout_of(stolen)  # the rest of the workspace is still there
    control = tool(root, "exec", {"argv": ["sh", "-c", f"chmod 700 locked; cat {target}"]})
    assert SECRET not in stdout_of(control)  # io can list it now: masked by name
