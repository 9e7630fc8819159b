"""A seccomp filter for the Linux backend, assembled as classic BPF in pure Python.

The program is handed to bubblewrap (`bwrap --seccomp FD`), which loads it just
before it executes the payload, so bwrap's own set-up (mounts) is not filtered and
everything the payload runs is. It refuses, with ``EPERM``, the syscalls that reach
past the sandbox (tracing other processes, mounting, kernel keyrings, BPF, kernel
modules, perf, userfaultfd, io_uring, the new mount API) and new sockets of any
family other than ``AF_UNIX`` (``AF_INET``, ``AF_INET6`` and ``AF_NETLINK`` are let
through when the run allows the network). Everything else is allowed. A syscall made
under another architecture's ABI (an i386 binary on x86_64) kills the process, and
the x32 ABI on x86_64 is refused, so no second syscall table slips past the filter.

This module only builds bytes; it never loads a filter into the running process.
"""

from __future__ import annotations

import errno
import platform
import struct
from collections.abc import Mapping

__all__ = [
    "DENIED_SYSCALLS",
    "SeccompArch",
    "build_filter",
    "native_arch",
]

DENIED_SYSCALLS: tuple[str, ...] = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mount",
    "umount2",
    "pivot_root",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "bpf",
    "keyctl",
    "add_key",
    "request_key",
    "perf_event_open",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
)
"""Syscalls refused with EPERM (io_uring is here because it can open sockets itself)."""

_SOCKET_CALLS = ("socket", "socketpair")

# Syscall numbers, from the kernel's uapi headers (asm/unistd_64.h for x86_64,
# asm-generic/unistd.h for aarch64). The io_uring and mount-API numbers are shared.
_X86_64: Mapping[str, int] = {
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
    "mount": 165, "umount2": 166, "pivot_root": 155,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
    "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    "bpf": 321, "keyctl": 250, "add_key": 248, "request_key": 249,
    "perf_event_open": 298, "kexec_load": 246, "kexec_file_load": 320,
    "init_module": 175, "finit_module": 313, "delete_module": 176,
    "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "socket": 41, "socketpair": 53,
}  # fmt: skip
_AARCH64: Mapping[str, int] = {
    "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271,
    "mount": 40, "umount2": 39, "pivot_root": 41,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
    "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    "bpf": 280, "keyctl": 219, "add_key": 217, "request_key": 218,
    "perf_event_open": 241, "kexec_load": 104, "kexec_file_load": 294,
    "init_module": 105, "finit_module": 273, "delete_module": 106,
    "userfaultfd": 282, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "socket": 198, "socketpair": 199,
}  # fmt: skip


class SeccompArch:
    """One architecture the filter knows: its audit id and syscall table."""

    def __init__(self, name: str, audit_arch: int, table: Mapping[str, int], x32: bool) -> None:
        self.name = name
        self.audit_arch = audit_arch
        self.table = table
        self.has_x32 = x32


_ARCHES: Mapping[str, SeccompArch] = {
    "x86_64": SeccompArch("x86_64", 0xC000003E, _X86_64, x32=True),
    "aarch64": SeccompArch("aarch64", 0xC00000B7, _AARCH64, x32=False),
}
_MACHINE_ALIASES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}

# Classic BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_RET_ALLOW = 0x7FFF0000
_X32_SYSCALL_BIT = 0x40000000
# Offsets in struct seccomp_data: int nr; u32 arch; u64 ip; u64 args[6] (little endian).
_OFF_NR = 0
_OFF_ARCH = 4
_OFF_ARG0_LOW = 16

_AF_UNIX = 1
_AF_INET = 2
_AF_INET6 = 10
_AF_NETLINK = 16


def native_arch(machine: str | None = None) -> SeccompArch | None:
    """The filter architecture for this machine, or None when the filter has no table for it.

    Args:
        machine: A `platform.machine()` value; the running machine's when omitted.
    """
    name = _MACHINE_ALIASES.get((machine or platform.machine()).lower())
    return _ARCHES.get(name) if name else None


class _Program:
    """Instructions with symbolic jump targets, resolved to relative offsets at the end."""

    def __init__(self) -> None:
        self._insns: list[tuple[int, str | None, str | None, int]] = []
        self._labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self._labels[name] = len(self._insns)

    def load(self, offset: int) -> None:
        self._insns.append((_LD_W_ABS, None, None, offset))

    def jump(self, code: int, value: int, if_true: str | None, if_false: str | None) -> None:
        self._insns.append((code, if_true, if_false, value))

    def ret(self, value: int) -> None:
        self._insns.append((_RET_K, None, None, value))

    def assemble(self) -> bytes:
        out = bytearray()
        for index, (code, jt, jf, k) in enumerate(self._insns):
            out += struct.pack("<HBBI", code, self._offset(index, jt), self._offset(index, jf), k)
        return bytes(out)

    def _offset(self, index: int, target: str | None) -> int:
        if target is None:
            return 0
        delta = self._labels[target] - index - 1
        if not 0 <= delta <= 255:
            raise ValueError(f"BPF jump to {target!r} out of range ({delta})")
        return delta


def build_filter(arch: SeccompArch, *, allow_inet: bool) -> bytes:
    """Assemble the filter as an array of `struct sock_filter`, ready for `bwrap --seccomp`.

    Args:
        arch: The architecture whose syscall numbers to use (see `native_arch`).
        allow_inet: Also let `socket()` create AF_INET, AF_INET6 and AF_NETLINK
            sockets (the run allows the network).

    Returns:
        The program bytes (8 bytes per instruction, little endian).
    """
    deny = _RET_ERRNO | errno.EPERM
    prog = _Program()
    prog.load(_OFF_ARCH)
    prog.jump(_JEQ_K, arch.audit_arch, "arch_ok", None)
    prog.ret(_RET_KILL_PROCESS)
    prog.label("arch_ok")
    prog.load(_OFF_NR)
    if arch.has_x32:
        prog.jump(_JGE_K, _X32_SYSCALL_BIT, "deny", None)
    for name in DENIED_SYSCALLS:
        prog.jump(_JEQ_K, arch.table[name], "deny", None)
    for name in _SOCKET_CALLS:
        prog.jump(_JEQ_K, arch.table[name], "socket", None)
    prog.ret(_RET_ALLOW)
    prog.label("socket")
    prog.load(_OFF_ARG0_LOW)
    families = [_AF_UNIX] + ([_AF_INET, _AF_INET6, _AF_NETLINK] if allow_inet else [])
    for family in families:
        prog.jump(_JEQ_K, family, "allow", None)
    prog.label("deny")
    prog.ret(deny)
    prog.label("allow")
    prog.ret(_RET_ALLOW)
    return prog.assemble()
