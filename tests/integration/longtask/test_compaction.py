"""Compaction (#26): the examples/compaction replay forces two summaries; each is a
recorded step that spend and the trace count; a kill -9 after one was recorded resumes
without asking for it again; configurations that cannot compact are refused."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tests.conftest import REPO, io_cmd, run_io
from tests.integration.cli.helpers import json_lines

if TYPE_CHECKING:
    from tests.fakes.vendor_server import Turn


def _example(tmp_path: Path) -> Path:
    ws = tmp_path / "compaction"
    shutil.copytree(REPO / "examples" / "compaction", ws)
    return ws


def _store() -> Path:
    return Path(os.environ["IO_STORE"])


def test_example_compacts_twice_and_counts_both_summaries(tmp_path: Path) -> None:
    ws = _example(tmp_path)
    done = run_io(["run", "-w", str(ws), "--json"])
    assert done.returncode == 0, done.stderr
    events = json_lines(done.stdout)
    compactions = [e for e in events if e["kind"] == "compaction" and e["phase"] == "done"]
    assert [(c["step"], c["seq"]) for c in compactions] == [(3, 0), (6, 1)]
    assert all(c["size_after"] < c["threshold"] < c["size_before"] for c in compactions)
    run_id = str(events[-1]["run_id"])
    assert (ws / "notes" / "index.md").read_text().count(".md") == 3
    # The store keeps the whole conversation: every step's messages, none replaced.
    with sqlite3.connect(_store()) as db:
        steps = {r[0] for r in db.execute("SELECT DISTINCT step_index FROM messages"
                                          " WHERE run_id = ?", (run_id,))}
    assert steps == {-1, *range(8)}
    spend = json.loads(run_io(["spend", "--by", "run", "--json", "-w", str(ws)]).stdout)
    group = next(g for g in spend["groups"] if g["key"] == run_id)
    assert group["calls"] == 8 + 2
    assert group["completion_tokens"] == 90 + 80 + 120 + 60 + 70 + 60 + 90 + 50 + 60 + 30
    trace = json.loads(run_io(["trace", run_id, "--json"]).stdout)
    assert [c["usage"]["prompt_tokens"] for c in trace["compactions"]] == [5100, 5200]
    text = run_io(["trace", run_id]).stdout
    assert "before step 3: history 5030 tokens > threshold 5000" in text
    page = run_io(["trace", run_id, "--html", "-o", "-"]).stdout
    assert "Compactions" in page and "notes/index.md listing the three" in page


def test_elide_strategy_never_asks_for_a_summary(tmp_path: Path) -> None:
    ws = _example(tmp_path)
    toml = (ws / "io.toml").read_text().replace('strategy = "compact"', 'strategy = "elide"')
    (ws / "io.toml").write_text(toml)
    # The summary lines are not steps: with nothing asking for them the steps still line up.
    done = run_io(["run", "-w", str(ws), "--json"])
    assert done.returncode == 0, done.stderr
    assert not [e for e in json_lines(done.stdout) if e["kind"] == "compaction"]


def test_compact_without_a_known_window_is_refused(tmp_path: Path) -> None:
    ws = _example(tmp_path)
    toml = (ws / "io.toml").read_text().replace("window = 10000", "")
    (ws / "io.toml").write_text(toml)
    refused = run_io(["run", "-w", str(ws)])
    assert refused.returncode == 2, refused.stderr
    assert "context window of model 'scripted-replay'" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_threshold_outside_zero_to_one_is_refused(tmp_path: Path) -> None:
    ws = _example(tmp_path)
    toml = (ws / "io.toml").read_text().replace("threshold = 0.5", "threshold = 1.5")
    (ws / "io.toml").write_text(toml)
    refused = run_io(["run", "-w", str(ws)])
    assert refused.returncode == 2
    assert "threshold" in refused.stderr


def test_a_replay_without_the_summary_line_stops_the_run_clearly(tmp_path: Path) -> None:
    ws = _example(tmp_path)
    lines = (ws / "replay.jsonl").read_text().splitlines()
    (ws / "replay.jsonl").write_text("\n".join(
        line for line in lines if not (line.startswith('{"summary"') and "harbour" in line))
        + "\n")
    failed = run_io(["run", "-w", str(ws), "--json"])
    assert failed.returncode == 1, failed.stderr
    last = json_lines(failed.stdout)[-1]
    assert "no summary line before step 4" in last["reason"]


def _wait_for(query: str, deadline: float = 60.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            with sqlite3.connect(_store()) as db:
                if db.execute(query).fetchone()[0]:
                    return
        except sqlite3.Error:
            pass
        time.sleep(0.05)
    raise AssertionError(f"not reached: {query}")


def test_kill_after_a_recorded_compaction_resumes_without_a_second_summary(
        tmp_path: Path) -> None:
    ws = _example(tmp_path)
    toml = (ws / "io.toml").read_text().replace(
        'approval = "deny"', 'approval = "deny"\nallow_exec = ["sleep*"]')
    (ws / "io.toml").write_text(toml)
    lines = (ws / "replay.jsonl").read_text().splitlines()
    # Step 3 (the first after the first compaction) blocks, so the kill lands after the
    # compaction was recorded and before the step finished.
    lines[5] = json.dumps({"text": "waiting", "tool_calls": [
        {"name": "exec", "arguments": {"argv": ["sleep", "300"]}}],
        "usage": {"prompt_tokens": 1500, "completion_tokens": 70}})
    (ws / "replay.jsonl").write_text("\n".join(lines) + "\n")
    proc = subprocess.Popen([*io_cmd(), "run", "-w", str(ws), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        _wait_for("SELECT COUNT(*) FROM ledger WHERE step_index = 3 AND observation IS NULL")
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
        proc.communicate()
    with sqlite3.connect(_store()) as db:
        run_id, = db.execute("SELECT run_id FROM runs").fetchone()
        assert db.execute("SELECT COUNT(*) FROM compactions").fetchone()[0] == 1
    resumed = run_io(["resume", run_id, "--json"])
    assert resumed.returncode == 0, resumed.stderr
    events = json_lines(resumed.stdout)
    assert [e["step"] for e in events if e["kind"] == "compaction" and e["phase"] == "done"] \
        == [6]
    with sqlite3.connect(_store()) as db:
        assert [r[0] for r in db.execute("SELECT step_index FROM compactions ORDER BY seq")] \
            == [3, 6]


def _user_hook(home: Path, log: Path, answer: str) -> None:
    """A user-scope `pre_compact` hook (on the host) that logs its stdin and answers."""
    script = home / "pre_compact.py"
    script.write_text(
        "import json, sys\n"
        f"open({str(log)!r}, 'a').write(sys.stdin.read().strip() + '\\n')\n"
        f"{answer}\n")
    cfg = Path(os.environ["XDG_CONFIG_HOME"]) / "io" / "io.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(f'[[hooks]]\nname = "compact-guard"\nevent = "pre_compact"\n'
                   f'command = [{json.dumps(str(__import__("sys").executable))},'
                   f' {json.dumps(str(script))}]\n')


def test_a_pre_compact_hook_is_asked_before_each_summary_and_adds_its_context(
        tmp_path: Path) -> None:
    ws = _example(tmp_path)
    log = tmp_path / "hook.log"
    _user_hook(tmp_path, log, "print(json.dumps({'context': 'KEEP-CHAPTER-NAMES'}))")
    done = run_io(["run", "-w", str(ws), "--json"])
    assert done.returncode == 0, done.stderr
    asked = [json.loads(line) for line in log.read_text().splitlines()]
    assert [a["event"] for a in asked] == ["pre_compact", "pre_compact"]
    assert [a["step"] for a in asked] == [3, 6] and all(a["tokens"] > 5000 for a in asked)
    events = json_lines(done.stdout)
    assert len([e for e in events if e["kind"] == "compaction" and e["phase"] == "done"]) == 2
    # The hook's answer is a policy event named by the hook (layer "hook").
    run_id = str(events[-1]["run_id"])
    trace = json.loads(run_io(["trace", run_id, "--json"]).stdout)
    assert any(r.get("layer") == "hook" and r.get("rule") == "compact-guard"
               for r in trace["refusals"]), trace["refusals"]


def test_a_pre_compact_hook_that_refuses_skips_the_compaction(tmp_path: Path) -> None:
    ws = _example(tmp_path)
    log = tmp_path / "hook.log"
    _user_hook(tmp_path, log, "sys.stderr.write('no summaries here'); sys.exit(2)")
    done = run_io(["run", "-w", str(ws), "--json"])
    assert done.returncode == 0, done.stderr
    events = json_lines(done.stdout)
    phases = [e["phase"] for e in events if e["kind"] == "compaction"]
    assert "done" not in phases and phases.count("refused") >= 2
    refused = [e for e in events if e["kind"] == "compaction" and e["phase"] == "refused"]
    assert "no summaries here" in refused[0]["reason"]
    run_id = str(events[-1]["run_id"])
    assert json.loads(run_io(["trace", run_id, "--json"]).stdout)["compactions"] == []


def _summary_then_done() -> tuple[Turn, Turn]:
    """The model's summary of the two notes, then the run's last answer."""
    from tests.fakes.vendor_server import Turn

    return (Turn(text="SUMMARY: wrote n0.md and n1.md",
                 usage={"prompt_tokens": 70100, "completion_tokens": 30,
                        "total_tokens": 70130}),
            Turn(text="all done",
                 usage={"prompt_tokens": 900, "completion_tokens": 5, "total_tokens": 905}))


def _two_notes_then_over_half(ws: Path, base_url: str) -> tuple[Turn, Turn]:
    """io.toml for the loopback OpenAI fake at `base_url` (compaction at half of
    gpt-4o-mini's window, template `brief`), and the fake's first two turns: each writes
    a note, the second reporting 70,000 prompt tokens, so a summary is asked next."""
    from tests.fakes.vendor_server import FakeCall, Turn

    def write(step: int) -> FakeCall:
        return FakeCall(f"call_{step}", "write_file",
                        json.dumps({"path": f"n{step}.md", "content": f"note {step}\n"}))

    (ws / "io.toml").write_text(
        f'[provider]\nkind = "openai"\nmodel = "gpt-4o-mini"\n'
        f'base_url = "{base_url}"\napi_key = "${{env:FAKE_KEY}}"\n'
        '[policy]\ntier = "workspace-write"\napproval = "deny"\n'
        '[context]\nstrategy = "compact"\nthreshold = 0.5\nkeep_steps = 1\n'
        'compact_template = "brief"\n')
    return (
        Turn(text="first note", tool_calls=(write(0),),
             usage={"prompt_tokens": 120, "completion_tokens": 10, "total_tokens": 130}),
        Turn(text="second note", tool_calls=(write(1),),
             usage={"prompt_tokens": 70000, "completion_tokens": 20, "total_tokens": 70020}),
    )


def test_a_known_models_window_and_the_providers_count_decide_and_a_template_asks(
        tmp_path: Path) -> None:
    """Against a loopback OpenAI-compatible fake: the threshold is a share of the window
    io's model table gives gpt-4o-mini (128,000 tokens; no `[context] window`); the size
    is the provider's reported usage (70,000 prompt tokens, where the four-characters
    estimate of these few short messages is a few hundred); the summary is asked under
    the operator's template, with no tools, and the next request carries the summary in
    place of the older turns."""
    from tests.fakes.vendor_server import start_vendor_server

    ws = tmp_path / "ws"
    (ws / ".io" / "templates").mkdir(parents=True)
    (ws / ".io" / "templates" / "brief.md").write_text(
        "TEMPLATE-SUMMARY-ASK for the goal: {{goal}}. Keep file names.\n")
    with start_vendor_server("openai") as fake:
        fake.push(
            *_two_notes_then_over_half(ws, fake.base_url),
            *_summary_then_done(),
        )
        done = run_io(["run", "write the notes GOAL-7", "-w", str(ws), "--json"],
                      env={"FAKE_KEY": "sk-fake-compaction"})
        assert done.returncode == 0, done.stderr
        assert not fake.violations, fake.violations
        bodies = [r.body for r in fake.requests]
    assert len(bodies) == 4
    events = json_lines(done.stdout)
    compactions = [e for e in events if e["kind"] == "compaction" and e["phase"] == "done"]
    assert [(c["step"], c["threshold"]) for c in compactions] == [(2, 64000)]
    assert compactions[0]["size_before"] >= 70020
    ask = bodies[2]
    assert "tools" not in ask
    assert ask["messages"][-1]["content"].strip() == (
        "TEMPLATE-SUMMARY-ASK for the goal: write the notes GOAL-7. Keep file names.")
    sent = json.dumps(bodies[3]["messages"])
    assert "SUMMARY: wrote n0.md and n1.md" in sent
    assert "first note" not in sent and "second note" in sent
    assert (ws / "n0.md").is_file() and (ws / "n1.md").is_file()


def test_a_kill_during_the_summary_request_asks_for_the_summary_again(
        tmp_path: Path) -> None:
    """kill -9 while the summary request is in flight (nothing of it recorded): the resume
    asks for the summary again, records one compaction, and repeats no tool call."""
    from tests.fakes.vendor_server import Hang, start_vendor_server

    def is_summary_ask(body: dict[str, object]) -> bool:
        return "tools" not in body and "SUMMARY-ASK" in json.dumps(body["messages"])

    ws = tmp_path / "ws"
    (ws / ".io" / "templates").mkdir(parents=True)
    (ws / ".io" / "templates" / "brief.md").write_text("SUMMARY-ASK: {{goal}}\n")
    hang = Hang()
    with start_vendor_server("openai") as fake:
        fake.push(*_two_notes_then_over_half(ws, fake.base_url), hang)
        proc = subprocess.Popen([*io_cmd(), "run", "write the notes", "-w", str(ws), "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True,
                                env={**os.environ, "FAKE_KEY": "sk-fake-compaction"})
        try:
            end = time.monotonic() + 60
            while len(fake.requests) < 3 and proc.poll() is None and time.monotonic() < end:
                time.sleep(0.02)
            assert len(fake.requests) == 3, proc.communicate(timeout=30)
            assert is_summary_ask(fake.requests[2].body)
            os.killpg(proc.pid, signal.SIGKILL)
        finally:
            proc.wait(timeout=30)
            proc.communicate()
            hang.release.set()
        with sqlite3.connect(_store()) as db:
            run_id, = db.execute("SELECT run_id FROM runs").fetchone()
            assert db.execute("SELECT COUNT(*) FROM compactions").fetchone()[0] == 0
        fake.push(
            *_summary_then_done(),
        )
        resumed = run_io(["resume", run_id, "--json"], env={"FAKE_KEY": "sk-fake-compaction"})
        assert resumed.returncode == 0, resumed.stderr
        assert not fake.violations, fake.violations
        bodies = [r.body for r in fake.requests]
    assert len(bodies) == 5
    assert is_summary_ask(bodies[3])
    assert "SUMMARY: wrote n0.md and n1.md" in json.dumps(bodies[4]["messages"])
    events = json_lines(resumed.stdout)
    assert [e["step"] for e in events if e["kind"] == "compaction" and e["phase"] == "done"] \
        == [2]
    with sqlite3.connect(_store()) as db:
        assert [r[0] for r in db.execute("SELECT step_index FROM compactions")] == [2]
        assert db.execute("SELECT COUNT(*) FROM ledger WHERE run_id = ?",
                          (run_id,)).fetchone()[0] == 2
    assert (ws / "n0.md").read_text() == "note 0\n" and (ws / "n1.md").read_text() == "note 1\n"
