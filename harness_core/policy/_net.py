"""Net rules compared as addresses, not spellings.

A host can be written many ways: ``127.0.0.1``, ``127.1``, ``2130706433``,
``0x7f000001``, ``0177.0.0.1``, ``[::ffff:127.0.0.1]``. A rule that compares text
would let every other spelling through, so the net rules also compare addresses:

* **Numeric hosts are canonicalised** (`parse_address`): every IPv4 form the C
  library's ``inet_aton`` accepts (one to four parts, each decimal, octal with a
  leading ``0`` or hex with ``0x``; the last part fills the remaining bytes), IPv6 in
  any spelling, with or without brackets or a zone id (``fe80::1%eth0``), and an
  IPv4-mapped IPv6 address (``::ffff:a.b.c.d``) is its IPv4 address.
* **A rule may name a network** in CIDR form: ``10.0.0.0/8``, ``10.0.0.0/8:443``,
  ``fd00::/8``, ``[fd00::/8]:443``.
* **Deny rules look through embeddings**: an IPv6 address that carries an IPv4
  address (IPv4-compatible ``::a.b.c.d``, IPv4-translated ``::ffff:0:a.b.c.d``, the
  NAT64 prefixes ``64:ff9b::/96`` and ``64:ff9b:1::/48``, 6to4 ``2002::/16``) is denied
  when its IPv4 address is.
* **This machine is one host** for deny rules: a deny rule that covers any local
  address (the loopback networks ``127.0.0.0/8`` and ``::1``, the unspecified
  ``0.0.0.0/8`` and ``::``, which connect to the local host, and, given a `NetView`,
  every address of this machine's interfaces) covers every local address on the
  same ports. A service listening on the wildcard address answers on all of them,
  so denying one spelling of "here" must deny them all.
* **Deny rules that name a host** (no glob) are resolved through a `NetView` when a
  destination's addresses are checked: an address that the denied name resolves to
  is denied too. Glob names (``*.internal``) compare as text only.

Allow rules never widen: a numeric allow matches the destination's own address (or
network) exactly, never through an embedding or the local-host rule.

This module does no I/O: resolving names and listing interfaces is the `NetView`'s
job, and the run supplies it (`harness_core.run`).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Protocol

from harness_core._record import record
from harness_core.errors import PolicyError
from harness_core.policy._patterns import GLOB_CHARS, compile_host, net_host, net_port
from harness_core.policy._rules import Decision, Rule, Verdict

__all__ = [
    "IPAddress",
    "IPNetwork",
    "NetMatcher",
    "NetTarget",
    "NetView",
    "is_local",
    "net_target",
    "parse_address",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_LOCAL_NETWORKS: tuple[IPNetwork, ...] = (
    ipaddress.IPv4Network("127.0.0.0/8"),
    ipaddress.IPv4Network("0.0.0.0/8"),
    ipaddress.IPv6Network("::1/128"),
    ipaddress.IPv6Network("::/128"),
)
"""Addresses that reach this machine whatever its interfaces are."""

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")
"""RFC 8215's local-use translation prefix; its IPv4 address is taken from the low 32
bits (the /96 layout), failing closed for the other layouts."""
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
"""IPv4-translated addresses (RFC 2765, ``::ffff:0:a.b.c.d``)."""
_COMPAT = ipaddress.IPv6Network("::/96")
_HEX = frozenset("0123456789abcdef")
_OCT = frozenset("01234567")
_DEC = frozenset("0123456789")


class NetView(Protocol):
    """What a check needs to know about the network: supplied by the run, does I/O."""

    def resolve(self, host: str) -> tuple[IPAddress, ...]:
        """Every address `host` resolves to (empty when the name does not exist).

        Raises:
            PolicyError: The name could not be resolved now (a check that cannot be
                made refuses).
        """
        ...

    def local_addresses(self) -> frozenset[IPAddress]:
        """The addresses of this machine's interfaces."""
        ...


def _ipv4_part(text: str) -> int | None:
    if text[:2] in ("0x", "0X"):
        digits, base, allowed = text[2:].lower(), 16, _HEX
    elif len(text) > 1 and text[0] == "0":
        digits, base, allowed = text[1:], 8, _OCT
    else:
        digits, base, allowed = text, 10, _DEC
    if not digits or not set(digits) <= allowed:
        return None
    return int(digits, base)


def _inet_aton(text: str) -> ipaddress.IPv4Address | None:
    """`text` read the way ``inet_aton`` reads it, or None."""
    parts = text.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values = [_ipv4_part(part) for part in parts]
    if any(value is None for value in values):
        return None
    numbers = [value for value in values if value is not None]
    *head, last = numbers
    if any(value > 255 for value in head) or last >= 256 ** (5 - len(numbers)):
        return None
    value = 0
    for part in head:
        value = (value << 8) | part
    return ipaddress.IPv4Address((value << (8 * (5 - len(numbers)))) | last)


def parse_address(host: str) -> IPAddress | None:
    """The address a numeric host names, canonical; None when `host` is a name.

    ``127.1``, ``2130706433``, ``0x7f000001`` and ``0177.0.0.1`` are all
    ``127.0.0.1``; ``[::ffff:127.0.0.1]`` is ``127.0.0.1`` too. An IPv6 zone id is
    kept (the address is otherwise compared without it).
    """
    text = host.strip().lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" in text:
        try:
            address = ipaddress.IPv6Address(text)
        except ValueError:
            return None
        mapped = address.ipv4_mapped
        return mapped if mapped is not None else address
    return _inet_aton(text.removesuffix("."))


def _plain(address: IPAddress) -> IPAddress:
    """`address` without its zone id."""
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id is not None:
        return ipaddress.IPv6Address(int(address))
    return address


def _deny_forms(address: IPAddress) -> tuple[IPAddress, ...]:
    """`address` and every IPv4 address it carries (what a deny rule also covers)."""
    address = _plain(address)
    if isinstance(address, ipaddress.IPv4Address):
        return (address,)
    forms: list[IPAddress] = [address]
    if address.ipv4_mapped is not None:
        forms.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        forms.append(address.sixtofour)
    if address in _NAT64 or address in _LOCAL_NAT64 or address in _TRANSLATED or (
            address in _COMPAT and int(address) > 1):
        forms.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return tuple(forms)


def is_local(address: IPAddress, own: Iterable[IPAddress] = ()) -> bool:
    """Whether `address` (or an IPv4 address it carries) reaches this machine."""
    mine = {_plain(a) for a in own}
    return any(
        form in mine or any(form in net for net in _LOCAL_NETWORKS)
        for form in _deny_forms(address)
    )


def _has_local(network: IPNetwork, own: Iterable[IPAddress]) -> bool:
    if any(network.overlaps(net) for net in _LOCAL_NETWORKS if net.version == network.version):
        return True
    return any(_plain(a) in network for a in own if a.version == network.version)


@record
class NetTarget:
    """What the host part of a net rule names, beyond its text.

    Attributes:
        networks: The address or network a numeric (or CIDR) rule names; empty otherwise.
        name: The host a rule names without a glob (resolved for deny rules); None
            for numeric rules and globs.
    """

    networks: tuple[IPNetwork, ...] = ()
    name: str | None = None

    def allows(self, address: IPAddress) -> bool:
        """Whether an allow rule with this target admits `address` (exactly, no widening)."""
        plain = _plain(address)
        return any(plain in network for network in self.networks)

    def denies(self, address: IPAddress, own: Iterable[IPAddress] = (),
               named: Iterable[IPAddress] = ()) -> bool:
        """Whether a deny rule with this target covers `address`.

        Args:
            address: The destination's address.
            own: This machine's interface addresses (they join the local host).
            named: The addresses the rule's `name` resolves to.
        """
        own = tuple(own)
        networks = self.networks + tuple(ipaddress.ip_network(_plain(a)) for a in named)
        forms = _deny_forms(address)
        if any(form in network for form in forms for network in networks):
            return True
        return is_local(address, own) and any(_has_local(n, own) for n in networks)


def _cidr(host: str, pattern: str) -> IPNetwork:
    text, _, prefix = host.partition("/")
    try:
        if ":" in text:
            return ipaddress.IPv6Network(f"{text}/{prefix}")
        address = _inet_aton(text)
        if address is None:
            raise ValueError(f"{text!r} is not an IPv4 address")
        return ipaddress.IPv4Network(f"{address}/{prefix}")
    except ValueError as exc:
        raise PolicyError(
            f"net pattern {pattern!r}: {host!r} is not a network in CIDR form ({exc})",
            hint="write a network as its first address and prefix length, e.g. "
            "'10.0.0.0/8' or 'fd00::/8'",
        ) from exc


def net_target(host: str, pattern: str) -> NetTarget:
    """What the (normalised) host part `host` of net rule `pattern` names.

    Raises:
        PolicyError: `host` holds a ``/`` but is not a network in CIDR form.
    """
    if "/" in host:
        return NetTarget(networks=(_cidr(host, pattern),))
    address = parse_address(host)
    if address is not None:
        return NetTarget(networks=(ipaddress.ip_network(_plain(address)),))
    if GLOB_CHARS.intersection(host):
        return NetTarget()
    return NetTarget(name=host)


@record
class _NetRule:
    regex: re.Pattern[str]
    port: int | None
    target: NetTarget
    decision: Decision


@record
class NetMatcher:
    """The net rules of one effect, in order, each with its host regex, port and target.

    A rule without a port matches every port. A rule with a port matches an act on that
    port, and an act whose port is unknown only when `unknown_port_matches` (deny rules:
    such an act might reach the denied port). A host matches a rule by its text, by its
    canonical address's text (``127.1`` is ``127.0.0.1``), or by address (`NetTarget`).
    """

    rules: tuple[_NetRule, ...]
    unknown_port_matches: bool

    @staticmethod
    def build(
        rules: Sequence[Rule], verdict: Verdict, reason: Callable[[Rule, str, Verdict], str]
    ) -> NetMatcher:
        """The matcher of `rules` (all of one effect), each decision worded by `reason`."""
        word = "allowed" if verdict is Verdict.ALLOW else "denied"
        entries = tuple(
            _NetRule(
                compile_host(rule.pattern),
                net_port(rule.pattern),
                net_target(net_host(rule.pattern), rule.pattern),
                Decision(verdict, reason(rule, word, verdict), rule.pattern, rule.layer),
            )
            for rule in rules
        )
        return NetMatcher(entries, verdict is Verdict.DENY)

    def _ports(self, port: int | None) -> Iterator[_NetRule]:
        for rule in self.rules:
            if rule.port is not None and rule.port != port:
                if port is not None or not self.unknown_port_matches:
                    continue
            yield rule

    def first(self, host: str, port: int | None, address: IPAddress | None) -> Decision | None:
        """The decision of the first rule that matches `host` on `port`, if one does.

        `address` is `host`'s canonical address when `host` is numeric.
        """
        deny = self.unknown_port_matches
        canonical = None if address is None else str(address)
        for rule in self._ports(port):
            if rule.regex.fullmatch(host) is not None:
                return rule.decision
            if address is None or canonical is None:
                continue
            if rule.regex.fullmatch(canonical) is not None:
                return rule.decision
            if rule.target.denies(address) if deny else rule.target.allows(address):
                return rule.decision
        return None

    def covering(self, address: IPAddress, port: int, view: NetView) -> Decision | None:
        """The first deny rule that covers `address` on `port`, names resolved by `view`."""
        own = view.local_addresses()
        for rule in self._ports(port):
            named = view.resolve(rule.target.name) if rule.target.name is not None else ()
            if rule.target.denies(address, own, named):
                return rule.decision
        return None
