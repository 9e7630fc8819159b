"""The seccomp program, run through a small classic-BPF interpreter as a table of decisions."""

from __future__ import annotations

import errno
import struct

import pytest

from harness_core.sandbox._seccomp import DENIED_SYSCALLS, SeccompArch, build_filter, native_arch

KILL_PROCESS = 0x80000000
ALLOW = 0x7FFF0000
EPERM = 0x00050000 | errno.EPERM
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET = 1, 2, 10, 16, 17


def run_bpf(program: bytes, *, arch: int, nr: int, args: tuple[int, ...] = ()) -> int:
    """Interpret the subset of classic BPF the filter uses, over a struct seccomp_data."""
    padded = (list(args) + [0] * 6)[:6]
    data = struct.pack("<iIQ6Q", nr, arch, 0, *padded)
    insns = [struct.unpack_from("<HBBI", program, off) for off in range(0, len(program), 8)]
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        if code == 0x20:  # ld [k]
            (acc,) = struct.unpack_from("<I", data, k)
            pc += 1
        elif code in (0x15, 0x35):  # jeq / jge
            taken = acc == k if code == 0x15 else acc >= k
            pc += 1 + (jt if taken else jf)
        elif code == 0x06:  # ret
            return int(k)
        else:
            raise AssertionError(f"unexpected opcode {code:#x}")


def known_arch(machine: str) -> SeccompArch:
    found = native_arch(machine)
    assert found is not None
    return found


X86 = known_arch("x86_64")
ARM = known_arch("aarch64")


@pytest.mark.parametrize("arch", [X86, ARM], ids=lambda a: a.name)
@pytest.mark.parametrize("name", DENIED_SYSCALLS)
def test_each_denied_syscall_returns_eperm(arch: SeccompArch, name: str) -> None:
    program = build_filter(arch, allow_inet=False)
    assert run_bpf(program, arch=arch.audit_arch, nr=arch.table[name]) == EPERM


@pytest.mark.parametrize("arch", [X86, ARM], ids=lambda a: a.name)
@pytest.mark.parametrize(
    ("family", "allow_inet", "expected"),
    [
        (AF_UNIX, False, ALLOW),
        (AF_INET, False, EPERM),
        (AF_INET6, False, EPERM),
        (AF_NETLINK, False, EPERM),
        (AF_PACKET, False, EPERM),
        (AF_UNIX, True, ALLOW),
        (AF_INET, True, ALLOW),
        (AF_INET6, True, ALLOW),
        (AF_NETLINK, True, ALLOW),
        (AF_PACKET, True, EPERM),
    ],
)
def test_socket_family_decides_socket_and_socketpair(
    arch: SeccompArch, family: int, allow_inet: bool, expected: int
) -> None:
    program = build_filter(arch, allow_inet=allow_inet)
    for call in ("socket", "socketpair"):
        assert (
            run_bpf(program, arch=arch.audit_arch, nr=arch.table[call], args=(family,)) == expected
        )


def test_socket_family_is_read_from_the_low_32_bits_only() -> None:
    program = build_filter(X86, allow_inet=False)
    high_garbage = (0xFFFF << 32) | AF_UNIX
    assert (
        run_bpf(program, arch=X86.audit_arch, nr=X86.table["socket"], args=(high_garbage,)) == ALLOW
    )


@pytest.mark.parametrize("arch", [X86, ARM], ids=lambda a: a.name)
def test_ordinary_syscalls_are_allowed(arch: SeccompArch) -> None:
    program = build_filter(arch, allow_inet=False)
    for nr in (0, 1, 2, 3, 56, 57, 59, 60, 231):  # read, write, open(at), close, clone, exec, exit
        if nr in arch.table.values():
            continue
        assert run_bpf(program, arch=arch.audit_arch, nr=nr) == ALLOW


def test_foreign_architecture_is_killed() -> None:
    program = build_filter(X86, allow_inet=False)
    i386 = 0x40000003
    assert run_bpf(program, arch=i386, nr=1) == KILL_PROCESS
    assert run_bpf(program, arch=ARM.audit_arch, nr=1) == KILL_PROCESS


def test_x32_abi_syscalls_are_refused_on_x86_64() -> None:
    program = build_filter(X86, allow_inet=True)
    assert run_bpf(program, arch=X86.audit_arch, nr=0x40000000 | 1) == EPERM


def test_machine_names_map_to_known_arches_or_none() -> None:
    assert native_arch("AMD64") is X86
    assert native_arch("arm64") is ARM
    assert native_arch("riscv64") is None


def test_program_is_whole_instructions() -> None:
    program = build_filter(X86, allow_inet=False)
    assert len(program) % 8 == 0
    assert len(program) // 8 < 255
