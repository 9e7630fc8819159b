"""What `io run`'s command line set for a run holds after `io rewind` and `io resume`:
the model and step budget of `-m`/`--max-steps`, the scratch copy of `--scratch`, the
files' permissions a restore puts back."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line


def test_a_rewound_run_keeps_the_model_and_step_budget_its_command_line_gave(
        tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        *[replay_line(f"file {i}", ("write_file", {"path": f"f{i}.txt", "content": "x"}))
          for i in range(6)], replay_line("done")], toml_extra='[budget]\nmax_steps = 50\n')
    (ws / "io.toml").write_text((ws / "io.toml").read_text().replace(
        'script = "replay.jsonl"', 'script = "replay.jsonl"\nmodel = "from-toml"'))
    first = run_io(["run", "g", "-w", str(ws), "--json", "-m", "from-flag", "--max-steps", "3"])
    assert first.returncode == 3, first.stderr
    run_id = str(json_lines(first.stdout)[-1]["run_id"])
    # The branch goes on under the run's own budget and model (before: io.toml's 50 steps
    # and model, and exit 0 after running every step the budget had refused).
    rewound = run_io(["rewind", run_id, "--to", "1", "-w", str(ws), "--json"])
    events = json_lines(rewound.stdout)
    assert rewound.returncode == 3, rewound.stderr
    assert events[-1]["steps"] == 3 and "step budget of 3" in str(events[-1]["reason"])
    assert {e["request_model"] for e in events if e["kind"] == "completion"} == {"from-flag"}
