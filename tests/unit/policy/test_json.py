"""`Policy.to_json` / `from_json`: what the store records for `--stored-policy`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness_core.errors import PolicyError
from harness_core.policy import POLICY_FORMAT, Act, Policy, Tier, Verdict


def test_round_trip_through_json_text_keeps_every_decision() -> None:
    policy = Policy.from_lists(
        tier="read-only",
        allow_exec=["pytest*"],
        deny_read=["secrets/**"],
        allow_net=["pypi.org"],
        approval="deny",
        layer="user",
    ).narrowed(deny_write=["docs/**"], layer="agent:r")
    policy = Policy(tier=Tier.FULL, protected=("io.db",)).contain(policy)
    restored = Policy.from_json(json.loads(json.dumps(policy.to_json())))
    assert restored == policy
    for act in (Act.exec(["pytest"]), Act.read("secrets/a"), Act.write("io.db"), Act.net("x.org")):
        assert restored.check(act) == policy.check(act)


def test_json_shape() -> None:
    data = Policy.from_lists(tier="full", deny_exec=["rm"]).to_json()
    assert data == {
        "format": POLICY_FORMAT,
        "tier": "full",
        "approval": "ask",
        "rules": [{"effect": "deny", "kind": "exec", "pattern": "rm", "layer": "project"}],
        "protected": [],
    }


@pytest.mark.parametrize(
    "data",
    [
        {"format": 99},
        {"tier": "everything"},
        {"approval": "perhaps"},
        {"tier": 3},
        {"rules": "rm"},
        {"rules": [{"effect": "deny", "kind": "exec"}]},
        {"rules": [{"effect": "maybe", "kind": "exec", "pattern": "rm", "layer": "p"}]},
        {"rules": [{"effect": "deny", "kind": "exec", "pattern": "", "layer": "p"}]},
        {"rules": ["rm"]},
        {"protected": [1]},
        {"within": [{"tier": "nope"}]},
    ],
)
def test_malformed_stored_policy_is_a_policy_error(data: dict[str, Any]) -> None:
    with pytest.raises(PolicyError):
        Policy.from_json(data)


def test_missing_keys_take_defaults() -> None:
    policy = Policy.from_json({})
    assert policy == Policy()
    assert policy.check(Act.write("a")).verdict is Verdict.ALLOW
