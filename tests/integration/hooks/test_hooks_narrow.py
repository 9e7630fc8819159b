"""A pre_tool hook can only narrow: it refuses what the policy allows, never opens what
the policy refuses; a hook that hangs, crashes or answers unreadably refuses (fail closed).
Real runs over a real store, the hooks real processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_core import ApproveAll, DenyAll, Policy, Runner, RunStatus, Store
from harness_core.hooks import HookConfig, HookEvent
from tests.integration.agents.tree_helpers import line, provider
from tests.integration.hooks.hook_helpers import counted, hook, script, spec

TOUCH = line("make it", ("exec", {"argv": ["touch", "made.txt"]}))
DONE = line("done")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return tmp_path / "ws"


def _run(tmp: Path, ws: Path, *hooks: object, policy: Policy | None = None,
         approver: object = None) -> tuple[Store, str]:
    store = Store(tmp / "state.db")
    runner = Runner(store, provider(tmp, [TOUCH, DONE]), approver=approver)  # type: ignore[arg-type]
    outcome = runner.start(spec(ws, *hooks, policy=policy))  # type: ignore[arg-type]
    return store, outcome.run_id


def _observation(store: Store, run_id: str) -> str:
    (entry,) = store.ledger(run_id, 0)
    return entry.observation or ""


def test_a_denying_hook_stops_a_call_the_policy_allows(tmp_path: Path, ws: Path) -> None:
    deny = script(tmp_path, "deny", """
        print("no touching today", file=sys.stderr)
        sys.exit(2)
    """)
    store, run_id = _run(tmp_path, ws, hook("pre_tool", deny, name="no-touch"))
    with store:
        assert not (ws / "made.txt").exists()
        assert "refused: hook no-touch: no touching today" in _observation(store, run_id)
        (event,) = store.policy_events(run_id)
        assert (event.act, event.verdict, event.rule, event.layer, event.decided_by) == (
            "tool", "deny", "no-touch", "hook", "hook")
        assert event.target.startswith("exec ") and "made.txt" in event.target
        assert store.run(run_id).status is RunStatus.FINISHED


def test_negative_control_a_silent_hook_lets_the_call_run(tmp_path: Path, ws: Path) -> None:
    log = tmp_path / "count.log"
    silent = script(tmp_path, "silent", f"count({str(log)!r})\n")
    store, run_id = _run(tmp_path, ws, hook("pre_tool", silent))
    with store:
        assert (ws / "made.txt").exists()
        assert counted(log) == ["pre_tool exec"]
        assert store.policy_events(run_id) == []  # a silent allow records nothing


def test_an_allowing_hook_cannot_open_what_the_policy_refuses(tmp_path: Path, ws: Path) -> None:
    allow = script(tmp_path, "allow", """
        print(json.dumps({"decision": "allow", "reason": "fine by me"}))
    """)
    policy = Policy.from_lists(tier="workspace-write", allow_exec=["touch *"],
                               deny_exec=["touch made*"])
    store, run_id = _run(tmp_path, ws, hook("pre_tool", allow, name="yes-man"), policy=policy)
    with store:
        assert not (ws / "made.txt").exists()
        observation = _observation(store, run_id)
        assert "touch made*" in observation
        events = [(e.verdict, e.rule, e.layer) for e in store.policy_events(run_id)]
        # The hook's allow is recorded (it gave a reason) and grants nothing: the policy's
        # deny rule refuses the act after it.
        assert events == [("allow", "yes-man", "hook"), ("deny", "touch made*", "project")]


def test_a_hanging_hook_is_a_deny_after_its_timeout(tmp_path: Path, ws: Path) -> None:
    started = tmp_path / "hang.started"
    hang = script(tmp_path, "hang", f"""
        open({str(started)!r}, "w").close()
        while True:
            time.sleep(1)
    """)
    store, run_id = _run(tmp_path, ws, hook("pre_tool", hang, name="hang", timeout_s=0.5))
    with store:
        assert started.exists()  # it did run, and was killed at its timeout
        assert not (ws / "made.txt").exists()
        observation = _observation(store, run_id)
        assert "hook hang failed (timed out after 0.5s)" in observation
        (record,) = store.hook_runs(run_id)
        assert record.answer is not None and record.answer["timed_out"] is True


@pytest.mark.parametrize(("body", "why"), [
    ('print("looks fine to me")\n', "stdout is not JSON"),
    ('print("[1, 2]")\n', "expected a JSON object"),
    ('print(json.dumps({"decison": "allow"}))\n', "unknown key 'decison'"),
    ('print(json.dumps({"decision": "maybe"}))\n', "is not allow, deny or ask"),
    ('sys.exit(1)\n', "exited with status 1"),
    ('raise SystemExit("boom")\n', "exited with status 1: boom"),
])
def test_unreadable_output_or_a_crash_is_a_deny(tmp_path: Path, ws: Path, body: str,
                                                 why: str) -> None:
    bad = script(tmp_path, "bad", body)
    store, run_id = _run(tmp_path, ws, hook("pre_tool", bad, name="bad"))
    with store:
        assert not (ws / "made.txt").exists()
        observation = _observation(store, run_id)
        assert why in observation and "refused" in observation
        (event,) = store.policy_events(run_id)
        assert (event.verdict, event.layer, event.rule) == ("deny", "hook", "bad")


def test_a_missing_hook_program_is_a_deny(tmp_path: Path, ws: Path) -> None:
    gone = HookConfig(HookEvent.PRE_TOOL, (str(tmp_path / "nowhere"),), name="gone",
                      scope="user")
    store, run_id = _run(tmp_path, ws, gone)
    with store:
        assert not (ws / "made.txt").exists()
        assert "hook gone failed (could not start: hook 'gone': the program" in _observation(
            store, run_id)


def test_a_matcher_picks_the_tools_a_hook_sees(tmp_path: Path, ws: Path) -> None:
    deny = script(tmp_path, "deny", "sys.exit(2)\n")
    store, run_id = _run(tmp_path, ws, hook("pre_tool", deny, matcher="write_*"))
    with store:
        assert (ws / "made.txt").exists()  # exec does not match write_*
        assert store.hook_runs(run_id) == []


def test_an_ask_goes_to_the_approver(tmp_path: Path, ws: Path) -> None:
    ask = script(tmp_path, "ask", 'print(json.dumps({"decision": "ask", "reason": "sure?"}))\n')
    store, run_id = _run(tmp_path, ws, hook("pre_tool", ask, name="asker"),
                         approver=ApproveAll())
    with store:
        assert (ws / "made.txt").exists()
        (event,) = store.policy_events(run_id)
        assert (event.act, event.verdict, event.layer, event.rule, event.decided_by) == (
            "tool", "allow", "hook", "asker", "approver")
    store2, run2 = _run(tmp_path / "ws", ws, hook("pre_tool", ask, name="asker"),
                        approver=DenyAll())
    with store2:
        assert "approval denied" in _observation(store2, run2)


def test_an_ask_without_an_approver_pauses_and_resume_replays_the_hook(
        tmp_path: Path, ws: Path) -> None:
    log = tmp_path / "count.log"
    ask = script(tmp_path, "ask", f"""
        count({str(log)!r})
        print(json.dumps({{"decision": "ask", "reason": "a person should look"}}))
    """)
    hooks = (hook("pre_tool", ask, name="asker"),)
    with Store(tmp_path / "state.db") as store:
        runner = Runner(store, provider(tmp_path, [TOUCH, DONE]))
        paused = runner.start(spec(ws, *hooks))
        assert paused.status is RunStatus.PAUSED and paused.pause is not None
        pause = paused.pause
        assert (pause.act, pause.layer, pause.rule) == ("tool", "hook", "asker")
        assert pause.target is not None and pause.target.startswith("tool exec ")
        assert not (ws / "made.txt").exists()
        done = Runner(store, provider(tmp_path, [TOUCH, DONE])).resume(
            paused.run_id, spec(ws, *hooks), approve=True)
        assert done.status is RunStatus.FINISHED
        assert (ws / "made.txt").exists()
        assert counted(log) == ["pre_tool exec"]  # the recorded ask was replayed
        (event,) = store.policy_events(paused.run_id)
        assert (event.verdict, event.decided_by, event.layer) == ("allow", "operator", "hook")


def test_a_resume_after_a_policy_pause_does_not_ask_the_hook_again(
        tmp_path: Path, ws: Path) -> None:
    log = tmp_path / "count.log"
    allow = script(tmp_path, "allow", f"count({str(log)!r})\n")
    hooks = (hook("pre_tool", allow),)
    policy = Policy.from_lists(tier="workspace-write", approval="ask")  # exec is asked about
    with Store(tmp_path / "state.db") as store:
        paused = Runner(store, provider(tmp_path, [TOUCH, DONE])).start(
            spec(ws, *hooks, policy=policy))
        assert paused.status is RunStatus.PAUSED
        assert counted(log) == ["pre_tool exec"]
        done = Runner(store, provider(tmp_path, [TOUCH, DONE])).resume(
            paused.run_id, spec(ws, *hooks, policy=policy), approve=True)
        assert done.status is RunStatus.FINISHED and (ws / "made.txt").exists()
        assert counted(log) == ["pre_tool exec"]


def test_a_refused_calls_recorded_target_is_cut_to_a_line(tmp_path: Path, ws: Path) -> None:
    deny = script(tmp_path, "deny", "sys.exit(2)\n")
    big = line("write", ("write_file", {"path": "big.txt", "content": "x" * 50_000}))
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, provider(tmp_path, [big, DONE])).start(
            spec(ws, hook("pre_tool", deny, name="no")))
        (event,) = store.policy_events(outcome.run_id)
        assert event.target.startswith('write_file {"content":"xxx')
        assert event.target.endswith("… (50,031 characters)") and len(event.target) < 400
        assert not (ws / "big.txt").exists()
