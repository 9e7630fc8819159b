"""Relay: what the MCP loop thread must ask the run's own thread.

The run's policy gate records refusals in the store and may ask an approver; both
belong to the thread that drives the run, not to the asyncio thread the SDK runs in.
So when a remote server's HTTP client is about to dial a host nobody has decided yet
(an authorization server named by the server's metadata), or has a notice for the
person (where to authorize), it posts the question here; the run's thread answers
while it waits for the MCP work it asked for (`Relay.wait`). A question nobody answers
in time is a refusal: the check fails closed. A decider that fails is a refusal too,
but a Ctrl-C while a question is decided is no decision: the loop thread is refused so
it stops waiting, and the `KeyboardInterrupt` goes on from `Relay.wait` to end the run.

Decisions are kept per host and port for the session, so each is asked once. A decider
may answer with an `Admission` (the run's egress check): its addresses, the ones the
check resolved and checked, are kept with the decision and are the only ones the HTTP
client dials (no second lookup); an admission without an address is a refusal, as the
egress proxy makes it.
"""

from __future__ import annotations

import asyncio
import queue
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

from harness_core._record import record
from harness_core.policy import Decision, Verdict
from harness_core.policy._net import IPAddress
from harness_core.sandbox import Admission

__all__ = ["Dial", "Relay"]

_T = TypeVar("_T")

_ASK_WAIT = 60.0
"""Seconds the loop thread waits for the run's thread to decide a host (it answers
whenever it waits on a start or a call; one outside any is refused after this)."""


@record
class Dial:
    """A decision about one host and port, with the addresses to dial when it allows.

    Attributes:
        decision: The policy's answer.
        addresses: The checked addresses, in the order to try them; empty when the
            decider resolved nothing itself (the client then dials the name).
    """

    decision: Decision
    addresses: tuple[IPAddress, ...] = ()


def _dial(answer: Decision | Admission) -> Dial:
    if isinstance(answer, Decision):
        return Dial(answer)
    if answer.admitted and answer.addresses:
        return Dial(Decision(Verdict.ALLOW, answer.reason), answer.addresses)
    if not answer.admitted:
        return Dial(Decision(Verdict.DENY, answer.reason))  # the gate recorded its rule
    return Dial(Decision(Verdict.DENY, f"{answer.reason}; no address to dial",
                         "destination-unresolved", "builtin"))


def _undecided(reason: str) -> Dial:
    return Dial(Decision(Verdict.DENY, reason, "undecided", "builtin"))


@record
class _Question:
    host: str
    port: int
    reply: Future[Dial]


class Relay:
    """Questions from the loop thread, answered by the run's thread.

    Args:
        decide: Decides dialling (host, port) through the run's gate (run's thread); an
            `Admission` also names the addresses to dial.
        notice: Shows a person a line (run's thread); None when nobody can be shown one.
    """

    def __init__(self, decide: Callable[[str, int], Decision | Admission],
                 notice: Callable[[str], None] | None) -> None:
        self._decide = decide
        self._notice = notice
        self._queue: queue.SimpleQueue[_Question | str | None] = queue.SimpleQueue()
        self._decided: dict[tuple[str, int], Dial] = {}

    @property
    def can_notify(self) -> bool:
        """Whether a notice reaches anyone."""
        return self._notice is not None

    def decide(self, host: str, port: int) -> Decision:
        """Decide (host, port) now, in the run's thread, and remember the decision."""
        return self._dial(host, port).decision

    def _dial(self, host: str, port: int) -> Dial:
        key = (host.lower(), port)
        known = self._decided.get(key)
        if known is None:
            known = self._decided[key] = _dial(self._decide(host, port))
        return known

    def wait(self, future: Future[_T], timeout: float) -> _T:
        """Wait for `future`, answering the loop thread's questions meanwhile.

        Raises:
            TimeoutError: `future` is not done within `timeout` seconds.
            KeyboardInterrupt: Ctrl-C while waiting or while a question was decided
                (that question is refused first).
        """
        future.add_done_callback(lambda _: self._queue.put(None))
        deadline = time.monotonic() + timeout
        while not future.done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            try:
                item = self._queue.get(timeout=remaining)
            except queue.Empty:
                raise TimeoutError from None
            self._answer(item)
        return future.result(0)

    def _answer(self, item: _Question | str | None) -> None:
        if isinstance(item, _Question):
            try:
                dial = self._dial(item.host, item.port)
            except Exception as exc:  # a pause or a store failure: refuse the dial
                dial = _undecided(f"could not decide: {exc}")
            except BaseException:
                # Ctrl-C (or an exit) is the person's, never a decision: the loop thread
                # is told no so it stops waiting, and the interrupt goes on to end the run.
                item.reply.set_result(_undecided("interrupted while deciding"))
                raise
            item.reply.set_result(dial)
        elif isinstance(item, str) and self._notice is not None:
            self._notice(item)

    async def admit(self, host: str, port: int) -> Dial:
        """Ask (from the loop thread) whether (host, port) may be dialled, and where."""
        known = self._decided.get((host.lower(), port))
        if known is not None:
            return known
        reply: Future[Dial] = Future()
        self._queue.put(_Question(host, port, reply))
        try:
            return await asyncio.wait_for(asyncio.wrap_future(reply), _ASK_WAIT)
        except TimeoutError:
            return _undecided(f"nobody decided within {_ASK_WAIT:g} s")

    def notify(self, text: str) -> None:
        """Post a notice (from the loop thread) for the run's thread to show."""
        self._queue.put(text)
