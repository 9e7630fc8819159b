"""docs/CONTRACT.md, "The policy": the exec examples the page gives, decided by the real
policy; what a run records of its decisions (real loop, real SQLite file)."""

from __future__ import annotations

from pathlib import Path

from harness_core import Act, Policy, Runner, RunStatus, Store, Verdict
from tests.unit.session.support import RecordingProvider, spec_for


def _verdict(policy: Policy, argv: list[str]) -> Verdict:
    return policy.check(Act.exec(argv)).verdict


def test_the_pages_exec_examples() -> None:
    deny = Policy.from_lists(tier="full", deny_exec=["git push*"])
    assert _verdict(deny, ["/usr/bin/git", "push", "origin"]) is Verdict.DENY
    assert _verdict(deny, ["git", "push"]) is Verdict.DENY
    # patterns compare text: another spelling of the same push is not caught
    assert _verdict(deny, ["git", "-C", ".", "push"]) is Verdict.ALLOW
    allow = Policy.from_lists(tier="read-only", approval="deny", allow_exec=["pytest*"])
    assert _verdict(allow, ["pytest", "-q"]) is Verdict.ALLOW
    assert _verdict(allow, ["./pytest", "-q"]) is Verdict.DENY


def test_a_refusal_is_recorded_with_rule_and_layer_and_a_silent_allow_records_nothing(
        tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a")
    provider = RecordingProvider([
        ("work", [("read_file", {"path": "a.txt"}), ("write_file", {"path": "b.txt",
                                                                     "content": "b"}),
                  ("list_dir", {})]),
        ("rig", [("write_file", {"path": "io.toml", "content": "[policy]\n"})]),
        ("done", []),
    ])
    with Store(tmp_path / "state.db") as store:
        outcome = Runner(store, provider).start(
            spec_for(ws, "go", policy=Policy.from_lists(tier="workspace-write")))
        events = store.policy_events(outcome.run_id)
    assert outcome.status is RunStatus.FINISHED, outcome.reason
    assert (ws / "b.txt").read_text() == "b"
    assert [(e.step_index, e.act, e.verdict, e.layer) for e in events] == [
        (1, "write", "deny", "builtin")]  # the three allowed acts left no row
    assert events[0].rule and events[0].target.endswith("io.toml")


def test_deny_rules_match_the_program_alone_allow_rules_only_the_whole_line() -> None:
    deny = Policy.from_lists(tier="full", deny_exec=["curl"])
    assert _verdict(deny, ["curl", "https://example.com"]) is Verdict.DENY
    assert _verdict(deny, ["/usr/bin/curl", "-s", "x"]) is Verdict.DENY
    allow = Policy.from_lists(tier="read-only", approval="deny", allow_exec=["git"])
    assert _verdict(allow, ["git"]) is Verdict.ALLOW
    assert _verdict(allow, ["git", "status"]) is Verdict.DENY  # the literal line, not a prefix
