"""A tool whose name holds ``/`` (issue 34): ``server/a/delete_x`` has no one reading as
server/tool, so ``deny_mcp = ["*/delete_*"]`` matched neither part and the call went
through. The server's listing drops such a tool with a notice the operator sees, and the
policy refuses a target with a second ``/`` whatever the rules say."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_core.policy import BUILTIN_LAYER, Act, Policy, Tier, Verdict

from .conftest import fixture_server, start


@pytest.mark.parametrize(("policy", "target"), [
    (Policy.from_lists(tier=Tier.FULL, deny_mcp=["*/delete_*"]), "a/a/delete_x"),
    (Policy.from_lists(tier=Tier.FULL, allow_mcp=["a/*"]), "a/a/delete_x"),
    (Policy.from_lists(tier=Tier.FULL), "a/b/c"),
    (Policy.from_lists(tier=Tier.FULL), "srv/x/"),
    (Policy.from_lists(tier=Tier.READ_ONLY, allow_mcp=["*/*"]), "srv/x/y"),
])
def test_a_target_with_a_second_slash_is_refused_by_the_builtin_rule(
        policy: Policy, target: str) -> None:
    server, _, tool = target.partition("/")
    decision = policy.check(Act.mcp(server, tool))
    assert decision.verdict is Verdict.DENY
    assert (decision.rule, decision.layer) == ("mcp-target", BUILTIN_LAYER)
    assert "more than one '/'" in decision.reason


def test_a_two_part_target_is_still_decided_by_the_rules() -> None:
    policy = Policy.from_lists(tier=Tier.FULL, deny_mcp=["*/delete_*"], allow_mcp=["gh/*"])
    assert policy.check(Act.mcp("gh", "delete_repo")).rule == "*/delete_*"
    allowed = policy.check(Act.mcp("gh", "read"))
    assert allowed.verdict is Verdict.ALLOW and allowed.rule == "gh/*"


def test_a_listed_tool_with_a_slash_is_not_offered_and_the_operator_is_told(
        tmp_path: Path) -> None:
    notices: list[str] = []
    config = fixture_server(FIXTURE_SLASH_TOOLS="1")
    with start([config], tmp_path, notice=notices.append) as session:
        names = [tool.spec.name for tool in session.tools]
        assert "mcp__fx__env_value" in names
        assert not any("delete_x" in name for name in names)
        [skipped] = session.skipped
        assert "'a/delete_x'" in skipped and "'fx'" in skipped and "not offered" in skipped
        assert notices == [skipped]


def test_without_a_slashed_tool_nothing_is_skipped(tmp_path: Path) -> None:
    with start([fixture_server()], tmp_path) as session:
        assert session.skipped == [] and session.tools
