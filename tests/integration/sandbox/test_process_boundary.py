"""What a sandboxed process can see of its runner: environment, fds, terminal, syscalls."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import termios
from collections.abc import Iterator

import pytest

from harness_core.sandbox import Selected

from .conftest import Sandbox

SECRET = "sk-ant-io-sandbox-test-4b1d"

ENVIRONMENT = "import os; print(sorted(os.environ))"


def test_an_environment_secret_is_absent_inside(sandbox: Sandbox, native: Selected) -> None:
    env = {"ANTHROPIC_API_KEY": SECRET, "IO_TEST_SECRET": SECRET}
    inside = sandbox.run(native, ENVIRONMENT, env=env)
    assert b"ANTHROPIC_API_KEY" not in inside.stdout
    assert b"IO_TEST_SECRET" not in inside.stdout
    # Control: the same probe sees a variable the operator let through.
    allowed = sandbox.run(native, ENVIRONMENT, env=env, env_allow=["IO_TEST_SECRET"])
    assert b"IO_TEST_SECRET" in allowed.stdout


SCAN_ENVIRON = f"""
import os
found, readable = [], 0
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            environ = open(f"/proc/{{pid}}/environ", "rb").read()
        except OSError:
            continue
        readable += 1
        if {SECRET.encode()!r} in environ:
            found.append(pid)
print("found" if found else "absent", readable > 0)
"""


@pytest.fixture
def runner_with_secret() -> Iterator[subprocess.Popen[bytes]]:
    """A stand-in for the runner: a live process whose environment holds an API key."""
    process = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"],
        env={**os.environ, "ANTHROPIC_API_KEY": SECRET},
        stdin=subprocess.PIPE,
    )
    try:
        yield process
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait()


def test_the_runners_proc_environ_cannot_be_read_back(
    sandbox: Sandbox, native: Selected, off: Selected, runner_with_secret: subprocess.Popen[bytes]
) -> None:
    assert sandbox.run(native, SCAN_ENVIRON).stdout == b"absent True\n"
    assert sandbox.run(off, SCAN_ENVIRON).stdout.startswith(b"found")


OPEN_FDS = """
import os
open_fds = []
for fd in range(3, 1024):
    try:
        os.fstat(fd)
        open_fds.append(fd)
    except OSError:
        pass
print(open_fds)
"""


def test_only_fds_0_1_2_are_inherited(sandbox: Sandbox, native: Selected) -> None:
    read_end, write_end = os.pipe()
    try:
        os.set_inheritable(read_end, True)
        os.set_inheritable(write_end, True)
        assert sandbox.run(native, OPEN_FDS).stdout == b"[]\n"
        # Control: a child that is allowed to inherit does see the leaked fds.
        (sandbox.workdir / "fds.py").write_text(OPEN_FDS)
        leaked = subprocess.run(
            [sys.executable, str(sandbox.workdir / "fds.py")],
            close_fds=False,
            capture_output=True,
            check=True,
        )
        assert str(read_end).encode() in leaked.stdout
    finally:
        os.close(read_end)
        os.close(write_end)


TTY = """
import errno, fcntl, os, termios
try:
    os.close(os.open("/dev/tty", os.O_RDWR))
    print("tty opened")
except OSError as exc:
    print("tty", errno.errorcode[exc.errno])
try:
    fcntl.ioctl(0, termios.TIOCSTI, b"x")
    print("tiocsti injected")
except OSError as exc:
    print("tiocsti", errno.errorcode[exc.errno])
"""


def take_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def test_no_controlling_terminal_even_with_a_terminal_on_stdin(
    sandbox: Sandbox, native: Selected
) -> None:
    master, slave = os.openpty()
    try:
        with os.fdopen(os.dup(slave), "rb", buffering=0) as slave_file:
            inside = sandbox.run(native, TTY, stdin=slave_file)
        lines = inside.stdout.decode().splitlines()
        assert lines[0] == "tty ENXIO"
        assert lines[1].startswith("tiocsti E")
        # Control: a process that makes the same terminal its controlling one can open it.
        (sandbox.workdir / "tty.py").write_text(TTY)
        control = subprocess.run(
            [sys.executable, str(sandbox.workdir / "tty.py")],
            stdin=slave,
            capture_output=True,
            start_new_session=True,
            preexec_fn=take_terminal,
            check=False,
        )
        assert control.stdout.decode().splitlines()[0] == "tty opened"
    finally:
        os.close(master)
        os.close(slave)


PTRACE = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
result = libc.ptrace(0, 0, None, None)  # PTRACE_TRACEME
print(result, os.strerror(ctypes.get_errno()) if result else "")
"""

MOUNT = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
result = libc.mount(b"none", b"/nonexistent-io-mount-target", b"tmpfs", 0, None)
print(result, os.strerror(ctypes.get_errno()))
"""

SECCOMP_STATUS = (
    "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('Seccomp:')])"
)


def test_ptrace_is_denied_by_seccomp(sandbox: Sandbox, native: Selected, off: Selected) -> None:
    assert sandbox.run(native, PTRACE).stdout == b"-1 Operation not permitted\n"
    assert sandbox.run(off, PTRACE).stdout == b"0 \n"


def test_mount_is_denied_before_the_kernel_looks_at_it(
    sandbox: Sandbox, native: Selected, off: Selected
) -> None:
    # Without the filter the kernel answers ENOENT for a missing target whatever our
    # capabilities; EPERM inside can only come from the filter.
    assert sandbox.run(native, MOUNT).stdout == b"-1 Operation not permitted\n"
    assert sandbox.run(off, MOUNT).stdout == b"-1 No such file or directory\n"


def test_a_seccomp_filter_is_installed(sandbox: Sandbox, native: Selected, off: Selected) -> None:
    assert sandbox.run(native, SECCOMP_STATUS).stdout == b"['2']\n"
    assert sandbox.run(off, SECCOMP_STATUS).stdout == b"['0']\n"
