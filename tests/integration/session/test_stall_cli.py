"""Both stall signals through the real CLI: exit 3 with a message naming the call."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line


def test_a_call_repeating_while_the_workspace_stays_still_stops_with_exit_3(tmp_path: Path
                                                                           ) -> None:
    read = ("read_file", {"path": "notes.txt"})
    look: tuple[str, dict[str, object]] = ("list_dir", {})
    ws = make_workspace(tmp_path / "w", [
        replay_line("a", read), replay_line("b", look), replay_line("c", read),
        replay_line("d", look), replay_line("e", read), replay_line("never reached"),
    ], files={"notes.txt": "hello"})
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert result.returncode == 3, result.stderr
    last = json_lines(result.stdout)[-1]
    assert last["status"] == "stopped" and last["exit_code"] == 3
    assert "workspace did not change" in last["reason"]
    assert 'read_file:{"path": "notes.txt"}' in last["reason"]
    stall = [e for e in json_lines(result.stdout) if e["kind"] == "stall"]
    assert stall and stall[0]["call"].startswith("read_file")


def test_the_same_call_window_times_in_a_row_stops_even_while_the_workspace_moves(
        tmp_path: Path) -> None:
    write = ("write_file", {"path": "out.txt", "content": "same"})
    ws = make_workspace(tmp_path / "w", [replay_line(f"s{i}", write) for i in range(6)]
                        + [replay_line("never reached")],
                        toml_extra="[run]\nstall_window = 4\n")
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert result.returncode == 3, result.stderr
    last = json_lines(result.stdout)[-1]
    assert "repeated 4 times in a row" in last["reason"]
    assert 'write_file:{"content": "same", "path": "out.txt"}' in last["reason"]
    results = [e for e in json_lines(result.stdout) if e["kind"] == "tool_result"]
    assert len(results) == 4 and not any(r["is_error"] for r in results)
