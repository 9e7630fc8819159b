"""The resident launcher's framing: a marshalled body with fds riding on its header."""

from __future__ import annotations

import os
import socket

from harness_core.sandbox._inner import recv_message, send_message


def test_a_large_body_and_its_fds_arrive_together() -> None:
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    reader, writer = os.pipe()
    body = {"kind": "run", "argv": [b"\xff" * 10, b""], "env": [b"K=" + b"v" * 3_000_000]}
    try:
        sent: list[dict[str, object]] = []
        import threading

        thread = threading.Thread(target=lambda: (send_message(left, body, [reader, writer]),
                                                  sent.append(body)))
        thread.start()
        received = recv_message(right)
        thread.join()
        assert received is not None
        message, fds = received
        assert message == body and len(fds) == 2
        os.write(fds[1], b"through")
        assert os.read(reader, 100) == b"through"
        for fd in fds:
            os.close(fd)
    finally:
        for fd in (reader, writer):
            os.close(fd)
        left.close()
        right.close()


def test_end_of_file_is_none_not_an_error() -> None:
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    left.close()
    try:
        assert recv_message(right) is None
    finally:
        right.close()


def test_a_zombie_exit_status_is_read_from_proc_without_reaping_it() -> None:
    import signal
    import subprocess

    from harness_core.sandbox._remote import _zombie_code, peek_status

    exited = subprocess.Popen(["sh", "-c", "exit 5"])
    killed = subprocess.Popen(["sleep", "30"])
    killed.send_signal(signal.SIGTERM)
    try:
        for process, code in ((exited, 5), (killed, -signal.SIGTERM)):
            os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)  # a zombie now
            assert _zombie_code(process.pid) == code
            assert peek_status(process) == (code if code >= 0 else 128 - code)
            assert process.returncode is None  # still unreaped: its pid stays reserved
    finally:
        exited.wait()
        killed.wait()
    assert _zombie_code(exited.pid) is None  # reaped: nothing to read
