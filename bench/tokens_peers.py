"""What the peers send per run, beside io (issue #36 item 6).

    python bench/tokens_peers.py [--steps 100] [--only claude-code,codex,smolagents]
                                 [--claude-model M ...]

Each runner does N steps of one echo-like tool call (a different argument each step) and
then a final answer, against the loopback fake of the wire it speaks
(`tests/fakes/vendor_server.py`), which keeps every request body as sent:

- io: `bench/tokens.py`'s `run` (the real `io run`, the `exec` tool), on the Anthropic,
  OpenAI Chat and OpenAI Responses wires;
- Claude Code (npm ``@anthropic-ai/claude-code``, its native binary), Anthropic Messages
  wire, in print mode (``-p``) with its Bash tool allowed for ``echo``;
- Codex CLI (npm ``@openai/codex``, installed and configured by `bench/codex_cli.py`),
  Responses wire, its ``exec_command`` tool;
- smolagents (PyPI ``smolagents``, in its own venv), a ``ToolCallingAgent`` with one
  ``echo`` tool over ``OpenAIServerModel``, Chat Completions wire; its final answer is
  its ``final_answer`` tool, the only way that agent ends.

The peers are installed on first use under ``--cache`` (default
``~/.cache/io-bench-peers``; Codex under bench/codex_cli.py's own cache), never in the
repository. Each peer runs under ``strace -f`` and fails its row if a socket reaches
anything but the fake (DNS included). A peer that cannot be installed or run prints a
row with the error; none is skipped.

Only the main loop's requests are measured: the requests that offer tools, to the wire's
messages path, with the run's model. Anything else a peer sends (a title or summary
request, ``count_tokens``, a GET) is answered, counted and printed apart. The figures
are `bench/tokens.py`'s: first request and its tool specs, bytes sent, the share of each
request after step 2 that repeats the previous request's prefix in the order the vendor
caches a prompt, breaks under 95 %, and billed byte-equivalents under the wire's
vendor's rules (Anthropic: marked prefixes only; OpenAI: automatic); plus the
``cache_control`` marks each request carries and whether a ``prompt_cache_key`` is sent.
Figures only: no timing, no assertion.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import venv
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from codex_cli import CODEX_CACHE, CodexFake, install_codex  # noqa: E402
from tokens import billed_auto, billed_marked, cached_order, common  # noqa: E402
from tokens import run as io_run  # noqa: E402

from tests.fakes.vendor_server import (  # noqa: E402
    PATHS,
    FakeCall,
    FakeVendorServer,
    RecordedRequest,
    Reply,
    Turn,
    check_anthropic,
    start_vendor_server,
    tool_results_in,
)

CLAUDE_VERSION = "2.1.332"
"""``npm view @anthropic-ai/claude-code version`` on 2026-12-06."""
CLAUDE_MODEL = "claude-opus-5-5"
"""What Claude Code 2.1.332 picks with an API key and no settings; pinned here."""
SMOLAGENTS_VERSION = "1.26.0"
"""The newest ``smolagents`` on PyPI on 2026-12-06."""
PEER_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "io-bench-peers"
_TIMEOUT = 1800.0
_PER_TURN_BETA = "per-turn-control-"
_SMOL_AGENT = """\
import sys
from smolagents import OpenAIServerModel, ToolCallingAgent, tool

@tool
def echo(text: str) -> str:
    \"\"\"Echo the text back.

    Args:
        text: The text to echo.
    \"\"\"
    return text

base_url, steps = sys.argv[1], int(sys.argv[2])
model = OpenAIServerModel(model_id="bench-model", api_base=base_url, api_key="bench-key")
agent = ToolCallingAgent(tools=[echo], model=model, max_steps=steps + 1, verbosity_level=0)
print(agent.run("bench"))
"""


class PeerFailed(Exception):
    """A peer could not be installed or run; the message is its row."""


@dataclass
class Capture:
    """What one runner sent."""

    label: str
    vendor: str
    """The wire, as `tokens.cached_order` names it."""
    main: list[RecordedRequest]
    side: list[RecordedRequest] = field(default_factory=lambda: [])
    network: str = "io's own run (no strace)"


# --- the fake, widened for the peers -------------------------------------------------


def _widen(fake: FakeVendorServer, side: list[RecordedRequest]) -> None:
    """Let the fake take what a peer sends besides its main loop: a query string on the
    wire's path (Claude Code's ``?beta=true``), ``count_tokens`` (answered with a
    bytes/4 estimate), other paths and methods (404). Those go to `side`."""
    base = fake._server.RequestHandlerClass  # the bench's own fake, as codex_cli.py does
    wire_path = PATHS[fake.vendor]

    def reply(handler: Any, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def other(handler: Any) -> None:
        raw = handler.rfile.read(int(handler.headers.get("content-length") or 0))
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        side.append(RecordedRequest(f"{handler.command} {handler.path}",
                                    dict(handler.headers), body, raw=raw))
        if handler.path.split("?")[0].endswith("/count_tokens"):
            return reply(handler, 200, {"input_tokens": len(raw) // 4})
        reply(handler, 404, {"error": {"type": "not_found_error", "message": "bench fake"}})

    def post(handler: Any) -> None:
        if handler.path.split("?")[0] != wire_path:
            return other(handler)
        handler.path = wire_path
        base.do_POST(handler)

    methods: dict[str, Any] = {f"do_{m}": other
                               for m in ("GET", "PUT", "DELETE", "HEAD", "PATCH", "OPTIONS")}
    fake._server.RequestHandlerClass = type("PeerHandler", (base,), {**methods, "do_POST": post})


def _check_claude(headers: dict[str, str], body: Any) -> list[str]:
    """The fake's Anthropic checks, plus the ``system`` turns that Claude Code puts in
    `messages` under the ``per-turn-control-2026-07-01`` beta it names in its header:
    each must hold non-empty text; the rest is checked as it stands without them."""
    if not isinstance(body, dict) or _PER_TURN_BETA not in headers.get("anthropic-beta", ""):
        return check_anthropic(headers, body)
    messages = [m for m in body.get("messages") or () if isinstance(m, dict)]
    turns = [m for m in messages if m.get("role") == "system"]
    problems = [f"system turn {i} without text" for i, m in enumerate(turns)
                if not m.get("content") or not isinstance(m["content"], str | list)]
    rest = [m for m in messages if m.get("role") != "system"]
    merged: list[dict[str, Any]] = []
    for m in rest:  # a system turn between two user turns leaves them adjacent
        if merged and merged[-1]["role"] == m["role"] == "user":
            merged[-1] = {"role": "user", "content": _blocks(merged[-1]) + _blocks(m)}
        else:
            merged.append(m)
    return problems + check_anthropic(headers, {**body, "messages": merged})


def _blocks(message: dict[str, Any]) -> list[Any]:
    content = message.get("content")
    return list(content) if isinstance(content, list) else [{"type": "text", "text": content}]


def _is_main(request: RecordedRequest, model: str) -> bool:
    body = request.body if isinstance(request.body, dict) else {}
    return bool(body.get("tools")) and body.get("model") == model


def _observations(request: RecordedRequest) -> int:
    """smolagents' step: it sends each tool result back as a user turn "Observation:"."""
    body = request.body if isinstance(request.body, dict) else {}
    return sum(1 for m in body.get("messages") or ()
               if m.get("role") == "user" and "Observation:" in json.dumps(m.get("content")))


# --- running a peer ------------------------------------------------------------------


def _traced(argv: list[str], trace: Path, **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
    strace = shutil.which("strace")
    if strace:
        argv = [strace, "-f", "-qq", "-e", "signal=none", "-o", str(trace), "-e",
                "trace=connect,sendto,sendmsg,sendmmsg", *argv]
    try:
        return subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL,
                              timeout=_TIMEOUT, **kwargs)
    except subprocess.TimeoutExpired as exc:
        raise PeerFailed(f"no exit within {_TIMEOUT:.0f} s") from exc


def _network(trace: Path, port: int) -> str:
    if not trace.exists():
        return "not checked (no strace)"
    text = trace.read_text()
    peers = re.findall(r'sin_port=htons\((\d+)\), sin_addr=inet_addr\("([^"]+)"\)', text)
    peers += re.findall(r'sin6_port=htons\((\d+)\),.*?inet_pton\(AF_INET6, "([^"]+)"', text)
    elsewhere = sorted({f"{host}:{p}" for p, host in peers if (host, int(p)) != ("127.0.0.1", port)})
    if elsewhere:
        raise PeerFailed(f"reached beyond the fake: {', '.join(elsewhere)} (strace)")
    return f"{len(peers)} inet connects, all to the fake (strace -f)"


def _finish(label: str, vendor: str, fake: FakeVendorServer, side: list[RecordedRequest],
            done: subprocess.CompletedProcess[bytes], trace: Path, model: str,
            steps: int) -> Capture:
    main = [r for r in fake.requests if _is_main(r, model)]
    side = side + [r for r in fake.requests if not _is_main(r, model)]
    out = done.stdout.decode(errors="replace").strip()
    if done.returncode != 0 or fake.violations or len(main) != steps + 1 or "done" not in out:
        raise PeerFailed(
            f"exit {done.returncode}, {len(main)} main-loop requests (want {steps + 1}),"
            f" fake saw {fake.violations[:3]}, stdout {out[-200:]!r},"
            f" stderr {done.stderr.decode(errors='replace')[-800:]!r}")
    last = f"hi {steps - 1}".encode()
    if steps and main[-1].raw.count(last) < 2:  # the call's argument, then its output
        raise PeerFailed(f"the last echo's output ({last!r}) never came back to the model")
    return Capture(label, vendor, main, side, _network(trace, fake.port))


def _npm_install(prefix: Path, package: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise PeerFailed(f"npm is not on PATH (needed for {package})")
    prefix.mkdir(parents=True, exist_ok=True)
    print(f"installing {package} into {prefix} ...", file=sys.stderr, flush=True)
    done = subprocess.run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                           "--ignore-scripts", "--no-save", package],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise PeerFailed(f"npm install {package} failed: {done.stderr[-800:]}")


def install_claude(cache: Path) -> Path:
    """Claude Code's native binary (the platform package the npm package depends on; the
    package's postinstall, skipped, would only link it)."""
    prefix = cache / "claude-code" / CLAUDE_VERSION
    found = sorted((prefix / "node_modules" / "@anthropic-ai").glob("claude-code-*/claude"))
    if not found:
        _npm_install(prefix, f"@anthropic-ai/claude-code@{CLAUDE_VERSION}")
        found = sorted((prefix / "node_modules" / "@anthropic-ai").glob("claude-code-*/claude"))
    if not found:
        raise PeerFailed(f"no native claude binary for this platform under {prefix}")
    said = subprocess.run([str(found[0]), "--version"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL).stdout
    if not said.startswith(CLAUDE_VERSION):
        raise PeerFailed(f"{found[0]} --version said {said!r}, not {CLAUDE_VERSION}")
    return found[0]


def run_claude(steps: int, cache: Path, model: str = CLAUDE_MODEL) -> Capture:
    claude = install_claude(cache)
    side: list[RecordedRequest] = []

    def respond(request: RecordedRequest) -> Reply:
        if not _is_main(request, model):
            return Turn(text="bench")
        step = tool_results_in(request)
        if step < steps:
            call = FakeCall(f"toolu_{step}", "Bash",
                            json.dumps({"command": f"echo hi {step}", "description": "Echo"}))
            return Turn(text=f"step {step}", tool_calls=(call,), message_id=f"msg_{step}",
                        coalesce=True)
        return Turn(text="done", message_id="msg_done", coalesce=True)

    with tempfile.TemporaryDirectory(dir=cache) as tmp, \
            start_vendor_server("anthropic", responder=respond) as fake:
        fake.check_anthropic = _check_claude
        _widen(fake, side)
        home, ws = Path(tmp) / "home", Path(tmp) / "ws"
        home.mkdir()
        ws.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE"))}
        env.update(HOME=str(home), CLAUDE_CONFIG_DIR=str(home / ".claude"), NO_COLOR="1",
                   ANTHROPIC_BASE_URL=f"http://127.0.0.1:{fake.port}",
                   ANTHROPIC_API_KEY="bench-key", DISABLE_TELEMETRY="1",
                   DISABLE_AUTOUPDATER="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")
        # Not --dangerously-skip-permissions: Claude Code refuses it as root.
        argv = [str(claude), "-p", "bench", "--model", model, "--max-turns",
                str(steps + 5), "--allowedTools", "Bash(echo:*)"]
        done = _traced(argv, Path(tmp) / "strace.txt", env=env, cwd=ws)
        return _finish(f"Claude Code {CLAUDE_VERSION} ({model})", "anthropic", fake, side,
                       done, Path(tmp) / "strace.txt", model, steps)


def run_codex(steps: int, cache: Path) -> Capture:
    del cache  # Codex lives in bench/codex_cli.py's cache
    try:
        codex = install_codex(CODEX_CACHE)
    except SystemExit as exc:  # codex_cli's install says why with SystemExit
        raise PeerFailed(str(exc)) from exc
    side: list[RecordedRequest] = []

    def respond(request: RecordedRequest) -> Reply:
        if not _is_main(request, "bench-model"):
            return Turn(text="bench", coalesce=True)
        step = tool_results_in(request)
        if step < steps:
            call = FakeCall(f"call_{step}", "exec_command", json.dumps({"cmd": f"echo hi {step}"}))
            return Turn(text=f"step {step}", tool_calls=(call,), coalesce=True)
        return Turn(text="done", coalesce=True)

    with tempfile.TemporaryDirectory() as tmp, CodexFake(codex, Path(tmp) / "ws") as codex_fake:
        fake = codex_fake.fake
        fake.responder = respond
        _widen(fake, side)
        argv = [*codex_fake.argv[:-1], "bench"]
        done = _traced(argv, Path(tmp) / "strace.txt", env=codex_fake.env,
                       cwd=codex_fake.workspace)
        return _finish(f"Codex CLI {codex.version}", "openai-responses", fake, side, done,
                       Path(tmp) / "strace.txt", "bench-model", steps)


def install_smolagents(cache: Path) -> Path:
    """A venv under the cache with ``smolagents[openai]`` pinned; its python."""
    prefix = cache / "smolagents" / SMOLAGENTS_VERSION
    python = prefix / "bin" / "python"
    check = [str(python), "-c", "import smolagents, openai; print(smolagents.__version__)"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    print(f"installing smolagents {SMOLAGENTS_VERSION} into {prefix} ...", file=sys.stderr,
          flush=True)
    venv.create(prefix, with_pip=True, clear=True)
    done = subprocess.run([str(python), "-m", "pip", "install", "-q",
                           f"smolagents[openai]=={SMOLAGENTS_VERSION}"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise PeerFailed(f"pip install smolagents=={SMOLAGENTS_VERSION} failed:"
                         f" {done.stderr[-800:]}")
    return python


def run_smolagents(steps: int, cache: Path) -> Capture:
    python = install_smolagents(cache)
    side: list[RecordedRequest] = []

    def respond(request: RecordedRequest) -> Reply:
        step = _observations(request)
        if step < steps:
            call = FakeCall(f"call_{step}", "echo", json.dumps({"text": f"hi {step}"}))
        else:
            call = FakeCall(f"call_{step}", "final_answer", json.dumps({"answer": "done"}))
        return Turn(tool_calls=(call,))

    with tempfile.TemporaryDirectory() as tmp, \
            start_vendor_server("openai", responder=respond) as fake:
        _widen(fake, side)
        script = Path(tmp) / "agent.py"
        script.write_text(_SMOL_AGENT)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OPENAI_", "HF_", "PYTHON"))}
        done = _traced([str(python), str(script), fake.base_url, str(steps)],
                       Path(tmp) / "strace.txt", env=env, cwd=tmp)
        return _finish(f"smolagents {SMOLAGENTS_VERSION}", "openai", fake, side, done,
                       Path(tmp) / "strace.txt", "bench-model", steps)


PEERS: dict[str, Callable[[int, Path], Capture]] = {
    "claude-code": run_claude, "codex": run_codex, "smolagents": run_smolagents}


# --- figures -------------------------------------------------------------------------


def _marks(requests: list[RecordedRequest]) -> str:
    counts = sorted({r.raw.count(b'"cache_control"') for r in requests})
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"


def _cache_key(requests: list[RecordedRequest]) -> str:
    keys = {r.body.get("prompt_cache_key") for r in requests}
    if keys == {None}:
        return "none"
    return "one per run" if len(keys) == 1 else f"{len(keys)} different"


def row(capture: Capture) -> str:
    """One table row: `tokens.report`'s figures for the captured main loop."""
    requests, vendor = capture.main, capture.vendor
    first = requests[0]
    tools = json.dumps(first.body.get("tools") or [], separators=(",", ":")).encode()
    prompts = [cached_order(vendor, r.body) for r in requests]
    pairs = list(zip(prompts, prompts[1:], strict=False))
    shares = [common(a, b) / len(b) for a, b in pairs][2:] or [1.0]
    marked = [cached_order(vendor, r.body, marks=True) for r in requests]
    has_marks = any(b'"cache_control"' in m for m in marked)
    size = sum(len(p) for p in prompts)
    if vendor == "anthropic":
        billed = billed_marked(prompts, marked) if has_marks else float(size)
        rules = "Anthropic" + ("" if has_marks else ", nothing marked")
    else:
        billed, rules = billed_auto(prompts), "OpenAI, automatic"
    sent = sum(len(r.raw) for r in requests)
    repeated = sum(common(a, b) for a, b in pairs)
    side = sum(len(r.raw) for r in capture.side)
    return (f"| {capture.label} | {vendor} | {len(first.raw) / 1024:.1f} KB"
            f" ({len(tools) / 1024:.1f} KB) | {len(requests)} ({len(capture.side)} side,"
            f" {side / 1024:.1f} KB) | {sent / 1e6:.2f} MB | {repeated / 1e6:.2f} MB"
            f" | {min(shares):.1%} / {sum(shares) / len(shares):.1%}"
            f" | {sum(1 for s in shares if s < 0.95)} | {billed / 1e6:.3f} M = {billed / size:.3f}"
            f" ({rules}) | {_marks(requests)} | {_cache_key(requests)} |")


def tool_line(capture: Capture) -> str:
    tools = capture.main[0].body.get("tools") or []
    sizes = sorted(((len(json.dumps(t, separators=(",", ":"))),
                     str(t.get("name") or (t.get("function") or {}).get("name") or t.get("type")))
                    for t in tools), reverse=True)
    listed = ", ".join(f"{name} {size}" for size, name in sizes)
    return (f"- {capture.label}: {len(tools)} tools, {sum(s for s, _ in sizes):,} bytes"
            f" in its first request: {listed}")


_HEADER = ("| runner | wire | first request (tool specs) | main-loop requests (side)"
           " | bytes sent | repeating the previous prefix | share after step 2 (min / mean)"
           " | breaks (< 95 %) | billed byte-equivalents = / prompt bytes | cache_control"
           " marks per request | prompt_cache_key |\n" + "|---" * 11 + "|")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--only", default=",".join(PEERS),
                        help="peers to run, comma-separated (io's rows always run)")
    parser.add_argument("--cache", type=Path, default=PEER_CACHE)
    parser.add_argument("--claude-model", action="append",
                        help=f"a model for Claude Code, one row each (default {CLAUDE_MODEL})")
    args = parser.parse_args()
    peers = [(name, PEERS[name]) for name in args.only.split(",") if name != "claude-code"]
    if "claude-code" in args.only.split(","):
        peers[:0] = [(f"claude-code ({m})", functools.partial(run_claude, model=m))
                     for m in args.claude_model or [CLAUDE_MODEL]]
    args.cache.mkdir(parents=True, exist_ok=True)
    captures: list[Capture] = []
    failures: list[str] = []
    for vendor in ("anthropic", "openai", "openai-responses"):
        captures.append(Capture(f"io ({vendor})", vendor, io_run(vendor, args.steps,
                                                                  "bench-model")))
    for name, run_peer in peers:
        print(f"running {name}, {args.steps} steps ...", file=sys.stderr, flush=True)
        try:
            captures.append(run_peer(args.steps, args.cache))
        except PeerFailed as exc:
            failures.append(f"| {name} | could not be measured: {exc} |")
    print(f"{args.steps} steps of one echo each, then a final answer\n")
    print(_HEADER)
    for capture in captures:
        print(row(capture))
    for failure in failures:
        print(failure)
    print("\ntool specs, as sent in the first request (bytes):")
    for capture in captures:
        print(tool_line(capture))
    print("\nwhat else each peer sent, and the network:")
    for capture in captures[3:]:
        kinds = sorted({f"{r.path} ({(r.body or {}).get('model', '-')})"
                        if isinstance(r.body, dict) else r.path for r in capture.side})
        print(f"- {capture.label}: {len(capture.side)} side requests {kinds};"
              f" {capture.network}")


if __name__ == "__main__":
    main()
