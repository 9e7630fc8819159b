"""What the run's egress proxy asks: may this destination be dialled, and at which addresses.

A destination is checked twice. First by its name, as the request spelled it
(`Policy.check` of ``Act.net(host, port)``, where numeric spellings already compare as
addresses); a name the policy refuses is never looked up, so a refused request leaks
nothing through DNS. Then by address: a numeric host is its canonical address, a name
is resolved once, here, and every address it resolves to must pass
`Policy.address_denial` (deny rules as addresses, names in deny rules resolved, this
machine's own addresses one local host). The admission carries exactly those
addresses; the proxy dials them and nothing else. Anything that cannot be checked (a
resolver failure) refuses.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable

from harness_core.errors import PolicyError
from harness_core.policy import Act, Decision, NetView, Policy, Verdict, parse_address
from harness_core.policy._net import IPAddress
from harness_core.run._guard import Guard
from harness_core.sandbox import Admission
from harness_core.store import Store

__all__ = ["SystemNetView", "admit", "policy_decider", "recording_decider"]

_ABSENT = frozenset(
    code for code in (getattr(socket, name, None) for name in ("EAI_NONAME", "EAI_NODATA"))
    if code is not None
)
"""getaddrinfo errors that mean the name does not exist (any other failure refuses)."""


def _address(sockaddr: tuple[object, ...]) -> IPAddress:
    text = str(sockaddr[0])
    if len(sockaddr) >= 4 and sockaddr[3] and "%" not in text:
        text = f"{text}%{sockaddr[3]}"
    return ipaddress.ip_address(text)


class SystemNetView:
    """This machine's resolver and interfaces, as the policy's `NetView`."""

    def resolve(self, host: str) -> tuple[IPAddress, ...]:
        """Every address `host` resolves to (one lookup); empty when it does not exist.

        Raises:
            PolicyError: The lookup failed for another reason (no resolver, a timeout).
        """
        try:
            found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            if exc.errno in _ABSENT:
                return ()
            raise PolicyError(f"cannot resolve {host!r}: {exc.strerror}") from exc
        except (OSError, UnicodeError) as exc:
            raise PolicyError(f"cannot resolve {host!r}: {exc}") from exc
        out = [_address(info[4]) for info in found if info[0] in (socket.AF_INET, socket.AF_INET6)]
        return tuple(dict.fromkeys(out))

    def local_addresses(self) -> frozenset[IPAddress]:
        """The addresses of every interface of this machine (psutil)."""
        import psutil

        out: set[IPAddress] = set()
        for entries in psutil.net_if_addrs().values():
            for entry in entries:
                if entry.family in (socket.AF_INET, socket.AF_INET6):
                    try:
                        out.add(ipaddress.ip_address(entry.address.split("%", 1)[0]))
                    except ValueError:
                        continue
        return frozenset(out)


def _addresses(host: str, view: NetView) -> tuple[IPAddress, ...]:
    numeric = parse_address(host)
    return (numeric,) if numeric is not None else view.resolve(host)


def admit(
    policy: Policy,
    host: str,
    port: int,
    *,
    decide: Callable[[Act], Decision],
    refuse: Callable[[Act, Decision], None],
    view: NetView,
) -> Admission:
    """Decide one destination of the egress proxy.

    Args:
        policy: Whose deny rules the addresses are checked against.
        host: The host as the request named it.
        port: The port it named.
        decide: Decides (and records) the act by name: an ask must come back a denial.
        refuse: Records a refusal taken by address.
        view: The resolver and interfaces.

    Returns:
        The admission with the addresses checked, or a refusal with its reason.
    """
    try:
        act = Act.net(host, port)
    except PolicyError as exc:  # port 0: nothing to dial, nothing to decide
        return Admission(False, exc.message)
    decision = decide(act)
    if decision.verdict is not Verdict.ALLOW:
        return Admission(False, decision.reason)
    try:
        addresses = _addresses(host, view)
        for address in addresses:
            denial = policy.address_denial(address, port, view)
            if denial is not None:
                spelled = "is" if parse_address(host) is not None else "resolves to"
                denial = Decision(Verdict.DENY, f"{host} {spelled} {address}: {denial.reason}",
                                  denial.rule, denial.layer)
                refuse(act, denial)
                return Admission(False, denial.reason)
    except PolicyError as exc:
        denial = Decision(Verdict.DENY, f"{exc.message}; a destination that cannot be "
                          "checked is refused", "destination-unchecked", "builtin")
        refuse(act, denial)
        return Admission(False, denial.reason)
    if not addresses:
        denial = Decision(Verdict.DENY, f"{host} resolves to no address", "destination-unresolved",
                          "builtin")
        refuse(act, denial)
        return Admission(False, denial.reason)
    return Admission(True, decision.reason, addresses)


def policy_decider(
    policy: Policy, view: NetView | None = None
) -> Callable[[str, int], Admission]:
    """The proxy's decider before a run attaches its guard: the policy alone, unrecorded."""
    seen = view if view is not None else SystemNetView()

    def decide(host: str, port: int) -> Admission:
        def by_policy(act: Act) -> Decision:
            return policy.check(act)

        return admit(policy, host, port, decide=by_policy, refuse=lambda a, d: None, view=seen)

    return decide


def recording_decider(guard: Guard, store: Store | None) -> Callable[[str, int], Admission]:
    """The proxy's decider during a run: the guard decides, every refusal recorded.

    Refusals are written through a connection of their own (`store.reopen()`), since the
    proxy answers from its own threads.
    """
    lock = threading.Lock()
    stores: list[Store] = []
    view = SystemNetView()

    def own_store() -> Store | None:
        if store is not None and not stores:
            stores.append(store.reopen())
        return stores[0] if stores else None

    def by_guard(act: Act) -> Decision:
        with lock:
            return guard.decide_unattended(act, by="egress proxy", store=own_store())

    def refuse(act: Act, decision: Decision) -> None:
        with lock:
            guard.record_unattended(act, decision, by="egress proxy", store=own_store())

    def decide(host: str, port: int) -> Admission:
        return admit(guard.policy, host, port, decide=by_guard, refuse=refuse, view=view)

    return decide
