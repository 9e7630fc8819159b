"""What a driven run leaves besides its exit code (issue 23, found by the audit):

- a report that cannot be written once the run has ended (`$GITHUB_STEP_SUMMARY`,
  `--junit`, `--output-last-message`) is a warning: the run's own exit code stands (2
  would say "nothing ran") and `run_finished` is still the last JSON line;
- a run that waits (paused, interrupted, errored) has no final answer: stdout stays
  empty, `answer` is "" and `--output-last-message` writes an empty file, never the
  text of an earlier step;
- `io trace` shows an answer, a denial and an interrupt the operator gave, in text,
  JSON and HTML.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness_core import Store
from tests.conftest import run_io
from tests.integration.cli.helpers import json_lines, make_workspace, replay_line

_ASK = '[policy]\napproval = "ask"\n'


def test_an_unwritable_step_summary_keeps_the_run_code_and_run_finished(
        tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("done")] * 2, verify="false",
                        toml_extra="[budget]\nmax_steps = 1\n")
    for summary in (tmp_path / "no" / "dir" / "s.md", tmp_path):  # missing dir; a directory
        result = run_io(["run", "goal", "-w", str(ws), "--json"],
                        env={"GITHUB_STEP_SUMMARY": str(summary)})
        assert result.returncode == 1, result.stderr  # the failed gate, not "usage error"
        last = json_lines(result.stdout)[-1]
        assert (last["kind"], last["exit_code"]) == ("run_finished", 1)
        assert "io: warning: cannot write" in result.stderr and str(summary) in result.stderr
        assert "Traceback" not in result.stderr and "io: error:" not in result.stderr


def test_an_unwritable_report_file_keeps_exit_0_of_a_run_that_passed(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("all good")], verify="true")
    for flag in ("--junit", "--output-last-message"):
        target = tmp_path / f"report{flag}"  # its directory exists; the write still fails
        target.symlink_to(tmp_path / "gone" / "file")
        result = run_io(["run", "goal", "-w", str(ws), flag, str(target)])
        assert result.returncode == 0, (flag, result.stderr)
        assert result.stdout == "all good\n"
        assert "io: warning: cannot write" in result.stderr, (flag, result.stderr)
        assert "Traceback" not in result.stderr


def test_a_run_that_waits_prints_no_answer_of_an_earlier_step(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("asking", ("ask_question", {"question": "which colour?"})),
        replay_line("touching", ("exec", {"argv": ["touch", "a.txt"]})),
        replay_line("finished: blue"),
    ], toml_extra=_ASK)
    last = tmp_path / "last.txt"
    paused = run_io(["run", "goal", "-w", str(ws), "--output-last-message", str(last)])
    assert paused.returncode == 4 and paused.stdout == "", paused.stderr
    assert last.read_text() == ""  # written, empty: no final answer yet
    run_id = paused.stderr.split("io resume ")[1].split()[0]
    again = run_io(["resume", run_id, "-w", str(ws), "--answer", "blue", "--json"])
    assert again.returncode == 4, again.stderr
    ended = json_lines(again.stdout)[-1]
    assert ended["pause"]["kind"] == "approval" and ended["answer"] == ""  # not "asking"
    human = run_io(["resume", run_id, "-w", str(ws), "--answer", "x"])
    assert human.returncode == 2 and human.stdout == ""
    done = run_io(["resume", run_id, "-w", str(ws), "--deny", "--output-last-message",
                   str(last)])
    assert done.returncode == 0, done.stderr
    assert done.stdout == "finished: blue\n" and last.read_text() == "finished: blue"


def test_an_errored_run_prints_no_answer_of_an_earlier_step(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "w", [replay_line("looking", ("list_dir", {}))])
    result = run_io(["run", "goal", "-w", str(ws), "--json"])
    assert result.returncode == 1, result.stderr  # the replay runs out: errored
    last = json_lines(result.stdout)[-1]
    assert last["status"] == "errored" and last["answer"] == ""
    human = run_io(["run", "goal", "-w", str(ws)])
    assert human.returncode == 1 and human.stdout == "", human.stdout


def test_trace_shows_an_answer_a_denial_and_an_interrupt(tmp_path: Path,
                                                         isolated_env: Path) -> None:
    ws = make_workspace(tmp_path / "w", [
        replay_line("asking", ("ask_question", {"question": "which colour?"})),
        replay_line("touching", ("exec", {"argv": ["touch", "a.txt"]})),
        replay_line("more", ("exec", {"argv": ["touch", "b.txt"]})),
        replay_line("done"),
    ], toml_extra=_ASK)
    paused = run_io(["run", "goal", "-w", str(ws), "--json"])
    run_id = str(json_lines(paused.stdout)[-1]["run_id"])
    assert run_io(["resume", run_id, "-w", str(ws), "--answer", "blue"]).returncode == 4
    # An interrupt that raced the pause (queued after `io interrupt` checked the status):
    with Store(isolated_env / "state" / "io" / "state.db") as store:
        store.post_inbox(run_id, "interrupt", {})
    stopped = run_io(["resume", run_id, "-w", str(ws), "--deny"])
    assert stopped.returncode == 130, stopped.stderr
    assert run_io(["resume", run_id, "-w", str(ws)]).returncode == 4  # b.txt waits
    assert run_io(["resume", run_id, "-w", str(ws), "--approve"]).returncode == 0

    data = json.loads(run_io(["trace", run_id, "-w", str(ws), "--json"]).stdout)
    kinds = [(o["kind"], o["state"]) for o in data["operator"]]
    assert ("answer", "landed") in kinds and ("deny", "landed") in kinds
    assert ("interrupt", "landed") in kinds and ("approve", "landed") in kinds
    answer = next(o for o in data["operator"] if o["kind"] == "answer")
    assert answer["content"]["answer"] == "blue"

    text = run_io(["trace", run_id, "-w", str(ws)]).stdout
    section = text.split("operator input:\n", 1)[1]
    assert "answered: blue  (landed at step 0)" in section
    assert "denied: exec touch a.txt  (landed at step 1)" in section
    assert "interrupt" in section and "None" not in section

    page = tmp_path / "t.html"
    assert run_io(["trace", run_id, "-w", str(ws), "--html", "-o", str(page)]).returncode == 0
    body = page.read_text()
    for kind in ("answer", "deny", "interrupt", "approve", "resume"):
        assert f'data-operator="{kind}"' in body, kind


def test_a_decision_for_a_run_that_has_ended_is_refused_with_exit_2(tmp_path: Path) -> None:
    """A resume-all script that approves a run another job already finished is told so,
    instead of exit 0 for an approval that applied to nothing."""
    ws = make_workspace(tmp_path / "w", [replay_line("done")])
    done = run_io(["run", "goal", "-w", str(ws), "--json"])
    run_id = str(json_lines(done.stdout)[-1]["run_id"])
    for decision in (["--approve"], ["--deny"], ["--answer", "yes"]):
        refused = run_io(["resume", run_id, "-w", str(ws), *decision])
        assert refused.returncode == 2, (decision, refused.stderr)
        assert f"run {run_id} has ended (finished)" in refused.stderr
        assert "hint:" in refused.stderr and refused.stdout == ""
    plain = run_io(["resume", run_id, "-w", str(ws)])  # without a decision: its outcome
    assert plain.returncode == 0 and plain.stdout == "done\n", plain.stderr
