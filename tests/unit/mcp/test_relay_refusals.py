"""The MCP relay's own refusals name their rule and layer (#23 item 9), as the policy's do."""

from __future__ import annotations

import asyncio
import ipaddress
import threading
from concurrent.futures import Future

import pytest

from harness_core.mcp._relay import Relay
from harness_core.policy import Decision, Verdict
from harness_core.sandbox import Admission


def _admit_from_loop(relay: Relay, host: str, port: int) -> Decision:
    """Ask from a loop thread, as the MCP client does, while this thread answers."""
    done: Future[Decision] = Future()

    def loop() -> None:
        done.set_result(asyncio.run(relay.admit(host, port)).decision)

    threading.Thread(target=loop, daemon=True).start()
    return relay.wait(done, 30)


def test_a_decider_that_fails_is_a_refusal_with_its_rule() -> None:
    def broken(host: str, port: int) -> Decision:
        raise RuntimeError("store gone")

    decision = _admit_from_loop(Relay(broken, None), "mcp.example", 443)
    assert decision.verdict is Verdict.DENY and "store gone" in decision.reason
    assert (decision.rule, decision.layer) == ("undecided", "builtin")


def test_an_admission_without_an_address_is_refused_as_unresolved() -> None:
    relay = Relay(lambda host, port: Admission(True, "allowed by allow_net"), None)
    decision = _admit_from_loop(relay, "mcp.example", 443)
    assert decision.verdict is Verdict.DENY and "no address to dial" in decision.reason
    assert (decision.rule, decision.layer) == ("destination-unresolved", "builtin")


def test_an_admission_with_addresses_allows_and_keeps_them() -> None:  # negative control
    address = ipaddress.ip_address("127.0.0.1")
    relay = Relay(lambda host, port: Admission(True, "allowed", (address,)), None)
    assert _admit_from_loop(relay, "mcp.example", 443).verdict is Verdict.ALLOW
    assert relay.decide("mcp.example", 443).is_allowed


def test_a_ctrl_c_while_deciding_is_raised_and_the_dial_refused() -> None:
    """A Ctrl-C is the person's, never a decision: it leaves `wait`, and the loop
    thread's question is refused at once (it does not wait out `_ASK_WAIT`)."""
    asked: Future[Decision] = Future()

    def interrupted(host: str, port: int) -> Decision:
        raise KeyboardInterrupt

    relay = Relay(interrupted, None)

    def loop() -> None:
        asked.set_result(asyncio.run(relay.admit("auth.example", 443)).decision)

    threading.Thread(target=loop, daemon=True).start()
    waited: Future[None] = Future()  # never done: only the question ends the wait
    with pytest.raises(KeyboardInterrupt):
        relay.wait(waited, 30)
    decision = asked.result(timeout=10)
    assert decision.verdict is Verdict.DENY and "interrupted" in decision.reason
    assert (decision.rule, decision.layer) == ("undecided", "builtin")
