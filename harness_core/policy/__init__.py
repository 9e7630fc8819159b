"""Policy: decide each `Act` (read, write, exec, net) from rules, a tier and a mode.

Pure data and pure functions: nothing here touches the filesystem, the network or the
terminal, and nothing here confines a process (that is the sandbox's job, from a spec
the run derives). See `harness_core.policy._policy` for the order in which a decision
is taken and how patterns match.
"""

from harness_core.policy._act import Act, ActKind
from harness_core.policy._approver import ApprovalDecision, ApproveAll, Approver, DenyAll
from harness_core.policy._net import NetView, is_local, parse_address
from harness_core.policy._policy import POLICY_FORMAT, Policy
from harness_core.policy._rules import (
    BUILTIN_LAYER,
    GATE_LAYER,
    PROTECTED_WRITE_PATTERNS,
    TIER_LAYER,
    ApprovalMode,
    Decision,
    Effect,
    Rule,
    Tier,
    Verdict,
)

__all__ = [
    "BUILTIN_LAYER",
    "GATE_LAYER",
    "POLICY_FORMAT",
    "PROTECTED_WRITE_PATTERNS",
    "TIER_LAYER",
    "Act",
    "ActKind",
    "ApprovalDecision",
    "ApprovalMode",
    "ApproveAll",
    "Approver",
    "Decision",
    "DenyAll",
    "NetView",
    "Effect",
    "Policy",
    "Rule",
    "Tier",
    "Verdict",
    "is_local",
    "parse_address",
]
