"""Codex CLI beside `io run` in bench/startup.py: install, configure, run one step, check.

Issue 24 asks that a one-step `io run` be no slower than Codex CLI's in the same run.
This module gives bench/startup.py that second figure:

* `install_codex` installs the npm package ``@openai/codex`` at a pinned version into a
  cache folder (``--codex-cache``, default ``~/.cache/io-bench-codex/<version>``) with
  ``npm install`` when it is not there yet, and finds the platform's native Rust binary
  in it (the package's ``bin/codex.js`` is a node wrapper that only starts that binary;
  the bench times the binary itself, or says it times the wrapper when no binary is
  found).
* `CodexFake` runs a one-step ``codex exec`` against the loopback vendor fake
  (tests/fakes/vendor_server.py, vendor ``openai-responses``: the Responses wire Codex
  speaks), through a custom model provider in a private ``CODEX_HOME/config.toml``
  (``base_url`` the fake, the key from an environment variable, no approvals, no
  sandbox - io's one-step run is unsandboxed too - and no git repository needed). The
  fake answers every request with one text reply ("done", no tool call), so the run ends
  after one request; every run is checked to have sent exactly one request, answered
  with "done" on stdout.
* Nothing may leave the machine. Codex 0.171.0 by default runs
  ``git ls-remote https://github.com/openai/plugins.git`` at every start (the plugin
  marketplace); the config turns plugins off, with analytics, feedback, the update
  check and the shell snapshot (which runs the user's login shell and its rc files; on
  this machine pyenv's init). `CodexFake.check_run` runs Codex once under strace and
  fails if any socket is connected or sent to anywhere but the fake (DNS included), and
  takes Codex's peak RSS with GNU time in the same run.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loop_overhead import Child, _child_cpu

from tests.fakes.responses_wire import ResponsesLedger
from tests.fakes.vendor_server import RecordedRequest, Reply, Turn, start_vendor_server

CODEX_VERSION = "0.171.0"
"""The pinned ``@openai/codex`` release (``npm view @openai/codex version`` on 2026-12-04)."""
CODEX_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "io-bench-codex"
_KEY_ENV = "IO_BENCH_CODEX_KEY"
_PROMPT = "Answer with one word."
_TRIPLES = {("Linux", "x86_64"): "x86_64-unknown-linux-musl",
            ("Linux", "aarch64"): "aarch64-unknown-linux-musl",
            ("Darwin", "x86_64"): "x86_64-apple-darwin",
            ("Darwin", "arm64"): "aarch64-apple-darwin"}


@dataclass(frozen=True)
class Codex:
    argv: tuple[str, ...]
    """What starts Codex: the native binary, or ``node .../bin/codex.js``."""
    version: str
    kind: str
    """``native binary`` or ``node wrapper``: which of the two is timed."""
    cache: Path
    """The cache folder; each bench run's CODEX_HOME is made (and removed) in it."""

    @property
    def label(self) -> str:
        return f"Codex CLI {self.version}, {self.kind}"


def install_codex(cache: Path, version: str = CODEX_VERSION) -> Codex:
    """The pinned Codex CLI under `cache/version`, installed with npm if it is missing."""
    prefix = cache / version
    wrapper = prefix / "node_modules" / "@openai" / "codex" / "bin" / "codex.js"
    if not wrapper.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("--codex needs npm to install @openai/codex (not on PATH)")
        prefix.mkdir(parents=True, exist_ok=True)
        print(f"installing @openai/codex@{version} into {prefix} ...", flush=True)
        done = subprocess.run(
            [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
             "--ignore-scripts", "--no-save", f"@openai/codex@{version}"],
            capture_output=True, text=True)
        if done.returncode != 0 or not wrapper.exists():
            raise SystemExit(f"npm install @openai/codex@{version} failed: {done.stderr[-1500:]}")
    native = _native_binary(prefix)
    if native is not None:
        codex = Codex((str(native),), version, "native binary", cache)
    else:
        node = shutil.which("node")
        if node is None:
            raise SystemExit("no native Codex binary for this platform and no node to run"
                             f" {wrapper}")
        codex = Codex((node, str(wrapper)), version, "node wrapper", cache)
    reported = subprocess.run([*codex.argv, "--version"], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL).stdout.split()
    if reported[-1:] != [version]:
        raise SystemExit(f"{' '.join(codex.argv)} --version said {reported!r}, not {version}")
    return codex


def _native_binary(prefix: Path) -> Path | None:
    """The Rust binary the platform package (an optional dependency) ships, if any."""
    triple = _TRIPLES.get((platform.system(), platform.machine()))
    if triple is None:
        return None
    found = sorted((prefix / "node_modules" / "@openai").glob(f"codex-*/vendor/{triple}/bin/codex"))
    return found[0] if found else None


class _CodexLedger(ResponsesLedger):
    """The fake's Responses checks, plus Codex's ``namespace`` tools (a named group of
    function tools, e.g. its multi-agent tools), which tests/fakes does not know."""

    def check(self, headers: dict[str, str], body: Any) -> list[str]:
        if not isinstance(body, dict):
            return super().check(headers, body)
        tools = list(body.get("tools") or ())
        grouped = [t for t in tools if isinstance(t, dict) and t.get("type") == "namespace"]
        problems = [f"bad namespace tool {t.get('name')!r}" for t in grouped
                    if not t.get("name") or not isinstance(t.get("tools"), list)]
        inner = [tool for group in grouped for tool in group.get("tools") or ()]
        plain = [t for t in tools if t not in grouped] + inner
        return problems + super().check(headers, {**body, "tools": plain})


def _answer(request: RecordedRequest) -> Reply:
    del request
    return Turn(text="done", coalesce=True)


_CONFIG = """\
model = "bench-model"
model_provider = "iofake"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[history]
persistence = "none"

[features]
plugins = false
remote_plugin = false
shell_snapshot = false

[model_providers.iofake]
name = "io bench fake"
base_url = "{base_url}"
env_key = "{key_env}"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
"""


class CodexFake:
    """A Responses-wire fake and a private CODEX_HOME wired to it; `run` times one step."""

    def __init__(self, codex: Codex, workspace: Path) -> None:
        self.codex = codex
        self.fake = start_vendor_server("openai-responses", responder=_answer)
        self.fake.ledger = _CodexLedger()
        _record_other_methods(self.fake)
        # Under the cache, not /tmp: Codex refuses to put its helper links in a CODEX_HOME
        # under the temporary directory and warns on every start.
        self.home = Path(tempfile.mkdtemp(prefix="home-", dir=codex.cache))
        (self.home / "config.toml").write_text(
            _CONFIG.format(base_url=self.fake.base_url, key_env=_KEY_ENV))
        self.workspace = workspace
        workspace.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("CODEX_", "OPENAI_")) and k != "RUST_LOG"}
        self.env = {**env, "CODEX_HOME": str(self.home), _KEY_ENV: "bench-key", "NO_COLOR": "1"}
        self.argv = [*codex.argv, "exec", "--strict-config", "--skip-git-repo-check",
                     "--color", "never", _PROMPT]

    def close(self) -> None:
        self.fake.close()
        shutil.rmtree(self.home, ignore_errors=True)

    def __enter__(self) -> CodexFake:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self) -> Child:
        """One timed ``codex exec``: wall and CPU seconds (its children included)."""
        before = len(self.fake.requests)
        start = time.perf_counter()
        proc = subprocess.Popen(self.argv, env=self.env, cwd=self.workspace,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        out, err = proc.communicate()
        wall = time.perf_counter() - start
        cpu = _child_cpu()
        self._checked(proc.returncode, out, err, before)
        return Child(wall, cpu, 0)

    def _checked(self, code: int, out: bytes, err: bytes, before: int) -> None:
        sent = len(self.fake.requests) - before
        if code != 0 or out.decode().strip() != "done" or sent != 1 or self.fake.violations:
            raise SystemExit(
                f"codex exec: exit {code}, {sent} requests (want 1), stdout {out[-200:]!r},"
                f" fake saw {self.fake.violations[:3]}; stderr: {err.decode()[-1500:]}")

    def check_run(self, tmp: Path) -> tuple[int | None, str]:
        """One untimed run under GNU time and strace: Codex's peak RSS in bytes (None
        without /usr/bin/time) and what the network check found."""
        argv, rss, trace = list(self.argv), tmp / "codex-rss.txt", tmp / "codex-strace.txt"
        strace = shutil.which("strace")
        if strace:
            argv = [strace, "-f", "-qq", "-e", "signal=none", "-o", str(trace), "-e",
                    "trace=connect,sendto,sendmsg,sendmmsg", *argv]
        gnu_time = Path("/usr/bin/time")
        if gnu_time.exists():
            argv = [str(gnu_time), "-f", "%M", "-o", str(rss), *argv]
        before = len(self.fake.requests)
        proc = subprocess.run(argv, env=self.env, cwd=self.workspace, capture_output=True,
                              stdin=subprocess.DEVNULL)
        _child_cpu()  # not a timed run: keep its CPU out of the next figure
        self._checked(proc.returncode, proc.stdout, proc.stderr, before)
        peak = int(rss.read_text().split()[-1]) * 1024 if gnu_time.exists() else None
        if not strace:
            return peak, "not checked (no strace)"
        return peak, self._network_check(trace.read_text())

    def _network_check(self, trace: str) -> str:
        peers = re.findall(r'sin_port=htons\((\d+)\), sin_addr=inet_addr\("([^"]+)"\)', trace)
        peers += re.findall(r'sin6_port=htons\((\d+)\),.*?inet_pton\(AF_INET6, "([^"]+)"', trace)
        elsewhere = sorted({f"{host}:{port}" for port, host in peers
                            if (host, int(port)) != ("127.0.0.1", self.fake.port)})
        if elsewhere:
            raise SystemExit(f"codex exec reached beyond the fake: {', '.join(elsewhere)}"
                             " (strace); the bench does not let it talk to the network")
        return (f"{len(peers)} socket connects/sends, all to the fake at"
                f" 127.0.0.1:{self.fake.port} (strace -f)")


def _record_other_methods(fake: Any) -> None:
    """Make the fake record (as violations) requests other than POST, which its handler
    would answer 501 without a trace: a GET of a model list would otherwise go unseen."""
    server = fake._server  # the bench's own fake: no other way to reach its handler
    base = server.RequestHandlerClass

    def other(handler: Any) -> None:
        length = int(handler.headers.get("content-length") or 0)
        handler.rfile.read(length)
        fake.requests.append(RecordedRequest(handler.path, dict(handler.headers), None))
        fake.violations.append(f"unexpected {handler.command} {handler.path}")
        handler.send_response(404)
        handler.send_header("content-length", "0")
        handler.end_headers()

    methods = {f"do_{m}": other for m in ("GET", "PUT", "DELETE", "HEAD", "PATCH", "OPTIONS")}
    server.RequestHandlerClass = type("CodexBenchHandler", (base,), methods)
